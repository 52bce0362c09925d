package manager

import (
	"sync"
	"time"
)

// callTimer is a tool call's timeout that stands still while the server
// waits for a person: time spent answering an elicitation form is not the
// tool's time (peers' users lose long tools to a 60 s timeout that kept
// running while they typed).
//
// One is part of each call's Op; while it runs it is on its server's list
// (entry.timers), so starting and stopping one allocates nothing.
type callTimer struct {
	fire func()
	// owner is the entry whose list holds the timer while it runs; prev
	// and next link that list, under owner's mu.
	owner      *entry
	prev, next *callTimer

	mu        sync.Mutex
	remaining time.Duration
	started   time.Time
	t         *time.Timer // nil while paused or after stop
	paused    int
	done      bool
}

// start starts the timer (again, for a call re-sent on a fresh session)
// at d, paused once for each of the paused questions open now (each
// answer resumes it once).
func (ct *callTimer) start(d time.Duration, paused int, fire func()) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.fire, ct.remaining, ct.paused, ct.done = fire, d, paused, false
	if paused == 0 {
		ct.started = time.Now()
		ct.t = time.AfterFunc(d, fire)
	}
}

func (ct *callTimer) pause() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.paused++
	if ct.paused == 1 && ct.t != nil && !ct.done {
		if ct.t.Stop() {
			ct.remaining -= time.Since(ct.started)
		} else {
			ct.done = true // already fired
		}
		ct.t = nil
	}
}

func (ct *callTimer) resume() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.paused == 0 {
		return
	}
	ct.paused--
	if ct.paused == 0 && !ct.done {
		ct.started = time.Now()
		ct.t = time.AfterFunc(max(ct.remaining, 0), ct.fire)
	}
}

func (ct *callTimer) stop() {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.done = true
	if ct.t != nil {
		ct.t.Stop()
		ct.t = nil
	}
}

// pauseCalls stops (d > 0) or restarts (d < 0) the timeouts of the
// server's calls in flight while an elicitation is open on it. go-sdk does
// not say which call a question belongs to, so every call of the server
// waits; they queue behind the question anyway.
//
// The timers are paused under e.mu, as startTimer starts one (lock order
// e.mu, then the timer's): a call's timer is reused when the call is
// re-sent, and a pause collected before the first send ended and applied
// after the re-send started (already paused for the open question) would
// count twice, and the answer's one resume would leave it paused forever.
func (m *Manager) pauseCalls(e *entry, d int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.eliciting += d
	for ct := e.timers; ct != nil; ct = ct.next {
		if d > 0 {
			ct.pause()
		} else {
			ct.resume()
		}
	}
}

// extend restarts the timeout at d because the tool reported progress: a
// tool that keeps saying it is working is not stuck (issue #11 item 2).
// The time never runs past hard, the call's absolute limit. A timer that
// already fired stays fired.
func (ct *callTimer) extend(d time.Duration, hard time.Time) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.done {
		return
	}
	rem := max(min(d, time.Until(hard)), 0)
	if ct.paused > 0 {
		ct.remaining = rem
		return
	}
	if ct.t != nil && !ct.t.Stop() {
		ct.done = true // fired already
		ct.t = nil
		return
	}
	ct.remaining, ct.started = rem, time.Now()
	ct.t = time.AfterFunc(rem, ct.fire)
}
