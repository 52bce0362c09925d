package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

func testChangeFeedOwnWrites(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	ch := s.Subscribe(ctx)
	k := SecretKey{ServerID: "a", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: "r", Issuer: "i"}}
	steps := []struct {
		name string
		op   func() error
		want Change
	}{
		{"add", func() error { return s.AddServer(ctx, noneServer("a", "https://a.example.com")) }, Change{Kind: ChangeServers, ServerID: "a", Revision: 1}},
		{"update", func() error { return s.UpdateServer(ctx, noneServer("a", "https://a2.example.com")) }, Change{Kind: ChangeServers, ServerID: "a", Revision: 2}},
		{"put secret", func() error { return s.PutSecret(ctx, k, []byte("x")) }, Change{Kind: ChangeSecrets, ServerID: "a", Revision: 3}},
		{"delete secret", func() error { return s.DeleteSecret(ctx, k) }, Change{Kind: ChangeSecrets, ServerID: "a", Revision: 4}},
		{"put kv", func() error { return s.PutKV(ctx, "grants", "x", []byte("true")) }, Change{Kind: ChangeOther, Namespace: "grants", Revision: 5}},
		{"delete kv", func() error { return s.DeleteKV(ctx, "grants", "x") }, Change{Kind: ChangeOther, Namespace: "grants", Revision: 6}},
		{"delete", func() error { return s.DeleteServer(ctx, "a") }, Change{Kind: ChangeServers, ServerID: "a", Revision: 7}},
	}
	for _, st := range steps {
		if err := st.op(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		// Own writes are delivered before the write returns.
		select {
		case got := <-ch:
			if got != st.want {
				t.Fatalf("%s: change %+v, want %+v", st.name, got, st.want)
			}
			if got.RereadAll() {
				t.Fatalf("%s: own write reported as RereadAll", st.name)
			}
		default:
			t.Fatalf("%s: no change delivered", st.name)
		}
	}
	// The poller must not report our own writes again.
	quiet(t, ch, 10*testPoll)
}

// testChangeFeedOtherProcess: a second handle on the same store (a
// second *DB on the same directory, a second OpenPostgres of the same
// database) stands in for another process.
func testChangeFeedOtherProcess(t *testing.T, be backend) {
	ctx := context.Background()
	a := be.open(t)
	b := be.again(t, a)
	chA := a.Subscribe(ctx)
	chB := b.Subscribe(ctx)

	if err := a.AddServer(ctx, noneServer("x", "https://x.example.com")); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, chA, hang); got.ServerID != "x" {
		t.Fatalf("A sees %+v", got)
	}
	got := recv(t, chB, hang)
	if !got.RereadAll() || got.Revision != 1 {
		t.Fatalf("B sees %+v, want a RereadAll change at revision 1", got)
	}
	if l, _ := b.ListServers(ctx); len(l) != 1 {
		t.Fatalf("B lists %d servers", len(l))
	}

	// Interleaved writes: each side reports its own precisely and the
	// other's as RereadAll.
	if err := b.PutKV(ctx, "ns", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, chB, hang); got.Namespace != "ns" {
		t.Fatalf("B sees %+v", got)
	}
	if got := recv(t, chA, hang); !got.RereadAll() {
		t.Fatalf("A sees %+v", got)
	}
	quiet(t, chA, 10*testPoll)
	quiet(t, chB, 10*testPoll)

	// A foreign write between two own writes is still noticed.
	if err := a.PutKV(ctx, "ns", "1", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.PutKV(ctx, "ns", "2", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := a.PutKV(ctx, "ns", "3", []byte("3")); err != nil {
		t.Fatal(err)
	}
	sawForeign := false
	deadline := time.After(hang)
	for !sawForeign {
		select {
		case c := <-chA:
			sawForeign = c.RereadAll()
		case <-deadline:
			t.Fatal("A never saw B's write")
		}
	}
}

func testChangeFeedSlowSubscriber(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	ch := s.Subscribe(ctx)
	const writes = 3 * subscriberBuffer
	for i := range writes {
		if err := s.PutKV(ctx, "ns", fmt.Sprint(i), []byte("1")); err != nil {
			t.Fatal(err)
		}
	}
	// The writers never blocked; the subscriber finds its buffer full with
	// a RereadAll at the end.
	var got []Change
	for len(ch) > 0 {
		got = append(got, <-ch)
	}
	if len(got) != subscriberBuffer {
		t.Fatalf("got %d changes, want %d", len(got), subscriberBuffer)
	}
	for i, c := range got[:len(got)-1] {
		if c.Namespace != "ns" || c.Revision != int64(i+1) {
			t.Fatalf("change %d = %+v", i, c)
		}
	}
	if last := got[len(got)-1]; !last.RereadAll() {
		t.Fatalf("last change %+v, want RereadAll", last)
	}
	// Once drained, changes flow again one by one.
	if err := s.PutKV(ctx, "ns", "after", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if c := recv(t, ch, hang); c.Namespace != "ns" || c.Revision != writes+1 {
		t.Fatalf("after drain: %+v", c)
	}
}

func testSubscribeEnds(t *testing.T, b backend) {
	s := b.open(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := s.Subscribe(ctx)
	other := s.Subscribe(context.Background())
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("change after cancel")
		}
	case <-time.After(hang):
		t.Fatal("channel not closed after ctx cancel")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-other; ok {
		t.Fatal("channel open after Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
