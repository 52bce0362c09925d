package fanout

import (
	"context"
	"sync"
	"testing"
)

func TestSlowSubscriberKeepsNewest(t *testing.T) {
	b := New[int](2)
	ch := b.Subscribe(context.Background())
	for i := 1; i <= 10; i++ {
		b.Publish(i) // never blocks although nobody reads
	}
	if got := []int{<-ch, <-ch}; got[0] != 9 || got[1] != 10 {
		t.Fatalf("got %v, want the newest two [9 10]", got)
	}
	b.Close()
	if _, ok := <-ch; ok {
		t.Fatal("channel open after Close")
	}
	if _, ok := <-b.Subscribe(context.Background()); ok {
		t.Fatal("subscription after Close is open")
	}
}

func TestUnsubscribeOnContext(t *testing.T) {
	b := New[string](1)
	ctx, cancel := context.WithCancel(context.Background())
	ch := b.Subscribe(ctx)
	cancel()
	for range ch { // closed by the context
	}
	b.Publish("after") // no subscriber left: must not panic or block
}

func TestConcurrentPublishSubscribe(t *testing.T) {
	b := New[int](4)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() { defer wg.Done(); b.Publish(i) }()
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			b.Subscribe(ctx)
			cancel()
		}()
	}
	wg.Wait()
	b.Close()
}

func TestDrain(t *testing.T) {
	ch := make(chan int, 3)
	ch <- 1
	ch <- 2
	if !Drain(ch) || len(ch) != 0 {
		t.Fatal("Drain left values or reported closed")
	}
	close(ch)
	if Drain(ch) {
		t.Fatal("Drain of a closed channel reported open")
	}
}
