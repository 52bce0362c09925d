package session

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reqCtx is the context go-sdk gets for one of our requests (a call, a
// prompt, a read). It has the caller's values and deadline and ends when
// the caller's context ends (with its cause) or when cancel is called, but
// not when the request is over and the caller's layers release their own
// contexts: go-sdk reads the rest of a request's response stream (up to
// its end, which makes the connection reusable) after it has handed the
// answer over, and a context cancelled in between made net/http drop the
// connection, so the next request dialled a new one (issue #12).
//
// A response stream the server keeps open after its answer is ended
// streamGrace later (see Session.linger), so it cannot hold a connection
// for long.
type reqCtx struct {
	context.Context // a cancelCtx over det
	det             detached
	cancel          context.CancelCauseFunc
	stop            func() bool // unregisters from the caller's context (nil: never ends)
	slot            requestSlot
}

// streamGrace is how long a request's response stream may stay open after
// its answer before it is ended.
const streamGrace = time.Second

// reapEvery is the shortest time between two rounds of the reaper.
const reapEvery = streamGrace / 4

// errRequestOver ends a response stream the server kept open.
var errRequestOver = errors.New("the request is over")

func (r *reqCtx) init(parent context.Context) {
	r.det.parent = parent
	cctx, cancel := context.WithCancelCause(&r.det)
	r.Context, r.cancel = cctx, cancel
	r.slot.parent = parent
	if parent.Done() == nil {
		return // the caller's context never ends
	}
	// The cause of the caller's context, as a child context would have
	// it. AfterFunc runs this on its own goroutine, a moment after the
	// caller's context ends: requests check the caller's context itself
	// before they are sent (callerErr, CallTool).
	r.stop = context.AfterFunc(parent, func() { cancel(context.Cause(parent)) })
}

func (r *reqCtx) Value(key any) any {
	if _, ok := key.(requestSlotKey); ok {
		return &r.slot
	}
	return r.Context.Value(key)
}

// end is called when the request has its answer (or failed): it detaches
// from the caller's context, and hands a response stream still open to
// the session's reaper.
func (r *reqCtx) end(s *Session) {
	if r.stop != nil {
		r.stop()
	}
	// go-sdk hands the answer over before it reads the stream's end,
	// which has usually arrived with the answer: let it read it rather
	// than hand the stream to the reaper.
	for i := 0; i < endYields && r.slot.streams.Load() > 0; i++ {
		runtime.Gosched()
	}
	if r.slot.streams.Load() > 0 && r.Err() == nil {
		s.linger(r)
	}
}

// Request is the one cancellation context of one tool call (issue #21
// item 2), made by the caller that owns the call (the manager's Op) and
// used by CallTool as the request's context, without one of its own. It
// has the caller's values and deadline, and it ends when the caller's
// context ends (with its cause), on Cancel (each canceller with its own
// cause: a cancel of the operation, its tool time, ErrClosed when the
// session closes under the call) and on End, except that a response
// stream still open when the call returned is left to finish reading
// for a moment first, as the session's own request contexts are (see
// reqCtx: a context cancelled while go-sdk reads the stream's end made
// net/http drop the connection).
type Request struct {
	reqCtx
	// used is set by the first CallTool on it; another one (a re-send
	// on a fresh session) makes a context of its own under it.
	used atomic.Bool
	// sess is the session that ran the call on it (set when the call
	// returns): End hands it a response stream still open.
	sess atomic.Pointer[Session]
}

// Init makes r the context of a call under parent. r must not be used
// before Init, nor copied after.
func (r *Request) Init(parent context.Context) {
	r.init(parent)
	// The call's own end is the caller's end as the session sees it
	// (callerErr): whoever cancelled it, the call was cancelled.
	r.slot.parent = &r.reqCtx
}

// Value is the parent's value: the request's slot travels only with the
// call's own request (CallTool hands go-sdk r's reqCtx), not with what
// else is done under r (a connect first, say).
func (r *Request) Value(key any) any { return r.reqCtx.Context.Value(key) }

// Cancel ends the call's context now with cause; the first cause stays.
func (r *Request) Cancel(cause error) { r.cancel(cause) }

// End releases the context once the call is over: it stops following the
// caller's context and ends, unless go-sdk still reads the call's
// response stream: then the session ends it when the stream ends, or
// streamGrace later. By the time the call's owner ends it (its result
// converted) the stream has nearly always ended, so the call costs no
// yield for it (reqCtx.end yields).
func (r *Request) End() {
	if r.stop != nil {
		r.stop()
	}
	if s := r.sess.Load(); s != nil && r.slot.streams.Load() > 0 && r.Err() == nil {
		s.linger(&r.reqCtx)
		return
	}
	r.cancel(nil)
}

// claim reports whether CallTool may run a call on r as its own context:
// the first time only.
func (r *Request) claim() bool { return r.used.CompareAndSwap(false, true) }

// finish is end for a claimed Request: the call is over, but r follows
// the caller's context until its owner's End, which hands what is left of
// its response stream to s.
func (r *Request) finish(s *Session) { r.sess.Store(s) }

// endYields bounds the yields end makes for a stream's end.
const endYields = 4

// callerErr is err as go-sdk returns it on a context that is the caller's
// own: once the caller's context has ended, its Err (go-sdk checks the
// context before the error), unless the connection was closed.
func (r *reqCtx) callerErr(err error) error {
	if err == nil || errors.Is(err, mcp.ErrConnectionClosed) {
		return err
	}
	if perr := r.slot.parent.Err(); perr != nil {
		return perr
	}
	return err
}

// detached is a context's values and deadline without its cancellation:
// context.WithoutCancel, keeping the deadline (net/http and dialers bound
// their waits by it).
type detached struct{ parent context.Context }

func (d *detached) Deadline() (time.Time, bool) { return d.parent.Deadline() }
func (d *detached) Done() <-chan struct{}       { return nil }
func (d *detached) Err() error                  { return nil }
func (d *detached) Value(key any) any           { return d.parent.Value(key) }

// lingerer ends the response streams that servers keep open after their
// answers, streamGrace after the answer, with one timer per session.
type lingerer struct {
	mu      sync.Mutex
	entries []lingerEntry // oldest first
	timer   *time.Timer
	closed  bool
}

type lingerEntry struct {
	r  *reqCtx
	at time.Time // when to end it
}

// linger ends r's open response streams streamGrace from now, unless
// they end by themselves first.
func (s *Session) linger(r *reqCtx) {
	l := &s.lingering
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		r.cancel(ErrClosed)
		return
	}
	l.entries = append(l.entries, lingerEntry{r, time.Now().Add(streamGrace)})
	if l.timer == nil {
		l.timer = time.AfterFunc(streamGrace, s.reapLingering)
	}
}

func (s *Session) reapLingering() {
	l := &s.lingering
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	n := 0
	for n < len(l.entries) && !l.entries[n].at.After(now) {
		if e := l.entries[n]; e.r.slot.streams.Load() > 0 {
			e.r.cancel(errRequestOver)
		}
		l.entries[n] = lingerEntry{}
		n++
	}
	l.entries = l.entries[:copy(l.entries, l.entries[n:])]
	if len(l.entries) == 0 || l.closed {
		l.timer = nil
		return
	}
	// At most a few rounds a second: a stream ends up to reapEvery late.
	l.timer.Reset(max(l.entries[0].at.Sub(now), reapEvery))
}

// closeLingering ends every lingering stream (the session is closing).
func (s *Session) closeLingering() {
	l := &s.lingering
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, e := range l.entries {
		e.r.cancel(ErrClosed)
	}
	l.entries = nil
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}
