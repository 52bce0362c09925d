package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/clocktest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

func toolNamesOf(t *testing.T, c *engine.Engine, id string) []string {
	t.Helper()
	tl, err := c.Tools(testkit.Context(t), localapi.ToolsRequest{ServerID: id, Connect: true})
	if err != nil {
		t.Fatalf("tools of %s: %v", id, err)
	}
	var out []string
	for _, tool := range tl.Tools {
		out = append(out, tool.ToolName)
	}
	slices.Sort(out)
	return out
}

func stateOf(t *testing.T, c *engine.Engine, id string) localapi.State {
	t.Helper()
	s, err := c.Server(testkit.Context(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return s.State
}

// Issue #12: a server's catalog is kept in the store. Another engine on
// the data directory lists its tools without connecting (nothing reaches
// the server), and cached data is never ready; the first call connects.
func TestCachedCatalogWithoutConnecting(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	dir := t.TempDir()
	first := openEngine(t, dir, engine.Options{NoStartupConnect: true})
	addServer(t, first, localapi.AddServerRequest{ID: "fx", URL: f.URL(), By: localapi.ByServersAdd})
	want := toolNamesOf(t, first, "fx") // connects, lists, stores
	if len(want) < 5 {
		t.Fatalf("tools %v", want)
	}
	testkit.WaitFor(t, "the first engine to close", func() bool { return first.Close() == nil })

	before := len(f.Requests())
	second := openEngine(t, dir, engine.Options{NoStartupConnect: true})
	if got := toolNamesOf(t, second, "fx"); !slices.Equal(got, want) {
		t.Fatalf("cached tools %v, want %v", got, want)
	}
	all, err := second.Tools(testkit.Context(t), localapi.ToolsRequest{Connect: true})
	if err != nil || len(all.Tools) != len(want) {
		t.Fatalf("all tools: %v %v", err, all)
	}
	if n := len(f.Requests()) - before; n != 0 {
		t.Fatalf("listing the cached catalog sent %d requests to the server, want 0", n)
	}
	if st := stateOf(t, second, "fx"); st == localapi.StateReady {
		t.Fatal("a cached catalog counts as ready")
	}
	res, err := second.Call(testkit.Context(t), localapi.CallRequest{Tool: "fx/echo", Arguments: []byte(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.IsError {
		t.Fatalf("first call: %v %+v", err, res)
	}
	if initializes(f) != 2 {
		t.Errorf("initializes %d, want 2 (one per engine; the second at its first call)", initializes(f))
	}
}

// Issue #12, R2.4: a new URL discards the stored catalog; R2.10: a stored
// catalog that does not validate is refused and forgotten.
func TestCachedCatalogDiscarded(t *testing.T) {
	f, g := testkit.StartFixture(t, fixture.Options{}), testkit.StartFixture(t, fixture.Options{})
	g.AddTool("only_on_g")
	dir := t.TempDir()
	c := openEngine(t, dir, engine.Options{NoStartupConnect: true})
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL(), By: localapi.ByServersAdd})
	toolNamesOf(t, c, "fx")
	url := g.URL()
	if _, err := c.UpdateServer(testkit.Context(t), "fx", localapi.UpdateServerRequest{URL: &url}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the stored catalog to go", func() bool {
		_, err := c.Store.GetKV(testkit.Context(t), "catalogs", "fx")
		return err != nil
	})
	if got := toolNamesOf(t, c, "fx"); !slices.Contains(got, "only_on_g") {
		t.Fatalf("after the URL change: tools %v, want the new server's", got)
	}
	testkit.WaitFor(t, "the new catalog to be stored", func() bool {
		_, err := c.Store.GetKV(testkit.Context(t), "catalogs", "fx")
		return err == nil
	})
	// A stored catalog that is not valid (a tool without a name) is
	// refused, forgotten, and the server is listed by connecting.
	good, err := c.Store.GetKV(testkit.Context(t), "catalogs", "fx")
	if err != nil {
		t.Fatal(err)
	}
	var sc map[string]any
	if err := json.Unmarshal(good, &sc); err != nil {
		t.Fatal(err)
	}
	bad := []byte(`{"v":1,"key":"` + sc["key"].(string) + `","tools":[{"tool":{"name":""},"inputSchema":{"type":"object"}}]}`)
	if err := c.Store.PutKV(testkit.Context(t), "catalogs", "fx", bad); err != nil {
		t.Fatal(err)
	}
	c.Close()
	st := openEngine(t, dir, engine.Options{NoStartupConnect: true})
	before := initializes(g)
	if got := toolNamesOf(t, st, "fx"); !slices.Contains(got, "only_on_g") {
		t.Fatalf("tools %v", got)
	}
	if initializes(g) != before+1 {
		t.Errorf("a refused stored catalog did not lead to a connect")
	}
	testkit.WaitFor(t, "a valid catalog stored in place of the refused one", func() bool {
		b, err := st.Store.GetKV(testkit.Context(t), "catalogs", "fx")
		return err == nil && json.Valid(b) && !bytes.Contains(b, []byte(`"name":""`))
	})
}

// Issue #12: a session unused for its idleTimeout is closed (the server
// sees the DELETE) and the server is idle with its tools listed; a call
// wakes it and works; a catalog changed while it slept is picked up on
// wake; idleTimeout 0 never hibernates. The idle checks run on a manual
// clock, only when the test runs one: none can close a session between a
// connect and its first call (a handshake under -race outlasts a short
// idle timeout), nor the woken session before the test looks at it.
func TestHibernation(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	const check = time.Hour // told apart from other timers on the clock by its length
	clock := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	c := openEngine(t, "", engine.Options{NoStartupConnect: true, IdleCheck: check, Clock: clock})
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL(), By: localapi.ByServersAdd})
	idle := "1ms"
	if _, err := c.UpdateServer(testkit.Context(t), "fx", localapi.UpdateServerRequest{IdleTimeout: &idle}); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.Server(testkit.Context(t), "fx"); s.IdleTimeout != "1ms" {
		t.Fatalf("idleTimeout shown as %q", s.IdleTimeout)
	}
	call := func() {
		t.Helper()
		res, err := c.Call(testkit.Context(t), localapi.CallRequest{Tool: "fx/echo", Arguments: []byte(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	// idleCheck runs one idle check and returns when it is done: the
	// manager schedules the next one only then.
	idleCheck := func() {
		t.Helper()
		testkit.WaitFor(t, "the idle check to be scheduled", func() bool { return clock.Pending(check) == 1 })
		clock.Advance(check)
		testkit.WaitFor(t, "the idle check to run", func() bool { return clock.Pending(check) == 1 })
	}
	// hibernate runs idle checks until the server is idle: the first after
	// 1ms of wall time unused closes its session.
	hibernate := func() {
		t.Helper()
		for n := 0; stateOf(t, c, "fx") != localapi.StateIdle; n++ {
			if n == 10_000 {
				t.Fatalf("the server is %s after %d idle checks, want idle", stateOf(t, c, "fx"), n)
			}
			idleCheck()
		}
	}
	call()
	if st := stateOf(t, c, "fx"); st != localapi.StateReady {
		t.Fatalf("after the first call: %s, want ready (no idle check ran)", st)
	}
	hibernate()
	deletes := func() int {
		n := 0
		for _, r := range f.Requests() {
			if r.Method == "DELETE" {
				n++
			}
		}
		return n
	}
	// The state changes first, the session closes behind the barrier.
	testkit.WaitFor(t, "the polite close (DELETE)", func() bool { return deletes() >= 1 })
	if n := deletes(); n != 1 {
		t.Errorf("the server saw %d DELETEs, want 1", n)
	}
	if s, _ := c.Server(testkit.Context(t), "fx"); s.ToolCount == 0 {
		t.Error("an idle server shows 0 tools")
	}
	// The request log went to the store while idle, and comes back whole
	// when looked at (the polite DELETE last).
	testkit.WaitFor(t, "the idle server's request log on the shelf", func() bool {
		_, err := c.Store.GetKV(testkit.Context(t), "request-logs", "fx")
		return err == nil
	})
	entries, err := c.Log(testkit.Context(t), "fx")
	if err != nil || len(entries) < 5 || entries[len(entries)-1].HTTPMethod != "DELETE" {
		t.Errorf("request log after hibernation: %v %+v, want the session's exchanges ending with its DELETE", err, entries)
	}
	if _, err := c.Store.GetKV(testkit.Context(t), "request-logs", "fx"); err == nil {
		t.Error("the shelved log stays in the store after it came back")
	}
	// While asleep the server gains a tool; list_changed cannot reach us.
	f.AddTool("woke")
	if got := toolNamesOf(t, c, "fx"); slices.Contains(got, "woke") || len(got) == 0 {
		t.Fatalf("asleep: tools %v, want the stored catalog", got)
	}
	if st := stateOf(t, c, "fx"); st != localapi.StateIdle {
		t.Fatalf("listing woke the server: %s", st)
	}
	call() // wakes it
	if st := stateOf(t, c, "fx"); st != localapi.StateReady {
		t.Fatalf("after the call: %s", st)
	}
	testkit.WaitFor(t, "the tool added while asleep", func() bool { return slices.Contains(toolNamesOf(t, c, "fx"), "woke") })

	// idleTimeout 0: never.
	never := "0"
	if _, err := c.UpdateServer(testkit.Context(t), "fx", localapi.UpdateServerRequest{IdleTimeout: &never}); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.Server(testkit.Context(t), "fx"); s.IdleTimeout != "0s" {
		t.Fatalf("idleTimeout 0 shown as %q", s.IdleTimeout)
	}
	call()
	// Checks run until the session has been unused longer than the 1ms
	// that closed it before, and a few more.
	called := time.Now()
	for n := 0; n < 3 || time.Since(called) <= time.Millisecond; n++ {
		idleCheck()
	}
	if st := stateOf(t, c, "fx"); st != localapi.StateReady {
		t.Fatalf("idleTimeout 0: the server is %s after idle checks, want ready", st)
	}
	bad := "-1s"
	if _, err := c.UpdateServer(testkit.Context(t), "fx", localapi.UpdateServerRequest{IdleTimeout: &bad}); code(err) != localapi.CodeBadRequest {
		t.Errorf("idleTimeout -1s: %v, want bad request", err)
	}
}

// Issue #12: a server with an open subscription or a call in flight is
// not idle.
func TestNotIdleWhileInUse(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := openEngine(t, "", engine.Options{NoStartupConnect: true, IdleCheck: 20 * time.Millisecond})
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL(), By: localapi.ByServersAdd})
	idle := "200ms"
	if _, err := c.UpdateServer(testkit.Context(t), "fx", localapi.UpdateServerRequest{IdleTimeout: &idle}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testkit.Context(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: []byte(`{"ms":1200}`), Approved: true}, localapi.CallHandler{})
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The call took 1.2 s, six idle timeouts: the session stayed.
	if initializes(f) != 1 {
		t.Fatalf("initializes %d during a long call, want 1", initializes(f))
	}
	if err := c.SubscribeResource(testkit.Context(t), localapi.ResourceSubscription{ServerID: "fx", URI: fixture.ReadmeURI}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	if st := stateOf(t, c, "fx"); st != localapi.StateReady {
		t.Fatalf("with a subscription open the server is %s, want ready", st)
	}
	if err := c.UnsubscribeResource(testkit.Context(t), localapi.ResourceSubscription{ServerID: "fx", URI: fixture.ReadmeURI}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "idle once the subscription is gone", func() bool { return stateOf(t, c, "fx") == localapi.StateIdle })
}
