// Package gatewaypage tests a gateway's settings page with people signing
// in (issue #22, "Signing in people (the page)"), with real parts only:
// PostgreSQL (pgtest), the gateway's people and engines, the daemon's page
// and socket, and a real OpenID provider (oidctest: zitadel/oidc's
// example provider), whose login form the tests fill in as a person
// would, with an http.Client and a cookie jar, or in headless chromium.
package gatewaypage

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/internal/oidctest"
	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// TestMain runs on PostgreSQL (pgtest) and keeps the example provider's
// log of every request, and its warnings about the answers the tests
// make it refuse, out of the output (it logs to the default logger).
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	pgtest.Main(m)
}

// world is a gateway with its page, a provider, and an admin's socket.
type world struct {
	ctx   context.Context
	prov  *oidctest.Provider
	gw    *gateway.Gateway
	srv   *daemon.Server
	dir   string
	page  string // the page's URL as browsers reach it
	admin *localapi.Client
	logs  *logBuffer
	fx    *fixture.Server
	tap   *tokenTap
	roots *x509.CertPool // the page's TLS certificate, when it serves TLS
}

// newWorld starts a provider, a gateway on a fresh database, and its
// daemon, whose page signs people in with the provider; mod, when given,
// changes the daemon's options once the provider's issuer is known. With
// OpenID Connect, the page's redirect URI is registered at the provider
// once the page listens.
func newWorld(t *testing.T, mod func(w *world, o *daemon.Options)) *world {
	t.Helper()
	ctx := testkit.Context(t)
	w := &world{ctx: ctx, logs: &logBuffer{}, prov: oidctest.Start(t)}
	log := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", w.logs)
		}
	})
	pg, err := store.OpenPostgres(ctx, pgtest.DSN(t), store.PostgresOptions{KeyDir: t.TempDir(), Options: store.Options{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	w.gw = gateway.New(gateway.Options{DB: pg, Engine: engine.Options{Logger: log}, Logger: log})
	t.Cleanup(func() { w.gw.Close() })

	w.tap = &tokenTap{next: http.DefaultTransport}
	si := &daemon.SignIn{OIDC: &daemon.OIDC{Issuer: w.prov.Issuer, ClientID: oidctest.ClientID,
		ClientSecret: oidctest.ClientSecret, HTTPClient: &http.Client{Transport: w.tap}}}
	w.dir = t.TempDir()
	o := daemon.Options{Gateway: w.gw, SignIn: si, DataDir: w.dir, Addr: "127.0.0.1:0", Logger: log}
	if mod != nil {
		mod(w, &o)
	}
	si = o.SignIn
	srv, err := daemon.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	w.srv = srv
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("daemon Serve: %v", err)
		}
	})
	w.page = srv.PageURL()
	if si.OIDC != nil {
		if err := w.prov.AddRedirectURI(oidctest.ClientID, w.page+daemon.CallbackOIDC); err != nil {
			t.Fatal(err)
		}
	}
	w.admin = w.dial(t, "")
	w.fx = testkit.StartFixture(t, fixture.Options{})
	return w
}

// dial is the socket's client, acting for email ("" for the admin).
func (w *world) dial(t *testing.T, email string) *localapi.Client {
	t.Helper()
	c, err := daemon.Dial(w.ctx, w.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	if email != "" {
		c.ActAs(email)
	}
	return c
}

// addPerson adds a person on the socket and gives them servers.
func (w *world) addPerson(t *testing.T, email string, servers ...string) {
	t.Helper()
	if _, err := w.admin.AddUser(w.ctx, email); err != nil {
		t.Fatal(err)
	}
	c := w.dial(t, email)
	for _, id := range servers {
		if _, err := c.AddServer(w.ctx, localapi.AddServerRequest{ID: id, URL: w.fx.URL()}); err != nil {
			t.Fatalf("add %s's server %s: %v", email, id, err)
		}
	}
}

// browser is one person's browser without the browser: a cookie jar.
type browser struct {
	t    *testing.T
	w    *world
	c    *http.Client
	base string // the page's URL
}

func (w *world) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, w: w, base: w.page}
	pp := &pageProxy{b: b, page: w.page, listener: w.srv.URL()}
	pp.next.TLSClientConfig = &tls.Config{RootCAs: w.roots}
	b.c = &http.Client{Jar: jar, Transport: pp}
	t.Cleanup(b.c.CloseIdleConnections)
	return b
}

// pageProxy is the way from a browser to the page: requests for the
// page's public URL go to the page's loopback listener, as a proxy on the
// gateway's host that terminates TLS would send them (with the public
// Host); it records the cookies the page sets.
type pageProxy struct {
	b              *browser
	page, listener string
	next           http.Transport
	mu             sync.Mutex
	setCookies     []string
}

func (p *pageProxy) RoundTrip(req *http.Request) (*http.Response, error) {
	pu, _ := url.Parse(p.page)
	ours := req.URL.Host == pu.Host
	if ours && p.page != p.listener {
		lu, _ := url.Parse(p.listener)
		req = req.Clone(req.Context())
		req.Host = pu.Host
		req.URL.Scheme, req.URL.Host = lu.Scheme, lu.Host
	}
	resp, err := p.next.RoundTrip(req)
	if err == nil && ours {
		p.mu.Lock()
		p.setCookies = append(p.setCookies, resp.Header.Values("Set-Cookie")...)
		p.mu.Unlock()
	}
	return resp, err
}

// setCookies are the Set-Cookie headers the page sent this browser.
func (b *browser) setCookies() []string {
	p := b.c.Transport.(*pageProxy)
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.setCookies)
}

// signIn signs the person in through the provider's login form, from the
// page's root as a person opening it, and checks the page says so.
func (b *browser) signIn(u oidctest.User) {
	b.t.Helper()
	resp, err := b.w.prov.Login(b.c, b.base+"/", u.Username, u.Password)
	if err != nil {
		b.t.Fatal(err)
	}
	body := readBody(b.t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Signed in") {
		b.t.Fatalf("sign-in of %s: %s: %s", u.Username, resp.Status, body)
	}
}

// do sends a request as the page's script would (its Origin on
// state-changing ones); the body is JSON when given.
func (b *browser) do(method, path string, body any) (int, string) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(b.w.ctx, method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != http.MethodGet {
		req.Header.Set("Origin", b.base)
	}
	resp, err := b.noRedirect().Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp.StatusCode, readBody(b.t, resp)
}

// noRedirect is the browser's client, stopping at the first redirect.
func (b *browser) noRedirect() *http.Client {
	c := *b.c
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// serverIDs lists the servers the page's API shows.
func (b *browser) serverIDs() []string {
	b.t.Helper()
	st, body := b.do(http.MethodGet, "/api/servers", nil)
	if st != http.StatusOK {
		b.t.Fatalf("GET /api/servers: %d %s", st, body)
	}
	var list []localapi.Server
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		b.t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	return ids
}

// cookie is the value of the jar's cookie name for the page, "" if none.
func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.base + "/")
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logBuffer collects the daemon's log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// tokenTap is the gateway's way to the provider; when swap is set, it
// puts that ID token into the provider's token response in place of the
// one the provider issued, as a provider (or someone between) handing
// the gateway a token meant for something else would.
type tokenTap struct {
	next http.RoundTripper
	mu   sync.Mutex
	swap string
}

func (tt *tokenTap) set(idToken string) {
	tt.mu.Lock()
	tt.swap = idToken
	tt.mu.Unlock()
}

func (tt *tokenTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := tt.next.RoundTrip(req)
	tt.mu.Lock()
	swap := tt.swap
	tt.mu.Unlock()
	if err != nil || swap == "" || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/token") {
		return resp, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, err
	}
	m["id_token"] = swap
	b, _ := json.Marshal(m)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// dialFrom is a client whose connections come from the loopback address
// ip (all of 127.0.0.0/8 is this machine's on Linux).
func dialFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}
