package oauth

import (
	"context"
	"errors"
	"testing"

	"github.com/remotemcp/remotemcp/config"
)

// Issue #19 item 1 (review): a sign-in whose redirect URI differs from
// the registered one registers a new client, but a sign-in that is
// started and never finished costs nothing: the stored refresh token
// keeps being refreshed with the client it was issued to, during the
// browser step and after it was abandoned. Only the code exchange of the
// new client's sign-in makes it the client in use; refreshes then use it.
func TestAbandonedReregistrationKeepsRefreshToken(t *testing.T) {
	e := newEnv(t)
	const portA, portB = 47001, 47002
	on := func(port int) config.Server {
		srv := e.server()
		srv.Auth.RedirectPort = port
		return srv
	}
	login := func(port int, b Browser) (*LoginResult, error) { return e.a.Login(e.ctx(), on(port), b) }
	// refresh makes the access token expire and lets a request's 401 be
	// answered by a refresh; it returns the client id the refresh used.
	refresh := func(what string) string {
		t.Helper()
		tok := e.accessToken(e.a)
		e.as.ExpireAccessTokens()
		before := len(tokenRequests(e.as, "refresh_token"))
		req, resp := e.post401(tok)
		if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); err != nil {
			t.Fatalf("%s: refresh: %v", what, err)
		}
		reqs := tokenRequests(e.as, "refresh_token")
		if len(reqs) != before+1 {
			t.Fatalf("%s: %d refresh requests, want %d", what, len(reqs), before+1)
		}
		if e.accessToken(e.a) == tok {
			t.Fatalf("%s: the access token did not change", what)
		}
		return reqs[len(reqs)-1].Form.Get("client_id")
	}

	first, err := login(portA, HeadlessBrowser(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := refresh("after the first sign-in"); got != first.ClientID {
		t.Fatalf("refreshed with %q, want %q", got, first.ClientID)
	}

	// A sign-in on port B registers a new client; while its browser step
	// waits, a refresh still works with the first client; then the
	// person closes the tab.
	ctx, cancel := context.WithCancel(e.ctx())
	_, err = e.a.Login(ctx, on(portB), func(ctx context.Context, _ string) (*CallbackResult, error) {
		if got := refresh("during the browser step"); got != first.ClientID {
			t.Errorf("during the browser step: refreshed with %q, want %q", got, first.ClientID)
		}
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned sign-in: %v", err)
	}
	if n := len(e.as.RequestsTo("/register")); n != 2 {
		t.Fatalf("%d registrations, want 2", n)
	}
	if got := refresh("after the abandoned sign-in"); got != first.ClientID {
		t.Fatalf("after the abandoned sign-in: refreshed with %q, want %q", got, first.ClientID)
	}
	if st := e.a.Status(e.ctx(), e.server()); st.ClientID != first.ClientID || !st.HasRefreshToken {
		t.Fatalf("status after the abandoned sign-in: %+v", st)
	}

	// The sign-in on B, finished this time: the abandoned registration is
	// replaced (its browser step never came back), and the new client is
	// the one in use from its code exchange on.
	second, err := login(portB, HeadlessBrowser(nil))
	if err != nil {
		t.Fatal(err)
	}
	if second.ClientID == first.ClientID || !second.Registered {
		t.Fatalf("the sign-in on B used %q (first %q)", second.ClientID, first.ClientID)
	}
	if n := len(e.as.RequestsTo("/register")); n != 3 {
		t.Fatalf("%d registrations, want 3 (the abandoned one is not trusted)", n)
	}
	if st := e.a.Status(e.ctx(), e.server()); st.ClientID != second.ClientID {
		t.Fatalf("status after the sign-in on B: client %q, want %q", st.ClientID, second.ClientID)
	}
	if got := refresh("after the sign-in on B"); got != second.ClientID {
		t.Fatalf("after the sign-in on B: refreshed with %q, want %q", got, second.ClientID)
	}
	// A further sign-in on B reuses the client: its callback came back.
	if third, err := login(portB, HeadlessBrowser(nil)); err != nil || third.ClientID != second.ClientID {
		t.Fatalf("third sign-in: %+v %v", third, err)
	}
}

// A refresh that read the client in use before a sign-in with a new
// client finished (its client promoted, its refresh token stored) sends
// the new refresh token with the new client, under the lock, and keeps
// it, rather than dropping it as issued to another client.
func TestRefreshAfterPromotionUsesTheNewClient(t *testing.T) {
	e := newEnv(t)
	on := func(port int) config.Server {
		srv := e.server()
		srv.Auth.RedirectPort = port
		return srv
	}
	first, err := e.a.Login(e.ctx(), on(47001), HeadlessBrowser(nil))
	if err != nil {
		t.Fatal(err)
	}
	srv := e.server()
	b := *srv.Auth.Binding
	asm, err := e.a.discoverAS(e.ctx(), srv.ID, b.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := e.a.resolveClient(e.ctx(), srv, b, asm, false)
	if err != nil || stale == nil || stale.ID != first.ClientID {
		t.Fatalf("client in use: %+v %v", stale, err)
	}
	second, err := e.a.Login(e.ctx(), on(47002), HeadlessBrowser(nil))
	if err != nil || second.ClientID == first.ClientID {
		t.Fatalf("sign-in on B: %+v %v", second, err)
	}
	if _, err := e.a.refresh(e.ctx(), srv, b, b.Resource, asm.TokenEndpoint, stale); err != nil {
		t.Fatalf("refresh with the client read before the sign-in: %v", err)
	}
	reqs := tokenRequests(e.as, "refresh_token")
	if len(reqs) != 1 || reqs[0].Form.Get("client_id") != second.ClientID {
		t.Fatalf("%d refresh requests; want 1 with client %q", len(reqs), second.ClientID)
	}
	if st := e.a.Status(e.ctx(), e.server()); !st.HasRefreshToken || st.ClientID != second.ClientID {
		t.Fatalf("status: %+v", st)
	}
}
