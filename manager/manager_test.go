package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

func countRPC(s *fixture.Server, method string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.RPCMethod == method {
			n++
		}
	}
	return n
}

// R2.3: at startup only enabled && connectOnStartup servers connect; the
// others connect on first listing or call, and disabled ones never.
func TestR2_3_StartupConnectsOnlyEnabledStartupServers(t *testing.T) {
	fa, fb, fc := testkit.StartFixture(t, fixture.Options{}), testkit.StartFixture(t, fixture.Options{}), testkit.StartFixture(t, fixture.Options{})
	disabled := srvCfg("c", fc.URL(), true)
	disabled.Enabled = false
	e := newEnv(t, srvCfg("a", fa.URL(), true), srvCfg("b", fb.URL(), false), disabled)
	e.start()
	testkit.WaitFor(t, "a ready", func() bool { return e.state("a") == StateReady })
	time.Sleep(100 * time.Millisecond)
	if n := len(fb.Requests()); n != 0 {
		t.Fatalf("lazy server b got %d requests before first use", n)
	}
	if n := len(fc.Requests()); n != 0 {
		t.Fatalf("disabled server c got %d requests", n)
	}
	if st := e.state("b"); st != StateDisconnected {
		t.Fatalf("lazy server b state = %s, want disconnected", st)
	}
	cat, err := e.m.Catalog(testkit.Context(t), "b")
	if err != nil {
		t.Fatalf("first listing of lazy server: %v", err)
	}
	if len(cat.Tools) == 0 || e.state("b") != StateReady {
		t.Fatalf("lazy server b not ready after first listing (state %s, %d tools)", e.state("b"), len(cat.Tools))
	}
	if _, err := e.m.Catalog(testkit.Context(t), "c"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("listing disabled server: err = %v, want ErrDisabled", err)
	}
	if n := len(fc.Requests()); n != 0 {
		t.Fatalf("disabled server c got %d requests", n)
	}
}

// R2.4: a URL change closes the old client behind the barrier and
// reconnects per connectOnStartup; a lazy server stays lazy; removal and
// disabling disconnect.
func TestR2_4_ReconcileStoredChanges(t *testing.T) {
	f1, f2 := testkit.StartFixture(t, fixture.Options{}), testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("eager", f1.URL(), true), srvCfg("lazy", f1.URL(), false))
	e.start()
	testkit.WaitFor(t, "eager ready", func() bool { return e.state("eager") == StateReady })
	if err := e.m.Connect(testkit.Context(t), "lazy"); err != nil {
		t.Fatal(err)
	}
	old, _ := e.m.CurrentConnection("eager")
	f2before := len(f2.Requests())

	e.update("eager", func(s *config.Server) { s.URL = f2.URL() })
	e.update("lazy", func(s *config.Server) { s.URL = f2.URL() })
	if err := e.m.Sync(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "eager ready on the new URL", func() bool {
		id, ok := e.m.CurrentConnection("eager")
		return ok && id != old
	})
	testkit.WaitFor(t, "old sessions closed on f1", func() bool { return f1.Sessions() == 0 })
	if st := e.state("lazy"); st != StateDisconnected {
		t.Fatalf("lazy server after URL change: %s, want disconnected until used", st)
	}
	if got := countRPC(f2, "initialize") - 0; got != 1 {
		t.Fatalf("f2 saw %d initialize requests, want 1 (only the eager server); before=%d", got, f2before)
	}

	e.update("eager", func(s *config.Server) { s.Enabled = false })
	e.m.Sync(testkit.Context(t))
	if st := e.state("eager"); st != StateDisconnected {
		t.Fatalf("disabled server state %s", st)
	}
	testkit.WaitFor(t, "f2 sessions closed", func() bool { return f2.Sessions() == 0 })

	if err := e.m.Connect(testkit.Context(t), "lazy"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.DeleteServer(context.Background(), "lazy"); err != nil {
		t.Fatal(err)
	}
	e.m.Sync(testkit.Context(t))
	if _, err := e.m.ServerStatusOf("lazy"); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("removed server still known: %v", err)
	}
	testkit.WaitFor(t, "removed server's session closed", func() bool { return f2.Sessions() == 0 })

	// A name change alone keeps the session.
	e.update("eager", func(s *config.Server) { s.Enabled = true })
	e.m.Sync(testkit.Context(t))
	testkit.WaitFor(t, "eager ready again", func() bool { return e.state("eager") == StateReady })
	id1, _ := e.m.CurrentConnection("eager")
	e.update("eager", func(s *config.Server) { s.Name = "renamed" })
	e.m.Sync(testkit.Context(t))
	if id2, _ := e.m.CurrentConnection("eager"); id2 != id1 {
		t.Fatalf("a name change reconnected (%s → %s)", id1, id2)
	}
}

// R2.5: a candidate re-checks the stored config after its handshake; a
// session whose config drifted is never committed.
func TestR2_5_DriftDuringHandshakeNotCommitted(t *testing.T) {
	// Another process changes the URL while the handshake runs: during
	// f1's first request (the initialize). This manager's feed polls
	// hourly, so only the drift check can catch it.
	var drift atomic.Pointer[func()] // set before the connect
	var first atomic.Bool
	f1 := testkit.StartFixture(t, fixture.Options{Authorize: func(http.ResponseWriter, *http.Request) bool {
		if first.CompareAndSwap(false, true) {
			(*drift.Load())()
		}
		return true
	}})
	f2 := testkit.StartFixture(t, fixture.Options{})
	dir := t.TempDir()
	st, err := store.Open(context.Background(), dir, store.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.AddServer(context.Background(), srvCfg("a", f1.URL(), false)); err != nil {
		t.Fatal(err)
	}
	m := New(Options{Store: st, Logger: testkit.Logger(t)})
	t.Cleanup(func() { m.Close() })
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	other := newStore(t, dir)
	change := func() {
		s, _ := other.GetServer(context.Background(), "a")
		s.URL = f2.URL()
		other.UpdateServer(context.Background(), s)
	}
	drift.Store(&change)
	if err := m.Connect(testkit.Context(t), "a"); err != nil {
		t.Fatalf("connect: %v", err)
	}
	id, _ := m.CurrentConnection("a")
	sess, err := m.sessionFor("a", id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Server().URL != f2.URL() {
		t.Fatalf("committed session uses %s, want the current config's %s", sess.Server().URL, f2.URL())
	}
	testkit.WaitFor(t, "drifted candidate closed", func() bool { return f1.Sessions() == 0 })
}

// R2.6: concurrent connects share one in-flight attempt.
func TestR2_6_ConcurrentConnectsShareOneAttempt(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	f.SetHandshakeDelay(200 * time.Millisecond)
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- e.m.Connect(testkit.Context(t), "a") }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := countRPC(f, "initialize"); n != 1 {
		t.Fatalf("%d initialize requests for 20 concurrent connects, want 1", n)
	}
}

// R2.7: a disconnect is a barrier: the attempt in flight cannot commit
// and a later connect starts a new attempt.
func TestR2_7_DisconnectIsABarrier(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	f.SetHandshakeDelay(300 * time.Millisecond)
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	first := make(chan error, 1)
	go func() { first <- e.m.Connect(testkit.Context(t), "a") }()
	// In flight on the wire: its initialize reached the server (held there
	// by the delay). "connecting" alone is set before anything is sent,
	// and on a loaded machine the disconnect could come before the
	// request, leaving the later connect's initialize the only one.
	testkit.WaitFor(t, "attempt in flight", func() bool { return e.state("a") == StateConnecting && countRPC(f, "initialize") == 1 })
	if err := e.m.Disconnect(testkit.Context(t), "a"); err != nil {
		t.Fatal(err)
	}
	if st := e.state("a"); st != StateDisconnected {
		t.Fatalf("state after disconnect = %s", st)
	}
	if err := <-first; !errors.Is(err, ErrDisconnected) {
		t.Fatalf("connect overtaken by a disconnect: err = %v, want ErrDisconnected", err)
	}
	if _, ok := e.m.CurrentConnection("a"); ok {
		t.Fatal("the attempt from before the disconnect committed")
	}
	f.SetHandshakeDelay(0)
	if err := e.m.Connect(testkit.Context(t), "a"); err != nil {
		t.Fatal(err)
	}
	if n := countRPC(f, "initialize"); n < 2 {
		t.Fatalf("later connect reused the old attempt (%d initialize requests)", n)
	}
	testkit.WaitFor(t, "one live session", func() bool { return f.Sessions() == 1 })
}

// R2.8: ready only after the complete handshake; a failed candidate is
// closed.
func TestR2_8_ReadyOnlyAfterFullHandshake(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	events := e.m.Subscribe(testkit.Context(t))
	f.MalformedNext("tools/list")
	err := e.m.Connect(testkit.Context(t), "a")
	if err == nil {
		t.Fatal("connect succeeded although tools/list was malformed")
	}
	st, _ := e.m.ServerStatusOf("a")
	if st.State != StateError || st.Reason == nil || st.Reason.Class != ClassProtocol {
		t.Fatalf("status after failed handshake: %+v", st)
	}
	testkit.WaitFor(t, "failed candidate closed", func() bool { return f.Sessions() == 0 })
	for {
		select {
		case ev := <-events:
			if ev.Status.State == StateReady {
				t.Fatal("server went ready before its handshake completed")
			}
			continue
		default:
		}
		break
	}
	if err := e.m.Connect(testkit.Context(t), "a"); err != nil {
		t.Fatal(err)
	}
}

// R2.9: a stale connection id can never read, call or close the current
// session; two managers over one data directory do not share sessions.
func TestR2_9_StaleConnectionIDRefused(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	if err := e.m.Connect(testkit.Context(t), "a"); err != nil {
		t.Fatal(err)
	}
	old, _ := e.m.CurrentConnection("a")
	if err := e.m.Reconnect(testkit.Context(t), "a"); err != nil {
		t.Fatal(err)
	}
	cur, _ := e.m.CurrentConnection("a")
	if cur == old {
		t.Fatal("reconnect kept the connection id")
	}
	before := f.TotalExecutions()
	if _, err := e.m.CallToolOn(testkit.Context(t), "a", old, "echo", argsEcho, session.CallOptions{}); !errors.Is(err, ErrStaleConnection) {
		t.Fatalf("call through stale id: %v", err)
	}
	if _, err := e.m.CatalogOn("a", old); !errors.Is(err, ErrStaleConnection) {
		t.Fatalf("read through stale id: %v", err)
	}
	if err := e.m.CloseConnection("a", old); !errors.Is(err, ErrStaleConnection) {
		t.Fatalf("close through stale id: %v", err)
	}
	if f.TotalExecutions() != before {
		t.Fatal("a stale connection id reached the server")
	}
	if id, ok := e.m.CurrentConnection("a"); !ok || id != cur {
		t.Fatal("stale close affected the current session")
	}
	if _, err := e.m.CallToolOn(testkit.Context(t), "a", cur, "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatalf("call through current id: %v", err)
	}

	// A second manager instance over the same data directory.
	m2 := New(Options{Store: newStore(t, e.store.Dir()), Logger: testkit.Logger(t)})
	t.Cleanup(func() { m2.Close() })
	if err := m2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m2.Connect(testkit.Context(t), "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.CallToolOn(testkit.Context(t), "a", cur, "echo", argsEcho, session.CallOptions{}); !errors.Is(err, ErrStaleConnection) {
		t.Fatalf("manager 2 accepted manager 1's connection id: %v", err)
	}
	if err := m2.CloseConnection("a", cur); !errors.Is(err, ErrStaleConnection) {
		t.Fatalf("manager 2 closed through manager 1's id: %v", err)
	}
	if id, ok := e.m.CurrentConnection("a"); !ok || id != cur {
		t.Fatal("manager 1's session was disturbed by manager 2")
	}
}

// R2.10: malformed results are never returned or committed; a malformed
// refresh leaves the catalog untouched.
func TestR2_10_MalformedResultsRejected(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	cat, err := e.m.Catalog(testkit.Context(t), "a")
	if err != nil {
		t.Fatal(err)
	}
	n := len(cat.Tools)
	f.MalformedNext("tools/call")
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{}); err == nil {
		t.Fatal("malformed tools/call result was returned")
	}
	f.MalformedNext("tools/list")
	f.AddTool("extra1")
	testkit.WaitFor(t, "failed refresh recorded", func() bool {
		c, _ := e.m.Catalog(testkit.Context(t), "a")
		return c.Errors[session.KindTools] != nil
	})
	cat, _ = e.m.Catalog(testkit.Context(t), "a")
	if len(cat.Tools) != n {
		t.Fatalf("malformed refresh changed the catalog: %d tools, want %d", len(cat.Tools), n)
	}
	f.AddTool("extra2")
	testkit.WaitFor(t, "next refresh commits", func() bool {
		c, _ := e.m.Catalog(testkit.Context(t), "a")
		return len(c.Tools) == n+2 && c.Errors[session.KindTools] == nil
	})
}

// R4.4: list_changed refreshes commit; the tool count follows.
func TestR4_4_ListChangedRefreshCommits(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("a", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("a") == StateReady })
	st, _ := e.m.ServerStatusOf("a")
	f.AddTool("dyn")
	testkit.WaitFor(t, "tool count to grow", func() bool {
		s, _ := e.m.ServerStatusOf("a")
		return s.ToolCount == st.ToolCount+1
	})
	f.RemoveTool("dyn")
	testkit.WaitFor(t, "tool count to shrink", func() bool {
		s, _ := e.m.ServerStatusOf("a")
		return s.ToolCount == st.ToolCount
	})
}

// R4.1 / issue 2: a server killed mid-call and restarted: the call fails
// clearly, is not re-sent, and the manager is ready again by itself,
// keeping the last catalog meanwhile.
func TestServerRestartMidCall(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("a", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("a") == StateReady })
	old, _ := e.m.CurrentConnection("a")
	done := make(chan error, 1)
	go func() {
		_, err := e.m.CallTool(testkit.Context(t), "a", "slow", []byte(`{"ms":5000}`), session.CallOptions{})
		done <- err
	}()
	testkit.WaitFor(t, "slow call running", func() bool { return f.Executions("slow") == 1 })
	if err := f.Stop(); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var ce *CallError
	if !errors.As(err, &ce) || !ce.MaybeExecuted {
		t.Fatalf("in-flight call: err = %v, want a CallError saying it may have run", err)
	}
	if c, err := e.m.Catalog(testkit.Context(t), "a"); err != nil || len(c.Tools) == 0 {
		t.Fatalf("catalog during outage: %v (%v)", c, err)
	}
	if err := f.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "ready again by itself", func() bool {
		id, ok := e.m.CurrentConnection("a")
		return ok && id != old
	})
	if n := f.Executions("slow"); n != 1 {
		t.Fatalf("slow ran %d times; the call was re-sent", n)
	}
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatalf("call after restart: %v", err)
	}
}

// An expired session (HTTP 404) reconnects by itself. A call made right
// after the expiry succeeds and runs once: either the notification stream
// noticed first and the call went to the fresh session, or the call's own
// POST got the 404, which proves it never ran, and it was re-sent once
// (SPEC §9 A5).
func TestSessionExpiryReconnects(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, srvCfg("a", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("a") == StateReady })
	old, _ := e.m.CurrentConnection("a")
	f.ExpireSessions()
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatalf("call right after the expiry: %v", err)
	}
	testkit.WaitFor(t, "reconnected", func() bool {
		id, ok := e.m.CurrentConnection("a")
		return ok && id != old
	})
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times, want 1", n)
	}
}

// A tool slower than the server's toolTimeout fails cleanly; the error
// says how to raise it.
func TestToolTimeout(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := srvCfg("a", f.URL(), false)
	// 2 s, not less: the fast call below must fit inside it on a loaded
	// CI machine, and the slow one takes far longer whatever the load.
	c.ToolTimeout = config.Duration(2 * time.Second)
	e := newEnv(t, c)
	e.start()
	_, err := e.m.CallTool(testkit.Context(t), "a", "slow", []byte(`{"ms":60000,"quiet":true}`), session.CallOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || Attribute(err).Class != ClassTimeout {
		t.Fatalf("err = %v", err)
	}
	if _, err := e.m.CallTool(testkit.Context(t), "a", "slow", []byte(`{"ms":50}`), session.CallOptions{}); err != nil {
		t.Fatalf("fast call inside the timeout: %v", err)
	}
}

// R4.5 / issue #4: time spent answering the server's question does not
// count against the tool's timeout; a tool that is slow on its own still
// times out.
func TestToolTimeoutPausesDuringElicitation(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := srvCfg("a", f.URL(), false)
	// The tool's own work (a few ms) must fit in the timeout on a loaded
	// machine; the person takes more than twice as long as all of it.
	c.ToolTimeout = config.Duration(2 * time.Second)
	st := newStore(t, t.TempDir())
	if err := st.AddServer(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	m := New(Options{Store: st, Logger: testkit.Logger(t), Elicit: func(ctx context.Context, _ ElicitInfo, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select { // the person takes longer than the whole tool timeout
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}})
	t.Cleanup(func() { m.Close() })
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := m.CallTool(testkit.Context(t), "a", "ask", []byte(`{}`), session.CallOptions{})
	if err != nil {
		t.Fatalf("a call waiting 5 s for a person timed out at a 2 s tool timeout: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "hello Ada (42)" {
		t.Fatalf("result %+v", res.Content)
	}
	if _, err := m.CallTool(testkit.Context(t), "a", "slow", []byte(`{"ms":60000,"quiet":true}`), session.CallOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow tool: err = %v, want a timeout", err)
	}
}

// R2.4/R5.2: a tool switched off while the connection is being made stays
// off once it is ready (the commit must not restore the older config).
func TestDisabledToolChangeDuringHandshakeKept(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	f.SetHandshakeDelay(300 * time.Millisecond)
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	done := make(chan error, 1)
	go func() { done <- e.m.Connect(testkit.Context(t), "a") }()
	testkit.WaitFor(t, "handshake under way", func() bool { return e.state("a") == StateConnecting })
	e.update("a", func(s *config.Server) { s.DisabledTools = []string{"echo"} })
	if err := e.m.Sync(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{}); !errors.Is(err, ErrToolDisabled) {
		t.Fatalf("call of a tool switched off during the handshake: %v", err)
	}
	if n := f.Executions("echo"); n != 0 {
		t.Fatalf("echo ran %d times", n)
	}
}

// R2.7: a question waiting for a person does not hold a disconnect up.
func TestDisconnectWithOpenElicitation(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	st := newStore(t, t.TempDir())
	if err := st.AddServer(context.Background(), srvCfg("a", f.URL(), false)); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	m := New(Options{Store: st, Logger: testkit.Logger(t), Elicit: func(ctx context.Context, _ ElicitInfo, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		<-ctx.Done() // the person never answers
		return nil, ctx.Err()
	}})
	t.Cleanup(func() { m.Close() })
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	go m.CallTool(context.Background(), "a", "ask", []byte(`{}`), session.CallOptions{})
	select {
	case <-asked:
	case <-time.After(2 * time.Minute): // only a hang
		t.Fatal("no question")
	}
	done := make(chan error, 1)
	go func() { done <- m.Disconnect(context.Background(), "a") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute): // the person never answers: only a disconnect that waits for them takes this long
		t.Fatal("disconnect waited for the person's answer")
	}
}

// R4.5: a cancel that arrives while the call waits for its lazy connect
// wins; nothing is sent.
func TestCancelDuringLazyConnect(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	f.SetHandshakeDelay(300 * time.Millisecond)
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	done := make(chan error, 1)
	go func() {
		_, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{OperationID: "op-lazy"})
		done <- err
	}()
	testkit.WaitFor(t, "connecting", func() bool { return e.state("a") == StateConnecting })
	e.m.Cancel("op-lazy")
	if err := <-done; err == nil {
		t.Fatal("cancelled call succeeded")
	}
	// A cancel before the call is admitted at all wins too.
	e.m.Cancel("op-early")
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{OperationID: "op-early"}); !errors.Is(err, session.ErrCancelledBeforeDispatch) {
		t.Fatalf("call cancelled before admission: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := f.Executions("echo"); n != 0 {
		t.Fatalf("echo ran %d times after being cancelled", n)
	}
}

// R5.3: the request log keeps the last LogSize exchanges of a server,
// across reconnects, with their JSON-RPC methods and statuses and no
// secret.
func TestRequestLog(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := srvCfg("a", f.URL(), false)
	c.Auth = config.Auth{Kind: config.AuthBearer, Token: "sekrit-token-value"}
	e := newEnv(t, c)
	e.start()
	if err := e.m.Connect(testkit.Context(t), "a"); err != nil {
		t.Fatal(err)
	}
	f.FailNextHTTP(503, 1)
	e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{})
	log, err := e.m.Log("a")
	if err != nil {
		t.Fatal(err)
	}
	var sawInit, saw503 bool
	for _, ex := range log {
		sawInit = sawInit || ex.RPCMethod == "initialize" && ex.Status == 200
		saw503 = saw503 || ex.RPCMethod == "tools/call" && ex.Status == 503
		if strings.Contains(fmt.Sprint(ex), "sekrit") {
			t.Fatalf("a secret in the log: %+v", ex)
		}
	}
	if !sawInit || !saw503 {
		t.Fatalf("log lacks initialize/200 or tools/call/503: %+v", log)
	}
	for range LogSize {
		e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{})
	}
	if log, _ = e.m.Log("a"); len(log) != LogSize || log[len(log)-1].RPCMethod != "tools/call" {
		t.Fatalf("ring: %d entries, last %+v", len(log), log[len(log)-1])
	}
}
