package testkit

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// WaitOn re-checks its condition once per change, and needs no poll:
// inside a bubble with no clock running, it returns as soon as the
// change that makes the condition true arrives.
func TestWaitOnChecksOncePerChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Buffered: WaitOn may see n reach 3 before it takes the last
		// change, and a sender blocked at the bubble's end is a deadlock.
		changed := make(chan int, 3)
		var n, checks atomic.Int32
		go func() {
			for i := 1; i <= 3; i++ {
				n.Store(int32(i))
				changed <- i
			}
		}()
		WaitOn(t, "n to reach 3", changed, func() bool { checks.Add(1); return n.Load() == 3 })
		if got := checks.Load(); got > 4 {
			t.Errorf("cond checked %d times for 3 changes", got)
		}
	})
}

// WaitFor returns once the condition holds.
func TestWaitForPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done atomic.Bool
		time.AfterFunc(time.Minute, func() { done.Store(true) })
		WaitFor(t, "the timer", done.Load)
	})
}

// Recv hands back what was sent.
func TestRecv(t *testing.T) {
	ch := make(chan string, 1)
	ch <- "x"
	if got := Recv(t, "x", ch); got != "x" {
		t.Fatalf("Recv = %q", got)
	}
}

// A record logged after its test ended goes to stderr instead of
// panicking in testing (guard).
func TestLoggerOutlivesItsTest(t *testing.T) {
	t.Setenv(LogEnv, "1")
	var lg = make(chan func(), 1)
	t.Run("inner", func(t *testing.T) {
		l := Logger(t)
		l.Debug("inside the test")
		lg <- func() { l.Debug("after the test") }
	})
	(<-lg)()
}
