// Package clocktest is a clock that moves only when a test says so, for
// the connection backoff (manager.Clock, issue #20 item 1): a test counts
// the attempts each step of the schedule allows instead of waiting for
// wall-clock time on a loaded machine.
package clocktest

import (
	"sort"
	"sync"
	"time"
)

// Clock is a manual clock. Its zero value is not usable; make one with New.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*timer
}

type timer struct {
	at    time.Time
	d     time.Duration // as asked, to tell kinds of timers apart (Pending)
	f     func()
	fired bool
	gone  bool
}

// New returns a clock standing at start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc runs f in its own goroutine once the clock has been advanced
// by d; stop cancels it and reports whether it did.
func (c *Clock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{at: c.now.Add(d), d: d, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.fired || t.gone {
			return false
		}
		t.gone = true
		return true
	}
}

// Advance moves the clock by d and starts every function that fell due,
// in the order of their times.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due, keep []*timer
	for _, t := range c.timers {
		switch {
		case t.gone:
		case !t.at.After(c.now):
			t.fired = true
			due = append(due, t)
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		go t.f()
	}
}

// Pending is the number of functions waiting that were asked for after
// d (a test tells an idle timer from a periodic check by their d).
func (c *Clock) Pending(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.gone && !t.fired && t.d == d {
			n++
		}
	}
	return n
}

// Next is the time of the earliest pending function; ok is false when
// none is pending.
func (c *Clock) Next() (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.timers {
		if !t.gone && (!ok || t.at.Before(at)) {
			at, ok = t.at, true
		}
	}
	return at, ok
}
