package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
)

// childDirEnv makes the test binary a daemon process (runChild) instead
// of running tests: the impersonation test kills it with SIGKILL.
const childDirEnv = "REMOTEMCP_TEST_DAEMON_DIR"

// TestMain runs the tests, then checks what every daemon of the run sent,
// on the socket and on TCP: no secret registered by any test in any
// response body or header (the session cookie of /login's Set-Cookie, the
// login tokens of /api/login-url, and the page prefix in the answer to
// /login and below the prefix, excepted), the security headers on every
// response, never a CORS header. Then goleak.
func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		os.Exit(runChild(dir))
	}
	testWrap = recorded.wrap
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

// runChild runs a daemon on dir until the process is killed, after
// printing "READY <port>" on stdout.
func runChild(dir string) int {
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Options{DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer eng.Close()
	srv, err := New(Options{Engine: eng, DataDir: dir, Addr: "127.0.0.1:0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.Listen(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("READY %d\n", srv.Port())
	if err := srv.Serve(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
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

// Unwrap lets http.ResponseController reach the Flusher (streams).
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

// ---- the stack: the real engine and a daemon over a temp data directory ----

// stack is `remotemcp serve` in one test: the engine (engine.Open on a
// temporary data directory), a daemon over it, and the CLI's client of
// the socket (Dial).
type stack struct {
	t      *testing.T
	dir    string
	eng    *engine.Engine
	srv    *Server
	c      *localapi.Client
	served chan error
	cancel context.CancelFunc
	once   sync.Once
}

type stackOpts struct {
	// dir is the data directory; "" means a new temporary one.
	dir string
	// notify turns the desktop notifications on (Options.Notify).
	notify bool
	// maxPageConns and idleTimeout are Options.MaxPageConns and
	// Options.IdleTimeout.
	maxPageConns int
	idleTimeout  time.Duration
	// clock is the manager's clock (engine.Options.Clock): a manual one
	// stops the backoff's retries and the idle checks, so the servers do
	// nothing the test did not ask for.
	clock manager.Clock
}

func newStack(t *testing.T, o stackOpts) *stack {
	t.Helper()
	ctx := testkit.Context(t)
	s := &stack{t: t, dir: o.dir}
	if s.dir == "" {
		s.dir = t.TempDir()
	}
	var err error
	s.eng, err = engine.Open(ctx, engine.Options{DataDir: s.dir, Logger: testkit.Logger(t), Clock: o.clock})
	if err != nil {
		t.Fatal(err)
	}
	s.srv, err = New(Options{Engine: s.eng, DataDir: s.dir, Addr: "127.0.0.1:0", Notify: o.notify, Logger: testkit.Logger(t),
		MaxPageConns: o.maxPageConns, IdleTimeout: o.idleTimeout})
	if err != nil {
		s.eng.Close()
		t.Fatal(err)
	}
	if err := s.srv.Listen(ctx); err != nil {
		s.eng.Close()
		t.Fatal(err)
	}
	addPrefixSecret(s.srv)
	sctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.served = make(chan error, 1)
	go func() { s.served <- s.srv.Serve(sctx) }()
	t.Cleanup(s.close)
	s.c, err = Dial(ctx, s.dir)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	return s
}

// close shuts the "process" down in the documented order: the daemon,
// then the engine.
func (s *stack) close() {
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.served:
			if err != nil {
				s.t.Errorf("Serve: %v", err)
			}
		case <-time.After(2 * time.Minute): // only a hang
			s.t.Error("Serve did not return after shutdown")
		}
		if s.c != nil {
			s.c.CloseIdleConnections()
		}
		if err := s.eng.Close(); err != nil {
			s.t.Errorf("engine Close: %v", err)
		}
	})
}

// openEngine opens a lazy engine on a new temporary data directory, as
// a one-shot command does.
func openEngine(t *testing.T) *engine.Engine {
	t.Helper()
	eng, err := engine.Open(testkit.Context(t), engine.Options{DataDir: t.TempDir(), Logger: testkit.Logger(t), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// addFixture adds the fixture as server id through the API (which
// grants its origin) and waits until it is ready.
func (s *stack) addFixture(t *testing.T, id string, f *fixture.Server) {
	t.Helper()
	ctx := testkit.Context(t)
	if _, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: id, URL: f.URL()}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, id+" ready", func() bool {
		v, err := s.c.Server(ctx, id)
		return err == nil && v.State == localapi.StateReady
	})
}

func originOf(t *testing.T, u string) string {
	t.Helper()
	o, err := config.Origin(u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func code(err error) string {
	if e, ok := localapi.AsError(err); ok {
		return e.Code
	}
	return fmt.Sprintf("not a *localapi.Error: %v", err)
}

// rawClient makes requests with full control of the headers, over TCP or
// (newSocketRawClient) the Unix socket; every response is read whole.
type rawClient struct {
	hc *http.Client
}

func newRawClient(t *testing.T) *rawClient {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawClient{hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// newSocketRawClient talks to the socket p without checking it; URLs are
// http://sock/….
func newSocketRawClient(t *testing.T, p string) *rawClient {
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return d.DialContext(ctx, "unix", p) }}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawClient{hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type rawResp struct {
	status int
	header http.Header
	body   string
}

func (rc *rawClient) request(t *testing.T, ctx context.Context, method, url string, body any, hdr map[string]string) *http.Response {
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
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
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
	return resp
}

func (rc *rawClient) do(t *testing.T, method, url string, body any, hdr map[string]string) rawResp {
	t.Helper()
	resp := rc.request(t, context.Background(), method, url, body, hdr)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// callLines reads an NDJSON call stream line by line.
type callLines struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func newCallLines(resp *http.Response) *callLines {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &callLines{resp: resp, sc: sc}
}

// next returns the next event, failing the test at the end of the stream.
func (cl *callLines) next(t *testing.T) localapi.CallEvent {
	t.Helper()
	if !cl.sc.Scan() {
		t.Fatalf("the call stream ended: %v", cl.sc.Err())
	}
	var ev localapi.CallEvent
	if err := json.Unmarshal(cl.sc.Bytes(), &ev); err != nil {
		t.Fatalf("call stream line %q: %v", cl.sc.Bytes(), err)
	}
	return ev
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

// sock is the base URL of a raw socket client's requests.
const sock = "http://sock"

// Port returns the TCP port the daemon listens on (0 before Listen).
func (s *Server) Port() int { return s.port }

// SocketPath returns the path of the API's Unix socket ("" before
// Listen).
func (s *Server) SocketPath() string { return s.sockPath }
