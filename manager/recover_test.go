package manager

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/session"
)

// Issue #11 item 1, SPEC §9 A1: the test server is killed and restarted.
// While it is down the server is not "ready" (it is reconnecting, with the
// reason) and a call fails at once, unsent (issue #20 item 1: no attempt
// inside the backoff window); the schedule reconnects by itself after the
// restart, and the next call runs exactly once; a call that may have run
// is still never re-sent.
func TestRestartRecovers(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("fx", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("fx") == StateReady })
	testkit.WaitFor(t, "the notification stream", func() bool { return f.StandaloneStreams() > 0 })

	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the state to leave ready while the server is down", func() bool { return e.state("fx") != StateReady })
	// Through several failed attempts it keeps saying it is reconnecting.
	for range 20 {
		st, _ := e.m.ServerStatusOf("fx")
		if st.State != StateReconnecting || st.Reason == nil || st.Reason.Code != CodeNetwork || !strings.HasPrefix(st.Reason.Message, reconnectingPrefix) {
			t.Fatalf("while down: state %s, reason %+v; want reconnecting, the loss's reason", st.State, st.Reason)
		}
		time.Sleep(30 * time.Millisecond) // the backoff is 20–200 ms here
	}

	ctx := testkit.Context(t)
	_, err := e.m.CallTool(ctx, "fx", "echo", argsEcho, session.CallOptions{OperationID: "while-down"})
	var ce *CallError
	if !errors.As(err, &ce) || ce.MaybeExecuted || !errors.Is(err, ErrBackoff) {
		t.Fatalf("a call while the server is down: %v; want an unsent CallError of the backoff", err)
	}
	if err := f.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the schedule to reconnect by itself", func() bool { return e.state("fx") == StateReady })
	if _, err := e.m.CallTool(ctx, "fx", "echo", argsEcho, session.CallOptions{OperationID: "after-restart"}); err != nil {
		t.Fatalf("the first call after the reconnect failed: %v", err)
	}
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times; want exactly 1", n)
	}

	// R4.1 still holds: a call whose connection drops after it ran is
	// reported as maybe run and never re-sent.
	f.DropNextCall()
	_, err = e.m.CallTool(ctx, "fx", "echo", argsEcho, session.CallOptions{OperationID: "dropped"})
	if !errors.As(err, &ce) || !ce.MaybeExecuted {
		t.Fatalf("dropped call: %v; want a CallError that may have run", err)
	}
	if n := f.Executions("echo"); n != 2 {
		t.Fatalf("echo ran %d times after the dropped call; want 2 (never re-sent)", n)
	}
}

// SPEC §9 A5: a call whose own POST is answered 404 (the server forgot the
// session) never ran; it is re-sent once on a fresh session and runs
// exactly once. Prompts and reads get the same treatment.
func TestSessionNotFoundResendsOnce(t *testing.T) {
	var forget atomic.Int64 // POSTs of these methods still to answer with 404
	var method atomic.Value
	method.Store("")
	f := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") == "" {
			return true
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string `json:"method"`
		}
		json.Unmarshal(body, &m)
		if m.Method == method.Load().(string) && forget.Add(-1) >= 0 {
			http.Error(w, "session not found", http.StatusNotFound)
			return false
		}
		return true
	}})
	e := newEnv(t, srvCfg("fx", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("fx") == StateReady })
	ctx := testkit.Context(t)
	inits := func() int {
		n := 0
		for _, r := range f.Requests() {
			if r.RPCMethod == "initialize" {
				n++
			}
		}
		return n
	}
	before := inits()

	method.Store("tools/call")
	forget.Store(1)
	if _, err := e.m.CallTool(ctx, "fx", "echo", argsEcho, session.CallOptions{OperationID: "op-404"}); err != nil {
		t.Fatalf("the call was not re-sent after the 404: %v", err)
	}
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times; want exactly 1", n)
	}
	if n := inits() - before; n != 1 {
		t.Fatalf("%d new sessions; want 1 (the fresh session the call was re-sent on)", n)
	}

	// Re-sent once only: a server that forgets every session gets two
	// tries, and the error says the call never ran.
	forget.Store(2)
	_, err := e.m.CallTool(ctx, "fx", "echo", argsEcho, session.CallOptions{OperationID: "op-404-twice"})
	var ce *CallError
	if !errors.As(err, &ce) || ce.MaybeExecuted || !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("twice forgotten: %v; want a CallError that did not run", err)
	}
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times; want still 1", n)
	}

	// The twice-forgotten session counts as a failure in the backoff
	// (issue #20 item 1); the person's connect starts afresh.
	if err := e.m.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	method.Store("prompts/get")
	forget.Store(1)
	if _, err := e.m.GetPrompt(ctx, "fx", "greet", map[string]string{"name": "Ada"}); err != nil {
		t.Fatalf("prompt after a 404: %v", err)
	}
}

// Issue #11 item 1: a standalone stream refused once with 401 (go-sdk
// drops it silently and never reopens it) ends the session; the fresh
// session reopens the stream, and a later list_changed arrives.
func TestStreamRefusedOnceIsReopened(t *testing.T) {
	var refuse atomic.Int64
	refuse.Store(1)
	f := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && refuse.Add(-1) >= 0 {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "token expired", http.StatusUnauthorized)
			return false
		}
		return true
	}})
	e := newEnv(t, srvCfg("fx", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("fx") == StateReady })
	testkit.WaitFor(t, "the stream to be reopened", func() bool { return f.StandaloneStreams() > 0 })
	testkit.WaitFor(t, "ready after the reconnect", func() bool { return e.state("fx") == StateReady })
	f.AddTool("late")
	testkit.WaitFor(t, "the later list_changed", func() bool {
		c, err := e.m.Catalog(testkit.Context(t), "fx")
		if err != nil {
			return false
		}
		for _, tl := range c.Tools {
			if tl.Name == "late" {
				return true
			}
		}
		return false
	})
}

// Issue #11 item 1: where no stream can be kept - a server that refuses it
// every time, or a stateless server that offers none - the session is kept
// (no endless reconnects) and the catalog is checked periodically while
// the server is in use, so a new tool still arrives.
func TestNoStreamPollsCatalog(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    func(*atomic.Int64) fixture.Options
	}{
		{"refused every time", func(gets *atomic.Int64) fixture.Options {
			return fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodGet {
					gets.Add(1)
					http.Error(w, "no", http.StatusUnauthorized)
					return false
				}
				return true
			}}
		}},
		{"stateless, no stream", func(*atomic.Int64) fixture.Options { return fixture.Options{Stateless: true} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gets atomic.Int64
			f := testkit.StartFixture(t, tc.o(&gets))
			st := newStore(t, t.TempDir())
			if err := st.AddServer(testkit.Context(t), srvCfg("fx", f.URL(), true)); err != nil {
				t.Fatal(err)
			}
			m := New(Options{Store: st, Logger: testkit.Logger(t), BackoffBase: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
				HandshakeTimeout: 10 * time.Second, CatalogPoll: 100 * time.Millisecond})
			t.Cleanup(func() { m.Close() })
			if err := m.Start(testkit.Context(t)); err != nil {
				t.Fatal(err)
			}
			ready := func() bool { st, _ := m.ServerStatusOf("fx"); return st.State == StateReady }
			testkit.WaitFor(t, "ready", ready)
			// The session settles: once kept without a stream it stays
			// (the same connection for a whole second).
			stable := false
			for deadline := time.Now().Add(2 * time.Minute); !stable && time.Now().Before(deadline); {
				conn, _ := m.CurrentConnection("fx")
				time.Sleep(time.Second)
				now, _ := m.CurrentConnection("fx")
				stable = now == conn && ready()
			}
			if !stable {
				t.Fatal("the session keeps being replaced")
			}
			if n := gets.Load(); n > 2*maxStreamFailures+2 {
				t.Errorf("%d stream requests; the refusals should stop the reconnects after %d", n, maxStreamFailures)
			}
			if _, err := m.CallTool(testkit.Context(t), "fx", "echo", argsEcho, session.CallOptions{}); err != nil {
				t.Fatal(err)
			}
			f.AddTool("polled")
			testkit.WaitFor(t, "the new tool through the catalog poll", func() bool {
				c, err := m.Catalog(testkit.Context(t), "fx")
				if err != nil {
					return false
				}
				for _, tl := range c.Tools {
					if tl.Name == "polled" {
						return true
					}
				}
				return false
			})
		})
	}
}

// Issue #11 item 7: the server's instructions are kept with the catalog,
// and its notifications/message reach the request log with their level;
// the level asked for is the config's (default warning).
func TestServerContextKept(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("fx", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("fx") == StateReady })
	c, err := e.m.Catalog(testkit.Context(t), "fx")
	if err != nil || c.Instructions != fixture.Instructions {
		t.Fatalf("instructions %q, %v", c.Instructions, err)
	}
	if _, err := e.m.CallTool(testkit.Context(t), "fx", "fail", json.RawMessage(`{}`), session.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the server's log message in the request log", func() bool {
		log, _ := e.m.Log("fx")
		for _, ex := range log {
			if ex.Kind == "log" && ex.Level == "error" && strings.Contains(ex.Message, fixture.FailLogText) {
				return true
			}
		}
		return false
	})
	var levels []string
	for _, r := range f.Requests() {
		if r.RPCMethod == "logging/setLevel" {
			levels = append(levels, string(r.Body))
		}
	}
	if len(levels) != 1 || !strings.Contains(levels[0], `"level":"warning"`) {
		t.Fatalf("logging/setLevel requests: %v; want one for warning", levels)
	}
}

// SPEC §9 A4 (B2): a reconnect that needs a sign-in stops retrying in the
// background; the state says why, and nothing hammers the server.
func TestReconnectStopsWhenSignInNeeded(t *testing.T) {
	var refuse atomic.Bool
	var refused atomic.Int64
	f := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if refuse.Load() {
			refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "token revoked", http.StatusUnauthorized)
			return false
		}
		return true
	}})
	e := newEnv(t, srvCfg("fx", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("fx") == StateReady })
	refuse.Store(true)
	f.ExpireSessions()
	testkit.WaitFor(t, "an auth error", func() bool {
		st, _ := e.m.ServerStatusOf("fx")
		return st.State == StateError && st.Reason != nil && st.Reason.Class == ClassAuth
	})
	n := refused.Load()
	time.Sleep(600 * time.Millisecond) // the backoff here is 20–200 ms
	if more := refused.Load() - n; more > 0 {
		t.Fatalf("%d more requests after the sign-in became necessary; want none", more)
	}
}
