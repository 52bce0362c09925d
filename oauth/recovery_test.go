package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
)

// rebuild replaces e.a with an Authenticator over the same store with
// extra options.
func (e *env) rebuild(f func(*Options)) {
	o := Options{Store: e.st, Logger: slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	f(&o)
	e.a = New(o)
}

// Issue #11 (registration recovery): an authorization server that forgets
// its registered clients (an in-memory server restarted) never loops the
// person: the token endpoint's invalid_client / unauthorized_client drops
// the registration, and a browser step that never came back makes the
// next login register anew — no logout needed.
func TestAuthForgottenRegistrationRecovers(t *testing.T) {
	t.Run("login-times-out-then-next-login-registers", func(t *testing.T) {
		e := newEnv(t)
		first := e.login()
		e.as.Restart()
		// The stored client is unknown now: the authorization endpoint
		// shows an error page instead of redirecting back, so the
		// browser never returns.
		_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
		mustErrorStep(t, err, StepAuthorization)
		if !errors.Is(err, ErrMaybeForgottenClient) || !strings.Contains(err.Error(), `the next sign-in registers a new client`) {
			t.Fatalf("error lacks the advice: %v", err)
		}
		res := e.login()
		if res.ClientID == first.ClientID || !res.Registered {
			t.Fatalf("next login kept the forgotten client %s", res.ClientID)
		}
		if n := len(e.as.RequestsTo("/register")); n != 2 {
			t.Fatalf("%d registrations, want 2", n)
		}
		// Once a callback came back, the new client is trusted again.
		again := e.login()
		if again.ClientID != res.ClientID {
			t.Fatalf("a completed login registered again: %s → %s", res.ClientID, again.ClientID)
		}
	})
	t.Run("cancelled-login-then-next-login-registers", func(t *testing.T) {
		e := newEnv(t)
		first := e.login()
		ctx, cancel := context.WithCancel(e.ctx())
		// The person never comes back and the login is abandoned (the
		// CLI's timeout, a kill, a new Authorize).
		_, err := e.a.Login(ctx, e.server(), func(ctx context.Context, _ string) (*CallbackResult, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		})
		if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrMaybeForgottenClient) {
			t.Fatalf("abandoned login: %v", err)
		}
		if res := e.login(); res.ClientID == first.ClientID {
			t.Fatal("the login after an abandoned one kept the client")
		}
	})
	t.Run("browser-failing-to-start-keeps-the-client", func(t *testing.T) {
		e := newEnv(t)
		first := e.login()
		_, err := e.a.Login(e.ctx(), e.server(), func(context.Context, string) (*CallbackResult, error) {
			return nil, errors.New("port taken")
		})
		if err == nil || errors.Is(err, ErrMaybeForgottenClient) {
			t.Fatalf("error %v", err)
		}
		if res := e.login(); res.ClientID != first.ClientID {
			t.Fatal("a browser that never started made the next login register again")
		}
	})
	t.Run("refresh-rejects-client-then-login-registers", func(t *testing.T) {
		for _, code := range []string{"invalid_client", "unauthorized_client"} {
			t.Run(code, func(t *testing.T) {
				e := newEnv(t)
				first := e.login()
				tok := e.accessToken(e.a)
				if code == "invalid_client" {
					e.as.Restart() // the real thing: unknown client
				} else {
					e.as.ExpireAccessTokens()
					e.as.Set(func(k *authserver.Knobs) { k.UnauthorizedClient = 1 })
				}
				req, resp := e.post401(tok)
				err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp)
				if !errors.Is(err, ErrLoginRequired) || !errors.Is(err, ErrRefusedBeforeRun) || !strings.Contains(err.Error(), "registers a new one") {
					t.Fatalf("background refresh: %v", err)
				}
				authzBefore := len(e.as.RequestsTo("/authorize"))
				res := e.login()
				if res.ClientID == first.ClientID {
					t.Fatal("login reused the rejected client")
				}
				if n := len(e.as.RequestsTo("/authorize")) - authzBefore; n != 1 {
					t.Fatalf("%d authorization requests for the login, want 1", n)
				}
			})
		}
	})
	t.Run("exchange-unauthorized-client-reregisters-once", func(t *testing.T) {
		e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.UnauthorizedClient = 1 }))
		res := e.login()
		if n := len(e.as.RequestsTo("/register")); n != 2 {
			t.Fatalf("%d registrations, want 2", n)
		}
		if n := len(e.as.RequestsTo("/authorize")); n != 2 {
			t.Fatalf("%d authorizations, want 2 (the code is spent, so the authorization runs again)", n)
		}
		if st := e.a.Status(e.ctx(), e.server()); st.ClientID != res.ClientID {
			t.Fatalf("stored client %s, used %s", st.ClientID, res.ClientID)
		}
	})
}

// auth login --reregister registers a new client although the stored one
// still works; with a configured client id it is refused.
func TestAuthLoginReregister(t *testing.T) {
	e := newEnv(t)
	first := e.login()
	res, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil), LoginOptions{Reregister: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.ClientID == first.ClientID || !res.Registered {
		t.Fatalf("--reregister kept the client %s", res.ClientID)
	}
	if st := e.a.Status(e.ctx(), e.server()); st.ClientID != res.ClientID {
		t.Fatalf("stored client %s, want %s", st.ClientID, res.ClientID)
	}

	c := newEnv(t, withServer(func(s *config.Server) { s.Auth.ClientID = "configured" }))
	c.as.AddClient("configured", "", "none")
	_, err = c.a.Login(c.ctx(), c.server(), HeadlessBrowser(nil), LoginOptions{Reregister: true})
	mustErrorStep(t, err, StepRegistration)
	if !errors.Is(err, ErrNothingToReregister) || len(c.as.Requests()) != 0 {
		t.Fatalf("--reregister with a configured client: %v (%d requests)", err, len(c.as.Requests()))
	}
}

// SPEC §9 A3: a configured client ID metadata document URL is the client
// id when the authorization server accepts CIMD; otherwise DCR or the
// configured client, as before.
func TestOAuthClientIDMetadataDocument_A3(t *testing.T) {
	const doc = "https://client.example/remotemcp.json"
	for _, tc := range []struct {
		name       string
		url        string
		asCIMD     bool
		configured string
		wantID     string // "" means a registered one
		wantErr    error
	}{
		{name: "supported", url: doc, asCIMD: true, wantID: doc},
		{name: "supported, configured client too", url: doc, asCIMD: true, configured: "configured", wantID: doc},
		{name: "not supported: DCR", url: doc},
		{name: "not supported: configured client", url: doc, configured: "configured", wantID: "configured"},
		{name: "no URL: DCR", asCIMD: true},
		{name: "http URL refused", url: "http://client.example/remotemcp.json", asCIMD: true, wantErr: ErrBadClientMetadataURL},
		{name: "URL without path refused", url: "https://client.example/", asCIMD: true, wantErr: ErrBadClientMetadataURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.ClientIDMetadataDocumentSupported = tc.asCIMD }),
				withServer(func(s *config.Server) { s.Auth.ClientID = tc.configured }))
			if tc.configured != "" {
				e.as.AddClient(tc.configured, "", "none")
			}
			e.rebuild(func(o *Options) {
				o.ClientMetadataURL = func(s config.Server) string {
					if s.ID != e.srv.ID {
						t.Errorf("asked for server %s", s.ID)
					}
					return tc.url
				}
			})
			res, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
			if tc.wantErr != nil {
				mustErrorStep(t, err, StepRegistration)
				if !errors.Is(err, tc.wantErr) || len(e.as.RequestsTo("/authorize")) != 0 {
					t.Fatalf("error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			regs := len(e.as.RequestsTo("/register"))
			switch {
			case tc.wantID == "" && (regs != 1 || !res.Registered):
				t.Fatalf("want DCR: %d registrations, result %+v", regs, res)
			case tc.wantID != "" && (regs != 0 || res.ClientID != tc.wantID || res.Registered):
				t.Fatalf("want client %s without DCR: %d registrations, result %+v", tc.wantID, regs, res)
			}
			authz := e.as.RequestsTo("/authorize")
			if got := authz[0].Query.Get("client_id"); got != res.ClientID {
				t.Fatalf("authorization request client_id %q, want %q", got, res.ClientID)
			}
			if tc.wantID != doc {
				return
			}
			// The CIMD client is public: its id goes in the form, no
			// secret, and the refresh uses it as well.
			tok := tokenRequests(e.as, "authorization_code")
			if tok[0].Form.Get("client_id") != doc || tok[0].Authorization != "" || tok[0].Form.Get("client_secret") != "" {
				t.Fatalf("token request %+v", tok[0])
			}
			if st := e.a.Status(e.ctx(), e.server()); st.ClientID != doc || st.Registered {
				t.Fatalf("status %+v", st)
			}
			e.as.ExpireAccessTokens()
			req, resp := e.post401(e.accessToken(e.a))
			if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if r := tokenRequests(e.as, "refresh_token"); len(r) != 1 || r[0].Form.Get("client_id") != doc {
				t.Fatalf("refresh requests %+v", r)
			}
		})
	}
}

// R3.9, issue #11: a 403 insufficient_scope in background work is
// recorded with the binding; the error names the missing scope, says the
// request was refused before it ran, and the next login asks for the
// union, after which the same session's call succeeds.
func TestAuthStepUpRecordedForNextLogin_R3_9(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.ChallengeScope = "mcp:basic" }))
	e.login()
	e.as.Set(func(k *authserver.Knobs) { k.RequiredScopesFor = map[string][]string{"tools/call": {"mcp:write"}} })
	cs, err := e.connect(e.ctx(), e.a.Handler(e.server(), nil))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	before := e.mcp.Executions("echo")
	_, err = cs.CallTool(e.ctx(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	var ise *InsufficientScopeError
	if !errors.As(err, &ise) || !errors.Is(err, ErrLoginRequired) || !errors.Is(err, ErrRefusedBeforeRun) {
		t.Fatalf("call error: %v", err)
	}
	if !slices.Equal(ise.Missing, []string{"mcp:write"}) || !slices.Equal(ise.Scopes, []string{"mcp:basic", "mcp:write"}) {
		t.Fatalf("scope error %+v", ise)
	}
	var oe *Error
	if !errors.As(err, &oe) || oe.Step != StepScope || !strings.Contains(err.Error(), `"mcp:write"`) {
		t.Fatalf("error %v", err)
	}
	if n := e.mcp.Executions("echo"); n != before {
		t.Fatal("the refused call ran")
	}
	if n := len(e.as.RequestsTo("/authorize")); n != 1 {
		t.Fatalf("background work authorized (%d)", n)
	}
	if got := e.a.RecordedScopes(e.ctx(), e.srv.ID); !slices.Equal(got, []string{"mcp:basic", "mcp:write"}) {
		t.Fatalf("recorded %v", got)
	}
	// A new Authenticator (another process) reads the record from the store.
	e.a = e.newAuthenticator(e.st, e.a.mem)
	if st := e.a.Status(e.ctx(), e.server()); !slices.Equal(st.RecordedScopes, []string{"mcp:basic", "mcp:write"}) {
		t.Fatalf("status %+v", st)
	}

	// The login's probe is challenged with mcp:basic only; the record adds
	// mcp:write.
	e.login()
	authz := e.as.RequestsTo("/authorize")
	if got := authz[len(authz)-1].Query.Get("scope"); got != "mcp:basic mcp:write" {
		t.Fatalf("login asked for %q, want the union", got)
	}
	if _, err := cs.CallTool(e.ctx(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatalf("call after login: %v", err)
	}
	if n := e.mcp.Executions("echo"); n != before+1 {
		t.Fatalf("%d executions, want %d", n, before+1)
	}
	// Logout forgets the record.
	if err := e.a.Logout(e.ctx(), e.srv.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.a.RecordedScopes(e.ctx(), e.srv.ID); got != nil {
		t.Fatalf("recorded after logout: %v", got)
	}
}

// Every error of Authorize is marked ErrRefusedBeforeRun, whatever its
// cause.
func TestAuthorizeErrorsAreRefusedBeforeRun(t *testing.T) {
	e := newEnv(t)
	req, resp := e.post401("")
	err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp)
	if !errors.Is(err, ErrLoginRequired) || !errors.Is(err, ErrRefusedBeforeRun) {
		t.Fatalf("error %v", err)
	}
	var oe *Error
	if !errors.As(err, &oe) || oe.Step != StepAuthorization || err.Error() != oe.Error() {
		t.Fatalf("the mark changed the error: %v", err)
	}
}

// SPEC B1, issue #11 item 9: every OAuth request reaches OnExchange with
// its step, method, redacted URL, status and duration, and nothing
// secret.
func TestOAuthExchangesLogged_B1(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var got []Exchange
	e.rebuild(func(o *Options) {
		o.OnExchange = func(ex Exchange) { mu.Lock(); got = append(got, ex); mu.Unlock() }
	})
	e.login()
	e.as.ExpireAccessTokens()
	req, resp := e.post401(e.accessToken(e.a))
	if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var steps []string
	for _, ex := range got {
		if ex.ServerID != e.srv.ID || ex.Time.IsZero() || ex.Status == 0 || ex.Millis < 0 || ex.URL == "" {
			t.Errorf("incomplete exchange %+v", ex)
		}
		steps = append(steps, string(ex.Step)+" "+ex.HTTPMethod)
	}
	want := []string{
		"discovery-PRM POST", // the unauthenticated probe
		"discovery-PRM GET",
		"discovery-AS GET",
		"registration POST",
		"token POST",
		"discovery-PRM GET", // the 401 rediscovers
		"discovery-AS GET",
		"refresh POST",
	}
	if !slices.Equal(steps, want) {
		t.Fatalf("steps\n got %q\nwant %q", steps, want)
	}
	raw, _ := json.Marshal(got)
	for _, s := range e.secrets() {
		if strings.Contains(string(raw), s) {
			t.Fatalf("a secret (%.12s…) is in the exchange log", s)
		}
	}
	if !strings.HasSuffix(got[len(got)-1].URL, "/token") || got[len(got)-1].Status != http.StatusOK {
		t.Fatalf("last exchange %+v", got[len(got)-1])
	}
}
