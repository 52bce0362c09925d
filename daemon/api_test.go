package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/manager"
)

// R2.2: a request to an origin without a grant never leaves the machine;
// it becomes a pending approval shown beside its server, and after the
// person approves, the same action succeeds.
func TestUngrantedOriginStaysLocal(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	cfg := srvCfg("fx", f.URL())
	cfg.ConnectOnStartup = false
	s := newStack(t, stackOpts{servers: []config.Server{cfg}})
	ctx := ctxT(t)
	origin := originOf(t, f.URL())

	_, err := s.c.Connect(ctx, "fx")
	pi, ok := IsPermissionRequired(err)
	if !ok || pi.Origin != origin {
		t.Fatalf("connect without a grant: %v (%+v)", err, pi)
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.Server == nil || ae.Server.State != manager.StateError || ae.Server.OriginGranted {
		t.Fatalf("error carries the server %+v", ae)
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the fixture saw %d requests without a grant", n)
	}
	g, err := s.c.Grants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Pending) != 1 || g.Pending[0].Origin != origin || len(g.Grants) != 0 {
		t.Fatalf("grants %+v", g)
	}
	v, err := s.c.Server(ctx, "fx")
	if err != nil || len(v.Pending) != 1 || v.Pending[0].Origin != origin {
		t.Fatalf("server view %+v %v", v, err)
	}
	// The catalog and a tool call are refused the same way.
	if _, err := s.c.Catalog(ctx, "fx"); err == nil {
		t.Fatal("catalog without a grant")
	}
	res, err := s.c.Call(ctx, CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true})
	if err != nil || res.Outcome == agent.OutcomeOK {
		t.Fatalf("call without a grant: %+v %v", res, err)
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the fixture saw %d requests without a grant", n)
	}

	// Approve: the pending entry goes, the grant is the person's.
	g, err = s.c.Grant(ctx, origin)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Pending) != 0 || len(g.Grants) != 1 || g.Grants[0].By != hostperm.ByCLI {
		t.Fatalf("after grant %+v", g)
	}
	v, err = s.c.Connect(ctx, "fx")
	if err != nil || v.State != manager.StateReady || v.ToolCount != 7 || !v.OriginGranted {
		t.Fatalf("connect after grant: %+v %v", v, err)
	}
	if len(f.Requests()) == 0 {
		t.Fatal("the fixture saw nothing after the grant")
	}
	res, err = s.c.Call(ctx, CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true})
	if err != nil || res.Outcome != agent.OutcomeOK || len(res.Content) != 1 || res.Content[0].Text != "hi" {
		t.Fatalf("call after grant: %+v %v", res, err)
	}

	// Revoke: the session is closed and the next connect is refused again.
	if _, err := s.c.Revoke(ctx, origin); err != nil {
		t.Fatal(err)
	}
	v, _ = s.c.Server(ctx, "fx")
	if v.State != manager.StateDisconnected || v.OriginGranted {
		t.Fatalf("after revoke %+v", v)
	}
	f.ResetRequests()
	if _, err := s.c.Connect(ctx, "fx"); err == nil {
		t.Fatal("connect after revoke succeeded")
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the fixture saw %d requests after the revoke", n)
	}
	// Revoking what is not granted is an error, not silence.
	if _, err := s.c.Revoke(ctx, origin); err == nil {
		t.Fatal("second revoke succeeded")
	}
	// Dismiss drops the pending entry without granting.
	if g, err := s.c.DismissPending(ctx, origin); err != nil || len(g.Pending) != 0 || len(g.Grants) != 0 {
		t.Fatalf("dismiss %+v %v", g, err)
	}
}

// A server that failed for want of a grant is connected again as soon as
// the person approves its origin.
func TestGrantReconnectsFailedServers(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{servers: []config.Server{srvCfg("fx", f.URL())}})
	ctx := ctxT(t)
	waitFor(t, "the startup connect to fail", func() bool {
		v, err := s.c.Server(ctx, "fx")
		return err == nil && v.State == manager.StateError && len(v.Pending) == 1
	})
	if _, err := s.c.Grant(ctx, originOf(t, f.URL())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ready after the grant", func() bool {
		v, err := s.c.Server(ctx, "fx")
		return err == nil && v.State == manager.StateReady
	})
}

// Adding a server grants its own origin in the same action; the secrets
// given are never returned.
func TestAddServer(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := ctxT(t)
	token := "bearer-secret-" + time.Now().Format("150405.000000000")
	secrets.add("bearer token", token)
	v, err := s.c.AddServer(ctx, AddServerRequest{ID: "fx", URL: f.URL(), Auth: config.AuthBearer, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if !v.OriginGranted || v.Auth.Kind != config.AuthBearer || !v.Auth.HasToken || v.Name != "fx" || !v.Enabled || !v.ConnectOnStartup {
		t.Fatalf("added %+v", v)
	}
	g, _ := s.c.Grants(ctx)
	if len(g.Grants) != 1 || g.Grants[0].Origin != originOf(t, f.URL()) || g.Grants[0].By != hostperm.ByServersAdd {
		t.Fatalf("grants %+v", g)
	}
	waitFor(t, "ready", func() bool {
		v, err := s.c.Server(ctx, "fx")
		return err == nil && v.State == manager.StateReady
	})
	// The server got the token, the API never returned it.
	var sent bool
	for _, r := range f.Requests() {
		sent = sent || r.Header.Get("Authorization") == "Bearer "+token
	}
	if !sent {
		t.Fatal("the bearer token was not sent to the server")
	}
	// Duplicates and invalid configs are refused and grant nothing.
	_, err = s.c.AddServer(ctx, AddServerRequest{ID: "fx", URL: "https://other.example/mcp"})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != CodeConflict || ae.Field != "id" {
		t.Fatalf("duplicate: %v", err)
	}
	_, err = s.c.AddServer(ctx, AddServerRequest{ID: "Bad Id", URL: "https://x.example/mcp"})
	if !errors.As(err, &ae) || ae.Code != CodeBadRequest || ae.Field != "id" {
		t.Fatalf("bad id: %v", err)
	}
	_, err = s.c.AddServer(ctx, AddServerRequest{ID: "plain", URL: "http://example.com/mcp"})
	if !errors.As(err, &ae) || ae.Code != CodeBadRequest || ae.Field != "url" {
		t.Fatalf("http URL: %v", err)
	}
	g, _ = s.c.Grants(ctx)
	if len(g.Grants) != 1 {
		t.Fatalf("failed adds granted something: %+v", g)
	}
	// Unknown request fields are refused (a typo must not pass silently).
	rc := newRawClient(t)
	r := rc.do(t, http.MethodPost, s.srv.URL()+"/api/servers", `{"id":"x","url":"https://x.example/mcp","conectOnStartup":false}`, s.bearer())
	if r.status != http.StatusBadRequest || !strings.Contains(r.body, "conectOnStartup") {
		t.Fatalf("unknown field: %d %s", r.status, r.body)
	}
}

func TestImport(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{servers: []config.Server{srvCfg("taken", "https://taken.example/mcp")}})
	ctx := ctxT(t)
	token := "imported-bearer-" + time.Now().Format("150405.000000000")
	secrets.add("imported bearer token", token)
	doc := `{
	  // JSONC, as VS Code writes it
	  "mcpServers": {
	    "fx": {"type": "http", "url": "` + f.URL() + `", "headers": {"Authorization": "Bearer ${TOKEN}"}},
	    "local": {"command": "npx", "args": ["-y", "some-stdio-server"]},
	    "legacy": {"type": "sse", "url": "https://legacy.example/sse"},
	    "needs-var": {"url": "https://${HOST}/mcp"},
	    "taken": {"url": "https://taken2.example/mcp"},
	  }
	}`
	res, err := s.c.Import(ctx, ImportRequest{Config: doc, Env: map[string]string{"TOKEN": token}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Added) != 1 || res.Added[0].ID != "fx" || res.Added[0].OriginGranted || res.Added[0].Auth != config.AuthBearer {
		t.Fatalf("added %+v", res.Added)
	}
	skipped := map[string]string{}
	for _, sk := range res.Skipped {
		skipped[sk.Name] = sk.Reason
	}
	for _, name := range []string{"local", "legacy", "needs-var", "taken"} {
		if skipped[name] == "" {
			t.Errorf("%s is not listed as skipped: %+v", name, res.Skipped)
		}
	}
	if !strings.Contains(skipped["taken"], "exists already") || !strings.Contains(skipped["needs-var"], "HOST") {
		t.Errorf("reasons %+v", skipped)
	}
	// An import grants nothing: the server's first connect waits for the
	// person, and the fixture sees nothing.
	waitFor(t, "pending approval", func() bool {
		v, err := s.c.Server(ctx, "fx")
		return err == nil && len(v.Pending) > 0
	})
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("an import reached the server: %d requests", n)
	}
	// The daemon's own environment is never consulted.
	t.Setenv("REMOTEMCP_DAEMON_TEST_VAR", "from-the-daemon-env")
	res, err = s.c.Import(ctx, ImportRequest{Config: `{"mcpServers":{"envtest":{"url":"https://example.com/${REMOTEMCP_DAEMON_TEST_VAR}"}}}`})
	if err != nil || len(res.Added) != 0 || len(res.Skipped) != 1 {
		t.Fatalf("env import: %+v %v", res, err)
	}
	// Our own format too, and malformed JSON is a 400 that says where.
	res, err = s.c.Import(ctx, ImportRequest{Config: `[{"id":"own","url":"https://own.example/mcp","connectOnStartup":false}]`})
	if err != nil || len(res.Added) != 1 || res.Added[0].ID != "own" {
		t.Fatalf("own format: %+v %v", res, err)
	}
	_, err = s.c.Import(ctx, ImportRequest{Config: `{"mcpServers": {`})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "line") {
		t.Fatalf("malformed: %v", err)
	}
}

// R5.2: per-tool switches land in disabledTools, and the agent tools
// follow.
func TestToolSwitchAndTools(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{servers: []config.Server{srvCfg("fx", f.URL())}, grants: []string{originOf(t, f.URL())}})
	ctx := ctxT(t)
	tools := func() []string {
		tv, err := s.c.Tools(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tv.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	tv, err := s.c.Tools(ctx, true)
	if err != nil || len(tv.Tools) != 7 {
		t.Fatalf("tools %+v %v", tv, err)
	}
	for _, tl := range tv.Tools {
		if tl.Effects != "write" || tl.Retry != "never" {
			t.Errorf("tool %s: effects %s retry %s", tl.Name, tl.Effects, tl.Retry)
		}
	}
	cat, err := s.c.Catalog(ctx, "fx")
	if err != nil || len(cat.Tools) != 7 || len(cat.Prompts) != 1 || len(cat.Resources) != 2 || len(cat.Templates) != 1 {
		t.Fatalf("catalog %+v %v", cat, err)
	}
	for _, tl := range cat.Tools {
		if tl.Name == "schema" && string(tl.InputSchema) != fixture.SchemaToolInputSchema {
			t.Errorf("schema tool's inputSchema changed: %s", tl.InputSchema)
		}
	}
	v, err := s.c.SetTool(ctx, "fx", "echo", false)
	if err != nil || !slices.Equal(v.DisabledTools, []string{"echo"}) {
		t.Fatalf("switch off: %+v %v", v, err)
	}
	waitFor(t, "echo to vanish from the tools", func() bool { return !slices.Contains(tools(), "mcp__fx__echo") })
	cat, _ = s.c.Catalog(ctx, "fx")
	for _, tl := range cat.Tools {
		if (tl.Name == "echo") == tl.Enabled {
			t.Errorf("catalog tool %s enabled=%v", tl.Name, tl.Enabled)
		}
	}
	res, err := s.c.Call(ctx, CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"x"}`), Approved: true})
	if err != nil || res.Outcome == agent.OutcomeOK || f.Executions("echo") != 0 {
		t.Fatalf("disabled tool was called: %+v %v", res, err)
	}
	if _, err := s.c.SetTool(ctx, "fx", "echo", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "echo to come back", func() bool { return slices.Contains(tools(), "mcp__fx__echo") })
	// PATCH sets the whole list.
	dt := []string{"add", "big", "add"}
	v, err = s.c.UpdateServer(ctx, "fx", UpdateServerRequest{DisabledTools: &dt})
	if err != nil || !slices.Equal(v.DisabledTools, []string{"add", "big"}) {
		t.Fatalf("patch %+v %v", v, err)
	}
	// Disable and enable the whole server.
	if v, err := s.c.SetEnabled(ctx, "fx", false); err != nil || v.Enabled {
		t.Fatalf("disable %+v %v", v, err)
	}
	waitFor(t, "no tools of a disabled server", func() bool { return len(tools()) == 0 })
	if _, err := s.c.SetEnabled(ctx, "fx", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.SetTool(ctx, "nope", "echo", false); err == nil {
		t.Fatal("switch on an unknown server")
	}
}

// R4.1 through the API: a call is sent only with "approved": true.
func TestCallNeedsApproval(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{servers: []config.Server{srvCfg("fx", f.URL())}, grants: []string{originOf(t, f.URL())}})
	ctx := ctxT(t)
	res, err := s.c.Call(ctx, CallRequest{Tool: "mcp__fx__add", Arguments: json.RawMessage(`{"a":1,"b":2}`)})
	if err != nil || res.Outcome != agent.OutcomeDenied || res.MaybeExecuted || f.Executions("add") != 0 {
		t.Fatalf("unapproved call: %+v %v", res, err)
	}
	res, err = s.c.Call(ctx, CallRequest{Tool: "mcp__fx__add", Arguments: json.RawMessage(`{"a":1,"b":2}`), Approved: true})
	if err != nil || res.Outcome != agent.OutcomeOK || string(res.StructuredContent) != `{"sum":3}` {
		t.Fatalf("approved call: %+v %v", res, err)
	}
	// Cancel by operation id reaches a call in flight.
	done := make(chan *agent.ToolResult, 1)
	go func() {
		r, _ := s.c.Call(ctx, CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":20000}`), Approved: true, OperationID: "op-slow"})
		done <- r
	}()
	waitFor(t, "slow to start", func() bool { return f.Executions("slow") == 1 })
	if err := s.c.Cancel(ctx, "op-slow"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r == nil || r.Outcome != agent.OutcomeCancelled {
			t.Fatalf("cancelled call: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not end the call")
	}
	// Bad requests.
	for _, req := range []CallRequest{{}, {Tool: "fx/add", Timeout: "soon"}} {
		if _, err := s.c.Call(ctx, req); err == nil {
			t.Errorf("call %+v succeeded", req)
		}
	}
}

// R6.1 through the API: a question during a call becomes a card, a bad
// answer is refused naming the fields, a good one lets the call finish.
func TestElicitationCards(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{servers: []config.Server{srvCfg("fx", f.URL())}, grants: []string{originOf(t, f.URL())}})
	ctx := ctxT(t)
	done := make(chan *agent.ToolResult, 1)
	go func() {
		r, err := s.c.Call(ctx, CallRequest{Tool: "fx/ask", Approved: true})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var card CardView
	waitFor(t, "a pending card", func() bool {
		l, err := s.c.Cards(ctx)
		if err != nil || len(l) == 0 || l[0].Status != elicit.StatusPending {
			return false
		}
		card = l[0]
		return true
	})
	if card.ServerID != "fx" || card.Tool != "ask" || card.Message != "What is your name?" || card.Form == nil || len(card.Form.Fields) != 2 {
		t.Fatalf("card %+v", card)
	}
	err := s.c.Answer(ctx, card.ID, elicit.Response{Action: elicit.ActionAccept, Content: map[string]any{"age": "abc"}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || len(ae.Problems) != 2 {
		t.Fatalf("bad answer: %v %+v", err, ae)
	}
	if err := s.c.Answer(ctx, card.ID, elicit.Response{Action: "maybe"}); err == nil {
		t.Fatal("unknown action accepted")
	}
	if err := s.c.Answer(ctx, card.ID, elicit.Response{Action: elicit.ActionAccept, Content: map[string]any{"name": "Ada", "age": "30"}}); err != nil {
		t.Fatalf("answer: %v", err)
	}
	select {
	case r := <-done:
		if r == nil || r.Outcome != agent.OutcomeOK || r.Content[0].Text != "hello Ada (30)" {
			t.Fatalf("call after the answer: %+v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not continue")
	}
	waitFor(t, "the card to show accepted", func() bool {
		l, err := s.c.Cards(ctx)
		return err == nil && len(l) == 1 && l[0].Status == elicit.StatusAccepted
	})
	if err := s.c.Answer(ctx, card.ID, elicit.Response{Action: elicit.ActionDecline}); !errors.As(err, &ae) || ae.Code != CodeConflict {
		t.Fatalf("second answer: %v", err)
	}
	if err := s.c.Answer(ctx, "no-such-card", elicit.Response{Action: elicit.ActionDecline}); !errors.As(err, &ae) || ae.Code != CodeNotFound {
		t.Fatalf("unknown card: %v", err)
	}
}

// The live feed: every topic at once, then each change.
func TestEvents(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	ch, err := s.c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]bool{}
	for len(first) < 3 {
		select {
		case ev := <-ch:
			first[ev.Type] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("first events: %v", first)
		}
	}
	if _, err := s.c.AddServer(ctx, AddServerRequest{ID: "fx", URL: f.URL()}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for ready := false; !ready; {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("stream ended")
			}
			if ev.Type != EventServers {
				continue
			}
			var l []ServerView
			if err := json.Unmarshal(ev.Data, &l); err != nil {
				t.Fatal(err)
			}
			ready = len(l) == 1 && l[0].State == manager.StateReady && l[0].ToolCount == 7
		case <-deadline:
			t.Fatal("no servers event with the ready server")
		}
	}
	cancel()
	for range ch { // the goroutine ends with ctx
	}
}

// Shutdown ends SSE streams and cancels calls in flight; Serve returns.
func TestShutdown(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{servers: []config.Server{srvCfg("fx", f.URL())}, grants: []string{originOf(t, f.URL())}})
	ctx := ctxT(t)
	ch, err := s.c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Tools(ctx, true); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.c.Call(ctx, CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":30000}`), Approved: true})
		done <- err
	}()
	waitFor(t, "slow to start", func() bool { return f.Executions("slow") == 1 })
	start := time.Now()
	s.close()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	for range ch {
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not end")
	}
	waitFor(t, "the tool to be cancelled on the server", func() bool { return f.Cancelled("slow") == 1 })
}

func TestDeleteServer(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{servers: []config.Server{srvCfg("fx", f.URL())}, grants: []string{originOf(t, f.URL())}})
	ctx := ctxT(t)
	waitFor(t, "ready", func() bool { v, err := s.c.Server(ctx, "fx"); return err == nil && v.State == manager.StateReady })
	if err := s.c.DeleteServer(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Server(ctx, "fx"); err == nil {
		t.Fatal("deleted server still there")
	}
	var ae *APIError
	if err := s.c.DeleteServer(ctx, "fx"); !errors.As(err, &ae) || ae.Code != CodeNotFound {
		t.Fatalf("second delete: %v", err)
	}
	waitFor(t, "the session to close", func() bool { return f.Sessions() == 0 })
}

// The daemon over the facade's own wiring (remotemcp.Open), as `remotemcp
// serve` runs it.
func TestClientOptions(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	ctx := ctxT(t)
	c, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: t.TempDir(), Cards: true, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := ClientOptions(c)
	o.Addr, o.Logger = "127.0.0.1:0", testLogger()
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv.wrap = recorded.wrap
	if err := srv.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	secrets.add("API token", srv.token)
	sctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	ci, err := Discover(c.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	cl := ci.Client()
	defer closeIdle(cl)
	v, err := cl.AddServer(ctx, AddServerRequest{ID: "fx", URL: f.URL()})
	if err != nil || !v.OriginGranted {
		t.Fatalf("add %+v %v", v, err)
	}
	if v, err := cl.Connect(ctx, "fx"); err != nil || v.State != manager.StateReady {
		t.Fatalf("connect %+v %v", v, err)
	}
	res, err := cl.Call(ctx, CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"via the facade"}`), Approved: true})
	if err != nil || res.Outcome != agent.OutcomeOK {
		t.Fatalf("call %+v %v", res, err)
	}
}

// Authorize through the API, with a plain HTTP client playing the
// browser: the authorization server's redirect goes to the daemon's own
// /mcp-oauth, which accepts only the state it waits for.
func TestAuthorizeAPI(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := startFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	s := newStack(t, stackOpts{grants: []string{originOf(t, as.URL())}})
	ctx := ctxT(t)
	rc := newRawClient(t)
	if _, err := s.c.AddServer(ctx, AddServerRequest{ID: "plain", URL: "https://plain.example/mcp", ConnectOnStartup: new(false)}); err != nil {
		t.Fatal(err)
	}
	var ae *APIError
	if _, err := s.c.Authorize(ctx, "plain"); !errors.As(err, &ae) || ae.Code != CodeConflict {
		t.Fatalf("authorize a non-oauth server: %v", err)
	}

	if _, err := s.c.AddServer(ctx, AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: s.srv.Port()}); err != nil {
		t.Fatal(err)
	}
	fl, err := s.c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != PhaseWaiting || !strings.HasPrefix(fl.AuthorizationURL, as.URL()) {
		t.Fatalf("authorize: %+v %v", fl, err)
	}
	// The authorization server approves at once with a redirect.
	r := rc.do(t, http.MethodGet, fl.AuthorizationURL, nil, nil)
	loc := r.header.Get("Location")
	if r.status != http.StatusFound || !strings.HasPrefix(loc, s.srv.URL()+"/mcp-oauth?") {
		t.Fatalf("authorization endpoint: %d %s", r.status, loc)
	}
	lu, _ := url.Parse(loc)
	secrets.add("authorization code", lu.Query().Get("code"))
	// A forged callback with another state is refused and changes nothing.
	q := lu.Query()
	q.Set("state", "forged-"+q.Get("state"))
	forged := *lu
	forged.RawQuery = q.Encode()
	if r := rc.do(t, http.MethodGet, forged.String(), nil, nil); r.status != http.StatusBadRequest {
		t.Fatalf("forged callback: %d", r.status)
	}
	if fl, _ := s.c.Authorization(ctx, "secure"); fl.Phase != PhaseWaiting {
		t.Fatalf("after a forged callback the flow is %s", fl.Phase)
	}
	// The real one completes the flow; the page says so.
	r = rc.do(t, http.MethodGet, loc, nil, nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Authorization complete") {
		t.Fatalf("callback: %d %s", r.status, r.body)
	}
	if r := rc.do(t, http.MethodGet, loc, nil, nil); r.status != http.StatusBadRequest {
		t.Fatalf("replayed callback: %d", r.status)
	}
	fl, err = s.c.WaitAuthorization(ctx, "secure")
	if err != nil || fl.Phase != PhaseDone || fl.Result == nil || !fl.Result.RefreshToken {
		t.Fatalf("flow %+v %v", fl, err)
	}
	waitFor(t, "ready after authorization", func() bool {
		v, err := s.c.Server(ctx, "secure")
		return err == nil && v.State == manager.StateReady && v.OAuth != nil && v.OAuth.HasRefreshToken
	})

	// Logout forgets the tokens.
	if err := s.c.OAuthLogout(ctx, "secure"); err != nil {
		t.Fatal(err)
	}
	v, _ := s.c.Server(ctx, "secure")
	if v.OAuth == nil || v.OAuth.HasRefreshToken || v.OAuth.HasAccessToken {
		t.Fatalf("after logout %+v", v.OAuth)
	}

	// A server whose redirect port is not the daemon's gets a listener
	// of its own for the flow.
	free := freePort(t)
	if _, err := s.c.AddServer(ctx, AddServerRequest{ID: "other", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: free}); err != nil {
		t.Fatal(err)
	}
	fl, err = s.c.Authorize(ctx, "other")
	if err != nil || fl.Phase != PhaseWaiting {
		t.Fatalf("authorize other: %+v %v", fl, err)
	}
	r = rc.do(t, http.MethodGet, fl.AuthorizationURL, nil, nil)
	loc = r.header.Get("Location")
	if !strings.HasPrefix(loc, "http://127.0.0.1:"+strconv.Itoa(free)+"/mcp-oauth?") {
		t.Fatalf("redirect to %s", loc)
	}
	lu, _ = url.Parse(loc)
	secrets.add("authorization code", lu.Query().Get("code"))
	rc.do(t, http.MethodGet, loc, nil, nil)
	if fl, err := s.c.WaitAuthorization(ctx, "other"); err != nil || fl.Phase != PhaseDone {
		t.Fatalf("flow other %+v %v", fl, err)
	}

	// A flow abandoned by a second click fails with a clear message.
	fl1, err := s.c.Authorize(ctx, "secure")
	if err != nil || fl1.Phase != PhaseWaiting {
		t.Fatalf("authorize again: %+v %v", fl1, err)
	}
	if _, err := s.c.Authorize(ctx, "secure"); err != nil {
		t.Fatal(err)
	}
	old, _ := url.Parse(fl1.AuthorizationURL)
	cb := s.srv.URL() + "/mcp-oauth?code=stale-code-value&state=" + url.QueryEscape(old.Query().Get("state"))
	if r := rc.do(t, http.MethodGet, cb, nil, nil); r.status != http.StatusBadRequest {
		t.Fatalf("callback of an abandoned flow: %d", r.status)
	}
	access, refresh := as.IssuedTokens()
	for _, tok := range append(access, refresh...) {
		secrets.add("OAuth token", tok)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
