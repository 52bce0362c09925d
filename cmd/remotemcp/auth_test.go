package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer is written by the command and read by the test meanwhile.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Issue #3: "auth login --no-browser" end to end against the test
// authorization server: the URL is printed alone on its line, the callback
// is delivered by a plain HTTP client, the server is ready with its tools,
// and no token reaches the database file or any log line.
func TestAuthLoginNoBrowser(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	srv := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	c := newCLI(t)
	c.ok("servers", "add", "docs", srv.URL(), "--oauth")
	c.fail(exitFail, "auth login docs", "connect", "docs")

	// The authorization server's origin was never granted: without a
	// terminal to ask on, login stops before contacting it (R2.2) and the
	// origin waits as a pending approval.
	asOrigin := strings.TrimSuffix(as.URL(), "/")
	before := len(as.Requests())
	r := c.fail(exitFail, "remotemcp grants approve "+asOrigin, "auth", "login", "docs", "--no-browser")
	if len(as.Requests()) != before {
		t.Fatalf("a request reached the ungranted authorization server: %s", r)
	}
	if g := c.ok("grants", "pending"); !strings.Contains(g.out, asOrigin) || !strings.Contains(g.out, "docs") {
		t.Fatalf("grants pending lacks the refused origin: %s", g)
	}
	c.ok("grants", "approve", asOrigin)

	port := freePort(t)
	var out, errb syncBuffer
	env := func(k string) (string, bool) { return "", false }
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"--data-dir", c.dir, "--verbose", "auth", "login", "docs", "--no-browser", "--port", strconv.Itoa(port)},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, env)
	}()
	authURL := authURLOf(t, &out, &errb)
	if !strings.Contains(authURL, "code_challenge_method=S256") || !strings.Contains(authURL, "resource=") {
		t.Fatalf("authorization URL lacks PKCE or resource: %s", authURL)
	}
	// The "browser": follow the authorization server's redirect by hand and
	// deliver it to the loopback callback with a plain HTTP client.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, "http://127.0.0.1:"+strconv.Itoa(port)+"/mcp-oauth?") {
		t.Fatalf("authorize answered %d, Location %q", resp.StatusCode, loc)
	}
	cb, err := http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(cb.Body)
	cb.Body.Close()
	if cb.StatusCode != http.StatusOK {
		t.Fatalf("callback page: %d %s", cb.StatusCode, page)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("auth login exit %d\nstdout: %s\nstderr: %s", code, out.String(), errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("auth login did not finish")
	}
	if !strings.Contains(out.String(), "ready: 7 tools") {
		t.Fatalf("login did not end ready with the tools: %s", out.String())
	}
	access, refresh := as.IssuedTokens()
	tokens := append(access, refresh...)
	if len(access) == 0 {
		t.Fatal("the authorization server issued no token")
	}
	logs := errb.String() + out.String() + string(page)
	for _, tok := range tokens {
		if tok == "" {
			continue
		}
		if c.dbContains(tok) {
			t.Fatalf("a token is in the database file")
		}
		if strings.Contains(logs, tok) {
			t.Fatalf("a token is in the output or logs")
		}
	}
	st := c.ok("auth", "status", "docs")
	if !regexp.MustCompile(`refresh token: +yes`).MatchString(st.out) || !strings.Contains(st.out, "issuer:") {
		t.Fatalf("auth status: %s", st)
	}
	// Without an id, every server is shown.
	if st = c.ok("auth", "status"); !strings.Contains(st.out, "docs") {
		t.Fatalf("auth status without an id: %s", st)
	}
	// A new process has no access token, but the sealed refresh token gets
	// it one without a browser.
	c.ok("connect", "docs")
	c.ok("auth", "logout", "docs")
	c.fail(exitFail, "auth login docs", "connect", "docs")
	// A server without OAuth has nothing to sign out of, and login points
	// to the command that switches it.
	c.ok("servers", "add", "plain", srv.URL())
	c.fail(exitFail, "nothing to sign out of", "auth", "logout", "plain")
	c.fail(exitFail, "servers set plain --auth oauth", "auth", "login", "plain")
	keyFile, _ := os.ReadFile(filepath.Join(c.dir, "key"))
	if len(keyFile) == 0 {
		t.Fatal("no key file")
	}
}

// authURLOf waits for the authorization URL that "auth login --no-browser"
// prints alone on its line.
func authURLOf(t *testing.T, out *syncBuffer, errb *syncBuffer) string {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("stdout: %s\nstderr: %s", out.String(), errb.String())
		}
	}()
	var authURL string
	testkit.WaitFor(t, "the authorization URL", func() bool {
		sc := bufio.NewScanner(strings.NewReader(out.String()))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "http") {
				authURL = sc.Text()
				return true
			}
		}
		return false
	})
	return authURL
}

// loginRun is one "auth login" running in the background.
type loginRun struct {
	out, errb syncBuffer
	done      chan int
}

func (c *cli) startLogin(t *testing.T, args ...string) *loginRun {
	l := &loginRun{done: make(chan int, 1)}
	env := func(string) (string, bool) { return "", false }
	go func() {
		l.done <- run(t.Context(), append([]string{"--data-dir", c.dir, "auth", "login"}, args...),
			Streams{In: strings.NewReader(""), Out: &l.out, Err: &l.errb}, env)
	}()
	return l
}

func (l *loginRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-l.done:
		return code
	case <-time.After(60 * time.Second):
		t.Fatal("auth login did not finish")
		return 0
	}
}

// openAuthURL plays the browser: it GETs the authorization URL without
// following the redirect and returns the response (status, Location, page).
func openAuthURL(t *testing.T, authURL string) (int, string, string) {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location"), string(page)
}

// browserLogin runs "auth login ID --no-browser [args]" and completes it
// in the "browser"; it returns the authorization URL it used.
func (c *cli) browserLogin(t *testing.T, id string, args ...string) string {
	t.Helper()
	l := c.startLogin(t, append([]string{id, "--no-browser"}, args...)...)
	authURL := authURLOf(t, &l.out, &l.errb)
	status, loc, page := openAuthURL(t, authURL)
	if status != http.StatusFound {
		t.Fatalf("authorization endpoint answered %d: %s", status, page)
	}
	cb, err := http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	cb.Body.Close()
	if code := l.wait(t); code != 0 {
		t.Fatalf("auth login exit %d\nstdout: %s\nstderr: %s", code, l.out.String(), l.errb.String())
	}
	return authURL
}

func clientIDOf(t *testing.T, authURL string) string {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("client_id")
}

// Issue #11: an authorization server that forgets its registered clients
// when it restarts. The login right after the restart cannot succeed (the
// authorization page shows invalid_client and never redirects back); it
// times out saying what to try, and the next login registers a new client
// and succeeds — no logout. --reregister forces a new registration.
func TestAuthLoginAfterServerForgotClient(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	srv := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	c := newCLI(t)
	c.ok("servers", "add", "docs", srv.URL(), "--oauth")
	c.ok("grants", "approve", strings.TrimSuffix(as.URL(), "/"))
	port := freePort(t)
	first := clientIDOf(t, c.browserLogin(t, "docs", "--port", strconv.Itoa(port)))

	as.Restart()
	l := c.startLogin(t, "docs", "--no-browser", "--timeout", "2s")
	stale := authURLOf(t, &l.out, &l.errb)
	if clientIDOf(t, stale) != first {
		t.Fatalf("the login right after the restart used %s, not the stored %s", clientIDOf(t, stale), first)
	}
	if status, loc, page := openAuthURL(t, stale); status != http.StatusBadRequest || loc != "" || !strings.Contains(page, "invalid_client") {
		t.Fatalf("forgotten client at the authorization endpoint: %d %q %s", status, loc, page)
	}
	if code := l.wait(t); code != exitFail {
		t.Fatalf("exit %d\nstderr: %s", code, l.errb.String())
	}
	for _, want := range []string{"timed out after 2s", "invalid_client", `run "remotemcp auth login docs" again, which registers a new client`, "--reregister"} {
		if !strings.Contains(l.errb.String(), want) {
			t.Fatalf("the timeout message lacks %q:\n%s", want, l.errb.String())
		}
	}

	second := clientIDOf(t, c.browserLogin(t, "docs"))
	if second == first || second == "" {
		t.Fatalf("the next login used client %q again", second)
	}
	c.ok("connect", "docs")
	third := clientIDOf(t, c.browserLogin(t, "docs", "--reregister"))
	if third == second || third == "" {
		t.Fatalf("--reregister kept client %q", third)
	}
	if n := len(as.RequestsTo("/register")); n != 3 {
		t.Fatalf("%d registrations, want 3", n)
	}
	c.ok("connect", "docs")
}

// A logout with nothing stored says so in words, not "forgot -"
// (issue #19 acceptance).
func TestAuthLogoutNothingToForget(t *testing.T) {
	c := newCLI(t)
	c.ok("servers", "add", "x", "http://127.0.0.1:1/mcp", "--oauth")
	r := c.ok("auth", "logout", "x")
	if !strings.Contains(r.out, "signed out of x: there was nothing to forget") || strings.Contains(r.out, "forgot -") {
		t.Fatalf("logout of a server never signed in to: %s", r)
	}
}
