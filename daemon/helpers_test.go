package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/store"
)

// TestMain runs the tests, then checks what every daemon of the run sent:
// no secret registered by any test in any response body or header (the
// session cookie of /login's Set-Cookie, and the page prefix in the answer
// to /login and below the prefix, excepted), the security headers on
// every response, never a CORS header. Then goleak.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if problems := recorded.check(); len(problems) > 0 {
			fmt.Fprintf(os.Stderr, "daemon responses broke the security rules:\n  %s\n", strings.Join(problems, "\n  "))
			code = 1
		} else {
			fmt.Fprintf(os.Stderr, "checked %d daemon responses for %d secrets, security headers and CORS\n", recorded.count(), secrets.count())
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// ---- response recording ----

// record is one response a daemon sent.
type record struct {
	method, path string
	status       int
	header       http.Header
	body         bytes.Buffer
}

type recorder struct {
	mu   sync.Mutex
	recs []*record
}

var recorded recorder

func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.recs)
}

// wrap records every response of h.
func (rc *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &record{method: r.Method, path: r.URL.Path}
		rc.mu.Lock()
		rc.recs = append(rc.recs, rec)
		rc.mu.Unlock()
		h.ServeHTTP(&recordingWriter{ResponseWriter: w, rec: rec, rc: rc}, r)
		rc.mu.Lock()
		if rec.header == nil { // nothing written: net/http sends 200 and the headers
			rec.status = http.StatusOK
			rec.header = w.Header().Clone()
		}
		rc.mu.Unlock()
	})
}

type recordingWriter struct {
	http.ResponseWriter
	rec *record
	rc  *recorder
}

func (w *recordingWriter) WriteHeader(status int) {
	w.rc.mu.Lock()
	if w.rec.header == nil {
		w.rec.status = status
		w.rec.header = w.ResponseWriter.Header().Clone()
	}
	w.rc.mu.Unlock()
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.rc.mu.Lock()
	if w.rec.header == nil {
		w.rec.status = http.StatusOK
		w.rec.header = w.ResponseWriter.Header().Clone()
	}
	if w.rec.body.Len() < 8<<20 {
		w.rec.body.Write(b)
	}
	w.rc.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the Flusher (SSE).
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// secretSet holds every secret the tests hand to a daemon.
type secretSet struct {
	mu sync.Mutex
	m  map[string]string // value → what it is
}

var secrets = secretSet{m: map[string]string{}}

func (s *secretSet) add(what, v string) {
	if len(v) < 6 {
		panic("test secret too short to grep for: " + what)
	}
	s.mu.Lock()
	s.m[v] = what
	s.mu.Unlock()
}

func (s *secretSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *secretSet) all() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

// sessionSecret marks session cookie values, which may appear in exactly
// one place: the Set-Cookie of /login.
const sessionSecret = "session cookie"

// loginSecret marks one-time login tokens, which only POST /api/login-url
// hands out (that is its job).
const loginSecret = "login token"

// prefixSecret marks the random part of a settings page prefix, which
// only the answer to /login and answers below the prefix may carry.
const prefixSecret = "page prefix"

// addPrefixSecret registers the random part of s's page prefix.
func addPrefixSecret(s *Server) {
	secrets.add(prefixSecret, strings.TrimSuffix(strings.TrimPrefix(s.prefix, "/s/"), "/"))
}

func (rc *recorder) check() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	secs := secrets.all()
	var out []string
	for _, r := range rc.recs {
		id := fmt.Sprintf("%s %s (%d)", r.method, r.path, r.status)
		if r.header == nil {
			out = append(out, id+": no response recorded")
			continue
		}
		for _, want := range []struct{ k, v string }{
			{"Content-Security-Policy", ContentSecurityPolicy},
			{"X-Content-Type-Options", "nosniff"},
			{"Referrer-Policy", "no-referrer"},
			{"Cache-Control", "no-store"},
		} {
			if got := r.header.Get(want.k); got != want.v {
				out = append(out, fmt.Sprintf("%s: %s = %q, want %q", id, want.k, got, want.v))
			}
		}
		for k := range r.header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				out = append(out, fmt.Sprintf("%s: CORS header %s", id, k))
			}
		}
		body := r.body.String()
		prefixOK := r.path == "/login" || strings.HasPrefix(r.path, "/s/")
		for v, what := range secs {
			if strings.Contains(body, v) && !(what == loginSecret && strings.HasSuffix(r.path, "/api/login-url")) && !(what == prefixSecret && prefixOK) {
				out = append(out, fmt.Sprintf("%s: body contains the %s", id, what))
			}
			for k, vals := range r.header {
				for _, hv := range vals {
					if !strings.Contains(hv, v) {
						continue
					}
					if what == sessionSecret && k == "Set-Cookie" && r.path == "/login" {
						continue
					}
					if what == prefixSecret && prefixOK && (k == "Set-Cookie" || k == "Location") {
						continue
					}
					out = append(out, fmt.Sprintf("%s: header %s contains the %s", id, k, what))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// ---- the stack: one daemon process over a temp data directory ----

func testLogger() *slog.Logger {
	if os.Getenv("REMOTEMCP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// oauthProvider adapts the authenticator to the manager: background
// sessions are never interactive (R3.13).
type oauthProvider struct{ a *oauth.Authenticator }

func (p oauthProvider) Handler(srv config.Server) auth.OAuthHandler { return p.a.Handler(srv, nil) }

// stack wires the parts the way `remotemcp serve` does: store, broker
// guarding one HTTP client, cards, authenticator, manager, daemon.
type stack struct {
	t      *testing.T
	dir    string
	st     *store.SQLite
	broker *hostperm.Broker
	cards  *elicit.Cards
	auth   *oauth.Authenticator
	m      *manager.Manager
	tr     *http.Transport
	srv    *Server
	c      *Client // the CLI's client (bearer token)
	served chan error
	cancel context.CancelFunc
	once   sync.Once
}

type stackOpts struct {
	servers []config.Server
	grants  []string
}

func newStack(t *testing.T, o stackOpts) *stack {
	t.Helper()
	ctx := ctxT(t)
	s := &stack{t: t, dir: t.TempDir()}
	var err error
	s.st, err = store.Open(ctx, s.dir, store.Options{PollInterval: 50 * time.Millisecond, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s.broker = hostperm.New(s.st, hostperm.Options{})
	for _, g := range o.grants {
		if err := s.broker.Grant(ctx, g, "user: test"); err != nil {
			t.Fatal(err)
		}
	}
	for _, srv := range o.servers {
		if err := s.st.AddServer(ctx, srv); err != nil {
			t.Fatal(err)
		}
	}
	s.tr = http.DefaultTransport.(*http.Transport).Clone()
	hc := &http.Client{Transport: s.broker.Transport(s.tr)}
	s.cards, err = elicit.Open(ctx, s.st, elicit.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s.auth = oauth.New(oauth.Options{Store: s.st, HTTPClient: hc, Logger: testLogger()})
	s.m = manager.New(manager.Options{
		Store: s.st, HTTPClient: hc, OAuth: oauthProvider{s.auth}, Elicit: s.cards.Handle, Logger: testLogger(),
		ClientName: "remotemcp-test", ClientVersion: "0",
		HandshakeTimeout: 10 * time.Second, CancelGrace: 200 * time.Millisecond,
	})
	if err := s.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.cards.Watch(s.m)
	s.srv, err = New(Options{
		Store: s.st, Manager: s.m, Broker: s.broker, Cards: s.cards, OAuth: s.auth,
		Addr: "127.0.0.1:0", Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.srv.wrap = recorded.wrap
	if err := s.srv.Listen(ctx); err != nil {
		t.Fatal(err)
	}
	secrets.add("API token", s.srv.token)
	addPrefixSecret(s.srv)
	sctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.served = make(chan error, 1)
	go func() { s.served <- s.srv.Serve(sctx) }()
	ci, err := Discover(s.dir)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	s.c = ci.Client()
	t.Cleanup(s.close)
	return s
}

// close shuts the "process" down in the documented order.
func (s *stack) close() {
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.served:
			if err != nil {
				s.t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			s.t.Error("Serve did not return after shutdown")
		}
		s.cards.Close()
		s.m.Close()
		s.broker.Close()
		s.st.Close()
		s.tr.CloseIdleConnections()
		closeIdle(s.c)
	})
}

func closeIdle(c *Client) {
	if c != nil {
		c.hc.CloseIdleConnections()
	}
}

func startFixture(t *testing.T, o fixture.Options) *fixture.Server {
	t.Helper()
	f, err := fixture.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func srvCfg(id, url string) config.Server {
	return config.Server{ID: id, Name: id, URL: url, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true, ConnectOnStartup: true}
}

func originOf(t *testing.T, u string) string {
	t.Helper()
	o, err := config.Origin(u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// rawClient makes requests with full control of the headers, against a
// real daemon; every response is read whole and returned.
type rawClient struct {
	hc *http.Client
}

func newRawClient(t *testing.T) *rawClient {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawClient{hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type rawResp struct {
	status int
	header http.Header
	body   string
}

func (rc *rawClient) do(t *testing.T, method, url string, body any, hdr map[string]string) rawResp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			j, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			rd = bytes.NewReader(j)
		}
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := rc.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// login redeems a fresh login URL and returns the session cookie value.
func (s *stack) login(t *testing.T, rc *rawClient) string {
	t.Helper()
	r := rc.do(t, http.MethodGet, s.srv.LoginURL(), nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == CookieName {
			secrets.add(sessionSecret, c.Value)
			return c.Value
		}
	}
	t.Fatal("login set no session cookie")
	return ""
}

// page is the URL of the settings page, below the daemon's secret prefix;
// the page's API is at page()+"api/…".
func (s *stack) page() string { return s.srv.URL() + s.srv.prefix }

func (s *stack) bearer() map[string]string {
	return map[string]string{"Authorization": "Bearer " + s.srv.token}
}
