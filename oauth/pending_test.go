package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
)

// A public redirect URI (a gateway's page, Options.RedirectURI) is the one
// registered — as a web application's, not a native one's — sent in the
// authorization request and in the code exchange.
func TestPublicRedirectURI(t *testing.T) {
	e := newEnv(t)
	const public = "https://gw.example/mcp-oauth"
	a := New(Options{Store: e.st, Logger: discardLogger(), RedirectURI: func() string { return public }})
	var sent string
	browser := func(ctx context.Context, authURL string) (*CallbackResult, error) {
		u, err := url.Parse(authURL)
		if err != nil {
			return nil, err
		}
		sent = u.Query().Get("redirect_uri")
		return HeadlessBrowser(nil)(ctx, authURL)
	}
	if _, err := a.Login(e.ctx(), e.server(), browser); err != nil {
		t.Fatal(err)
	}
	regs := e.as.RequestsTo("/register")
	if len(regs) != 1 {
		t.Fatalf("%d registrations", len(regs))
	}
	var meta struct {
		RedirectURIs    []string `json:"redirect_uris"`
		ApplicationType string   `json:"application_type"`
	}
	if err := json.Unmarshal(regs[0].Body, &meta); err != nil || len(meta.RedirectURIs) != 1 || meta.RedirectURIs[0] != public || meta.ApplicationType != "web" {
		t.Fatalf("registered %+v (%v)", meta, err)
	}
	codes := tokenRequests(e.as, "authorization_code")
	if sent != public || len(codes) != 1 || codes[0].Form.Get("redirect_uri") != public {
		t.Fatalf("redirect URI sent %q, in the exchange %v", sent, codes)
	}
	// Without it: the loopback one, as a native application's.
	if got := e.a.redirectURI(e.server()); got != RedirectURI(0) {
		t.Fatalf("loopback redirect URI %q", got)
	}
}

// A flow shared with Share is completed by another process's
// authenticator (CompletePending): the grant is stored once, the access
// token is in the completing process's memory only, and the process that
// started it reports that process's result. A callback whose state is
// not the flow's changes nothing.
func TestCompletePendingElsewhere(t *testing.T) {
	e := newEnv(t)
	other := e.newAuthenticator(e.openStore(), nil) // another process on the same store
	var pending *PendingFlow
	share := func(_ context.Context, pf *PendingFlow) error {
		pending = pf
		return nil
	}
	var completed *LoginResult
	browser := func(ctx context.Context, authURL string) (*CallbackResult, error) {
		cb, err := HeadlessBrowser(nil)(ctx, authURL)
		if err != nil {
			return nil, err
		}
		if pending == nil || pending.State != cb.State || pending.Verifier == "" {
			t.Fatalf("shared flow %+v for the callback with state %q", pending, cb.State)
		}
		forged := *cb
		forged.State = "not-the-state"
		if _, err := other.CompletePending(ctx, pending, &forged); !errors.Is(err, ErrStateMismatch) {
			t.Fatalf("a forged state: %v", err)
		}
		if completed, err = other.CompletePending(ctx, pending, cb); err != nil {
			return nil, err
		}
		return nil, &CompletedElsewhere{Result: *completed}
	}
	res, err := e.a.Login(e.ctx(), e.server(), browser, LoginOptions{Share: share})
	if err != nil {
		t.Fatal(err)
	}
	if completed == nil || res.ClientID != completed.ClientID || !res.RefreshToken || res.Binding != completed.Binding {
		t.Fatalf("Login = %+v, completed elsewhere %+v", res, completed)
	}
	if n := len(tokenRequests(e.as, "authorization_code")); n != 1 {
		t.Fatalf("%d code exchanges, want 1", n)
	}
	if b := e.server().Auth.Binding; b == nil || *b != res.Binding {
		t.Fatalf("binding recorded %+v, want %+v", b, res.Binding)
	}
	if e.accessToken(other) == "" {
		t.Fatal("the completing process holds no access token")
	}
	if r := e.a.loadAccess(e.srv.ID, res.Binding); r != nil {
		t.Fatal("the starting process holds an access token it never received")
	}
	// It gets one by refreshing, with the stored refresh token.
	if st := e.a.Status(e.ctx(), e.server()); !st.HasRefreshToken || st.ClientID != res.ClientID {
		t.Fatalf("status %+v", st)
	}
}
