package session

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Calls reuse the pool's connections although every layer above the
// session cancels its context as soon as the answer is in: go-sdk reads
// the rest of the response stream after handing the answer over, and a
// request context cancelled before that made net/http drop the
// connection, so calls dialled new ones (issue #12). The same holds when
// the call's context is its owner's Request (the manager's Op), which its
// owner ends right after the answer.
func TestCallsReuseConnections(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	for _, mode := range []string{"own context", "Request"} {
		t.Run(mode, func(t *testing.T) {
			var dials atomic.Int64
			d := &net.Dialer{}
			tr := &http.Transport{
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return d.DialContext(ctx, network, addr)
				},
				MaxIdleConnsPerHost: 8,
			}
			defer tr.CloseIdleConnections()
			s := connect(t, f, Options{HTTPClient: &http.Client{Transport: tr}})
			before := dials.Load()
			const calls = 300
			for i := range calls {
				ctx, cancel := context.WithCancel(context.Background())
				var end func() = cancel
				if mode == "Request" {
					r := new(Request)
					r.Init(ctx)
					ctx, end = r, func() { r.End(); cancel() }
				}
				res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`), CallOptions{})
				end() // what the manager and the engine do right after
				if err != nil || res.IsError {
					t.Fatalf("call %d: %v %+v", i, err, res)
				}
			}
			if n := dials.Load() - before; n > 3 {
				t.Fatalf("%d calls dialled %d new connections; want them to reuse the pool's", calls, n)
			}
		})
	}
}

// A Request is the call's one context: the session sends the call under
// it, Cancel ends the call with its cause, and a session that closes
// under the call ends it with ErrClosed (its owner tells the two apart by
// the cause). A second call on the same Request (a re-send) runs under a
// context of its own inside it.
func TestRequestIsTheCallsContext(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := connect(t, f, Options{})
	errMine := errors.New("mine")

	r := new(Request)
	r.Init(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(r, "slow", json.RawMessage(`{"ms":60000}`), CallOptions{})
		done <- err
	}()
	testkit.WaitFor(t, "the slow call to run", func() bool { return f.Executions("slow") == 1 })
	r.Cancel(errMine)
	if err := <-done; !errors.Is(err, context.Canceled) || !errors.Is(context.Cause(r), errMine) {
		t.Fatalf("cancelled call: %v (cause %v)", err, context.Cause(r))
	}
	testkit.WaitFor(t, "the server to see the cancel", func() bool { return f.Cancelled("slow") == 1 })
	r.End()

	r = new(Request)
	r.Init(context.Background())
	defer r.End()
	if res, err := s.CallTool(r, "echo", json.RawMessage(`{"text":"a"}`), CallOptions{}); err != nil || res.IsError {
		t.Fatalf("first call: %v %+v", err, res)
	}
	if res, err := s.CallTool(r, "echo", json.RawMessage(`{"text":"b"}`), CallOptions{}); err != nil || res.IsError {
		t.Fatalf("a second call on the same Request: %v %+v", err, res)
	}
	if r.Err() != nil {
		t.Fatalf("the calls ended their owner's Request: %v", context.Cause(r))
	}

	r2 := new(Request)
	r2.Init(context.Background())
	defer r2.End()
	go func() {
		_, err := s.CallTool(r2, "slow", json.RawMessage(`{"ms":60000}`), CallOptions{})
		done <- err
	}()
	testkit.WaitFor(t, "the second slow call to run", func() bool { return f.Executions("slow") == 2 })
	s.Close()
	if err := <-done; !errors.Is(err, ErrClosed) || !errors.Is(context.Cause(r2), ErrClosed) {
		t.Fatalf("call when the session closed: %v (cause %v)", err, context.Cause(r2))
	}
}

// A call whose caller's context ends while it runs is cancelled (the
// call's own context follows the caller's) with the caller's error.
func TestCallFollowsCallerContext(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := connect(t, f, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.CallTool(ctx, "slow", json.RawMessage(`{"ms":60000}`), CallOptions{})
	if err != context.DeadlineExceeded {
		t.Fatalf("err = %v, want context.DeadlineExceeded (the caller's)", err)
	}
	// Well before the server's answer (60 s), with room for a loaded machine.
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the call took %s after its caller's deadline", d)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"x"}`), CallOptions{}); err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := f.Executions("echo"); n != 0 {
		t.Fatalf("a call cancelled before it was sent ran %d times", n)
	}
}

// A server that keeps a call's response stream open after the answer does
// not keep it for long: the stream is ended streamGrace after the call.
func TestLingeringStreamEnded(t *testing.T) {
	ended := make(chan time.Time, 1)
	h := startHostile(t, func(w http.ResponseWriter, method, tool string, id json.RawMessage) bool {
		if method != "tools/call" || tool != "linger" {
			return false
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "event: message\ndata: "+resultPrefix(id)+"ok"+resultSuffix+"\n\n")
		w.(http.Flusher).Flush()
		// Keep the stream open until the client hangs up.
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			if _, err := io.WriteString(w, ": still here\n\n"); err != nil {
				break
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				break
			}
		}
		ended <- time.Now()
		return true
	})
	s := connect(t, h.Server, Options{})
	res, err := s.CallTool(context.Background(), "linger", json.RawMessage(`{}`), CallOptions{})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	answered := time.Now()
	select {
	case at := <-ended:
		// Generous for a loaded machine, far below the server's own 5 min.
		if d := at.Sub(answered); d > streamGrace+30*time.Second {
			t.Fatalf("the stream was ended %s after the answer; want about %s", d, streamGrace)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("the stream the server kept open was never ended")
	}
}

func TestRandomIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewConnectionID()
		if len(id) != 18 || id[:2] != "c-" || strings.Trim(id[2:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
}

// ValidateCallResult's walk accepts exactly what json.Marshal accepts.
func TestValidateStructuredContentLikeMarshal(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for range 2 * maxPlainDepth {
		deep = []any{deep}
	}
	for _, v := range []any{
		map[string]any{"a": []any{1.5, "x", true, nil, map[string]any{}}},
		map[string]any{"n": math.NaN()},
		[]any{math.Inf(1)},
		cyclic,
		deep,
		json.Number("12"),
		json.Number("x"),
		json.RawMessage(`{"a":1}`),
		json.RawMessage(`{`),
		map[string]any{"f": func() {}},
		struct{ A int }{1},
	} {
		_, merr := json.Marshal(v)
		err := ValidateCallResult(&mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: v})
		if (err == nil) != (merr == nil) {
			t.Errorf("%T: ValidateCallResult = %v, json.Marshal = %v", v, err, merr)
		}
	}
}

// BenchmarkCallTool makes one echo call per op through a Session and,
// in the same run and on the same loopback fixture, through a bare go-sdk
// ClientSession: allocs/op of "session" minus those of "bare" is what the
// session layer (its HTTP stack, limits, request log) costs per call. The
// server runs in this process, so both include its allocations.
func BenchmarkCallTool(b *testing.B) {
	f, err := fixture.Start(fixture.Options{NoRecord: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	b.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	ctx := context.Background()

	// The session's requests go through a host-permission guard in
	// production; passGuard is one that allows every origin, so the
	// session takes the same path without a store behind it.
	s, err := Connect(ctx, Options{HTTPClient: &http.Client{Transport: passGuard{tr}}, OnExchange: func(Exchange) {},
		Server: config.Server{ID: "b", URL: f.URL(), Auth: config.Auth{Kind: config.AuthNone}, Enabled: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	bare, err := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "v0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: f.URL(), HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bare.Close() })

	args := json.RawMessage(`{"text":"hi"}`)
	b.Run("session", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := s.CallTool(ctx, "echo", args, CallOptions{}); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bare.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// passGuard is a hostperm.PurposeRoundTripper that allows every request.
type passGuard struct{ base http.RoundTripper }

func (g passGuard) RoundTrip(req *http.Request) (*http.Response, error) { return g.base.RoundTrip(req) }

func (g passGuard) RoundTripPurpose(req *http.Request, _ hostperm.Purpose, _ string) (*http.Response, error) {
	return g.base.RoundTrip(req)
}

// The request log names every POST's method; a tool call's own POST is
// named without reading its body (postMethod), and the notifications/
// cancelled of a cancelled call, sent under the call's context too, is
// named as itself.
func TestRequestLogNamesCallPOSTs(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	var mu sync.Mutex
	var posts []string
	s := connect(t, f, Options{OnExchange: func(x Exchange) {
		if x.HTTPMethod == http.MethodPost {
			mu.Lock()
			posts = append(posts, x.RPCMethod)
			mu.Unlock()
		}
	}})
	logged := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := posts
		posts = nil
		return out
	}
	logged()
	for _, mode := range []string{"own context", "Request"} {
		ctx := context.Background()
		if mode == "Request" {
			r := new(Request)
			r.Init(ctx)
			defer r.End()
			ctx = r
		}
		if _, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`), CallOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := logged(); !slices.Equal(got, []string{"tools/call"}) {
			t.Fatalf("%s: POSTs logged as %q, want one tools/call", mode, got)
		}
	}
	r := new(Request)
	r.Init(context.Background())
	defer r.End()
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(r, "slow", json.RawMessage(`{"ms":60000}`), CallOptions{})
		done <- err
	}()
	testkit.WaitFor(t, "the slow call to run", func() bool { return f.Executions("slow") == 1 })
	r.Cancel(errors.New("stop"))
	<-done
	var got []string
	testkit.WaitFor(t, "the cancel in the log", func() bool {
		got = append(got, logged()...)
		return len(got) >= 2
	})
	if !slices.Equal(got, []string{"tools/call", "notifications/cancelled"}) {
		t.Fatalf("a cancelled call's POSTs logged as %q", got)
	}
}
