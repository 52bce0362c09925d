package oauth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

func autoKind(s *config.Server) { s.Auth = config.Auth{Kind: config.AuthAuto} }

// noAuthHeaders fails if any request that reached the MCP server carried
// an Authorization header.
func noAuthHeaders(t *testing.T, f *fixture.Server) {
	t.Helper()
	for _, r := range f.Requests() {
		if v := r.Header.Get("Authorization"); v != "" {
			t.Errorf("%s %s carried Authorization %.12q…", r.Method, r.RPCMethod, v)
		}
	}
}

// SPEC §9 A2: an auto server that never asks for authentication is used
// without it; nothing is sent to any OAuth endpoint, even by an interactive
// handler, and nothing OAuth is recorded.
func TestAutoOpenServerNeverTouchesOAuth_A2(t *testing.T) {
	e := newEnv(t, withoutAuth(), withServer(autoKind))
	for _, b := range []Browser{nil, HeadlessBrowser(nil)} {
		cs, err := e.connect(e.ctx(), e.a.Handler(e.server(), b))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		if _, err := cs.CallTool(e.ctx(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
			t.Fatalf("CallTool: %v", err)
		}
	}
	if n := len(e.as.Requests()); n != 0 {
		t.Fatalf("the authorization server got %d requests", n)
	}
	noAuthHeaders(t, e.mcp)
	srv := e.server()
	if srv.Auth.Kind != config.AuthAuto || srv.Auth.Binding != nil || srv.UsesOAuth() {
		t.Fatalf("stored auth %+v; want auto without a binding", srv.Auth)
	}
	if st := e.a.Status(e.ctx(), srv); st.Binding != nil || st.HasAccessToken || st.HasRefreshToken {
		t.Fatalf("status %+v", st)
	}
}

// SPEC §9 A2, R3.13: an auto server behind OAuth. Background work gets the
// typed login-required error at the authorization step and contacts no
// OAuth endpoint; after an explicit login the same kind of handler works,
// the config keeps kind auto and gains the binding.
func TestAutoBehindOAuthNeedsLoginThenWorks_A2_R3_13(t *testing.T) {
	e := newEnv(t, withServer(autoKind))
	_, err := e.connect(e.ctx(), e.a.Handler(e.server(), nil))
	oe := mustErrorStep(t, err, StepAuthorization)
	if !errors.Is(err, ErrLoginRequired) || oe.ServerID != "srv1" {
		t.Fatalf("error %v; want ErrLoginRequired for srv1", err)
	}
	// Why, as a code the surfaces turn into advice; the text names no
	// command (issue #21 item 3).
	var lre *LoginRequiredError
	if !errors.As(err, &lre) || lre.Reason != LoginNotSignedIn || !strings.Contains(err.Error(), "auth kind auto") || strings.Contains(err.Error(), "remotemcp auth") {
		t.Errorf("error %q; want a LoginRequiredError, reason not-signed-in, naming auth kind auto and no command", err)
	}
	if n := len(e.as.Requests()); n != 0 {
		t.Fatalf("background work sent %d requests to the authorization server", n)
	}
	noAuthHeaders(t, e.mcp) // the first request went out without credentials

	res := e.login()
	want := config.Binding{Resource: e.mcp.URL(), Issuer: e.as.Issuer()}
	if res.NotNeeded || res.Binding != want {
		t.Fatalf("login %+v", res)
	}
	srv := e.server()
	if srv.Auth.Kind != config.AuthAuto || srv.Auth.Binding == nil || *srv.Auth.Binding != want || !srv.UsesOAuth() {
		t.Fatalf("stored auth after login %+v; want kind auto with binding %+v", srv.Auth, want)
	}
	if st := e.a.Status(e.ctx(), srv); st.Binding == nil || !st.BindingCurrent || !st.HasAccessToken {
		t.Fatalf("status after login %+v", st)
	}

	e.mcp.ResetRequests()
	cs, err := e.connect(e.ctx(), e.a.Handler(srv, nil))
	if err != nil {
		t.Fatalf("connect after login: %v", err)
	}
	if _, err := cs.CallTool(e.ctx(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatalf("CallTool after login: %v", err)
	}
	for _, r := range e.mcp.Requests() {
		if r.Denied {
			t.Errorf("%s %s was denied after login", r.Method, r.RPCMethod)
		}
	}

	// Signed in, it is an oauth server: an expired token is refreshed in
	// the background like any other.
	e.as.ExpireAccessTokens()
	if _, err := cs.CallTool(e.ctx(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}}); err != nil {
		t.Fatalf("CallTool after the token expired: %v", err)
	}
	if n := len(tokenRequests(e.as, "refresh_token")); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
}

// SPEC §9 A2: the first challenge switches an interactive auto session to
// OAuth at once, as for an oauth server.
func TestAutoInteractiveAuthorizesOnChallenge_A2(t *testing.T) {
	e := newEnv(t, withServer(autoKind))
	cs, err := e.connect(e.ctx(), e.a.Handler(e.server(), HeadlessBrowser(nil)))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := cs.CallTool(e.ctx(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if n := len(e.as.RequestsTo("/authorize")); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
	if srv := e.server(); srv.Auth.Kind != config.AuthAuto || !srv.UsesOAuth() {
		t.Fatalf("stored auth %+v", srv.Auth)
	}
}

// SPEC §9 A2: only a 401 with a Bearer challenge switches an auto server.
// A bare 401, or a 403, is a plain refusal: a typed error, no discovery,
// and never a browser.
func TestAutoWithoutChallengeIsNotOAuth_A2(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header string
		want   error
	}{
		{"401 without WWW-Authenticate", http.StatusUnauthorized, "", ErrNoChallenge},
		{"401 with Basic only", http.StatusUnauthorized, `Basic realm="x"`, ErrNoChallenge},
		{"403", http.StatusForbidden, "", ErrForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withoutAuth())
			f, err := fixture.Start(fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
				if tc.header != "" {
					w.Header().Set("WWW-Authenticate", tc.header)
				}
				w.WriteHeader(tc.status)
				return false
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = f.Close() })
			srv := config.Server{ID: "bare", URL: f.URL(), Enabled: true, Auth: config.Auth{Kind: config.AuthAuto}}
			if err := e.st.AddServer(context.Background(), srv); err != nil {
				t.Fatal(err)
			}
			browsed := false
			b := func(context.Context, string) (*CallbackResult, error) { browsed = true; return nil, errors.New("no") }
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
			_, err = c.Connect(e.ctx(), &mcp.StreamableClientTransport{Endpoint: f.URL(), OAuthHandler: e.a.Handler(srv, b), DisableStandaloneSSE: true}, nil)
			mustErrorStep(t, err, StepAuthorization)
			if !errors.Is(err, tc.want) || errors.Is(err, ErrLoginRequired) {
				t.Fatalf("error %v; want %v", err, tc.want)
			}
			if browsed || len(e.as.Requests()) != 0 {
				t.Fatalf("a refusal without a challenge started OAuth (browser %v, %d AS requests)", browsed, len(e.as.Requests()))
			}
			if got, _ := e.st.GetServer(context.Background(), "bare"); got.Auth.Binding != nil {
				t.Fatalf("binding recorded: %+v", got.Auth)
			}
		})
	}
}

// Login and Logout accept an auto server; a server of another kind is
// refused with ErrNotOAuth.
func TestAutoLoginLogout_A2(t *testing.T) {
	e := newEnv(t, withServer(autoKind))
	e.login()
	if err := e.a.Logout(e.ctx(), "srv1"); err != nil {
		t.Fatal(err)
	}
	if st := e.a.Status(e.ctx(), e.server()); st.HasAccessToken || st.HasRefreshToken {
		t.Fatalf("status after logout %+v", st)
	}
	none := e.server()
	none.Auth = config.Auth{Kind: config.AuthNone}
	if _, err := e.a.Login(e.ctx(), none, HeadlessBrowser(nil)); !errors.Is(err, ErrNotOAuth) {
		t.Fatalf("Login of a kind-none server: %v", err)
	}
}

func TestHasBearerChallenge(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{`Bearer resource_metadata="https://a/.well-known/oauth-protected-resource"`}, true},
		{[]string{`Bearer`}, true},
		{[]string{`bearer realm="x"`}, true},
		{[]string{`Basic realm="x"`}, false},
		{[]string{`Basic realm="x"`, `Bearer error="invalid_token"`}, true},
		{[]string{`Basic realm="x", Bearer scope="a"`}, true},
		{[]string{`Negotiate`}, false},
		{[]string{`Bearer error="unterminated`}, true}, // unreadable, but names Bearer
		{[]string{`Basic realm="say Bearer"`}, false},
		// Over MaxChallengeBytes: the plain scan only (the SDK's parser is
		// quadratic in commas).
		{[]string{`Bearer ` + strings.Repeat(",", 1<<20)}, true},
		{[]string{`Basic ` + strings.Repeat(",", 1<<20)}, false},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("WWW-Authenticate", v)
		}
		if got := hasBearerChallenge(h); got != tc.want {
			t.Errorf("hasBearerChallenge(%q) = %v, want %v", tc.values, got, tc.want)
		}
	}
}

// A server's WWW-Authenticate over MaxChallengeBytes is refused unread,
// at once, with its size: the SDK's parser would take minutes over a
// megabyte of commas (R2.10: what a server sends is bounded).
func TestParseChallengeBounded(t *testing.T) {
	h := http.Header{}
	h.Set("WWW-Authenticate", `Bearer resource_metadata="https://a/x"`+strings.Repeat(",", 1<<20))
	_, err := parseChallenge(h)
	if err == nil || !strings.Contains(err.Error(), "over the 16384 remotemcp reads") {
		t.Fatalf("an oversized challenge: %v", err)
	}
	h.Set("WWW-Authenticate", `Bearer resource_metadata="https://a/x", scope="a b"`)
	ch, err := parseChallenge(h)
	if err != nil || ch.resourceMetadata != "https://a/x" || len(ch.scopes) != 2 {
		t.Fatalf("a normal challenge: %+v %v", ch, err)
	}
}
