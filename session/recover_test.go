package session

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// heldBody is a response body whose first Read waits until release is
// closed (or the request's context ends), after a send on held: it keeps
// go-sdk inside the request between the response's arrival, which every
// layer of the stack has seen, and the request's return.
type heldBody struct {
	io.ReadCloser
	ctx           context.Context
	once          sync.Once
	held, release chan struct{}
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.once.Do(func() { b.held <- struct{}{} })
	select {
	case <-b.release:
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	}
	return b.ReadCloser.Read(p)
}

// SPEC §9 A5, the interleaving behind a flaky manager test
// (TestSessionNotFoundResendsOnce): the 404 on a call's own POST ends the
// go-sdk connection, and the owner closes the session (its watch) while
// the call is still returning. The call's context is its owner's Request,
// which the owner re-sends the call under on a fresh session; the close
// must leave it alone, or the one re-send is skipped (the Request ended)
// and the call is reported as never run instead. Here the 404's body is
// held so that the close comes exactly then.
func TestSessionNotFoundLeavesCallersRequest(t *testing.T) {
	var forget atomic.Bool
	f := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if forget.Load() && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" {
			http.Error(w, "session not found", http.StatusNotFound)
			return false
		}
		return true
	}})
	held, release := make(chan struct{}, 1), make(chan struct{})
	var hold atomic.Bool
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(req)
		if err == nil && req.Method == http.MethodPost && resp.StatusCode == http.StatusNotFound && hold.CompareAndSwap(true, false) {
			resp.Body = &heldBody{ReadCloser: resp.Body, ctx: req.Context(), held: held, release: release}
		}
		return resp, err
	})
	s := connect(t, f, Options{HTTPClient: &http.Client{Transport: base}})

	r := new(Request)
	r.Init(context.Background())
	defer r.End()
	forget.Store(true)
	hold.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(r, "echo", json.RawMessage(`{"text":"hi"}`), CallOptions{OperationID: "op-404"})
		done <- err
	}()
	testkit.Recv(t, "the 404 on the call's POST", held)

	// The owner's watch closes the session now.
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	testkit.WaitFor(t, "the close to end the calls in flight", func() bool {
		s.calls.Lock()
		defer s.calls.Unlock()
		return s.closing
	})
	if r.Err() != nil {
		t.Errorf("the close ended the caller's Request of a call the server answered 404 (cause %v); its re-send could not run", context.Cause(r))
	}
	close(release)
	if err := testkit.Recv(t, "the call's error", done); !errors.Is(err, ErrSessionNotFound) {
		t.Errorf("call: %v; want ErrSessionNotFound", err)
	}
	testkit.Recv(t, "the close", closed)
	if r.Err() != nil {
		t.Errorf("the caller's Request ended (cause %v); want it left to its owner", context.Cause(r))
	}
	if n := f.Executions("echo"); n != 0 {
		t.Errorf("echo ran %d times; want 0", n)
	}
}

// SPEC §9 A5: only the POST that carried the request itself proves, with
// a 404, that the request never ran. The request's slot travels with
// every POST made under its context, go-sdk's notifications/cancelled of
// a call included (sent on its own goroutine after the cancel, when the
// call may long have run): its 404 says nothing about the call. go-sdk
// re-sends the request itself after an OAuth refresh (401), and that
// POST's 404 counts as the first's would.
func TestSessionNotFoundOnlyOnTheRequestsPOST(t *testing.T) {
	type sent struct {
		method string
		status int
	}
	cases := []struct {
		name    string
		posts   []sent
		missing bool
	}{
		{"the call's POST", []sent{{"tools/call", 404}}, true},
		{"a prompt's POST", []sent{{"prompts/get", 404}}, true},
		{"the cancel of a call that was sent", []sent{{"tools/call", 200}, {"notifications/cancelled", 404}}, false},
		{"the cancel of a call still being sent", []sent{{"notifications/cancelled", 404}}, false},
		{"the call again after an OAuth refresh", []sent{{"tools/call", 401}, {"tools/call", 404}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			statuses := make([]int, 0, len(tc.posts))
			for _, p := range tc.posts {
				statuses = append(statuses, p.status)
			}
			url, _ := layerServer(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				code := statuses[0]
				statuses = statuses[1:]
				mu.Unlock()
				w.WriteHeader(code)
			})
			rt := &statusTransport{Base: http.DefaultTransport, PassAuth: true}
			ctx, slot := withRequestSlot(context.Background())
			for _, p := range tc.posts {
				resp, err := post(t, rt, ctx, url, p.method, http.Header{"Mcp-Session-Id": {"s-1"}})
				if err != nil {
					t.Fatalf("%s: %v", p.method, err)
				}
				resp.Body.Close()
			}
			if got := slot.sessionMissing.Load(); got != tc.missing {
				t.Fatalf("sessionMissing = %t; want %t", got, tc.missing)
			}
		})
	}
}
