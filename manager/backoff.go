package manager

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/session"
)

// Backoff (issue #20 item 1). Each server has one schedule, kept on its
// entry and shared by every caller: listings, calls, the MCP front ends,
// the page and the CLI through the daemon, and the manager's own retries.
// After a failed attempt no attempt starts before the schedule's next
// time: a listing answers from the stored catalog or with the server's
// error, a call fails at once, unsent (a *BackoffError). The wait grows
// from BackoffBase to BackoffMax (1 s to 5 min by default), doubling with
// each failure in a row, with ±10 % jitter so servers that failed together
// do not come back in step; a refusal (429, 503, any status) whose Retry-After asks for
// longer gets that, up to BackoffMax. Success, a config change, an
// explicit Connect or Reconnect (the person acted: a connect, a
// finished sign-in, a new grant) and a Disconnect reset it; a session
// lost within flapWindow of being made counts as a failure, and the count
// survives until a session outlives it. Failures a person must fix
// (sign-in, permission, configuration) wait for that reset; the others
// are retried in the background when the wait ends, so a server that comes
// back is noticed without anyone asking. One log line per failure.

// Clock is the time of the backoff schedule; tests substitute a manual
// one (internal/clocktest).
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed; stop
	// cancels that and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// ErrBackoff is matched (errors.Is) by every *BackoffError.
var ErrBackoff = errors.New("the server failed recently; its next connect attempt is not due yet")

// BackoffError is a connect that failed, or that was not attempted
// because the server's last attempt failed and the next is not due yet.
// Nothing was sent. It wraps the last attempt's error, so errors.Is and
// Attribute see that failure. Its text is the same for every caller
// until the next attempt, so a listing that answers with it again is no
// news (issue #20 item 1).
type BackoffError struct {
	ServerID string
	// Err is the last attempt's failure.
	Err error
	// RetryAt is when the next attempt may start.
	RetryAt time.Time
	// Failures counts the failed attempts in a row.
	Failures int
	// Attempted: this caller's own attempt (or one it joined) failed just
	// now; false when no attempt was made (inside the window).
	Attempted bool
}

// Error is WithAdvice without advice.
func (e *BackoffError) Error() string { return e.WithAdvice("") }

// WithAdvice is the error's text with advice, the person's words for
// how to try now (a surface's: the manager names no command), inside its
// closing parenthesis.
func (e *BackoffError) WithAdvice(advice string) string {
	attempts := "attempts"
	if e.Failures == 1 {
		attempts = "attempt"
	}
	if advice != "" {
		advice = "; " + advice
	}
	return fmt.Sprintf("server %q: connect: %v (not tried again before %s, after %d failed %s in a row%s)",
		e.ServerID, e.Err, e.RetryAt.Format("15:04:05"), e.Failures, attempts, advice)
}

func (e *BackoffError) Unwrap() error { return e.Err }

// Is makes every BackoffError match ErrBackoff.
func (e *BackoffError) Is(target error) bool { return target == ErrBackoff }

// backoff is one server's schedule (guarded by entry.mu).
type backoff struct {
	// failures counts failed attempts (and sessions lost soon after they
	// were made) since the last reset.
	failures int
	// next is when the next attempt may start; zero: now.
	next time.Time
	err  error // the failure that set next
	// stop cancels the scheduled background attempt, if any; seq tells a
	// timer that fired after it was replaced or cancelled.
	stop func() bool
	seq  uint64
	// readyAt is when the current session became ready.
	readyAt time.Time
}

// flapWindow: a session lost sooner than this after it became ready
// counts as a failure and keeps the count, so a server that accepts every
// session and drops it at once is not reconnected to in a tight loop.
const flapWindow = 30 * time.Second

// countsAsFailure reports whether an attempt's error moves the schedule:
// a barrier, removal or shutdown is nobody's failure.
func countsAsFailure(err error) bool {
	return err != nil && !errors.Is(err, ErrSuperseded) && !errors.Is(err, ErrDisconnected) && !errors.Is(err, ErrDisabled) &&
		!errors.Is(err, ErrUnknownServer) && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrHibernated) &&
		!errors.Is(err, ErrConfigDrift) && !errors.Is(err, context.Canceled)
}

// retriable reports whether a failure of class c is retried in the
// background: sign-in, permission and configuration need the person.
func retriable(c Class) bool {
	return c != ClassAuth && c != ClassPermission && c != ClassConfig && c != ClassCanceled
}

// delay is the wait after n failures in a row (n ≥ 1).
func (m *Manager) delay(n int) time.Duration {
	d := m.o.BackoffBase << min(n-1, 30)
	if d <= 0 || d > m.o.BackoffMax {
		d = m.o.BackoffMax
	}
	// ±10 %, never past the maximum.
	j := time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
	return min(j, m.o.BackoffMax)
}

// failedLocked records a failure (err) in the schedule and, when the
// failure is one the manager may retry on its own, starts the next
// attempt when the wait ends. It returns the next attempt's time. e.mu
// held.
func (m *Manager) failedLocked(e *entry, err error) time.Time {
	x := e.ext()
	x.bo.failures++
	now := m.clock.Now()
	d := m.delay(x.bo.failures)
	if ra := retryAfter(err, now); ra > d {
		// The server said when to come back; a hostile one cannot keep
		// us away longer than BackoffMax, nor bring us back sooner.
		d = min(ra, m.o.BackoffMax)
	}
	x.bo.next, x.bo.err = now.Add(d), err
	m.cancelRetryLocked(e)
	r := Attribute(err)
	if retriable(r.Class) {
		x.bo.seq++
		seq := x.bo.seq
		x.bo.stop = m.clock.AfterFunc(d, func() { m.retryDue(e, seq) })
		m.log.Info("connect failed; trying again later", "server", e.id, "in", d.Round(time.Millisecond), "failures", x.bo.failures, "err", err)
	} else {
		m.log.Info("connect failed; waiting for the person", "server", e.id, "class", r.Class, "failures", x.bo.failures, "err", err)
	}
	return x.bo.next
}

// cancelRetryLocked cancels the scheduled background attempt. e.mu held.
func (m *Manager) cancelRetryLocked(e *entry) {
	x := e.peek()
	if x == nil {
		return // never scheduled
	}
	x.bo.seq++
	if x.bo.stop != nil {
		x.bo.stop()
		x.bo.stop = nil
	}
}

// resetBackoffLocked forgets the failures: the next attempt may start
// now. e.mu held.
func (m *Manager) resetBackoffLocked(e *entry) {
	m.cancelRetryLocked(e)
	x := e.peek()
	if x == nil {
		return // nothing to forget
	}
	x.bo.failures, x.bo.next, x.bo.err = 0, time.Time{}, nil
}

// waitingLocked returns the error of a server inside its backoff window,
// nil when an attempt may start now. e.mu held.
func (m *Manager) waitingLocked(e *entry) *BackoffError {
	x := e.peek()
	if x == nil || x.bo.err == nil || x.bo.next.IsZero() || !m.clock.Now().Before(x.bo.next) {
		return nil
	}
	return &BackoffError{ServerID: e.id, Err: x.bo.err, RetryAt: x.bo.next, Failures: x.bo.failures}
}

// retryDue starts the scheduled attempt, unless the schedule moved on
// (seq) or the server needs none any more.
func (m *Manager) retryDue(e *entry, seq uint64) {
	if m.ctx.Err() != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.ext()
	if x.bo.seq != seq {
		return
	}
	x.bo.stop = nil
	if e.removed || !e.conf.enabled || e.sess != nil || e.state == StateDisconnected || e.state == StateIdle {
		return
	}
	m.startAttemptLocked(e, true)
}

// RetryAt is when the server's next connect attempt may start, and zero
// when one may start now (or the server is connected).
func (m *Manager) RetryAt(id string) time.Time {
	e := m.entry(id)
	if e == nil {
		return time.Time{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.waitingLocked(e) == nil {
		return time.Time{}
	}
	return e.ext().bo.next
}

// ResetBackoff forgets the server's failures, so the next attempt may
// start now: for what the person did that may fix the failure (a finished
// sign-in), announced before anything connects.
func (m *Manager) ResetBackoff(id string) {
	e := m.entry(id)
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m.resetBackoffLocked(e)
}

// retryAfter is the wait a refusal asked for with Retry-After (RFC 9110
// §10.2.3: delay-seconds or an HTTP date), zero when there is none or it
// cannot be read.
func retryAfter(err error, now time.Time) time.Duration {
	var hs *session.HTTPStatusError
	if !errors.As(err, &hs) || hs.RetryAfter == "" {
		return 0
	}
	return parseRetryAfter(hs.RetryAfter, now)
}

// maxRetryAfterLen bounds the header value read: a date is 29 bytes.
const maxRetryAfterLen = 64

// parseRetryAfter reads a Retry-After value: a whole number of seconds
// (digits only) or an HTTP date; zero for anything else, a date in the
// past, or a value too long to be either.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > maxRetryAfterLen {
		return 0
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return 0 // not digits only, or beyond any sane wait
		}
		return time.Duration(n) * time.Second
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0
	}
	if d := t.Sub(now); d > 0 {
		return d
	}
	return 0
}
