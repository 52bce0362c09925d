package oauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/store"
)

// R3.4: the whole flow — probe 401, PRM, AS metadata, DCR, PKCE + state,
// browser, code exchange — then a go-sdk session with the handler lists
// tools using the stored access token, with no further authorization.
func TestLoginThenSessionListsTools_R3_4(t *testing.T) {
	e := newEnv(t)
	res := e.login()
	canonical := e.mcp.URL()

	if res.NotNeeded || !res.Registered || !res.RefreshToken || res.ClientID == "" {
		t.Fatalf("unexpected login result %+v", res)
	}
	want := config.Binding{Resource: canonical, Issuer: e.as.Issuer()}
	if res.Binding != want {
		t.Fatalf("binding = %+v, want %+v", res.Binding, want)
	}
	if b := e.server().Auth.Binding; b == nil || *b != want {
		t.Fatalf("stored binding = %+v, want %+v", b, want)
	}

	// The registration request: public native client, fixed redirect URI.
	regs := e.as.RequestsTo("/register")
	if len(regs) != 1 {
		t.Fatalf("%d registrations, want 1", len(regs))
	}
	body := string(regs[0].Body)
	for _, s := range []string{`"redirect_uris":["http://127.0.0.1:7717/mcp-oauth"]`, `"token_endpoint_auth_method":"none"`,
		`"grant_types":["authorization_code","refresh_token"]`, `"response_types":["code"]`, `"application_type":"native"`, `"client_name":"remotemcp"`} {
		if !strings.Contains(body, s) {
			t.Errorf("registration body lacks %s: %s", s, body)
		}
	}
	// The authorization request: PKCE S256, state, RFC 8707 resource.
	authz := e.as.RequestsTo("/authorize")
	if len(authz) != 1 {
		t.Fatalf("%d authorization requests, want 1", len(authz))
	}
	q := authz[0].Query
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" ||
		q.Get("resource") != canonical || q.Get("redirect_uri") != RedirectURI(0) {
		t.Errorf("authorization request %v", q)
	}
	tok := tokenRequests(e.as, "authorization_code")
	if len(tok) != 1 || tok[0].Form.Get("resource") != canonical || tok[0].Form.Get("code_verifier") == "" {
		t.Fatalf("token requests %+v", tok)
	}

	e.mcp.ResetRequests() // forget Login's unauthenticated probe
	cs, err := e.connect(e.ctx(), e.a.Handler(e.server(), nil))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	tools, err := cs.ListTools(e.ctx(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("no tools")
	}
	if n := len(e.as.RequestsTo("/authorize")); n != 1 {
		t.Errorf("session caused %d more authorizations", n-1)
	}
	// Every MCP request carried the bearer token.
	for _, r := range e.mcp.Requests() {
		if r.Denied {
			t.Errorf("MCP request %s %s was denied", r.Method, r.RPCMethod)
		}
	}
}

// R3.4, R3.12: without a prior login, the first 401 of an interactive
// session runs the flow through the browser and the call then succeeds.
func TestInteractiveHandlerAuthorizesOn401_R3_4(t *testing.T) {
	e := newEnv(t)
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
	if e.server().Auth.Binding == nil {
		t.Fatal("binding not recorded")
	}
}

// R3.13: background work cannot authorize interactively: a typed error
// that says to log in, and nothing is sent to the authorization endpoint.
func TestBackgroundHandlerNeedsLogin_R3_13(t *testing.T) {
	e := newEnv(t)
	_, err := e.connect(e.ctx(), e.a.Handler(e.server(), nil))
	oe := mustErrorStep(t, err, StepAuthorization)
	if !errors.Is(err, ErrLoginRequired) || oe.ServerID != "srv1" {
		t.Fatalf("error %v", err)
	}
	var lre *LoginRequiredError
	if !errors.As(err, &lre) || lre.Reason != LoginNotSignedIn || strings.Contains(err.Error(), "remotemcp auth") {
		t.Errorf("error %v; want a LoginRequiredError, reason not-signed-in, without a command", err)
	}
	if n := len(e.as.RequestsTo("/authorize")) + len(e.as.RequestsTo("/register")); n != 0 {
		t.Errorf("%d authorization/registration requests from background work", n)
	}
}

// A server that needs no authentication and publishes no PRM: Login says so.
func TestLoginNotNeeded(t *testing.T) {
	e := newEnv(t, withoutAuth())
	res, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !res.NotNeeded {
		t.Fatalf("result %+v, want NotNeeded", res)
	}
}

// R3.8: S256 absent from, or not in, code_challenge_methods_supported →
// refused before registration or authorization, with a precise message.
func TestS256Required_R3_8(t *testing.T) {
	for _, tc := range []struct {
		name  string
		knobs func(*authserver.Knobs)
		msg   string
	}{
		{"absent", func(k *authserver.Knobs) { k.OmitCodeChallengeMethods = true }, "code_challenge_methods_supported is absent"},
		{"plain-only", func(k *authserver.Knobs) { k.CodeChallengeMethods = []string{"plain"} }, "code_challenge_methods_supported does not list S256"},
		{"empty", func(k *authserver.Knobs) { k.CodeChallengeMethods = []string{} }, "code_challenge_methods_supported does not list S256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withKnobs(tc.knobs))
			_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
			mustErrorStep(t, err, StepDiscoveryAS)
			if !errors.Is(err, ErrNoS256) {
				t.Fatalf("not ErrNoS256: %v", err)
			}
			want := "oauth: discovery-AS: " + e.as.Issuer() + ": " + tc.msg
			if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "the server does not support PKCE S256, which MCP requires") {
				t.Errorf("message %q, want prefix %q", err, want)
			}
			if n := len(e.as.RequestsTo("/register")) + len(e.as.RequestsTo("/authorize")); n != 0 {
				t.Errorf("%d requests after refusing the metadata", n)
			}
		})
	}
}

// R3.8: the metadata's issuer must equal the issuer exactly (a trailing
// slash is a mismatch).
func TestMetadataIssuerMismatch_R3_8(t *testing.T) {
	e := newEnv(t)
	e.as.Set(func(k *authserver.Knobs) { k.MetadataIssuer = e.as.Issuer() + "/" })
	_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	mustErrorStep(t, err, StepDiscoveryAS)
	if !errors.Is(err, ErrIssuerMismatch) {
		t.Fatalf("not ErrIssuerMismatch: %v", err)
	}
	if n := len(e.as.RequestsTo("/register")); n != 0 {
		t.Errorf("registered with a mismatched issuer")
	}
}

// R3.8: metadata discovery order, with and without an issuer path; each
// variant is served at one location only.
func TestASMetadataOrder_R3_8(t *testing.T) {
	for _, tc := range []struct {
		name, path, loc string
		wantTried       []string
	}{
		{"rfc8414", "", authserver.MetaRFC8414, []string{"/.well-known/oauth-authorization-server"}},
		{"oidc", "", authserver.MetaOIDCInsert, []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}},
		{"path-rfc8414", "/tenant1", authserver.MetaRFC8414, []string{"/.well-known/oauth-authorization-server/tenant1"}},
		{"path-oidc-insert", "/tenant1", authserver.MetaOIDCInsert, []string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1"}},
		{"path-oidc-append", "/tenant1", authserver.MetaOIDCAppend, []string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withAS(authserver.Options{IssuerPath: tc.path}), withKnobs(func(k *authserver.Knobs) { k.MetadataLocation = tc.loc }))
			e.login()
			var tried []string
			for _, r := range e.as.Requests() {
				if strings.Contains(r.Path, ".well-known") && !strings.Contains(r.Path, "protected-resource") {
					tried = append(tried, r.Path)
				}
			}
			if !slices.Equal(tried, tc.wantTried) {
				t.Fatalf("metadata requests %v, want %v", tried, tc.wantTried)
			}
		})
	}
}

// R3.2: a redirect on PRM, AS metadata or the token endpoint is refused,
// never followed.
func TestRedirectsRefused_R3_2(t *testing.T) {
	for _, tc := range []struct {
		name  string
		knobs func(*authserver.Knobs)
		step  Step
	}{
		{"prm", func(k *authserver.Knobs) { k.RedirectPRM = true }, StepDiscoveryPRM},
		{"as-metadata", func(k *authserver.Knobs) { k.RedirectMetadata = true }, StepDiscoveryAS},
		{"token", func(k *authserver.Knobs) { k.RedirectToken = true }, StepToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withKnobs(tc.knobs))
			_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
			mustErrorStep(t, err, tc.step)
			if !errors.Is(err, ErrRedirectRefused) {
				t.Fatalf("not ErrRedirectRefused: %v", err)
			}
			if strings.Contains(err.Error(), "code=") {
				t.Errorf("message shows a query: %v", err)
			}
		})
	}
}

// R3.6: a resource_metadata URL on another origin is ignored; discovery
// falls back to the well-known locations on the MCP origin.
func TestCrossOriginResourceMetadataIgnored_R3_6(t *testing.T) {
	e := newEnv(t)
	e.as.Set(func(k *authserver.Knobs) { k.ResourceMetadataURL = e.as.URL() + "/prm" })
	e.login()
	for _, r := range e.as.Requests() {
		if r.Path == "/prm" {
			t.Fatal("fetched the cross-origin resource_metadata")
		}
	}
	// The fixture does not record its Extra routes; a login whose resource
	// is the MCP URL shows the path-aware well-known document was used.
	if q := e.as.RequestsTo("/authorize")[0].Query; q.Get("resource") != e.mcp.URL() {
		t.Fatalf("resource %q", q.Get("resource"))
	}
	if !strings.Contains(e.logs.String(), "ignoring resource_metadata from another origin") {
		t.Error("no warning logged")
	}
}

// R3.6 unit: which resource_metadata URLs are candidates.
func TestPRMCandidates_R3_6(t *testing.T) {
	log := discardLogger()
	for _, tc := range []struct {
		mcp, header string
		want        []string
	}{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/prm",
			[]string{"https://mcp.example.com/prm", "https://mcp.example.com/.well-known/oauth-protected-resource/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource"}},
		{"https://mcp.example.com/mcp", "https://evil.example.com/prm",
			[]string{"https://mcp.example.com/.well-known/oauth-protected-resource/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource"}},
		{"https://mcp.example.com/mcp", "http://mcp.example.com/prm", // scheme downgrade: another origin
			[]string{"https://mcp.example.com/.well-known/oauth-protected-resource/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource"}},
		{"https://mcp.example.com/mcp", "https://mcp.example.com:8443/prm",
			[]string{"https://mcp.example.com/.well-known/oauth-protected-resource/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource"}},
		{"http://mcp.example.com/mcp", "http://mcp.example.com/prm", // same origin but plain http, not loopback
			[]string{"http://mcp.example.com/.well-known/oauth-protected-resource/mcp", "http://mcp.example.com/.well-known/oauth-protected-resource"}},
		{"http://127.0.0.1:9/mcp", "http://127.0.0.1:9/prm",
			[]string{"http://127.0.0.1:9/prm", "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp", "http://127.0.0.1:9/.well-known/oauth-protected-resource"}},
		{"https://mcp.example.com", "",
			[]string{"https://mcp.example.com/.well-known/oauth-protected-resource"}},
	} {
		canon, err := config.CanonicalResource(tc.mcp)
		if err != nil {
			t.Fatal(err)
		}
		cands, err := prmCandidates(log, "s", tc.mcp, canon, tc.header)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cands {
			got = append(got, c.url)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s with %s: %v, want %v", tc.mcp, tc.header, got, tc.want)
		}
	}
}

// R3.6: path-aware well-known missing → root well-known, whose resource is
// the origin; that identifier is then sent as resource unchanged.
func TestRootPRMFallback_R3_6(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) {
		k.PRMNotFound = []string{"/.well-known/oauth-protected-resource/mcp"}
		k.ResourceMetadataURL = "-"
	}))
	e.login()
	origin, _ := config.Origin(e.mcp.URL())
	if r := e.as.RequestsTo("/authorize")[0].Query.Get("resource"); r != origin {
		t.Fatalf("resource %q, want the origin %q", r, origin)
	}
	// The binding is still keyed by the canonical MCP resource.
	if b := e.server().Auth.Binding; b == nil || b.Resource != e.mcp.URL() {
		t.Fatalf("binding %+v", b)
	}
	// Refresh sends the same identifier.
	e.as.ExpireAccessTokens()
	req, resp := e.post401(e.accessToken(e.a))
	if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); err != nil {
		t.Fatal(err)
	}
	if r := tokenRequests(e.as, "refresh_token"); len(r) != 1 || r[0].Form.Get("resource") != origin {
		t.Fatalf("refresh requests %+v", r)
	}
}

// No PRM anywhere: no guessing of endpoints (2025-06-18 floor).
func TestNoPRMNoGuessing_R3_6(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) {
		k.PRMNotFound = []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}
		k.ResourceMetadataURL = "-"
	}))
	_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	mustErrorStep(t, err, StepDiscoveryPRM)
	if !errors.Is(err, ErrNoMetadata) {
		t.Fatalf("not ErrNoMetadata: %v", err)
	}
	if len(e.as.Requests()) != 0 {
		t.Fatalf("the AS was contacted: %+v", e.as.Requests())
	}
}

// R3.7: the PRM's resource must match the canonical resource.
func TestPRMResourceMismatch_R3_7(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.PRMResource = "https://evil.example.com/mcp" }))
	_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	mustErrorStep(t, err, StepDiscoveryPRM)
	if !errors.Is(err, ErrResourceMismatch) {
		t.Fatalf("not ErrResourceMismatch: %v", err)
	}
	if n := len(e.as.RequestsTo("/authorize")); n != 0 {
		t.Fatal("reached /authorize")
	}
}

// R3.7: several authorization servers on first discovery → a clear error
// naming them; with a binding to one of them, that one is kept.
func TestSeveralAuthorizationServers_R3_7(t *testing.T) {
	e := newEnv(t)
	as2 := e.startAS(authserver.Options{Name: "as2"})
	e.as.Set(func(k *authserver.Knobs) { k.PRMAuthorizationServers = []string{e.as.Issuer(), as2.Issuer()} })

	_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	mustErrorStep(t, err, StepDiscoveryPRM)
	if !errors.Is(err, ErrSeveralAuthServers) || !strings.Contains(err.Error(), e.as.Issuer()) || !strings.Contains(err.Error(), as2.Issuer()) {
		t.Fatalf("error does not name both servers: %v", err)
	}
	if len(e.as.Requests())+len(as2.Requests()) != 0 {
		t.Fatal("an authorization server was contacted")
	}

	// The user (or an earlier login) binds as2: it is kept.
	srv := e.server()
	srv.Auth.Binding = &config.Binding{Resource: e.mcp.URL(), Issuer: as2.Issuer()}
	if err := e.st.UpdateServer(e.ctx(), srv); err != nil {
		t.Fatal(err)
	}
	res, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Binding.Issuer != as2.Issuer() || len(as2.RequestsTo("/authorize")) != 1 || len(e.as.RequestsTo("/authorize")) != 0 {
		t.Fatalf("bound issuer not kept: %+v", res)
	}
}

// RFC 9207 iss checks (conformance auth/iss-*).
func TestIssParameter_RFC9207(t *testing.T) {
	for _, tc := range []struct {
		name       string
		advertised bool
		iss        string
		ok         bool
	}{
		{"supported-correct", true, authserver.IssCorrect, true},
		{"supported-missing", true, authserver.IssOmit, false},
		{"supported-wrong", true, authserver.IssWrong, false},
		{"supported-trailing-slash", true, authserver.IssSlash, false},
		{"unadvertised-absent", false, authserver.IssOmit, true},
		{"unadvertised-correct", false, authserver.IssCorrect, true},
		{"unadvertised-wrong", false, authserver.IssWrong, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.IssParameterSupported, k.IssInRedirect = tc.advertised, tc.iss }))
			_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			mustErrorStep(t, err, StepAuthorization)
			if !errors.Is(err, ErrIssuerMismatch) {
				t.Fatalf("not ErrIssuerMismatch: %v", err)
			}
			if n := len(e.as.RequestsTo("/token")); n != 0 {
				t.Fatal("the code was sent to the token endpoint")
			}
		})
	}
}

// The user declines: a clear authorization error, no token request.
func TestAuthorizationDenied(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.DenyAuthorization = true }))
	_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	mustErrorStep(t, err, StepAuthorization)
	if !errors.Is(err, ErrAccessDenied) || !strings.Contains(err.Error(), "access_denied") {
		t.Fatalf("error %v", err)
	}
}

// A callback with a forged state is refused.
func TestStateMismatchRefused(t *testing.T) {
	e := newEnv(t)
	forged := func(ctx context.Context, authURL string) (*CallbackResult, error) {
		r, err := HeadlessBrowser(nil)(ctx, authURL)
		if err != nil {
			return nil, err
		}
		r.State = "forged"
		return r, nil
	}
	_, err := e.a.Login(e.ctx(), e.server(), forged)
	mustErrorStep(t, err, StepAuthorization)
	if !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("error %v", err)
	}
	if len(e.as.RequestsTo("/token")) != 0 {
		t.Fatal("token requested after a state mismatch")
	}
}

// R3.9 + SEP-2207: which scopes are requested.
func TestScopeSelection_R3_9(t *testing.T) {
	for _, tc := range []struct {
		name      string
		knobs     func(*authserver.Knobs)
		configure []string
		want      string
	}{
		{"challenge-wins", func(k *authserver.Knobs) {
			k.ChallengeScope = "mcp:basic"
			k.PRMScopesSupported = []string{"mcp:read", "mcp:write"}
		}, []string{"cfg"}, "mcp:basic"},
		{"prm-scopes", func(k *authserver.Knobs) { k.PRMScopesSupported = []string{"mcp:read", "mcp:write"} }, []string{"cfg"}, "mcp:read mcp:write"},
		{"configured", func(k *authserver.Knobs) {}, []string{"cfg:a", "cfg:b"}, "cfg:a cfg:b"},
		{"omitted", func(k *authserver.Knobs) {}, nil, ""},
		{"offline-access-listed", func(k *authserver.Knobs) {
			k.ChallengeScope = "mcp:basic"
			k.ScopesSupported = []string{"mcp:basic", "offline_access"}
		}, nil, "mcp:basic offline_access"},
		{"offline-access-not-listed", func(k *authserver.Knobs) {
			k.ChallengeScope = "mcp:basic"
			k.ScopesSupported = []string{"mcp:basic", "mcp:read"}
		}, nil, "mcp:basic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withKnobs(tc.knobs), withServer(func(s *config.Server) { s.Auth.Scopes = tc.configure }))
			e.login()
			q := e.as.RequestsTo("/authorize")[0].Query
			if got := q.Get("scope"); got != tc.want {
				t.Fatalf("scope %q, want %q", got, tc.want)
			}
			if tc.want == "" && q.Has("scope") {
				t.Fatal("empty scope parameter sent instead of omitting it")
			}
		})
	}
}

// A pre-registered client id with a secret authenticates as the server
// advertises (client_secret_basic here), and no registration happens.
func TestConfiguredClientBasicAuth_R3_3(t *testing.T) {
	e := newEnv(t,
		withKnobs(func(k *authserver.Knobs) {
			k.DisableRegistration = true
			k.TokenEndpointAuthMethods = []string{"client_secret_basic"}
		}),
		withServer(func(s *config.Server) { s.Auth.ClientID, s.Auth.ClientSecret = "pre-registered", "pre-secret" }))
	e.as.AddClient("pre-registered", "pre-secret", "client_secret_basic")
	res := e.login()
	if res.Registered || res.ClientID != "pre-registered" {
		t.Fatalf("result %+v", res)
	}
	tok := tokenRequests(e.as, "authorization_code")
	if len(tok) != 1 || !strings.HasPrefix(tok[0].Authorization, "Basic ") || tok[0].Form.Has("client_secret") {
		t.Fatalf("token request %+v", tok)
	}
	// Refresh authenticates the same way.
	e.as.ExpireAccessTokens()
	req, resp := e.post401(e.accessToken(e.a))
	if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); err != nil {
		t.Fatal(err)
	}
	if r := tokenRequests(e.as, "refresh_token"); len(r) != 1 || !strings.HasPrefix(r[0].Authorization, "Basic ") {
		t.Fatalf("refresh %+v", r)
	}
}

// DCR answered with client_secret_post: the secret goes in the body.
func TestRegisteredClientSecretPost(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.RegisterAuthMethod = "client_secret_post" }))
	e.login()
	tok := tokenRequests(e.as, "authorization_code")
	if len(tok) != 1 || tok[0].Authorization != "" || tok[0].Form.Get("client_secret") == "" {
		t.Fatalf("token request %+v", tok)
	}
}

// No registration endpoint and no configured client id: a clear error.
func TestNoRegistrationNoClientID(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.DisableRegistration = true }))
	_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	mustErrorStep(t, err, StepRegistration)
	if !errors.Is(err, ErrNoRegistration) || !strings.Contains(err.Error(), "auth.clientId") {
		t.Fatalf("error %v", err)
	}
}

// Logout forgets tokens and registrations; Status never shows secrets.
func TestLogoutAndStatus(t *testing.T) {
	e := newEnv(t)
	res := e.login()
	st := e.a.Status(e.ctx(), e.server())
	if st.Binding == nil || !st.BindingCurrent || !st.HasRefreshToken || !st.HasAccessToken || st.ClientID != res.ClientID || !st.Registered {
		t.Fatalf("status %+v", st)
	}
	if err := e.a.Logout(e.ctx(), e.srv.ID); err != nil {
		t.Fatal(err)
	}
	keys, err := e.st.ListSecrets(e.ctx(), e.srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Purpose == store.PurposeRefreshToken || k.Purpose == store.PurposeRegistration {
			t.Fatalf("secret left after logout: %+v", k)
		}
	}
	st = e.a.Status(e.ctx(), e.server())
	if st.HasRefreshToken || st.HasAccessToken || st.ClientID != "" {
		t.Fatalf("status after logout %+v", st)
	}
	// And background work now needs a login.
	req, resp := e.post401("")
	err = e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp)
	if !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("after logout: %v", err)
	}
}

// denyTransport refuses requests to one origin the way the hostperm guard
// does, recording the purpose each request carried.
type denyTransport struct {
	origin string
	mu     sync.Mutex
	seen   []hostperm.Purpose
}

func (d *denyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	p, id := hostperm.PurposeFrom(r.Context())
	d.mu.Lock()
	d.seen = append(d.seen, p)
	d.mu.Unlock()
	if o, _ := config.Origin(r.URL.String()); o == d.origin {
		return nil, &hostperm.PermissionRequiredError{Origin: o, Purpose: p, ServerID: id}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// R2.2: every OAuth request says why it is made (hostperm.WithPurpose), and
// a refusal by the host permission guard stays typed through the step
// error, so the UI can offer the approval.
func TestPermissionErrorsStayTyped_R2_2(t *testing.T) {
	e := newEnv(t)
	d := &denyTransport{origin: e.as.URL()}
	a := New(Options{Store: e.st, HTTPClient: &http.Client{Transport: d}, Logger: discardLogger()})
	_, err := a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	mustErrorStep(t, err, StepDiscoveryAS)
	var pe *hostperm.PermissionRequiredError
	if !errors.As(err, &pe) || pe.Purpose != hostperm.PurposeDiscoveryAS || pe.ServerID != "srv1" {
		t.Fatalf("error %v (%+v)", err, pe)
	}
	if !slices.Equal(d.seen, []hostperm.Purpose{hostperm.PurposeMCP, hostperm.PurposeDiscoveryPRM, hostperm.PurposeDiscoveryAS}) {
		t.Fatalf("purposes %v", d.seen)
	}
}
