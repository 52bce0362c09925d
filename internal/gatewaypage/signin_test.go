package gatewaypage

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/oidctest"
	"github.com/remotemcp/remotemcp/localapi"
)

const sessionCookie = "remotemcp_gateway"

// Two people sign in through the real provider's login form, each in
// their own browser: each page and each API answer shows only that
// person's servers. Alice makes and revokes a host token on the page: it
// is hers (the gateway's owner of the token) and Bob's list never shows
// it. Signing out ends the session; a person the provider knows but the
// gateway does not is refused, an --admin is added at their first
// sign-in, and a person removed by an admin loses their session.
func TestSignInShowsOnlyYourServers(t *testing.T) {
	carol := oidctest.User{Username: "carol", Password: "carol-Secret-3", Email: "Carol@Example.org", EmailVerified: true}
	dave := oidctest.User{Username: "dave", Password: "dave-Secret-4", Email: "dave@example.org", EmailVerified: true}
	w := newWorld(t, func(w *world, o *daemon.Options) {
		w.prov.AddUser(carol)
		w.prov.AddUser(dave)
		o.SignIn.Admins = []string{"carol@example.org"}
	})
	w.addPerson(t, oidctest.Alice.Email, "alice-files", "alice-mail")
	w.addPerson(t, oidctest.Bob.Email, "bob-notes")

	alice, bob := w.browser(t), w.browser(t)
	// Before signing in: the page sends the browser to sign in, the API
	// refuses.
	if st, body := alice.do(http.MethodGet, "/api/servers", nil); st != http.StatusUnauthorized {
		t.Fatalf("API before sign-in: %d %s", st, body)
	}
	alice.signIn(oidctest.Alice)
	bob.signIn(oidctest.Bob)
	// Over http, the cookies are not Secure (the browser would drop
	// them), and the session's is HttpOnly and Strict, for the whole page.
	checkCookies(t, alice.setCookies(), map[string]string{
		"remotemcp_signin":  "Path=/oidc/; Max-Age=600; HttpOnly; SameSite=Lax",
		"remotemcp_gateway": "Path=/; Max-Age=43200; HttpOnly; SameSite=Strict",
	})

	if got := alice.serverIDs(); !slices.Equal(got, []string{"alice-files", "alice-mail"}) {
		t.Errorf("Alice's API lists %v", got)
	}
	if got := bob.serverIDs(); !slices.Equal(got, []string{"bob-notes"}) {
		t.Errorf("Bob's API lists %v", got)
	}
	st, page := alice.do(http.MethodGet, "/", nil)
	if st != http.StatusOK || !strings.Contains(page, "alice-files") || !strings.Contains(page, "alice-mail") ||
		strings.Contains(page, "bob-notes") || !strings.Contains(page, "alice@example.org") {
		t.Fatalf("Alice's page: %d\n%s", st, page)
	}
	st, page = bob.do(http.MethodGet, "/", nil)
	if st != http.StatusOK || !strings.Contains(page, "bob-notes") || strings.Contains(page, "alice") {
		t.Fatalf("Bob's page: %d\n%s", st, page)
	}
	// Bob reaches none of Alice's servers by id.
	if st, body := bob.do(http.MethodGet, "/api/servers/alice-files", nil); st != http.StatusNotFound {
		t.Errorf("Bob reading Alice's server: %d %s", st, body)
	}

	// Host tokens on the page are the person's own.
	st, body := alice.do(http.MethodPost, "/api/host-tokens", localapi.HostTokenRequest{Name: "alice-laptop"})
	if st != http.StatusCreated {
		t.Fatalf("create a host token: %d %s", st, body)
	}
	var tok localapi.NewHostToken
	mustJSON(t, body, &tok)
	owner, err := w.gw.TokenOwner(w.ctx, tok.Token)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := w.admin.Users(w.ctx); !slices.ContainsFunc(u, func(u localapi.User) bool { return u.ID == owner && u.Email == oidctest.Alice.Email }) {
		t.Errorf("the token's owner %s is not Alice (%v)", owner, u)
	}
	if _, body := bob.do(http.MethodGet, "/api/host-tokens", nil); strings.Contains(body, "alice-laptop") {
		t.Errorf("Bob's tokens show Alice's: %s", body)
	}
	if st, body := bob.do(http.MethodPost, "/api/host-tokens/revoke", localapi.HostTokenRequest{Name: "alice-laptop"}); st != http.StatusNotFound {
		t.Errorf("Bob revoking Alice's token: %d %s", st, body)
	}
	if st, body := alice.do(http.MethodPost, "/api/host-tokens/revoke", localapi.HostTokenRequest{Name: "alice-laptop"}); st != http.StatusNoContent {
		t.Errorf("Alice revoking her token: %d %s", st, body)
	}
	if _, err := w.gw.TokenOwner(w.ctx, tok.Token); err == nil {
		t.Error("a revoked token still has an owner")
	}
	// Only admins manage people on the page.
	if st, body := alice.do(http.MethodGet, "/api/users", nil); st != http.StatusForbidden {
		t.Errorf("a person listing the gateway's people: %d %s", st, body)
	}

	// A state-changing request needs the page's Origin.
	req, _ := http.NewRequest(http.MethodPost, alice.base+"/api/host-tokens", strings.NewReader(`{"name":"x"}`))
	req.Header.Set("Origin", "http://evil.example")
	if resp, err := alice.noRedirect().Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Origin: %v %v", resp.Status, err)
	}

	// Signing out.
	if st, body := alice.do(http.MethodPost, "/api/logout", nil); st != http.StatusNoContent {
		t.Fatalf("sign out: %d %s", st, body)
	}
	if st, _ := alice.do(http.MethodGet, "/api/servers", nil); st != http.StatusUnauthorized {
		t.Errorf("API after signing out: %d", st)
	}
	if resp, err := alice.noRedirect().Get(alice.base + "/"); err != nil || resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/oidc/login" {
		t.Errorf("page after signing out: %v %v", resp, err)
	}

	// Dave is known to the provider, not to the gateway.
	d := w.browser(t)
	resp, err := w.prov.Login(d.c, d.base+"/", dave.Username, dave.Password)
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not a user of this gateway") {
		t.Errorf("a stranger's sign-in: %s %s", resp.Status, body)
	}
	if d.cookie(sessionCookie) != "" {
		t.Error("a stranger got a session")
	}
	// Carol is an admin: added at her first sign-in, with the people's
	// list.
	c := w.browser(t)
	c.signIn(carol)
	if got := c.serverIDs(); len(got) != 0 {
		t.Errorf("a new admin has servers: %v", got)
	}
	st, body = c.do(http.MethodGet, "/api/users", nil)
	if st != http.StatusOK || !strings.Contains(body, "carol@example.org") || !strings.Contains(body, "bob@example.org") {
		t.Errorf("the admin's list of people: %d %s", st, body)
	}
	// Bob is removed: his session goes with him.
	if st, body := c.do(http.MethodDelete, "/api/users/bob@example.org", nil); st != http.StatusNoContent {
		t.Fatalf("remove Bob: %d %s", st, body)
	}
	if st, _ := bob.do(http.MethodGet, "/api/servers", nil); st != http.StatusUnauthorized {
		t.Errorf("a removed person's API: %d", st)
	}
}

// The callback takes the provider's answer only in the browser that
// started the sign-in, once, with the sign-in's nonce, and an ID token
// for this gateway's client with a verified email: every other answer is
// refused and leaves no session.
func TestSignInRefusals(t *testing.T) {
	eve := oidctest.User{Username: "eve", Password: "eve-Secret-5", Email: "eve@example.org", EmailVerified: false}
	w := newWorld(t, func(w *world, o *daemon.Options) { w.prov.AddUser(eve) })
	w.addPerson(t, oidctest.Alice.Email, "alice-files")
	w.addPerson(t, eve.Email)

	// start begins a sign-in in b and returns the provider's
	// authorization URL.
	start := func(b *browser) *url.URL {
		t.Helper()
		resp, err := b.noRedirect().Get(b.base + "/oidc/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc.String(), w.prov.Issuer) {
			t.Fatalf("start a sign-in: %s %s", resp.Status, loc)
		}
		q := loc.Query()
		if q.Get("state") == "" || q.Get("nonce") == "" || q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
			t.Fatalf("the authorization request lacks state, nonce or PKCE: %s", loc)
		}
		return loc
	}
	// back completes the provider's part as user and returns the
	// redirect to the page's callback.
	back := func(b *browser, auth *url.URL, u oidctest.User) *url.URL {
		t.Helper()
		cb, err := w.prov.SignIn(b.c, auth.String(), u.Username, u.Password)
		if err != nil {
			t.Fatal(err)
		}
		return cb
	}
	refused := func(what string, b *browser, cb string, status int, says string) {
		t.Helper()
		resp, err := b.noRedirect().Get(cb)
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(t, resp)
		if resp.StatusCode != status || !strings.Contains(body, says) {
			t.Errorf("%s: %s, want %d saying %q:\n%s", what, resp.Status, status, says, body)
		}
		if b.cookie(sessionCookie) != "" {
			t.Errorf("%s: a session cookie was set", what)
		}
		if st, _ := b.do(http.MethodGet, "/api/servers", nil); st != http.StatusUnauthorized {
			t.Errorf("%s: the API answers %d", what, st)
		}
	}

	// No state, and a forged one, in the browser that started a
	// sign-in.
	a := w.browser(t)
	cb := back(a, start(a), oidctest.Alice)
	noState := *cb
	q := noState.Query()
	q.Del("state")
	noState.RawQuery = q.Encode()
	refused("no state", a, noState.String(), http.StatusBadRequest, "does not belong to a sign-in started in this browser")
	forged := *cb
	q = forged.Query()
	q.Set("state", "forged-"+q.Get("state"))
	forged.RawQuery = q.Encode()
	refused("a forged state", a, forged.String(), http.StatusBadRequest, "does not belong to a sign-in started in this browser")
	// Alice's answer opened in another browser (a login CSRF): refused,
	// and her own sign-in still completes.
	other := w.browser(t)
	refused("another browser's answer", other, cb.String(), http.StatusBadRequest, "does not belong to a sign-in started in this browser")
	resp, err := a.c.Get(cb.String())
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK || a.cookie(sessionCookie) == "" {
		t.Fatalf("Alice's own answer: %s %s", resp.Status, body)
	}
	// The same answer again, once she signed out: the sign-in is over.
	if st, body := a.do(http.MethodPost, "/api/logout", nil); st != http.StatusNoContent {
		t.Fatalf("sign out: %d %s", st, body)
	}
	refused("a replayed answer", a, cb.String(), http.StatusBadRequest, "does not belong to a sign-in started in this browser")
	// The used code in a new sign-in of this browser: the provider
	// refuses it.
	b := w.browser(t)
	auth := start(b)
	reused := *cb
	q = reused.Query()
	q.Set("state", auth.Query().Get("state"))
	reused.RawQuery = q.Encode()
	refused("a replayed code", b, reused.String(), http.StatusBadRequest, "did not accept this sign-in")

	// A nonce that is not the sign-in's: the ID token belongs to another
	// sign-in.
	n := w.browser(t)
	auth = start(n)
	q = auth.Query()
	q.Set("nonce", "not-the-sign-ins-nonce")
	auth.RawQuery = q.Encode()
	refused("a wrong nonce", n, back(n, auth, oidctest.Alice).String(), http.StatusBadRequest, "belongs to another sign-in")

	// An ID token the provider issued to another client (another
	// audience), put into the token response.
	w.tap.set(otherAudienceToken(t, w.prov))
	o := w.browser(t)
	refused("an ID token for another audience", o, back(o, start(o), oidctest.Alice).String(), http.StatusBadRequest, "did not check out")
	w.tap.set("")
	if !strings.Contains(w.logs.String(), "expected audience") {
		t.Errorf("the refusal's cause is not the audience:\n%s", w.logs)
	}

	// An email the provider has not verified names nobody.
	e := w.browser(t)
	refused("an unverified email", e, back(e, start(e), eve).String(), http.StatusForbidden, "has not verified")

	// The provider's own refusal.
	x := w.browser(t)
	auth = start(x)
	denied := w.page + daemon.CallbackOIDC + "?" + url.Values{"state": {auth.Query().Get("state")}, "error": {"access_denied"}}.Encode()
	refused("the provider's refusal", x, denied, http.StatusForbidden, "access_denied")
}

// otherAudienceToken signs Alice in for another client of the provider
// and returns the ID token it issued.
func otherAudienceToken(t *testing.T, p *oidctest.Provider) string {
	t.Helper()
	ctx := context.Background()
	const redirect = "http://127.0.0.1:1/other-app"
	p.AddClient("other-app", "other-secret", redirect)
	prov, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	conf := oauth2.Config{ClientID: "other-app", ClientSecret: "other-secret", Endpoint: prov.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "email"}}
	jar, _ := cookiejar.New(nil)
	v := oauth2.GenerateVerifier()
	cb, err := p.SignIn(&http.Client{Jar: jar}, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(v)), "alice", oidctest.AlicePassword)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := conf.Exchange(ctx, cb.Query().Get("code"), oauth2.VerifierOption(v))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatal("no ID token for the other client")
	}
	return raw
}

// With an authenticating proxy, the header names the person only on a
// connection from a trusted proxy: from anywhere else every request for
// the page is refused (403, saying why), header or not.
func TestTrustedProxyHeader(t *testing.T) {
	const header = "X-Auth-Email"
	w := newWorld(t, func(w *world, o *daemon.Options) {
		o.SignIn = &daemon.SignIn{TrustedUserHeader: header, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	})
	w.addPerson(t, oidctest.Alice.Email, "alice-files")
	w.addPerson(t, oidctest.Bob.Email, "bob-notes")
	get := func(c *http.Client, path, email string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(w.ctx, http.MethodGet, w.page+path, nil)
		if email != "" {
			req.Header.Set(header, email)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, readBody(t, resp)
	}
	outside, proxy := dialFrom("127.0.0.1"), dialFrom("127.0.0.2")
	t.Cleanup(outside.CloseIdleConnections)
	t.Cleanup(proxy.CloseIdleConnections)

	for _, path := range []string{"/", "/api/servers"} {
		if st, body := get(outside, path, oidctest.Alice.Email); st != http.StatusForbidden || !strings.Contains(body, "not one of its trusted proxies") {
			t.Errorf("%s with the header from outside the proxies: %d %s", path, st, body)
		}
		if st, _ := get(outside, path, ""); st != http.StatusForbidden {
			t.Errorf("%s without the header from outside the proxies: %d", path, st)
		}
	}
	if st, body := get(proxy, "/api/servers", ""); st != http.StatusUnauthorized {
		t.Errorf("the proxy naming nobody: %d %s", st, body)
	}
	if st, body := get(proxy, "/api/servers", oidctest.Alice.Email); st != http.StatusOK || !strings.Contains(body, "alice-files") || strings.Contains(body, "bob-notes") {
		t.Errorf("Alice through the proxy: %d %s", st, body)
	}
	if st, body := get(proxy, "/", oidctest.Bob.Email); st != http.StatusOK || !strings.Contains(body, "bob-notes") || strings.Contains(body, "alice-files") {
		t.Errorf("Bob's page through the proxy: %d %s", st, body)
	}
	if st, body := get(proxy, "/api/servers", "mallory@example.org"); st != http.StatusForbidden || !strings.Contains(body, "not a user of this gateway") {
		t.Errorf("a stranger through the proxy: %d %s", st, body)
	}
	// No session cookie: the header is the proof, on every request.
	req, _ := http.NewRequest(http.MethodGet, w.page+"/", nil)
	req.Header.Set(header, oidctest.Alice.Email)
	resp, err := proxy.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("a proxied page set cookies: %v", sc)
	}
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
}

// Behind a proxy that serves the page as https (--public-url https://…),
// the page's cookies are Secure, and named with the __Host- and
// __Secure- prefixes so that no other host or plain-http page can set
// them; sign-in and the API work through it.
func TestCookiesSecureBehindHTTPS(t *testing.T) {
	w := newWorld(t, func(w *world, o *daemon.Options) { o.SignIn.PublicURL = "https://gw.example.test/" })
	if w.page != "https://gw.example.test" {
		t.Fatalf("the page's URL is %s", w.page)
	}
	w.addPerson(t, oidctest.Alice.Email, "alice-files")
	b := w.browser(t)
	b.signIn(oidctest.Alice)
	checkCookies(t, b.setCookies(), map[string]string{
		"__Secure-remotemcp_signin": "Path=/oidc/; Max-Age=600; HttpOnly; Secure; SameSite=Lax",
		"__Host-remotemcp_gateway":  "Path=/; Max-Age=43200; HttpOnly; Secure; SameSite=Strict",
	})
	if got := b.serverIDs(); !slices.Equal(got, []string{"alice-files"}) {
		t.Errorf("Alice's servers through https: %v", got)
	}
	if st, body := b.do(http.MethodPost, "/api/host-tokens", localapi.HostTokenRequest{Name: "laptop"}); st != http.StatusCreated {
		t.Errorf("a state-changing request with the public Origin: %d %s", st, body)
	}
}

// checkCookies checks the attributes of the cookies set, by name (the
// first of each name; a removal, Max-Age=0, is skipped).
func checkCookies(t *testing.T, set []string, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range set {
		name, rest, _ := strings.Cut(c, "=")
		_, attrs, _ := strings.Cut(rest, "; ")
		if seen[name] || strings.Contains(attrs, "Max-Age=0") {
			continue
		}
		seen[name] = true
		w, ok := want[name]
		if !ok {
			t.Errorf("an unexpected cookie: %s", c)
			continue
		}
		if attrs != w {
			t.Errorf("cookie %s: %q, want %q", name, attrs, w)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no cookie %s among %q", name, set)
		}
	}
}
