package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// openEngine opens an engine on dir (a new temporary one when "").
func openEngine(t *testing.T, dir string, o engine.Options) *engine.Engine {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	o.DataDir = dir
	c, err := engine.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lazyEngine is an in-process, one-command engine.
func lazyEngine(t *testing.T) *engine.Engine {
	return openEngine(t, "", engine.Options{NoStartupConnect: true})
}

func addServer(t *testing.T, c *engine.Engine, req localapi.AddServerRequest) localapi.Server {
	t.Helper()
	res, err := c.AddServer(testkit.Context(t), req)
	if err != nil {
		t.Fatalf("add %s: %v", req.ID, err)
	}
	return res.Server
}

func initializes(f *fixture.Server) int {
	n := 0
	for _, r := range f.Requests() {
		if r.RPCMethod == "initialize" {
			n++
		}
	}
	return n
}

func code(err error) string {
	if e, ok := localapi.AsError(err); ok {
		return e.Code
	}
	return fmt.Sprintf("not a *localapi.Error: %v", err)
}

// TestStatesAcrossSignInAndLogout follows an OAuth server through SPEC
// §9 A1's states: never signed in is needs-auth ("needs authorization"),
// not error, in a lazy engine and in an eager one whose background
// connect failed for want of a login; signed in it is ready; after
// Logout it is needs-auth with reason "signed out", the tokens are
// forgotten, and a call is refused before anything is sent.
func TestStatesAcrossSignInAndLogout(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})

	for _, tc := range []struct {
		name string
		lazy bool
	}{{"lazy", true}, {"eager", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			c := openEngine(t, "", engine.Options{NoStartupConnect: tc.lazy})
			if err := c.Grant(ctx, as.URL(), ""); err != nil {
				t.Fatal(err)
			}
			port := freePort(t)
			addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: port})

			testkit.WaitFor(t, "needs-auth before the first sign-in", func() bool {
				v, err := c.Server(ctx, "secure")
				return err == nil && v.State == localapi.StateNeedsAuth
			})
			v, _ := c.Server(ctx, "secure")
			if v.Reason == nil || !strings.HasPrefix(v.Reason.Message, "needs authorization") {
				t.Fatalf("never signed in: reason %+v", v.Reason)
			}

			signIn(t, c, "secure", port)
			if _, err := c.Connect(ctx, "secure"); err != nil {
				t.Fatalf("connect after sign-in: %v", err)
			}
			st, err := c.AuthStatus(ctx, "secure")
			if err != nil || len(st) != 1 || !st[0].HasAccessToken || !st[0].SignedIn {
				t.Fatalf("auth status after sign-in: %+v %v", st, err)
			}
			res, err := c.Call(ctx, localapi.CallRequest{Tool: "secure/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
			if err != nil || res.Outcome != localapi.OutcomeOK {
				t.Fatalf("call while signed in: %+v %v", res, err)
			}

			out, err := c.Logout(ctx, "secure")
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"access token", "refresh token"} {
				if !slices.Contains(out.Forgotten, want) {
					t.Errorf("logout forgot %v, want %q among them", out.Forgotten, want)
				}
			}
			if out.Server == nil || out.Server.State != localapi.StateNeedsAuth || out.Server.Reason == nil || out.Server.Reason.Message != "signed out" {
				t.Fatalf("server after logout: %+v", out.Server)
			}
			v, _ = c.Server(ctx, "secure")
			if v.State != localapi.StateNeedsAuth || v.Reason == nil || v.Reason.Message != "signed out" || !v.State.NotReady() {
				t.Fatalf("state after logout: %s %+v", v.State, v.Reason)
			}
			st, _ = c.AuthStatus(ctx, "secure")
			if st[0].HasAccessToken || st[0].HasRefreshToken || st[0].SignedIn {
				t.Fatalf("auth status after logout: %+v", st[0])
			}

			before := f.Executions("echo")
			res, err = c.Call(ctx, localapi.CallRequest{Tool: "secure/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
			if err != nil {
				t.Fatal(err)
			}
			if res.MaybeExecuted || !strings.Contains(res.Message, "was not sent") || strings.Contains(res.Message, "may or may not") ||
				!strings.Contains(res.Message, "sign-in (step authorization)") {
				t.Fatalf("call after logout: %+v", res)
			}
			if n := f.Executions("echo"); n != before {
				t.Fatalf("the refused call ran: %d executions, want %d", n, before)
			}
			v, _ = c.Server(ctx, "secure")
			if v.State != localapi.StateNeedsAuth || v.Reason.Message != "signed out" {
				t.Fatalf("state after a refused call: %s %+v", v.State, v.Reason)
			}

			// Signing in again ends the signed-out state.
			signIn(t, c, "secure", port)
			testkit.WaitFor(t, "ready after signing in again", func() bool {
				v, err := c.Server(ctx, "secure")
				return err == nil && v.State == localapi.StateReady
			})
		})
	}
}

// signIn runs Authorize with a plain HTTP client playing the browser: the
// authorization server approves at once, and its redirect reaches the
// engine's own loopback listener on port.
func signIn(t *testing.T, c *engine.Engine, id string, port int) {
	t.Helper()
	ctx := testkit.Context(t)
	fl, err := c.Authorize(ctx, id)
	if err != nil || fl.Phase != localapi.PhaseWaiting || fl.AuthorizationURL == "" {
		t.Fatalf("authorize: %+v %v", fl, err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(fl.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth?", port)) {
		t.Fatalf("authorization endpoint: %d %s", resp.StatusCode, loc)
	}
	// A forged callback is refused and changes nothing.
	forged := strings.Replace(loc, "state=", "state=forged", 1)
	if resp, err := http.Get(forged); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("forged callback: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	resp, err = http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: %d", resp.StatusCode)
	}
	fl, err = c.WaitAuthorization(ctx, id)
	if err != nil || fl.Phase != localapi.PhaseDone || fl.Result == nil || fl.Finished == nil {
		t.Fatalf("flow: %+v %v", fl, err)
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

// TestAuthorizePortTakenNamesTheFlag: when the redirect port is taken,
// the flow fails with a message that names the --port flag.
func TestAuthorizePortTakenNamesTheFlag(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	ctx := testkit.Context(t)
	c := lazyEngine(t)
	if err := c.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: port})
	fl, err := c.Authorize(ctx, "secure")
	if err == nil || fl == nil || fl.Phase != localapi.PhaseFailed {
		t.Fatalf("authorize on a taken port: %+v %v", fl, err)
	}
	if !strings.Contains(fl.Error, "--port") || strings.Contains(fl.Error, "redirectPort") {
		t.Fatalf("message: %s", fl.Error)
	}
}

// TestLogoutOfNonOAuthServer: there is nothing to sign out of.
func TestLogoutOfNonOAuthServer(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	_, err := c.Logout(ctx, "fx")
	if code(err) != localapi.CodeConflict || !strings.Contains(err.Error(), "does not use OAuth") || !strings.Contains(err.Error(), "nothing to sign out of") {
		t.Fatalf("logout of a non-OAuth server: %v", err)
	}
	if _, err := c.Logout(ctx, "nope"); code(err) != localapi.CodeNotFound {
		t.Fatalf("logout of an unknown server: %v", err)
	}
}

// TestAuthStatusListsEveryServer: without ids every server is listed, a
// non-OAuth one with its kind and signed in false, and no zero time is
// written.
func TestAuthStatusListsEveryServer(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "plain", URL: f.URL()})
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth})
	st, err := c.AuthStatus(ctx)
	if err != nil || len(st) != 2 {
		t.Fatalf("auth status: %+v %v", st, err)
	}
	if st[0].ServerID != "plain" || st[0].Kind != config.AuthNone || st[0].SignedIn {
		t.Fatalf("plain: %+v", st[0])
	}
	if st[1].ServerID != "secure" || st[1].Kind != config.AuthOAuth || st[1].SignedIn || st[1].HasAccessToken {
		t.Fatalf("secure: %+v", st[1])
	}
	b, _ := json.Marshal(st)
	if strings.Contains(string(b), "0001-01-01") {
		t.Fatalf("zero time in %s", b)
	}
	if _, err := c.AuthStatus(ctx, "nope"); code(err) != localapi.CodeNotFound {
		t.Fatalf("unknown id: %v", err)
	}
}

// TestCallDeliversProgressInOrder: a call whose tool sends 3 progress
// notifications hands all 3 to h.Progress, in order.
func TestCallDeliversProgressInOrder(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	var mu sync.Mutex
	var got []localapi.Progress
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":300,"steps":3}`), Approved: true},
		localapi.CallHandler{Progress: func(p localapi.Progress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		}})
	if err != nil || res.Outcome != localapi.OutcomeOK {
		t.Fatalf("call: %+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d progress notifications, want 3: %+v", len(got), got)
	}
	for i, p := range got {
		if p.Progress != float64(i+1) || p.Total != 3 || p.Message != fmt.Sprintf("step %d of 3", i+1) || p.OperationID != res.OperationID {
			t.Fatalf("progress %d: %+v", i, p)
		}
	}
}

// TestQuestionDuringCallReachesHandler: the server's question reaches
// h.Question as a card with its form, and Answer lets the call finish.
func TestQuestionDuringCallReachesHandler(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	var asked []localapi.Card
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/ask", OperationID: "op-ask-1", Approved: true}, localapi.CallHandler{
		Question: func(q localapi.Card) {
			asked = append(asked, q)
			if err := c.Answer(ctx, q.ID, localapi.Answer{Action: "decline-ish"}); code(err) != localapi.CodeBadRequest {
				t.Errorf("bad action: %v", err)
			}
			if err := c.Answer(ctx, q.ID, localapi.Answer{Action: "accept", Content: map[string]any{"age": "old"}}); code(err) != localapi.CodeBadRequest {
				t.Errorf("invalid answer: %v", err)
			} else if e, _ := localapi.AsError(err); len(e.Problems) == 0 {
				t.Errorf("invalid answer without problems: %+v", e)
			}
			if err := c.Answer(ctx, q.ID, localapi.Answer{Action: "accept", Content: map[string]any{"name": "Ada"}}); err != nil {
				t.Errorf("answer: %v", err)
			}
		},
	})
	if err != nil || res.Outcome != localapi.OutcomeOK {
		t.Fatalf("call: %+v %v", res, err)
	}
	if len(res.Content) == 0 || res.Content[0].Text != "hello Ada (42)" {
		t.Fatalf("result: %+v", res.Content)
	}
	if len(asked) != 1 {
		t.Fatalf("%d questions, want 1", len(asked))
	}
	q := asked[0]
	if q.ServerID != "fx" || q.OperationID != "op-ask-1" || q.Message != "What is your name?" || q.Status != localapi.CardPending || q.Form == nil || len(q.Form.Fields) != 2 {
		t.Fatalf("question: %+v", q)
	}
	card, err := c.Card(ctx, q.ID)
	if err != nil || card.Status != localapi.CardAccepted || card.Response == nil || card.Response.Content["name"] != "Ada" {
		t.Fatalf("card after the answer: %+v %v", card, err)
	}
	if err := c.Answer(ctx, q.ID, localapi.Answer{Action: "cancel"}); code(err) != localapi.CodeConflict {
		t.Fatalf("second answer: %v", err)
	}
}

// TestCallRefusedWithoutApprovalSendsNothing: a call nobody approved,
// and one the person denied, send nothing and say so.
func TestCallRefusedWithoutApprovalSendsNothing(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	for _, tc := range []struct {
		name string
		h    localapi.CallHandler
		want string
	}{
		{"no approver", localapi.CallHandler{}, "nobody could be asked"},
		{"denied", localapi.CallHandler{Approve: func(localapi.ApprovalRequest) (localapi.Decision, error) {
			return localapi.Decision{Approved: false, Reason: "not now"}, nil
		}}, "not now"},
		{"approver failed", localapi.CallHandler{Approve: func(localapi.ApprovalRequest) (localapi.Decision, error) {
			return localapi.Decision{}, errors.New("no terminal")
		}}, "no terminal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"x"}`)}, tc.h)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome == localapi.OutcomeOK || res.MaybeExecuted || !strings.Contains(res.Message, tc.want) ||
				!strings.Contains(res.Message, "not") || strings.Contains(res.Message, "may or may not") {
				t.Fatalf("result: %+v", res)
			}
		})
	}
	if n := f.Executions("echo"); n != 0 {
		t.Fatalf("echo ran %d times", n)
	}
}

// TestApprovalRequestCarriesTheWholeCall: the person is shown the server
// (id and name), the tool with its title and description, the server's
// annotations and the arguments.
func TestApprovalRequestCarriesTheWholeCall(t *testing.T) {
	var runs atomic.Int32
	s := mcp.NewServer(&mcp.Implementation{Name: "annotated", Version: "v0"}, nil)
	destructive := true
	s.AddTool(&mcp.Tool{Name: "wipe", Title: "Wipe", Description: "Wipes a path.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive, IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wiped"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)

	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "ann", Name: "Annotated server", URL: ts.URL + "/mcp"})
	var got localapi.ApprovalRequest
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "ann/wipe", Arguments: json.RawMessage(`{"path":"/tmp/x"}`), OperationID: "op-wipe"},
		localapi.CallHandler{Approve: func(r localapi.ApprovalRequest) (localapi.Decision, error) {
			got = r
			return localapi.Decision{Approved: false}, nil
		}})
	if err != nil || res.Outcome != localapi.OutcomeDenied || res.MaybeExecuted {
		t.Fatalf("call: %+v %v", res, err)
	}
	var ann map[string]any
	if err := json.Unmarshal(got.Annotations, &ann); err != nil {
		t.Fatalf("annotations %s: %v", got.Annotations, err)
	}
	if got.OperationID != "op-wipe" || got.ServerID != "ann" || got.ServerName != "Annotated server" || got.Tool != "mcp__ann__wipe" ||
		got.ToolName != "wipe" || got.Title != "Wipe" || got.Description != "Wipes a path." || string(got.Arguments) != `{"path":"/tmp/x"}` ||
		ann["destructiveHint"] != true || ann["idempotentHint"] != true {
		t.Fatalf("approval request: %+v (annotations %s)", got, got.Annotations)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("denied call ran %d times", n)
	}
}

// TestImportTwiceIsUnchanged: the same entry twice is unchanged; a
// different entry under an existing id is a conflict, or an update with
// Update. The first import grants the server's own origin.
func TestImportTwiceIsUnchanged(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	doc := func(u string) string {
		return fmt.Sprintf(`{"mcpServers": {"fx": {"type": "http", "url": %q}, "local": {"command": "npx", "args": ["x"]}}}`, u)
	}
	origin, _ := config.Origin(f.URL())
	for _, tc := range []struct {
		name                                                   string
		doc                                                    string
		update                                                 bool
		added, updated, unchanged, conflicts, skipped, granted int
	}{
		{name: "first", doc: doc(f.URL()), added: 1, skipped: 1, granted: 1},
		{name: "again", doc: doc(f.URL()), unchanged: 1, skipped: 1},
		{name: "changed", doc: doc(f.URL() + "?v=2"), conflicts: 1, skipped: 1},
		{name: "changed with update", doc: doc(f.URL() + "?v=2"), update: true, updated: 1, skipped: 1},
		{name: "updated again", doc: doc(f.URL() + "?v=2"), unchanged: 1, skipped: 1},
	} {
		res, err := c.Import(ctx, localapi.ImportRequest{Config: tc.doc, Update: tc.update})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(res.Added) != tc.added || len(res.Updated) != tc.updated || len(res.Unchanged) != tc.unchanged ||
			len(res.Conflicts) != tc.conflicts || len(res.Skipped) != tc.skipped || len(res.Granted) != tc.granted {
			t.Fatalf("%s: %+v", tc.name, res)
		}
		if tc.granted == 1 && res.Granted[0] != origin {
			t.Fatalf("%s: granted %v, want %s", tc.name, res.Granted, origin)
		}
	}
	v, _ := c.Server(ctx, "fx")
	if v.URL != f.URL()+"?v=2" || !v.OriginGranted {
		t.Fatalf("after the update: %+v", v)
	}
	if _, err := c.Import(ctx, localapi.ImportRequest{Config: "{not json"}); code(err) != localapi.CodeBadRequest {
		t.Fatalf("bad document: %v", err)
	}
}

// TestLazyOpenConnectsNothing: an in-process engine connects no server
// at Open, even with connectOnStartup, and a call connects only the
// server it needs.
func TestLazyOpenConnectsNothing(t *testing.T) {
	f1 := testkit.StartFixture(t, fixture.Options{})
	f2 := testkit.StartFixture(t, fixture.Options{})
	dir := t.TempDir()
	ctx := testkit.Context(t)
	setup := openEngine(t, dir, engine.Options{NoStartupConnect: true})
	addServer(t, setup, localapi.AddServerRequest{ID: "one", URL: f1.URL()})
	addServer(t, setup, localapi.AddServerRequest{ID: "two", URL: f2.URL()})
	setup.Close()

	c := openEngine(t, dir, engine.Options{NoStartupConnect: true})
	if _, err := c.Tools(ctx, localapi.ToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Servers(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n1, n2 := len(f1.Requests()), len(f2.Requests()); n1+n2 != 0 {
		t.Fatalf("open contacted the servers: %d and %d requests", n1, n2)
	}
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "mcp__one__echo", Arguments: json.RawMessage(`{"text":"x"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.Outcome != localapi.OutcomeOK {
		t.Fatalf("call: %+v %v", res, err)
	}
	if _, err := c.Prompts(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadResource(ctx, localapi.ReadRequest{Mention: "@one:" + fixture.ReadmeURI}); err != nil {
		t.Fatal(err)
	}
	if n1, n2 := initializes(f1), initializes(f2); n1 != 1 || n2 != 0 {
		t.Fatalf("initialize requests: %d to the called server (want 1), %d to the other (want 0)", n1, n2)
	}
	l, err := c.Tools(ctx, localapi.ToolsRequest{Connect: true})
	if err != nil || len(l.Errors) != 0 || !slices.ContainsFunc(l.Tools, func(t localapi.Tool) bool { return t.Name == "mcp__two__echo" }) {
		t.Fatalf("tools with connect: %+v %v", l, err)
	}
	schema := slices.IndexFunc(l.Tools, func(t localapi.Tool) bool { return t.Name == "mcp__one__schema" })
	if schema < 0 || string(l.Tools[schema].InputSchema) != fixture.SchemaToolInputSchema {
		t.Fatalf("raw schema: %+v", l.Tools)
	}
}

// TestSetToolConcurrentTogglesAllLand: 50 toggles of distinct tools at
// once all land (compare-and-swap, each re-applies its own name only).
func TestSetToolConcurrentTogglesAllLand(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if _, err := c.SetTool(ctx, "fx", fmt.Sprintf("t%02d", i), false); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	v, err := c.Server(ctx, "fx")
	if err != nil || len(v.DisabledTools) != n {
		t.Fatalf("%d disabled tools, want %d: %v %v", len(v.DisabledTools), n, v.DisabledTools, err)
	}
	if _, err := c.SetTool(ctx, "fx", "t07", true); err != nil {
		t.Fatal(err)
	}
	v, _ = c.Server(ctx, "fx")
	if len(v.DisabledTools) != n-1 || slices.Contains(v.DisabledTools, "t07") {
		t.Fatalf("after enabling t07: %v", v.DisabledTools)
	}
}

// TestUpdateServerRevisionAndWarnings: an edit made against an old
// revision is a conflict and changes nothing; disabling a tool the
// server does not have warns; DisableTools adds its own names only.
func TestUpdateServerRevisionAndWarnings(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	v := addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	if _, err := c.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	name := "renamed"
	res, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Revision: v.Revision, Name: &name, DisableTools: []string{"echo", "nope"}})
	if err != nil || res.Server.Name != "renamed" || res.Server.Revision != v.Revision+1 {
		t.Fatalf("update: %+v %v", res, err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `"nope"`) {
		t.Fatalf("warnings: %v", res.Warnings)
	}
	other := "stale"
	if _, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Revision: v.Revision, Name: &other}); code(err) != localapi.CodeConflict {
		t.Fatalf("stale revision: %v", err)
	}
	res, err = c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{DisableTools: []string{"add"}, EnableTools: []string{"nope"}})
	if err != nil || !slices.Equal(res.Server.DisabledTools, []string{"add", "echo"}) || res.Server.Name != "renamed" {
		t.Fatalf("second update: %+v %v", res, err)
	}
	bad := "soon"
	if _, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{ToolTimeout: &bad}); code(err) != localapi.CodeBadRequest {
		t.Fatalf("bad timeout: %v", err)
	}
	if _, err := c.UpdateServer(ctx, "nope", localapi.UpdateServerRequest{Name: &name}); code(err) != localapi.CodeNotFound {
		t.Fatalf("unknown server: %v", err)
	}
	res, err = c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Auth: &localapi.AuthChange{Kind: config.AuthBearer, Token: "a-bearer-token-123"}})
	if err != nil || res.Server.Auth.Kind != config.AuthBearer || !res.Server.Auth.HasToken {
		t.Fatalf("auth change: %+v %v", res, err)
	}
}

// TestAddServerGrantsOrigin: adding grants the server's own origin and
// says so; a taken id is a conflict; a bad URL names the field.
func TestAddServerGrantsOrigin(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	origin, _ := config.Origin(f.URL())
	res, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	if err != nil || !slices.Equal(res.Granted, []string{origin}) || !res.Server.OriginGranted || res.Server.Revision != 1 {
		t.Fatalf("add: %+v %v", res, err)
	}
	if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL()}); code(err) != localapi.CodeConflict {
		t.Fatalf("duplicate: %v", err)
	}
	_, err = c.AddServer(ctx, localapi.AddServerRequest{ID: "bad", URL: "ftp://example.com"})
	if e, ok := localapi.AsError(err); !ok || e.Code != localapi.CodeBadRequest || e.Field != "url" {
		t.Fatalf("bad url: %v", err)
	}
	g, err := c.Grants(ctx)
	if err != nil || len(g) != 1 || g[0].Origin != origin {
		t.Fatalf("grants: %+v %v", g, err)
	}
	if err := c.RemoveServer(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Server(ctx, "fx"); code(err) != localapi.CodeNotFound {
		t.Fatalf("removed server: %v", err)
	}
}

// TestConnectWithoutGrantIsPermissionRequired: a server whose origin has
// no grant is never contacted, and Connect says which origin to approve.
func TestConnectWithoutGrantIsPermissionRequired(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	origin, _ := config.Origin(f.URL())
	if err := c.Revoke(ctx, origin); err != nil {
		t.Fatal(err)
	}
	_, err := c.Connect(ctx, "fx")
	e, ok := localapi.AsError(err)
	if !ok || e.Code != localapi.CodePermissionRequired || e.Permission == nil || e.Permission.Origin != origin || e.Server == nil {
		t.Fatalf("connect without a grant: %+v", err)
	}
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"x"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.MaybeExecuted || !strings.Contains(res.Message, "was not sent") {
		t.Fatalf("call without a grant: %+v %v", res, err)
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("%d requests reached a server without a grant", n)
	}
	if err := c.Grant(ctx, origin, ""); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Connect(ctx, "fx"); err != nil || v.State != localapi.StateReady {
		t.Fatalf("connect after the grant: %+v %v", v, err)
	}
}

// TestSubscribeSendsEveryList: a subscription starts with the whole
// current list of every event type, then sends the new list on a change.
func TestSubscribeSendsEveryList(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := c.Subscribe(sctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[localapi.EventType]bool{}
	for len(seen) < 4 {
		ev := <-ch
		seen[ev.Type] = true
	}
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	for {
		select {
		case ev := <-ch:
			if ev.Type != localapi.EventServers {
				continue
			}
			var l []localapi.Server
			if err := json.Unmarshal(ev.Data, &l); err != nil {
				t.Fatal(err)
			}
			if len(l) == 1 && l[0].ID == "fx" {
				return
			}
		case <-ctx.Done():
			t.Fatal("no servers event with the new server")
		}
	}
}

// TestPromptsAndResources: prompts, a prompt get with a bad argument, the
// resource search with templates, and reading a template refused.
func TestPromptsAndResources(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	p, err := c.Prompts(ctx, "fx")
	if err != nil || len(p) != 1 || p[0].Command != "/fx:greet" {
		t.Fatalf("prompts: %+v %v", p, err)
	}
	pr, err := c.GetPrompt(ctx, localapi.GetPromptRequest{Command: "/fx:greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(pr.Blocks) == 0 {
		t.Fatalf("get prompt: %+v %v", pr, err)
	}
	if _, err := c.GetPrompt(ctx, localapi.GetPromptRequest{Command: "/fx:greet", Arguments: map[string]string{"nmae": "Ada"}}); code(err) != localapi.CodeBadRequest {
		t.Fatalf("unknown argument: %v", err)
	}
	if _, err := c.GetPrompt(ctx, localapi.GetPromptRequest{Command: "/fx:nope"}); code(err) != localapi.CodeNotFound {
		t.Fatalf("unknown prompt: %v", err)
	}
	rs, err := c.Resources(ctx, localapi.ResourcesRequest{ServerID: "fx"})
	if err != nil || !slices.ContainsFunc(rs, func(r localapi.Resource) bool { return r.Template && r.URI == fixture.ItemsURITemplate }) {
		t.Fatalf("resources: %+v %v", rs, err)
	}
	if _, err := c.ReadResource(ctx, localapi.ReadRequest{Mention: "@fx:" + fixture.ItemsURITemplate}); code(err) != localapi.CodeBadRequest {
		t.Fatalf("read a template: %v", err)
	}
	rr, err := c.ReadResource(ctx, localapi.ReadRequest{Mention: "@fx:test://items/7"})
	if err != nil || len(rr.Blocks) != 1 || rr.Blocks[0].Text != "item 7" {
		t.Fatalf("read: %+v %v", rr, err)
	}
	log, err := c.Log(ctx, "fx")
	if err != nil || len(log) == 0 {
		t.Fatalf("log: %+v %v", log, err)
	}
}

// TestUpdateServerLimits (issue #10): limits are set by name with units,
// shown on the server, reset with "default"; a bad one changes nothing and
// names the limit; the new limits apply to the server's next session.
func TestUpdateServerLimits(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	v := addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	res, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Limits: map[string]string{"maxMessageBytes": "200B", "listTimeout": "90s"}})
	if err != nil || res.Server.Limits.MaxMessageBytes != 200 || time.Duration(res.Server.Limits.ListTimeout) != 90*time.Second {
		t.Fatalf("set limits: %+v %v", res, err)
	}
	// 200 bytes are too few for the fixture's tools/list: the handshake
	// fails naming the limit.
	if _, err := c.Connect(ctx, "fx"); err == nil || !strings.Contains(err.Error(), "limits.maxMessageBytes") {
		t.Fatalf("connect under a 200 B message limit: %v", err)
	}
	for _, bad := range []map[string]string{{"maxMessageBytes": "lots"}, {"noSuchLimit": "1"}, {"maxListPages": "-1"}} {
		if _, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Limits: bad}); code(err) != localapi.CodeBadRequest || !strings.Contains(err.Error(), "limits.") {
			t.Fatalf("bad limits %v: %v", bad, err)
		}
	}
	res, err = c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Limits: map[string]string{"maxMessageBytes": "default"}})
	if err != nil || res.Server.Limits.MaxMessageBytes != 0 || res.Server.Revision != v.Revision+2 {
		t.Fatalf("reset: %+v %v", res, err)
	}
	if _, err := c.Connect(ctx, "fx"); err != nil {
		t.Fatalf("connect with the default limits: %v", err)
	}
}

// Issue #11 item 7: a connected server's view carries its instructions;
// a server that is not connected shows none (nothing connects for it).
func TestServerViewInstructions(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	if v, _ := c.Server(ctx, "fx"); v.Instructions != "" || v.State == localapi.StateReady {
		t.Fatalf("before connecting: %+v", v)
	}
	if _, err := c.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Server(ctx, "fx"); v.Instructions != fixture.Instructions {
		t.Fatalf("instructions %q", v.Instructions)
	}
}

// R4.5: a cancel before dispatch wins at once. The call's own context
// follows the caller's a moment later (on its own goroutine), so a
// caller that cancels while the person approves must still find the call
// unsent: here the approval itself cancels, then approves.
func TestCancelDuringApprovalSendsNothing(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	if _, err := c.Connect(testkit.Context(t), "fx"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ctx, cancel := context.WithCancel(testkit.Context(t))
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"x"}`)}, localapi.CallHandler{
			Approve: func(localapi.ApprovalRequest) (localapi.Decision, error) {
				cancel()
				return localapi.Decision{Approved: true}, nil
			}})
		cancel()
		if err == nil && (res.Outcome == localapi.OutcomeOK || res.MaybeExecuted) {
			t.Fatalf("try %d: a call cancelled before dispatch was sent: %+v", i, res)
		}
	}
	if n := f.Executions("echo"); n != 0 {
		t.Fatalf("echo ran %d times", n)
	}
}
