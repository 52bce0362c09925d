package oauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
)

// R3.10, R3.12: an access token the server no longer accepts is refreshed
// by background work (no browser), and the refresh carries RFC 8707
// resource, the refresh token and the client id.
func TestRefreshSendsResource_R3_10(t *testing.T) {
	e := newEnv(t)
	res := e.login()
	e.as.ExpireAccessTokens()

	cs, err := e.connect(e.ctx(), e.a.Handler(e.server(), nil))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := cs.ListTools(e.ctx(), nil); err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	refreshes := tokenRequests(e.as, "refresh_token")
	if len(refreshes) != 1 {
		t.Fatalf("%d refreshes, want 1", len(refreshes))
	}
	f := refreshes[0].Form
	if f.Get("resource") != e.mcp.URL() || f.Get("refresh_token") == "" || f.Get("client_id") != res.ClientID {
		t.Fatalf("refresh form %v", f)
	}
	if f.Has("scope") {
		t.Errorf("refresh asked for scope %q; it should keep the grant's", f.Get("scope"))
	}
}

// R3.12: 20 concurrent 401s of one server cause exactly one refresh; all
// of them end with a usable token.
func TestConcurrent401sRefreshOnce_R3_12(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.TokenDelay = 100 * time.Millisecond }))
	e.login()
	old := e.accessToken(e.a)
	e.as.ExpireAccessTokens()

	h := e.a.Handler(e.server(), nil)
	type pair struct {
		req  *http.Request
		resp *http.Response
	}
	var pairs []pair
	for range 20 {
		req, resp := e.post401(old)
		pairs = append(pairs, pair{req, resp})
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(pairs))
	for _, p := range pairs {
		wg.Go(func() { errs <- h.Authorize(e.ctx(), p.req, p.resp) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Authorize: %v", err)
		}
	}
	if n := len(tokenRequests(e.as, "refresh_token")); n != 1 {
		t.Fatalf("%d refreshes, want exactly 1", n)
	}
	if now := e.accessToken(e.a); now == old {
		t.Fatal("token not replaced")
	}
}

// R3.11: a rotated refresh token is sealed in the store before the new
// access token is used, so a crash right after the refresh loses nothing:
// a fresh process (new store handle, empty memory) refreshes with the
// rotated token, not the dead one.
func TestRotatedRefreshTokenSurvivesCrash_R3_11(t *testing.T) {
	e := newEnv(t)
	e.login()
	e.as.ExpireAccessTokens()
	req, resp := e.post401(e.accessToken(e.a))
	if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); err != nil {
		t.Fatal(err)
	}

	// "Crash": drop the authenticator and its memory, reopen the store.
	st2 := e.openStore()
	a2 := e.newAuthenticator(st2, nil)
	e.as.ExpireAccessTokens()
	req, resp = e.post401("")
	srv, _ := st2.GetServer(e.ctx(), e.srv.ID)
	if err := a2.Handler(srv, nil).Authorize(e.ctx(), req, resp); err != nil {
		t.Fatalf("refresh after restart: %v", err)
	}
	refreshes := tokenRequests(e.as, "refresh_token")
	if len(refreshes) != 2 {
		t.Fatalf("%d refreshes, want 2", len(refreshes))
	}
	first, second := refreshes[0].Form.Get("refresh_token"), refreshes[1].Form.Get("refresh_token")
	if first == second {
		t.Fatal("the second process used the rotated-away refresh token")
	}
	for _, r := range refreshes {
		if r.Status != http.StatusOK {
			t.Fatalf("refresh answered %d", r.Status)
		}
	}
}

// R3.11, R3.12: two processes (two store handles, two authenticators) that
// refresh at once never spend the same refresh token twice: the file lock
// serializes them and the second re-reads the rotated token.
func TestCrossProcessRefreshUsesLock_R3_12(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.TokenDelay = 50 * time.Millisecond }))
	e.login()
	e.as.ExpireAccessTokens()

	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 2 {
		st := e.openStore()
		a := e.newAuthenticator(st, nil)
		srv, _ := st.GetServer(e.ctx(), e.srv.ID)
		h := a.Handler(srv, nil)
		for range 3 {
			req, resp := e.post401("")
			wg.Go(func() {
				if err := h.Authorize(e.ctx(), req, resp); err != nil {
					t.Errorf("Authorize: %v", err)
					failed.Add(1)
				}
			})
		}
	}
	wg.Wait()
	refreshes := tokenRequests(e.as, "refresh_token")
	seen := map[string]bool{}
	for _, r := range refreshes {
		if r.Status != http.StatusOK {
			t.Errorf("a refresh failed with %d", r.Status)
		}
		rt := r.Form.Get("refresh_token")
		if seen[rt] {
			t.Error("a refresh token was spent twice")
		}
		seen[rt] = true
	}
	if len(refreshes) != 2 {
		t.Errorf("%d refreshes, want one per process", len(refreshes))
	}
}

// A refused refresh token is forgotten, and background work is told to log in.
func TestRefreshRefusedNeedsLogin_R3_13(t *testing.T) {
	e := newEnv(t)
	e.login()
	e.as.ExpireAccessTokens()
	e.as.RevokeRefreshTokens()
	req, resp := e.post401(e.accessToken(e.a))
	err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp)
	mustErrorStep(t, err, StepAuthorization)
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("error %v", err)
	}
	if st := e.a.Status(e.ctx(), e.server()); st.HasRefreshToken || st.HasAccessToken {
		t.Fatalf("dead tokens kept: %+v", st)
	}
}

// A refresh that fails for a transient reason (server error) is reported
// as a refresh failure, not turned into a login prompt.
func TestRefreshServerErrorIsRefreshStep_R3_12(t *testing.T) {
	e := newEnv(t)
	e.login()
	e.as.ExpireAccessTokens()
	e.as.Set(func(k *authserver.Knobs) { k.RedirectToken = true })
	req, resp := e.post401(e.accessToken(e.a))
	err := e.a.Handler(e.server(), HeadlessBrowser(nil)).Authorize(e.ctx(), req, resp)
	mustErrorStep(t, err, StepRefresh)
	if !errors.Is(err, ErrRedirectRefused) {
		t.Fatalf("error %v", err)
	}
	if n := len(e.as.RequestsTo("/authorize")); n != 1 {
		t.Fatalf("a transient refresh failure started a new authorization")
	}
}

// R3.10: after PRM names another issuer, the old client id, access token
// and refresh token never reach the new authorization server; the client
// registers anew there, and the old binding's secrets are dropped.
func TestIssuerChangeNeverLeaksOldCredentials_R3_10(t *testing.T) {
	e := newEnv(t)
	first := e.login()
	oldAT := e.accessToken(e.a)
	oldAccess, oldRefresh := e.as.IssuedTokens()

	as2 := e.startAS(authserver.Options{Name: "as2"})
	e.rs.Store(as2) // the MCP server now trusts and names as2

	// Background work cannot log in to the new server, and sends it nothing.
	req, resp := e.post401(oldAT)
	err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp)
	if !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("background: %v", err)
	}
	if n := len(as2.RequestsTo("/token")) + len(as2.RequestsTo("/register")); n != 0 {
		t.Fatalf("background work contacted the new AS's token/registration endpoints %d times", n)
	}

	// An interactive session re-authorizes with the new server.
	cs, err := e.connect(e.ctx(), e.a.Handler(e.server(), HeadlessBrowser(nil)))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := cs.ListTools(e.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(as2.RequestsTo("/register")); n != 1 {
		t.Fatalf("%d registrations at the new AS, want 1", n)
	}
	old := append([]string{first.ClientID}, oldAccess...)
	old = append(old, oldRefresh...)
	for _, r := range as2.Requests() {
		blob := r.Path + "?" + r.Query.Encode() + " " + r.Form.Encode() + " " + string(r.Body) + " " + r.Authorization
		for _, s := range old {
			if strings.Contains(blob, s) {
				t.Fatalf("old credential %.16s… sent to the new AS in %s %s", s, r.Method, r.Path)
			}
		}
	}
	// The binding moved, and the old binding's secrets are gone.
	b := e.server().Auth.Binding
	if b == nil || b.Issuer != as2.Issuer() {
		t.Fatalf("binding %+v", b)
	}
	keys, _ := e.st.ListSecrets(e.ctx(), e.srv.ID)
	for _, k := range keys {
		if k.Binding.Issuer == e.as.Issuer() {
			t.Fatalf("old binding secret kept: %+v", k)
		}
	}
}

// R3.10: a configured client id is bound too: it is not sent to a new issuer.
func TestConfiguredClientNotSentToNewIssuer_R3_10(t *testing.T) {
	e := newEnv(t, withServer(func(s *config.Server) { s.Auth.ClientID = "pre-registered" }))
	e.as.AddClient("pre-registered", "", "none")
	e.login()
	as2 := e.startAS(authserver.Options{Name: "as2"})
	e.rs.Store(as2)
	_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	mustErrorStep(t, err, StepRegistration)
	if !errors.Is(err, ErrClientMismatch) {
		t.Fatalf("error %v", err)
	}
	for _, r := range as2.Requests() {
		if strings.Contains(r.Query.Encode()+r.Form.Encode(), "pre-registered") {
			t.Fatal("configured client id sent to the new issuer")
		}
	}
}

// R2.11 / RFC 7591: invalid_client at the token endpoint → the stored
// registration is dropped and the client registers exactly once more; a
// server that rejects every client does not make it loop.
func TestInvalidClientReregistersOnce(t *testing.T) {
	t.Run("once", func(t *testing.T) {
		e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.InvalidClient = 1 }))
		res := e.login()
		regs := e.as.RequestsTo("/register")
		if len(regs) != 2 {
			t.Fatalf("%d registrations, want 2", len(regs))
		}
		ids := e.as.ClientIDs()
		if !slices.Contains(ids, res.ClientID) || len(ids) != 2 {
			t.Fatalf("clients %v, used %s", ids, res.ClientID)
		}
		if st := e.a.Status(e.ctx(), e.server()); st.ClientID != res.ClientID {
			t.Fatalf("stored client %s, want the new %s", st.ClientID, res.ClientID)
		}
	})
	t.Run("always", func(t *testing.T) {
		e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.InvalidClientAlways = true }))
		_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
		mustErrorStep(t, err, StepToken)
		if n := len(e.as.RequestsTo("/register")); n != 2 {
			t.Fatalf("%d registrations, want exactly 2", n)
		}
		if n := len(e.as.RequestsTo("/token")); n != 2 {
			t.Fatalf("%d token requests, want exactly 2", n)
		}
	})
	t.Run("on-refresh", func(t *testing.T) {
		e := newEnv(t)
		first := e.login()
		e.as.ExpireAccessTokens()
		e.as.Set(func(k *authserver.Knobs) { k.InvalidClient = 1 })
		req, resp := e.post401(e.accessToken(e.a))
		if err := e.a.Handler(e.server(), HeadlessBrowser(nil)).Authorize(e.ctx(), req, resp); err != nil {
			t.Fatal(err)
		}
		if n := len(e.as.RequestsTo("/register")); n != 2 {
			t.Fatalf("%d registrations, want 2", n)
		}
		if st := e.a.Status(e.ctx(), e.server()); st.ClientID == first.ClientID {
			t.Fatal("kept the rejected client")
		}
	})
}

// R2.11: a malformed client_id in the registration response is refused and
// nothing is stored or used.
func TestMalformedRegistrationRefused_R2_11(t *testing.T) {
	for _, mode := range []authserver.ClientIDMode{
		authserver.ClientIDMissing, authserver.ClientIDEmpty, authserver.ClientIDNumber, authserver.ClientIDHuge,
		authserver.ClientIDControl, authserver.ClientIDNull, authserver.ClientIDNotJSON, authserver.ClientIDArray,
	} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.ClientIDMode = mode }))
			_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
			mustErrorStep(t, err, StepRegistration)
			if !errors.Is(err, ErrBadRegistration) {
				t.Fatalf("error %v", err)
			}
			if len(err.Error()) > 400 {
				t.Errorf("message too long (%d bytes): the bad value is echoed", len(err.Error()))
			}
			keys, _ := e.st.ListSecrets(e.ctx(), e.srv.ID)
			if len(keys) != 0 {
				t.Fatalf("stored %+v", keys)
			}
			if n := len(e.as.RequestsTo("/authorize")); n != 0 {
				t.Fatal("went on to authorize")
			}
		})
	}
}

// R3.9: 403 insufficient_scope → step-up with the union of granted and
// demanded scopes, after which the call succeeds.
func TestStepUp_R3_9(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.ChallengeScope = "mcp:basic" }))
	e.login()
	e.as.Set(func(k *authserver.Knobs) { k.RequiredScopes = []string{"mcp:basic", "mcp:write"} })

	cs, err := e.connect(e.ctx(), e.a.Handler(e.server(), HeadlessBrowser(nil)))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := cs.ListTools(e.ctx(), nil); err != nil {
		t.Fatal(err)
	}
	authz := e.as.RequestsTo("/authorize")
	if len(authz) != 2 {
		t.Fatalf("%d authorizations, want 2", len(authz))
	}
	if got := authz[1].Query.Get("scope"); got != "mcp:basic mcp:write" {
		t.Fatalf("step-up scope %q, want the union", got)
	}
}

// R3.9, R3.13: background work cannot step up; the error says which
// scopes are needed and to log in.
func TestStepUpInBackgroundNeedsLogin_R3_9(t *testing.T) {
	e := newEnv(t)
	e.login()
	e.as.Set(func(k *authserver.Knobs) { k.RequiredScopes = []string{"mcp:admin"} })
	req, resp := e.post401(e.accessToken(e.a))
	err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp)
	mustErrorStep(t, err, StepScope)
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "mcp:admin") {
		t.Fatalf("error %v", err)
	}
}

// R3.9: a server that never grants what it demands gets at most three
// step-up authorizations, then a StepScope error (conformance
// auth/scope-retry-limit).
func TestStepUpLimit_R3_9(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.WithholdScopes = []string{"mcp:admin"} }))
	e.login()
	e.as.Set(func(k *authserver.Knobs) { k.RequiredScopes = []string{"mcp:admin"} })
	h := e.a.Handler(e.server(), HeadlessBrowser(nil))
	var last error
	for range 6 {
		tok, _ := tokenSource{h.(*handler)}.Token()
		req, resp := e.post401(tok.AccessToken)
		last = h.Authorize(e.ctx(), req, resp)
		if last != nil {
			break
		}
	}
	mustErrorStep(t, last, StepScope)
	if !errors.Is(last, ErrStepUpLimit) {
		t.Fatalf("error %v", last)
	}
	if n := len(e.as.RequestsTo("/authorize")); n != 1+maxStepUps {
		t.Fatalf("%d authorizations, want 1 + %d", n, maxStepUps)
	}
}

// R3.9: demanding scopes the token already has cannot be fixed by
// authorizing again: no authorization at all.
func TestStepUpForGrantedScopesRefused_R3_9(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.ChallengeScope = "mcp:admin" }))
	e.login()
	h := e.a.Handler(e.server(), HeadlessBrowser(nil))
	rw := &fakeForbidden{scope: "mcp:admin"}
	req, _ := http.NewRequest(http.MethodPost, e.mcp.URL(), nil)
	err := h.Authorize(e.ctx(), req, rw.response())
	mustErrorStep(t, err, StepScope)
	if n := len(e.as.RequestsTo("/authorize")); n != 1 {
		t.Fatalf("%d authorizations", n)
	}
}

// A 403 without insufficient_scope is a clear error, not an authorization.
func TestOther403IsClearError(t *testing.T) {
	e := newEnv(t)
	e.login()
	e.mcp.FailNextHTTP(http.StatusForbidden, 1)
	cs, err := e.connect(e.ctx(), e.a.Handler(e.server(), HeadlessBrowser(nil)))
	if err == nil {
		_, err = cs.ListTools(e.ctx(), nil)
	}
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("error %v", err)
	}
	if n := len(e.as.RequestsTo("/authorize")); n != 1 {
		t.Fatalf("a 403 started an authorization")
	}
}

// The token source never fails (go-sdk trap, research §1.6): no token and
// an expired token both mean "no header".
func TestTokenSourceNeverFails(t *testing.T) {
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t)
	e.a = New(Options{Store: e.st, Now: clock, Logger: discardLogger()})
	h := e.a.Handler(e.server(), nil)
	ts, err := h.TokenSource(e.ctx())
	if err != nil || ts == nil {
		t.Fatalf("TokenSource: %v %v", ts, err)
	}
	if tok, err := ts.Token(); tok != nil || err != nil {
		t.Fatalf("no login: %v %v", tok, err)
	}
	e.login()
	h = e.a.Handler(e.server(), nil)
	ts, _ = h.TokenSource(e.ctx())
	if tok, err := ts.Token(); err != nil || tok == nil || tok.AccessToken == "" {
		t.Fatalf("after login: %v %v", tok, err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if tok, err := ts.Token(); tok != nil || err != nil {
		t.Fatalf("expired: %v %v", tok, err)
	}
}

// The handler never sends a token bound to another resource (R3.10): after
// the URL changes, the old binding is not used.
func TestHandlerIgnoresBindingOfOtherResource_R3_10(t *testing.T) {
	e := newEnv(t)
	e.login()
	srv := e.server()
	srv.URL = strings.Replace(srv.URL, "/mcp", "/other", 1)
	ts, _ := e.a.Handler(srv, nil).TokenSource(context.Background())
	if tok, _ := ts.Token(); tok != nil {
		t.Fatal("token of the old resource offered for the new URL")
	}
}

// fakeForbidden builds a 403 insufficient_scope response.
type fakeForbidden struct{ scope string }

func (f *fakeForbidden) response() *http.Response {
	h := http.Header{}
	h.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+f.scope+`"`)
	return &http.Response{StatusCode: http.StatusForbidden, Header: h, Body: http.NoBody}
}

// Options.Logger / SPEC B1: no token, code, verifier, state or client
// secret ever appears in a log line, through login, re-registration,
// refresh, a refused refresh and a step-up, all logged at debug level.
// (Every env-based test runs the same check at cleanup.)
func TestNoSecretsInLogs(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) {
		k.InvalidClient = 1
		k.RegisterAuthMethod = "client_secret_post"
		k.ChallengeScope = "mcp:basic"
	}))
	e.login()
	e.as.ExpireAccessTokens()
	req, resp := e.post401(e.accessToken(e.a))
	if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); err != nil {
		t.Fatal(err)
	}
	e.as.Set(func(k *authserver.Knobs) { k.RequiredScopes = []string{"mcp:basic", "mcp:write"} })
	req, resp = e.post401(e.accessToken(e.a))
	if err := e.a.Handler(e.server(), HeadlessBrowser(nil)).Authorize(e.ctx(), req, resp); err != nil {
		t.Fatal(err)
	}
	e.as.ExpireAccessTokens()
	e.as.RevokeRefreshTokens()
	req, resp = e.post401(e.accessToken(e.a))
	_ = e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp)

	if n := strings.Count(e.logs.String(), "\n"); n < 5 {
		t.Fatalf("only %d log lines; the check would prove nothing", n)
	}
	if len(e.secrets()) < 10 {
		t.Fatalf("only %d secrets collected", len(e.secrets()))
	}
	e.checkNoSecretsLeaked()
}

// R3.12 for the interactive path: concurrent 401s with no token at all
// share one browser flow (one registration, one authorization).
func TestConcurrent401sOneBrowserFlow_R3_12(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.TokenDelay = 100 * time.Millisecond }))
	var opened atomic.Int32
	browser := func(ctx context.Context, u string) (*CallbackResult, error) {
		opened.Add(1)
		return HeadlessBrowser(nil)(ctx, u)
	}
	h := e.a.Handler(e.server(), browser)
	var wg sync.WaitGroup
	for range 10 {
		req, resp := e.post401("")
		wg.Go(func() {
			if err := h.Authorize(e.ctx(), req, resp); err != nil {
				t.Errorf("Authorize: %v", err)
			}
		})
	}
	wg.Wait()
	if n := opened.Load(); n != 1 {
		t.Fatalf("%d browser flows, want 1", n)
	}
	if n := len(e.as.RequestsTo("/register")); n != 1 {
		t.Fatalf("%d registrations, want 1", n)
	}
}
