package manager

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/session"
)

// backgroundOAuth is the daemon's provider: non-interactive handlers.
type backgroundOAuth struct{ a *oauth.Authenticator }

func (p backgroundOAuth) Handler(srv config.Server) auth.OAuthHandler { return p.a.Handler(srv, nil) }

// autoEnv is a manager with a real Authenticator, an authorization server
// and one auto server "au" at url (set by the caller).
type autoEnv struct {
	*env
	as *authserver.Server
	a  *oauth.Authenticator
}

func newAutoEnv(t *testing.T, protect bool) (*autoEnv, *fixture.Server) {
	t.Helper()
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	fo := fixture.Options{}
	if protect {
		fo.Authorize, fo.Extra = as.Authorize, as.PRMRoutes()
	}
	f := testkit.StartFixture(t, fo)
	st := newStore(t, t.TempDir())
	cfg := srvCfg("au", f.URL(), false)
	cfg.Auth = config.Auth{Kind: config.AuthAuto}
	if err := st.AddServer(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	a := oauth.New(oauth.Options{Store: st})
	m := New(Options{Store: st, OAuth: backgroundOAuth{a}, Logger: testkit.Logger(t),
		BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, HandshakeTimeout: 10 * time.Second})
	t.Cleanup(func() { m.Close() })
	e := &autoEnv{env: &env{t: t, store: st, m: m}, as: as, a: a}
	e.start()
	return e, f
}

// SPEC §9 A2: an auto server on an open MCP server connects and calls
// without credentials, and no OAuth endpoint is ever contacted.
func TestAutoServerWithoutAuthNeverTouchesOAuth_A2(t *testing.T) {
	e, f := newAutoEnv(t, false)
	if err := e.m.Connect(testkit.Context(t), "au"); err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := e.m.CallTool(testkit.Context(t), "au", "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatalf("call: %v", err)
	}
	if n := len(e.as.Requests()); n != 0 {
		t.Fatalf("the authorization server got %d requests", n)
	}
	for _, r := range f.Requests() {
		if r.Header.Get("Authorization") != "" {
			t.Fatalf("%s %s carried credentials", r.Method, r.RPCMethod)
		}
	}
	st, _ := e.m.ServerStatusOf("au")
	if st.State != StateReady || st.Auth != string(config.AuthAuto) {
		t.Fatalf("status %+v; want ready, auth auto", st)
	}
}

// SPEC §9 A2, R3.13: an auto server behind OAuth fails its background
// connect with the typed login-required error at the authorization step
// (no browser, no OAuth endpoint contacted). After an interactive login
// the recorded binding reconnects it, and calls carry the token.
func TestAutoServerBehindOAuthNeedsLoginThenConnects_A2_R3_13(t *testing.T) {
	e, f := newAutoEnv(t, true)
	err := e.m.Connect(testkit.Context(t), "au")
	var oe *oauth.Error
	if !errors.Is(err, oauth.ErrLoginRequired) || !errors.As(err, &oe) || oe.Step != oauth.StepAuthorization {
		t.Fatalf("connect: %v; want oauth.ErrLoginRequired at the authorization step", err)
	}
	st, _ := e.m.ServerStatusOf("au")
	// The manager itself says the server waits for the person (SPEC §9
	// A1), and why, as a code.
	if st.State != StateNeedsAuth || st.Reason == nil || st.Reason.Class != ClassAuth || st.Reason.Step != string(oauth.StepAuthorization) ||
		st.Reason.Code != CodeNotSignedIn {
		t.Fatalf("status %+v (reason %+v); want needs-auth, class auth, step authorization, code not-signed-in", st, st.Reason)
	}
	if n := len(e.as.Requests()); n != 0 {
		t.Fatalf("background work sent %d requests to the authorization server", n)
	}

	cfg, err := e.store.GetServer(testkit.Context(t), "au")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Login(testkit.Context(t), cfg, headlessBrowser); err != nil {
		t.Fatalf("login: %v", err)
	}
	cfg, _ = e.store.GetServer(testkit.Context(t), "au")
	if cfg.Auth.Kind != config.AuthAuto || !cfg.UsesOAuth() {
		t.Fatalf("stored auth after login %+v; want auto with a binding", cfg.Auth)
	}
	f.ResetRequests()
	// The binding change reaches the manager through the store's feed;
	// connect until it has (the first try may still race the reconcile).
	testkit.WaitFor(t, "a connect after login", func() bool { return e.m.Connect(testkit.Context(t), "au") == nil })
	if _, err := e.m.CallTool(testkit.Context(t), "au", "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatalf("call after login: %v", err)
	}
	for _, r := range f.Requests() {
		if r.Denied {
			t.Errorf("%s %s was denied after login", r.Method, r.RPCMethod)
		}
	}
}

// headlessBrowser signs in at an authorization server that approves at
// once (authserver.Approve).
func headlessBrowser(ctx context.Context, authURL string) (*oauth.CallbackResult, error) {
	q, err := authserver.Approve(ctx, nil, authURL)
	if err != nil {
		return nil, err
	}
	return oauth.ParseCallback(q)
}
