package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// ErrSessionNotFound marks a request whose own POST the server answered
// 404 with our session id: the server no longer knows the session, so it
// provably never ran the request. It is the one failure after sending that
// may be re-sent, once, on a fresh session (SPEC §9 A5). A 404 on any other
// request (a resumption GET, the standalone stream) proves nothing about a
// call and never produces this error.
var ErrSessionNotFound = errors.New("the server no longer knew the session (HTTP 404 on the request itself), so it never ran the request")

// ErrStreamLost ends a session whose standalone stream (the server's
// notifications) broke and could not be kept: the server went away,
// refused our credentials or forgot the session. The owner reconnects.
var ErrStreamLost = errors.New("the server's notification stream was lost")

// requestSlot travels in the context of one request (a call, a prompt, a
// read) down to the transport, which marks what happened to the POST that
// carried it.
type requestSlot struct {
	// sessionMissing is set when the POST that carried the request itself
	// (not a notification sent under its context) was answered 404 with
	// our session id (statusTransport).
	sessionMissing atomic.Bool
	// parent is the caller's context of a reqCtx (nil otherwise).
	parent context.Context
	// streams counts the request's response streams not yet ended.
	streams atomic.Int32
	// call is the operation id when the request is a tools/call: a
	// server request on its streams belongs to that call (related.go).
	// Set before the request is sent, read only after.
	call string
	// posted is set by the first POST made under the slot, which for a
	// tools/call is the call itself (see postMethod).
	posted atomic.Bool
}

type requestSlotKey struct{}

func withRequestSlot(ctx context.Context) (context.Context, *requestSlot) {
	c := &slotCtx{Context: ctx}
	return c, &c.slot
}

// slotCtx carries a requestSlot: context.WithValue with the slot in the
// same allocation.
type slotCtx struct {
	context.Context
	slot requestSlot
}

func (c *slotCtx) Value(key any) any {
	if _, ok := key.(requestSlotKey); ok {
		return &c.slot
	}
	return c.Context.Value(key)
}

func requestSlotFrom(ctx context.Context) *requestSlot {
	s, _ := ctx.Value(requestSlotKey{}).(*requestSlot)
	return s
}

// notRun turns the error of a request whose own POST got 404 into one
// that says so; other errors pass unchanged.
func notRun(slot *requestSlot, what string, err error) error {
	if err == nil || slot == nil || !slot.sessionMissing.Load() {
		return err
	}
	return fmt.Errorf("%s: %w: %w", what, ErrSessionNotFound, err)
}

// standaloneTrouble reports whether the outcome of a standalone stream GET
// means the stream cannot be kept and go-sdk will not say so: a network
// failure (go-sdk retries silently for a long while) or credentials
// refused. A GET carrying Last-Event-ID resumes a call's stream, which
// go-sdk handles.
func standaloneTrouble(req *http.Request, resp *http.Response, err error) error {
	if !isStandalone(req) {
		return nil
	}
	if err != nil {
		if req.Context().Err() != nil {
			return nil // we closed it
		}
		return err
	}
	// go-sdk itself ends the session on a 404 or 5xx once the stream ran,
	// and reads any other 4xx on the first GET as "no stream here" (many
	// servers answer 404 where they mean 405). Only a 401 needs us: go-sdk
	// drops that stream silently, though a fresh session with a refreshed
	// token would get it back.
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("HTTP 401 on the notification stream")
	}
	return nil
}

// isStandalone reports whether req opens the standalone stream (a GET
// without Last-Event-ID; with one, it resumes a call's stream).
func isStandalone(req *http.Request) bool {
	return req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") == ""
}

// streamLost ends the session because its standalone stream broke; the
// manager sees Done and reconnects, so the state says "reconnecting"
// instead of "ready" while the server is away, and a fresh session opens
// a fresh stream (go-sdk v1.8.0 cannot reopen one itself after a 401).
func (s *Session) streamLost(cause error) {
	s.mu.Lock()
	if s.closed || s.lost {
		s.mu.Unlock()
		return
	}
	if !s.ready {
		// go-sdk opens the stream during the handshake; act once the
		// session is handed over (Connect calls streamLost again).
		if s.troubleEarly == nil {
			s.troubleEarly = cause
		}
		s.mu.Unlock()
		return
	}
	if s.keepWithoutStream {
		// The owner saw the stream fail on earlier sessions too: keep the
		// session, and poll the catalog instead (pollCatalog).
		s.noStream = true
		s.mu.Unlock()
		return
	}
	s.lost = true
	if s.err == nil {
		s.err = fmt.Errorf("%w: %w", ErrStreamLost, cause)
	}
	s.mu.Unlock()
	s.calls.Lock()
	if len(s.ops) > 0 {
		// Calls in flight may well finish (a 401 on the stream says
		// nothing about them): end the session after the last one.
		s.endAfterCalls = true
		s.calls.Unlock()
		s.log.Info("notification stream lost; the session ends after the calls in flight", "err", cause)
		return
	}
	s.calls.Unlock()
	s.end()
}

// end closes the go-sdk session of a session whose stream was lost.
func (s *Session) end() {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	s.log.Info("notification stream lost; ending the session so it reconnects")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.cs.Close()
	}()
}

// StreamOpened reports whether the server's standalone stream was opened
// (answered 200) in this session.
func (s *Session) StreamOpened() bool { return s.streamOpen.Load() }

// IdleWindow is how long after its last request a session counts as in
// use, for the catalog poll of a session without a stream.
const IdleWindow = 10 * time.Minute

// pollCatalog re-lists the catalog every interval while the session has
// no working notification stream (the server offers none, or it could not
// be kept) and the session is in use: list_changed cannot reach us then.
func (s *Session) pollCatalog(interval time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		without := s.noStream || !s.streamOpen.Load()
		s.mu.Unlock()
		if !without || time.Since(time.Unix(0, s.lastUse.Load())) > IdleWindow {
			continue
		}
		var kinds []Kind
		for _, k := range AllKinds {
			if supported(s.cs.InitializeResult().Capabilities, k) {
				kinds = append(kinds, k)
			}
		}
		s.Refresh(kinds...)
	}
}

// used records that the session was used now (for pollCatalog).
func (s *Session) used() { s.lastUse.Store(time.Now().UnixNano()) }
