package engine_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// Issue #11 (step-up, R3.9): a call refused with 403 insufficient_scope is
// recorded with the binding and did not run; the next sign-in asks for
// the union of the recorded and the selected scopes; then the call
// succeeds.
func TestAuthStepUpThenLoginAsksForUnion(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	as.Set(func(k *authserver.Knobs) { k.ChallengeScope = "mcp:basic" })
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	ctx := testkit.Context(t)
	c := openEngine(t, "", engine.Options{NoStartupConnect: true})
	if err := c.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: port})
	signIn(t, c, "secure", port)
	call := func() *localapi.ToolResult {
		t.Helper()
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "secure/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(); res.Outcome != localapi.OutcomeOK {
		t.Fatalf("first call: %+v", res)
	}

	as.Set(func(k *authserver.Knobs) { k.RequiredScopesFor = map[string][]string{"tools/call": {"mcp:write"}} })
	before := f.Executions("echo")
	res := call()
	if res.Outcome == localapi.OutcomeOK || res.MaybeExecuted || f.Executions("echo") != before {
		t.Fatalf("call without the scope: %+v (executions %d → %d)", res, before, f.Executions("echo"))
	}
	if !strings.Contains(res.Message, "not sent") || strings.Contains(res.Message, "may or may not") {
		t.Fatalf("the refused call's message: %s", res.Message)
	}
	if got := c.OAuth.RecordedScopes(ctx, "secure"); !slices.Equal(got, []string{"mcp:basic", "mcp:write"}) {
		t.Fatalf("recorded scopes %v", got)
	}
	// The server now waits for the person, naming the scopes (SPEC §9 A1).
	if v, err := c.Server(ctx, "secure"); err != nil || v.State != localapi.StateNeedsAuth || v.Reason == nil ||
		!slices.Contains(v.Reason.Scopes, "mcp:write") || !strings.Contains(v.Reason.Message, "mcp:write") {
		t.Fatalf("after the 403: %+v %v; want needs-auth naming mcp:write", v, err)
	}

	authz := len(as.RequestsTo("/authorize"))
	signIn(t, c, "secure", port)
	reqs := as.RequestsTo("/authorize")
	if len(reqs) != authz+1 {
		t.Fatalf("%d authorization requests, want %d", len(reqs), authz+1)
	}
	if got := reqs[len(reqs)-1].Query.Get("scope"); got != "mcp:basic mcp:write" {
		t.Fatalf("the sign-in asked for %q, want the union", got)
	}
	if res := call(); res.Outcome != localapi.OutcomeOK || f.Executions("echo") != before+1 {
		t.Fatalf("call after the sign-in: %+v", res)
	}
	if v, _ := c.Server(ctx, "secure"); v.State != localapi.StateReady {
		t.Fatalf("after the sign-in: state %s", v.State)
	}
	// The sign-ins' OAuth requests are in the server's request log (B1),
	// metadata only.
	log, err := c.Log(ctx, "secure")
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]bool{}
	for _, ex := range log {
		if ex.Kind == "oauth" {
			steps[ex.Step] = true
			if strings.Contains(ex.URL, "code=") || strings.Contains(ex.URL, "code_verifier") {
				t.Fatalf("a secret in the log: %+v", ex)
			}
		}
	}
	if !steps["token"] {
		t.Fatalf("no OAuth token request in the log: %v (log %+v)", steps, log)
	}
}

// Issue #11 (registration recovery): the authorization server restarts
// and forgets its clients. The sign-in right after cannot come back (the
// authorization page shows invalid_client); the next one registers a new
// client and succeeds, with no logout in between. Reregister forces a
// new registration.
func TestAuthForgottenClientNextSignInSucceeds(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	ctx := testkit.Context(t)
	c := openEngine(t, "", engine.Options{NoStartupConnect: true})
	if err := c.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: port})
	signIn(t, c, "secure", port)
	// lastClient is the client id of the latest authorization request.
	lastClient := func() string {
		reqs := as.RequestsTo("/authorize")
		return reqs[len(reqs)-1].Query.Get("client_id")
	}
	first := lastClient()

	// No session meanwhile: a live one would meet the restarted server's
	// refusal in the background and recover by itself (registering anew)
	// before the sign-in this test makes (it did, under load).
	if _, err := c.Disconnect(ctx, "secure"); err != nil {
		t.Fatal(err)
	}
	as.Restart()
	fl, err := c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize after the restart: %+v %v", fl, err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(fl.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || lastClient() != first {
		t.Fatalf("the forgotten client %s: %d %q", lastClient(), resp.StatusCode, resp.Header.Get("Location"))
	}
	// The person gives up and signs in again, without logging out.
	signIn(t, c, "secure", port)
	second := lastClient()
	if second == first {
		t.Fatal("the next sign-in used the forgotten client again")
	}
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "secure/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.Outcome != localapi.OutcomeOK {
		t.Fatalf("call after the sign-in: %+v %v", res, err)
	}

	// Reregister: a new client although the current one works.
	fl, err = c.Authorize(ctx, "secure", localapi.AuthorizeOptions{Reregister: true})
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize --reregister: %+v %v", fl, err)
	}
	u, _ := url.Parse(fl.AuthorizationURL)
	if id := u.Query().Get("client_id"); id == second || id == "" {
		t.Fatalf("--reregister kept client %q", id)
	}
	if n := len(as.RequestsTo("/register")); n != 3 {
		t.Fatalf("%d registrations, want 3", n)
	}
}

// holdPort listens on a free loopback port until the test ends, as
// another program would, and returns the port.
func holdPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// completeSignIn plays the browser: it follows the authorization URL to
// the redirect URI (wherever the flow said) and waits for the flow.
func completeSignIn(t *testing.T, c *engine.Engine, id string, fl *localapi.AuthFlow) {
	t.Helper()
	resp, err := http.Get(fl.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: %d", resp.StatusCode)
	}
	fl, err = c.WaitAuthorization(testkit.Context(t), id)
	if err != nil || fl.Phase != localapi.PhaseDone {
		t.Fatalf("flow: %+v %v", fl, err)
	}
}

// redirectOf is the redirect_uri of a flow's authorization URL.
func redirectOf(t *testing.T, fl *localapi.AuthFlow) string {
	t.Helper()
	u, err := url.Parse(fl.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("redirect_uri")
}

// Issue #19 item 1: without a daemon and with the default redirect port
// taken, a sign-in uses the engine's own listener on a free port, and the
// authorization server (which checks redirect URIs exactly) sees the
// client registered with it. A token refresh later keeps that
// registration although today's redirect port differs (a refresh sends
// no redirect URI); the next interactive sign-in on another port
// registers again before it redirects.
func TestSignInWithoutDaemonMovesOffATakenPort(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	ctx := testkit.Context(t)
	c := openEngine(t, "", engine.Options{NoStartupConnect: true})
	if err := c.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	taken := holdPort(t)
	engine.SetDefaultRedirectPort(t, taken)
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth})

	fl, err := c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize: %+v %v", fl, err)
	}
	first := redirectOf(t, fl)
	port, ok := strings.CutPrefix(strings.TrimSuffix(first, "/mcp-oauth"), "http://127.0.0.1:")
	if !ok || port == strconv.Itoa(taken) || fl.RedirectURI != first {
		t.Fatalf("redirect URI %q (flow %q) with %d taken", first, fl.RedirectURI, taken)
	}
	completeSignIn(t, c, "secure", fl)
	call := func() {
		t.Helper()
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "secure/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
		if err != nil || res.Outcome != localapi.OutcomeOK {
			t.Fatalf("call: %+v %v", res, err)
		}
	}
	call()

	// The access token expires; the refresh keeps the registration.
	as.ExpireAccessTokens()
	call()
	if n := len(as.RequestsTo("/register")); n != 1 {
		t.Fatalf("%d registrations after a refresh, want 1", n)
	}
	refreshes := 0
	for _, r := range as.RequestsTo("/token") {
		if r.Form.Get("grant_type") == "refresh_token" {
			refreshes++
		}
	}
	if refreshes == 0 {
		t.Fatal("the call after the expiry did not refresh")
	}

	// Another port for the next sign-in: registered again, exactly.
	next := freePort(t)
	for strconv.Itoa(next) == port {
		next = freePort(t)
	}
	engine.SetDefaultRedirectPort(t, next)
	fl, err = c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize again: %+v %v", fl, err)
	}
	if got, want := redirectOf(t, fl), fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth", next); got != want {
		t.Fatalf("second redirect URI %q, want %q", got, want)
	}
	if n := len(as.RequestsTo("/register")); n != 2 {
		t.Fatalf("%d registrations before the second sign-in, want 2", n)
	}
	completeSignIn(t, c, "secure", fl)
	call()
}

// Issue #19 item 1: a pre-registered client (auth.clientId) has the
// default redirect URI registered. When that port is free it is used;
// when it is taken the sign-in fails before the browser with the exact
// URI to register and the command that makes it the server's: the
// daemon's own page when a daemon serves callbacks. The advice is
// followed as written: the command "remotemcp servers set ID --port P" is
// the request it makes (the redirect port alone), after which the
// sign-in uses that URI with the same client.
func TestPreRegisteredClientPortTakenNamesTheURI(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	ctx := testkit.Context(t)
	c := openEngine(t, "", engine.Options{NoStartupConnect: true})
	if err := c.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	free := freePort(t)
	engine.SetDefaultRedirectPort(t, free)
	as.AddClient("pre", "", "none", fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth", free))
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, ClientID: "pre", Scopes: []string{"read"}})
	signIn(t, c, "secure", free)

	// advisedPort is the port of the command the message names, which
	// must be given whole, with a number: "remotemcp servers set secure
	// --port N".
	advisedPort := func(msg string) int {
		t.Helper()
		const cmd = `"remotemcp servers set secure --port `
		_, rest, ok := strings.Cut(msg, cmd)
		num, _, closed := strings.Cut(rest, `"`)
		p, err := strconv.Atoi(num)
		if !ok || !closed || err != nil || p <= 0 {
			t.Fatalf("the message names no command %s<number>\": %s", cmd, msg)
		}
		return p
	}
	// follow does what the advice says: register the URI with the
	// authorization server, then run the command, which changes the
	// redirect port alone; the client id and scopes stay.
	follow := func(p int) {
		t.Helper()
		as.AddClient("pre", "", "none", fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth", free), fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth", p))
		res, err := c.UpdateServer(ctx, "secure", localapi.UpdateServerRequest{RedirectPort: &p})
		if err != nil {
			t.Fatal(err)
		}
		if a := res.Server.Auth; a.RedirectPort != p || a.ClientID != "pre" || !slices.Equal(a.Scopes, []string{"read"}) || a.Kind != config.AuthOAuth {
			t.Fatalf("after servers set --port %d: %+v", p, a)
		}
	}

	taken := holdPort(t)
	engine.SetDefaultRedirectPort(t, taken)
	fl, err := c.Authorize(ctx, "secure")
	if err == nil || fl == nil || fl.Phase != localapi.PhaseFailed {
		t.Fatalf("authorize with the port taken: %+v %v", fl, err)
	}
	if !strings.Contains(fl.Error, "pre-registered") || !strings.Contains(fl.Error, fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth", taken)) {
		t.Fatalf("message: %s", fl.Error)
	}
	p := advisedPort(fl.Error)
	if want := fmt.Sprintf("register a redirect URI on a free port, e.g. http://127.0.0.1:%d/mcp-oauth,", p); !strings.Contains(fl.Error, want) {
		t.Fatalf("the message does not name the URI of its command's port (%s): %s", want, fl.Error)
	}
	follow(p)
	fl, err = c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize after following the advice: %+v %v", fl, err)
	}
	if got, want := redirectOf(t, fl), fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth", p); got != want {
		t.Fatalf("redirect URI %q, want %q", got, want)
	}
	completeSignIn(t, c, "secure", fl)
	// --port default (0) goes back to the default redirect port.
	zero := 0
	if res, err := c.UpdateServer(ctx, "secure", localapi.UpdateServerRequest{RedirectPort: &zero}); err != nil || res.Server.Auth.RedirectPort != 0 || res.Server.Auth.ClientID != "pre" {
		t.Fatalf("servers set --port default: %+v %v", res, err)
	}
	// The port alone or the whole auth section, not both.
	if _, err := c.UpdateServer(ctx, "secure", localapi.UpdateServerRequest{RedirectPort: &p, Auth: &localapi.AuthChange{Kind: config.AuthOAuth}}); !localapi.HasCode(err, localapi.CodeBadRequest) {
		t.Fatalf("redirectPort with auth: %v", err)
	}

	// With a daemon serving callbacks on its page port, that is the URI
	// to register.
	page := freePort(t)
	c.ServeCallbacks(page)
	fl, err = c.Authorize(ctx, "secure")
	if err == nil || fl == nil || fl.Phase != localapi.PhaseFailed {
		t.Fatalf("authorize with the port taken, daemon: %+v %v", fl, err)
	}
	if want := fmt.Sprintf("register http://127.0.0.1:%d/mcp-oauth (the daemon's settings page)", page); !strings.Contains(fl.Error, want) || advisedPort(fl.Error) != page {
		t.Fatalf("message: %s", fl.Error)
	}
	follow(page)
	fl, err = c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize after following the advice, daemon: %+v %v", fl, err)
	}
	if got, want := redirectOf(t, fl), fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth", page); got != want {
		t.Fatalf("redirect URI %q, want %q", got, want)
	}
	if n := len(as.RequestsTo("/authorize")); n != 2 {
		t.Fatalf("%d authorization requests, want 2 (the refused sign-ins never reach the browser step)", n)
	}
}

// Issue #19 item 1 (review): a sign-in on another redirect port registers
// a new client, but one that is started and abandoned (the tab closed)
// costs nothing: calls whose access token expired are still refreshed,
// with the client the refresh token was issued to. Finishing the sign-in
// makes the new client the one in use, and refreshes then use it.
func TestAbandonedSignInOnAnotherPortKeepsRefreshing(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	ctx := testkit.Context(t)
	c := openEngine(t, "", engine.Options{NoStartupConnect: true})
	if err := c.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	portA := freePort(t)
	engine.SetDefaultRedirectPort(t, portA)
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth})
	clientOf := func(fl *localapi.AuthFlow) string {
		t.Helper()
		u, err := url.Parse(fl.AuthorizationURL)
		if err != nil {
			t.Fatal(err)
		}
		return u.Query().Get("client_id")
	}
	fl, err := c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize on A: %+v %v", fl, err)
	}
	first := clientOf(fl)
	// signedIn completes a sign-in and waits for the connection it
	// starts, so that no call meets the session it replaces.
	signedIn := func(fl *localapi.AuthFlow) {
		t.Helper()
		completeSignIn(t, c, "secure", fl)
		testkit.WaitFor(t, "the server to be ready", func() bool {
			v, err := c.Server(ctx, "secure")
			return err == nil && v.State == localapi.StateReady
		})
	}
	signedIn(fl)

	// callAfterExpiry makes the access token expire, calls, and returns
	// the client id the refresh was sent with.
	callAfterExpiry := func(what string) string {
		t.Helper()
		as.ExpireAccessTokens()
		var before int
		for _, r := range as.RequestsTo("/token") {
			if r.Form.Get("grant_type") == "refresh_token" {
				before++
			}
		}
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "secure/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
		if err != nil || res.Outcome != localapi.OutcomeOK {
			t.Fatalf("%s: call: %+v %v", what, res, err)
		}
		var refreshes []string
		for _, r := range as.RequestsTo("/token") {
			if r.Form.Get("grant_type") == "refresh_token" {
				refreshes = append(refreshes, r.Form.Get("client_id"))
			}
		}
		if len(refreshes) <= before {
			t.Fatalf("%s: the call did not refresh", what)
		}
		return refreshes[len(refreshes)-1]
	}
	if got := callAfterExpiry("after the sign-in on A"); got != first {
		t.Fatalf("refreshed with %q, want %q", got, first)
	}

	// The daemon's page moved: the next sign-in, on B, registers a new
	// client, and nobody follows its authorization URL.
	portB := freePort(t)
	for portB == portA {
		portB = freePort(t)
	}
	engine.SetDefaultRedirectPort(t, portB)
	fl, err = c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize on B: %+v %v", fl, err)
	}
	second := clientOf(fl)
	if second == first || len(as.RequestsTo("/register")) != 2 {
		t.Fatalf("the sign-in on B uses client %q (first %q) after %d registrations", second, first, len(as.RequestsTo("/register")))
	}
	if got := callAfterExpiry("while the sign-in on B waits"); got != first {
		t.Fatalf("while the sign-in on B waits: refreshed with %q, want %q", got, first)
	}
	if v, err := c.Server(ctx, "secure"); err != nil || v.State != localapi.StateReady {
		t.Fatalf("while the sign-in on B waits: %+v %v", v, err)
	}

	// Finished: the new client is in use, for refreshes too.
	signedIn(fl)
	if got := callAfterExpiry("after the sign-in on B"); got != second {
		t.Fatalf("after the sign-in on B: refreshed with %q, want %q", got, second)
	}
}
