package gateway_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/internal/oidctest"
	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// hostWorld is a gateway on a fresh database with its MCP endpoint for
// hosts, a real OpenID provider, and a test MCP server.
type hostWorld struct {
	ctx   context.Context
	prov  *oidctest.Provider
	gw    *gateway.Gateway
	hosts *gateway.Hosts
	url   string // the MCP endpoint's URL, also its public URL
	fx    *fixture.Server
	// skew moves the gateway's clock of token expiry.
	skew atomic.Int64
	// userInfo counts the gateway's requests for the provider's user
	// info.
	userInfo atomic.Int32
}

// The JWT client whose access tokens name the gateway (its id is the
// endpoint's URL: the example provider's audience is the client id).
const (
	hostSecret   = "host-client-secret"
	hostRedirect = "http://127.0.0.1:1/cb" // never requested: SignIn stops there
)

// newHostWorld starts it; oauth false serves remotemcp tokens only (no
// Issuer).
func newHostWorld(t *testing.T, oauth bool) *hostWorld {
	t.Helper()
	ctx := testkit.Context(t)
	w := &hostWorld{ctx: ctx, prov: oidctest.Start(t), fx: testkit.StartFixture(t, fixture.Options{})}
	log := slog.New(slog.DiscardHandler)
	pg, err := store.OpenPostgres(ctx, pgtest.DSN(t), store.PostgresOptions{KeyDir: t.TempDir(), Options: store.Options{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	w.gw = gateway.New(gateway.Options{DB: pg, Engine: engine.Options{Logger: log}, Logger: log})
	t.Cleanup(func() { w.gw.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.url = "http://" + ln.Addr().String() + "/mcp"
	o := gateway.HostsOptions{Name: "remotemcp", Version: "test"}
	if oauth {
		o.Issuer, o.PublicURL = w.prov.Issuer, w.url
		o.Now = func() time.Time { return time.Now().Add(time.Duration(w.skew.Load())) }
		o.HTTPClient = &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/userinfo") {
				w.userInfo.Add(1)
			}
			return http.DefaultTransport.RoundTrip(r)
		})}
	}
	if w.hosts, err = w.gw.Hosts(ctx, o); err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- w.hosts.Serve(sctx, ln, "/mcp") }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	w.prov.AddJWTClient(oidctest.JWTClient{ID: w.url, Secret: hostSecret, RedirectURIs: []string{hostRedirect}})
	return w
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// addPerson adds a gateway user with the test server as serverID.
func (w *hostWorld) addPerson(t *testing.T, email, serverID string) {
	t.Helper()
	if _, err := w.gw.AddUser(w.ctx, email); err != nil {
		t.Fatal(err)
	}
	eng, _, err := w.gw.Engine(w.ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.AddServer(w.ctx, localapi.AddServerRequest{ID: serverID, URL: w.fx.URL(), By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
}

// accessToken signs u in at prov for the client id (a JWT client with
// hostSecret and hostRedirect) with scopes, as a host does.
func (w *hostWorld) accessToken(t *testing.T, prov *oidctest.Provider, clientID string, u oidctest.User, scopes ...string) string {
	t.Helper()
	tok, err := prov.AccessToken(w.ctx, clientID, hostSecret, hostRedirect, u, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("the provider's access token is no JWT: %.40s…", tok)
	}
	return tok
}

// revoke revokes the access token tok of the gateway's client at the
// provider (RFC 7009).
func (w *hostWorld) revoke(t *testing.T, tok string) {
	t.Helper()
	p, err := oidc.NewProvider(w.ctx, w.prov.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Revocation string `json:"revocation_endpoint"`
	}
	if err := p.Claims(&meta); err != nil || meta.Revocation == "" {
		t.Fatalf("no revocation endpoint: %v", err)
	}
	req, _ := http.NewRequestWithContext(w.ctx, http.MethodPost, meta.Revocation,
		strings.NewReader(url.Values{"token": {tok}, "token_type_hint": {"access_token"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(w.url), url.QueryEscape(hostSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %s %s", resp.Status, b)
	}
}

// bearerHost is a go-sdk MCP client that sends tok.
func (w *hostWorld) bearerHost(t *testing.T, tok string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok)
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	cs, err := c.Connect(w.ctx, &mcp.StreamableClientTransport{Endpoint: w.url, HTTPClient: hc}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// hostTools lists the tools a host sees.
func hostTools(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range res.Tools {
		out = append(out, x.Name)
	}
	return out
}

// echo calls server's echo tool through cs.
func echo(t *testing.T, cs *mcp.ClientSession, server, text string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server + "__echo", Arguments: map[string]any{"text": text}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text {
		t.Fatalf("call %s__echo: %v %+v", server, err, res)
	}
}

// Issue #22 acceptance, "a third host signs in by OAuth against the same
// provider": hosts with the provider's JWT access tokens for the
// gateway's URL reach their own person's servers and no one else's; the
// person is found by the verified email of the provider's user info
// (the example's access tokens carry none), asked once per token; a
// token whose claims carry it needs no user info. A remotemcp token goes
// on working beside them.
func TestHostsSignInByOAuth(t *testing.T) {
	w := newHostWorld(t, true)
	w.addPerson(t, oidctest.Alice.Email, "alicefx")
	w.addPerson(t, oidctest.Bob.Email, "bobfx")

	alice, err := w.bearerHost(t, w.accessToken(t, w.prov, w.url, oidctest.Alice, "openid", "email"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hostTools(t, alice); !slices.Contains(got, "alicefx__echo") || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "bobfx") }) {
		t.Fatalf("alice's host sees %v", got)
	}
	echo(t, alice, "alicefx", "alice by oauth")
	if n := w.userInfo.Load(); n != 1 {
		t.Errorf("%d user info requests for one access token, want 1", n)
	}

	bob, err := w.bearerHost(t, w.accessToken(t, w.prov, w.url, oidctest.Bob, "openid", "email"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hostTools(t, bob); !slices.Contains(got, "bobfx__echo") || slices.Contains(got, "alicefx__echo") {
		t.Fatalf("bob's host sees %v", got)
	}

	// A provider whose access tokens say the email: no user info.
	w.prov.AddJWTClient(oidctest.JWTClient{ID: w.url, Secret: hostSecret, RedirectURIs: []string{hostRedirect}, EmailClaims: true})
	before := w.userInfo.Load()
	alice2, err := w.bearerHost(t, w.accessToken(t, w.prov, w.url, oidctest.Alice, "openid"))
	if err != nil {
		t.Fatal(err)
	}
	echo(t, alice2, "alicefx", "claims")
	if n := w.userInfo.Load(); n != before {
		t.Errorf("%d user info requests for a token with the email claims, want none", n-before)
	}

	// remotemcp tokens as before.
	eng, _, err := w.gw.Engine(w.ctx, oidctest.Alice.Email)
	if err != nil {
		t.Fatal(err)
	}
	rmcp, err := frontend.NewTokens(eng.Store).Create(w.ctx, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	byToken, err := w.bearerHost(t, rmcp)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, byToken, "alicefx", "alice by token")
	if n := w.fx.Executions("echo"); n != 3 {
		t.Errorf("echo ran %d times, want 3", n)
	}
}

// A go-sdk MCP client that signs in by itself (its OAuthHandler, the
// MCP Authorization spec as go-sdk implements it, strict about RFC 9728
// and RFC 8414): told nothing but the endpoint's URL and its client, it
// follows the 401's resource_metadata to the gateway's metadata, the
// provider's, signs Alice in (the login form filled in for her) and
// lists and calls her tools.
func TestHostsGoSDKClientDiscovers(t *testing.T) {
	w := newHostWorld(t, true)
	w.addPerson(t, oidctest.Alice.Email, "alicefx")
	jar, _ := cookiejar.New(nil)
	var authURLs []string
	var mu sync.Mutex
	h, err := newAuthHandler(w.url, hostSecret, hostRedirect, func(ctx context.Context, authURL string) (code, state, iss string, err error) {
		mu.Lock()
		authURLs = append(authURLs, authURL)
		mu.Unlock()
		back, err := w.prov.SignIn(&http.Client{Jar: jar}, authURL, oidctest.Alice.Username, oidctest.Alice.Password)
		if err != nil {
			return "", "", "", err
		}
		q := back.Query()
		return q.Get("code"), q.Get("state"), q.Get("iss"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil)
	cs, err := c.Connect(w.ctx, &mcp.StreamableClientTransport{Endpoint: w.url, OAuthHandler: h}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	echo(t, cs, "alicefx", "found its way")
	if len(authURLs) != 1 {
		t.Fatalf("%d sign-ins, want 1", len(authURLs))
	}
	// It asked for the resource and the metadata's scopes (go-sdk
	// orders them as it likes).
	au, err := url.Parse(authURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	scopes := strings.Fields(au.Query().Get("scope"))
	slices.Sort(scopes)
	if au.Query().Get("resource") == "" || !slices.Equal(scopes, []string{"email", "openid"}) {
		t.Errorf("authorization request: %s", authURLs[0])
	}
}

// newAuthHandler is go-sdk's OAuth handler of a host with a
// pre-registered client, whose browser step is fetch.
func newAuthHandler(clientID, secret, redirect string, fetch func(ctx context.Context, authURL string) (code, state, iss string, err error)) (*auth.AuthorizationCodeHandler, error) {
	return auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: &oauthex.ClientCredentials{ClientID: clientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
		RedirectURL:         redirect,
		Client:              http.DefaultClient,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			code, state, iss, err := fetch(ctx, args.URL)
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: code, State: state, Iss: iss}, nil
		},
	})
}

// fetch fetches url with the headers of hdr (pairs) and returns the
// answer's status, header and body.
func fetch(t *testing.T, method, url string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// The protected resource metadata (RFC 9728), exactly, at the root and
// at the endpoint's path; the 401s name it (RFC 9728 §5.1) beside
// RFC 6750's realm and error. Without an issuer there is none, and the
// 401s are as before.
func TestHostsMetadataAndChallenges(t *testing.T) {
	w := newHostWorld(t, true)
	origin := strings.TrimSuffix(w.url, "/mcp")
	want := `{"resource":"` + w.url + `","authorization_servers":["` + w.prov.Issuer + `"],"bearer_methods_supported":["header"],"scopes_supported":["openid","email"]}`
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		code, h, body := fetch(t, http.MethodGet, origin+p)
		if code != http.StatusOK || body != want || h.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %s %q, want %s", p, code, h.Get("Content-Type"), body, want)
		}
	}
	if w.hosts.MetadataURL() != origin+"/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("MetadataURL %s", w.hosts.MetadataURL())
	}
	meta := `resource_metadata="` + origin + `/.well-known/oauth-protected-resource/mcp"`
	for _, c := range []struct{ name, auth, want string }{
		{"no token", "", `Bearer realm="remotemcp", ` + meta},
		{"a wrong remotemcp token", "Bearer rmcp_" + strings.Repeat("A", 43),
			`Bearer realm="remotemcp", error="invalid_token", error_description="the bearer token is unknown or revoked", ` + meta},
		{"not a JWT", "Bearer garbage", `Bearer realm="remotemcp", error="invalid_token", error_description="the access token is not valid for this gateway", ` + meta},
	} {
		code, h, body := fetch(t, http.MethodPost, w.url, "Authorization", c.auth)
		if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != c.want {
			t.Errorf("%s: %d %q %s\nwant %q", c.name, code, h.Get("WWW-Authenticate"), body, c.want)
		}
	}

	plain := newHostWorld(t, false)
	porigin := strings.TrimSuffix(plain.url, "/mcp")
	if code, _, _ := fetch(t, http.MethodGet, porigin+"/.well-known/oauth-protected-resource/mcp"); code != http.StatusNotFound {
		t.Errorf("metadata without an issuer: %d", code)
	}
	if code, h, _ := fetch(t, http.MethodPost, plain.url); code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Bearer realm="remotemcp"` {
		t.Errorf("401 without an issuer: %d %q", code, h.Get("WWW-Authenticate"))
	}
	if code, h, _ := fetch(t, http.MethodPost, plain.url, "Authorization", "Bearer garbage"); code != http.StatusUnauthorized ||
		h.Get("WWW-Authenticate") != `Bearer realm="remotemcp", error="invalid_token", error_description="the bearer token is unknown or revoked"` {
		t.Errorf("a JWT-looking token without an issuer: %d %q", code, h.Get("WWW-Authenticate"))
	}
}

// Access tokens the gateway refuses, each with its status and challenge:
// another audience, another issuer, expired, a forged signature, alg
// "none" and HS256, too long (401 invalid_token, naming the metadata);
// a person who is not a user, an unverified email, a token without the
// email scope (403, without a challenge that would send the host to sign
// in for the same answer, or insufficient_scope naming the scopes).
func TestHostsRefuseTokens(t *testing.T) {
	w := newHostWorld(t, true)
	w.addPerson(t, oidctest.Alice.Email, "alicefx")
	dave := oidctest.User{Username: "dave", Password: "dave-Secret-4", Email: "dave@example.org"}
	w.addPerson(t, dave.Email, "davefx")
	w.prov.AddUser(dave)
	carol := oidctest.User{Username: "carol", Password: "carol-Secret-3", Email: "carol@example.org", EmailVerified: true}
	w.prov.AddUser(carol)
	good := w.accessToken(t, w.prov, w.url, oidctest.Alice, "openid", "email")

	w.prov.AddJWTClient(oidctest.JWTClient{ID: "another-resource", Secret: hostSecret, RedirectURIs: []string{hostRedirect}})
	otherAud := w.accessToken(t, w.prov, "another-resource", oidctest.Alice, "openid", "email")
	p2 := oidctest.Start(t)
	p2.AddJWTClient(oidctest.JWTClient{ID: w.url, Secret: hostSecret, RedirectURIs: []string{hostRedirect}})
	otherIss := w.accessToken(t, p2, w.url, oidctest.Alice, "openid", "email")

	revoked := w.accessToken(t, w.prov, w.url, oidctest.Alice, "openid", "email")
	w.revoke(t, revoked)

	parts := strings.Split(good, ".")
	forged := parts[0] + "." + parts[1] + "." + strings.Split(otherAud, ".")[2]
	enc := base64.RawURLEncoding.EncodeToString
	none := enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	hsHead := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + parts[1]
	mac := hmac.New(sha256.New, []byte("a secret nobody shares"))
	mac.Write([]byte(hsHead))
	hs256 := hsHead + "." + enc(mac.Sum(nil))

	meta := `resource_metadata="` + w.hosts.MetadataURL() + `"`
	invalid := func(desc string) string {
		return `Bearer realm="remotemcp", error="invalid_token", error_description="` + desc + `", ` + meta
	}
	notValid := invalid("the access token is not valid for this gateway")
	for _, c := range []struct {
		name, tok string
		skew      time.Duration
		status    int
		challenge string
		says      string
	}{
		{"good", good, 0, http.StatusOK, "", ""},
		{"another audience", otherAud, 0, http.StatusUnauthorized, notValid, "expected audience"},
		// Signed with the other provider's keys, it fails at the
		// signature before its issuer is looked at.
		{"another issuer", otherIss, 0, http.StatusUnauthorized, notValid, "failed to verify signature"},
		{"expired", good, 2 * time.Hour, http.StatusUnauthorized, invalid("the access token expired"), "expired at"},
		{"forged signature", forged, 0, http.StatusUnauthorized, notValid, "failed to verify signature"},
		{"alg none", none, 0, http.StatusUnauthorized, notValid, `unexpected signature algorithm "none"`},
		{"HS256", hs256, 0, http.StatusUnauthorized, notValid, `unexpected signature algorithm "HS256"`},
		{"too long", good + strings.Repeat("A", 16<<10), 0, http.StatusUnauthorized, invalid("the access token is too long"), "longer than"},
		{"not a user", w.accessToken(t, w.prov, w.url, carol, "openid", "email"), 0, http.StatusForbidden, "",
			`you signed in as carol@example.org, who is not a user of this gateway; ask its admins to add you ("remotemcp users add carol@example.org")`},
		{"unverified email", w.accessToken(t, w.prov, w.url, dave, "openid", "email"), 0, http.StatusForbidden, "", "has not verified the email address dave@example.org"},
		{"no email scope", w.accessToken(t, w.prov, w.url, oidctest.Alice, "openid"), 0, http.StatusForbidden, "", "did not say your email address"},
		{"revoked at the provider", revoked, 0, http.StatusUnauthorized, invalid("the provider refused the access token"), "user info refused the access token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w.skew.Store(int64(c.skew))
			defer w.skew.Store(0)
			code, h, body := fetch(t, http.MethodPost, w.url, "Authorization", "Bearer "+c.tok)
			if code != c.status || h.Get("WWW-Authenticate") != c.challenge || !strings.Contains(body, c.says) {
				t.Errorf("%d %q %s\nwant %d %q, a body with %q", code, h.Get("WWW-Authenticate"), body, c.status, c.challenge, c.says)
			}
		})
	}
}

// A host session belongs to the person's sign-in (issuer, subject), not
// to one access token: a host that refreshes its token mid-session goes
// on (go-sdk binds a session to auth.TokenInfo.UserID the same way);
// another person's token does not find it. A person removed from the
// gateway is refused from then on.
func TestHostsOAuthSessions(t *testing.T) {
	w := newHostWorld(t, true)
	w.addPerson(t, oidctest.Alice.Email, "alicefx")
	w.addPerson(t, oidctest.Bob.Email, "bobfx")
	a1 := w.accessToken(t, w.prov, w.url, oidctest.Alice, "openid", "email")
	a2 := w.accessToken(t, w.prov, w.url, oidctest.Alice, "openid", "email")
	b := w.accessToken(t, w.prov, w.url, oidctest.Bob, "openid", "email")
	code, h, body := fetch(t, http.MethodPost, w.url, "Authorization", "Bearer "+a1)
	sid := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	ping := func(tok string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := ping(a2); code != http.StatusOK {
		t.Fatalf("alice's session with her second token: %d %s", code, body)
	}
	// Bob's token reaches Bob's front end, where Alice's session is not.
	if code, body := ping(b); code != http.StatusNotFound {
		t.Fatalf("alice's session with bob's token: %d %s", code, body)
	}
	if err := w.gw.RemoveUser(w.ctx, oidctest.Alice.Email); err != nil {
		t.Fatal(err)
	}
	if code, body := ping(a2); code != http.StatusForbidden || !strings.Contains(body, "not a user of this gateway") {
		t.Fatalf("a removed person: %d %s", code, body)
	}
}

// Hosts refuses OAuth settings that cannot work.
func TestHostsOptionsRefused(t *testing.T) {
	gw := gateway.New(gateway.Options{})
	for _, c := range []struct {
		o    gateway.HostsOptions
		says string
	}{
		{gateway.HostsOptions{Issuer: "https://id.example"}, "public URL"},
		{gateway.HostsOptions{Issuer: "https://id.example", PublicURL: "http://gw.example/mcp"}, "over https"},
		{gateway.HostsOptions{Issuer: "https://id.example", PublicURL: "https://gw.example/mcp?x=1"}, "is not a URL"},
		{gateway.HostsOptions{Issuer: "ftp://id.example", PublicURL: "https://gw.example/mcp"}, "issuer"},
		{gateway.HostsOptions{PublicURL: "mcp.example"}, "is not a URL"},
	} {
		if _, err := gw.Hosts(t.Context(), c.o); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.says)
		}
	}
	if _, err := gw.Hosts(t.Context(), gateway.HostsOptions{Issuer: "https://id.example", PublicURL: "https://gw.example/mcp"}); err != nil {
		t.Error(err)
	}
}

// remotemcp's own client (package oauth, through an engine) takes the
// gateway as an OAuth server like any other: a person's personal
// remotemcp adds the gateway's endpoint with auth oauth and a
// pre-registered client, follows its 401 to the metadata and the
// provider (R3.4–R3.8: resource, issuer, S256), signs Alice in, and
// calls her tool on the gateway.
func TestHostsRemotemcpClientDiscovers(t *testing.T) {
	w := newHostWorld(t, true)
	w.addPerson(t, oidctest.Alice.Email, "alicefx")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	w.prov.AddJWTClient(oidctest.JWTClient{ID: w.url, Secret: hostSecret,
		RedirectURIs: []string{hostRedirect, fmt.Sprintf("http://127.0.0.1:%d/mcp-oauth", port)}})

	eng, err := engine.Open(w.ctx, engine.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if err := eng.Grant(w.ctx, w.prov.Issuer, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.AddServer(w.ctx, localapi.AddServerRequest{ID: "gw", URL: w.url, Auth: config.AuthOAuth,
		ClientID: w.url, ClientSecret: hostSecret, RedirectPort: port, By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	fl, err := eng.Authorize(w.ctx, "gw")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize: %+v %v", fl, err)
	}
	jar, _ := cookiejar.New(nil)
	back, err := w.prov.SignIn(&http.Client{Jar: jar}, fl.AuthorizationURL, oidctest.Alice.Username, oidctest.Alice.Password)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(back.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if fl, err = eng.WaitAuthorization(w.ctx, "gw"); err != nil || fl.Phase != localapi.PhaseDone {
		t.Fatalf("sign-in: %+v %v", fl, err)
	}
	res, err := eng.Call(w.ctx, localapi.CallRequest{Tool: "mcp__gw__alicefx__echo", Arguments: []byte(`{"text":"through two remotemcps"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != "through two remotemcps" {
		t.Fatalf("call through the gateway: %+v %v", res, err)
	}
}

// A provider that cannot be reached: a host's access token is answered
// 503 (try again), not 401, which would send it to sign in for nothing.
func TestHostsProviderDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	h, err := gateway.New(gateway.Options{}).Hosts(t.Context(), gateway.HostsOptions{Issuer: down, PublicURL: "http://127.0.0.1:1/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer a.b.c")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "cannot be reached") || rec.Header().Get("WWW-Authenticate") != "" {
		t.Fatalf("%d %q %s", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
	}
}

// Through a proxy, the endpoint is reached by its public URL's host
// (--mcp-public-url), which the Host check takes beside loopback; any
// other name is still refused (DNS rebinding).
func TestHostsPublicHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h, err := gateway.New(gateway.Options{}).Hosts(t.Context(), gateway.HostsOptions{PublicURL: "https://gw.example/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln, "/mcp") }()
	defer func() { stop(); <-served }()
	url := "http://" + ln.Addr().String() + "/mcp"
	for _, c := range []struct {
		host, origin string
		want         int
	}{
		{ln.Addr().String(), "", http.StatusUnauthorized},
		{"gw.example", "", http.StatusUnauthorized},
		{"gw.example", "https://gw.example", http.StatusUnauthorized},
		{"evil.example", "", http.StatusForbidden},
		{"gw.example", "https://evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader("{}"))
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %s Origin %q: %s, want %d", c.host, c.origin, resp.Status, c.want)
		}
	}
}
