package daemon

import (
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/localapi"
)

// handlerServer is a Server whose TCP handler is tested with httptest,
// without a listener: the port is set by hand.
func handlerServer(t *testing.T) (*Server, http.Handler) {
	t.Helper()
	eng := openEngine(t)
	hs, err := New(Options{Engine: eng, DataDir: t.TempDir(), Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hs.cancel)
	hs.port = 7717
	hs.baseURL = "http://127.0.0.1:7717"
	addPrefixSecret(hs)
	return hs, recorded.wrap(hs.tcpHandler())
}

func serveReq(h http.Handler, method, target, host string, hdr map[string]string, body string) *httptest.ResponseRecorder {
	var r *http.Request
	if body != "" {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	r.Host = host
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func session(t *testing.T, hs *Server) string {
	t.Helper()
	tok, _ := hs.sessions.newLoginToken()
	sess, ok := hs.sessions.redeem(tok)
	if !ok {
		t.Fatal("redeem")
	}
	secrets.add(sessionSecret, sess)
	return sess
}

// DNS rebinding: a page on evil.example whose name resolves to 127.0.0.1
// reaches the port, but its requests name evil.example in Host.
func TestHostHeaderChecked(t *testing.T) {
	hs, h := handlerServer(t)
	cookie := map[string]string{"Cookie": CookieName + "=" + session(t, hs)}
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:7717", true},
		{"localhost:7717", true},
		{"LOCALHOST:7717", true},
		{"[::1]:7717", true},
		{"evil.example:7717", false},
		{"evil.example", false},
		{"127.0.0.1", false},
		{"127.0.0.1:7718", false},
		{"127.0.0.2:7717", false},
		{"localhost.evil.example:7717", false},
		{"", false},
	} {
		for path, want := range map[string]int{
			hs.prefix:                   http.StatusOK,
			hs.prefix + "api/health":    http.StatusOK,
			"/":                         http.StatusUnauthorized,
			"/login?token=x":            http.StatusUnauthorized,
			"/mcp-oauth?code=a&state=b": http.StatusNotFound,
			"/static/app.js":            http.StatusOK,
			"/api/health":               http.StatusNotFound,
		} {
			if !c.ok {
				want = http.StatusForbidden
			}
			if w := serveReq(h, http.MethodGet, path, c.host, cookie, ""); w.Code != want {
				t.Errorf("GET %s with Host %q: %d, want %d", path, c.host, w.Code, want)
			}
		}
	}

	// And against the real listener.
	s := newStack(t, stackOpts{})
	rc := newRawClient(t)
	sess := s.login(t, rc)
	r := rc.do(t, http.MethodGet, s.page()+"api/health", nil, map[string]string{"Host": "evil.example:" + strconv.Itoa(s.srv.Port()), "Cookie": CookieName + "=" + sess})
	if r.status != http.StatusForbidden {
		t.Fatalf("real listener, Host evil.example: %d %s", r.status, r.body)
	}
	r = rc.do(t, http.MethodGet, s.page()+"api/health", nil, map[string]string{"Cookie": CookieName + "=" + sess})
	if r.status != http.StatusOK {
		t.Fatalf("real listener, own Host: %d %s", r.status, r.body)
	}
}

// The API is not on TCP: /api/… there is a 404 whatever credential comes
// along (the API token of old, a session cookie), and the engine is never
// asked. Below the page prefix it needs a session.
func TestTCPServesNoAPI(t *testing.T) {
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	rc := newRawClient(t)
	sess := s.login(t, rc)
	u := s.srv.URL()
	oldToken := "Bearer " + randomToken()
	for _, hdr := range []map[string]string{
		nil,
		{"Authorization": oldToken},
		{"Cookie": CookieName + "=" + sess, "Origin": u},
		{"Authorization": oldToken, "Cookie": CookieName + "=" + sess, "Origin": u},
	} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/api/health", ""},
			{"GET", "/api/servers", ""},
			{"GET", "/api/events", ""},
			{"POST", "/api/grants", `{"origin":"https://via-tcp.example"}`},
			{"POST", "/api/calls", `{"tool":"fx/echo","approved":true}`},
			{"POST", "/api/login-url", ""},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			r := rc.do(t, c.method, u+c.path, body, hdr)
			if r.status != http.StatusNotFound || strings.Contains(r.body, `"pid"`) {
				t.Errorf("TCP %s %s with %v: %d %s", c.method, c.path, hdr, r.status, r.body)
			}
		}
	}
	if g, err := s.c.Grants(ctx); err != nil || len(g) != 0 {
		t.Fatalf("a TCP request granted: %+v %v", g, err)
	}
	// Below the prefix: a session, and nothing else.
	for name, hdr := range map[string]map[string]string{
		"nothing":         nil,
		"old API token":   {"Authorization": oldToken},
		"unknown session": {"Cookie": CookieName + "=made-up-session"},
	} {
		for _, p := range []string{"", "api/health", "api/servers", "api/events", "api/nope"} {
			if r := rc.do(t, http.MethodGet, s.page()+p, nil, hdr); r.status != http.StatusUnauthorized {
				t.Errorf("GET %s with %s: %d", s.page()+p, name, r.status)
			}
		}
	}
	if r := rc.do(t, http.MethodGet, s.page()+"api/nope", nil, map[string]string{"Cookie": CookieName + "=" + sess}); r.status != http.StatusNotFound || !strings.Contains(r.body, `"code":"not_found"`) {
		t.Errorf("unknown route with a session: %d %s", r.status, r.body)
	}
	// The page answers 401 with a page, the API with JSON.
	if r := rc.do(t, http.MethodGet, s.page(), nil, nil); !strings.Contains(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("401 page: content type %q", r.header.Get("Content-Type"))
	}
	if r := rc.do(t, http.MethodGet, s.page()+"api/servers", nil, nil); !strings.Contains(r.body, `"code":"unauthorized"`) {
		t.Errorf("401 API body: %s", r.body)
	}
}

// CSRF: the cookie is attached by the browser on its own, so a cookie
// request that changes state must come with our Origin, and none may be
// a cross-site fetch.
func TestOriginChecked(t *testing.T) {
	hs, h := handlerServer(t)
	host := "127.0.0.1:7717"
	cookie := CookieName + "=" + session(t, hs)
	body := `{"origin":"https://nothing-pending.example"}`
	for _, c := range []struct {
		name   string
		method string
		hdr    map[string]string
		want   int
	}{
		{"own origin", "POST", map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:7717"}, http.StatusNoContent},
		{"own origin as localhost", "POST", map[string]string{"Cookie": cookie, "Origin": "http://localhost:7717"}, http.StatusForbidden},
		{"no origin", "POST", map[string]string{"Cookie": cookie}, http.StatusForbidden},
		{"foreign origin", "POST", map[string]string{"Cookie": cookie, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"null origin", "POST", map[string]string{"Cookie": cookie, "Origin": "null"}, http.StatusForbidden},
		{"other local port", "POST", map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:8080"}, http.StatusForbidden},
		{"own origin, cross-site fetch", "POST", map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:7717", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"GET", "GET", map[string]string{"Cookie": cookie}, http.StatusOK},
		{"GET, cross-site fetch", "GET", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"GET, foreign origin", "GET", map[string]string{"Cookie": cookie, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"no credentials, own origin", "POST", map[string]string{"Origin": "http://127.0.0.1:7717"}, http.StatusUnauthorized},
	} {
		path, b := "api/pending/dismiss", body
		if c.method == "GET" {
			path, b = "api/grants", ""
		}
		if w := serveReq(h, c.method, hs.prefix+path, host, c.hdr, b); w.Code != c.want {
			t.Errorf("%s: %d, want %d (%s)", c.name, w.Code, c.want, w.Body)
		}
	}
	// A preflight gets no CORS answer.
	w := serveReq(h, http.MethodOptions, hs.prefix+"api/servers", host, map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, "")
	if w.Code != http.StatusForbidden {
		t.Errorf("preflight: %d", w.Code)
	}
	// A form post (what a cross-site form could send) is refused even with
	// our Origin and the cookie: the body must be JSON.
	r := httptest.NewRequest(http.MethodPost, hs.prefix+"api/grants", strings.NewReader("origin=https://evil.example"))
	r.Host = host
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Cookie", cookie)
	r.Header.Set("Origin", "http://127.0.0.1:7717")
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, r)
	if rw.Code != http.StatusUnsupportedMediaType {
		t.Errorf("form post: %d %s", rw.Code, rw.Body)
	}
}

// A grant the page makes is the page's, whatever its request says.
func TestPageGrantIsThePages(t *testing.T) {
	s := newStack(t, stackOpts{})
	rc := newRawClient(t)
	sess := s.login(t, rc)
	hdr := map[string]string{"Cookie": CookieName + "=" + sess, "Origin": s.srv.URL()}
	r := rc.do(t, http.MethodPost, s.page()+"api/grants", localapi.OriginRequest{Origin: "https://page.example", By: localapi.ByCLI}, hdr)
	if r.status != http.StatusNoContent {
		t.Fatalf("grant: %d %s", r.status, r.body)
	}
	g, err := s.c.Grants(testkit.Context(t))
	if err != nil || len(g) != 1 || g[0].By != localapi.BySettingsPage {
		t.Fatalf("grants %+v %v", g, err)
	}
}

func TestLoginURL(t *testing.T) {
	s := newStack(t, stackOpts{})
	rc := newRawClient(t)
	u := s.srv.LoginURL()
	if !strings.HasPrefix(u, s.srv.URL()+"/login?token=") {
		t.Fatalf("LoginURL %q", u)
	}
	tok := strings.TrimPrefix(u, s.srv.URL()+"/login?token=")
	secrets.add(loginSecret, tok)
	r := rc.do(t, http.MethodGet, u, nil, nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, `http-equiv="refresh" content="0; url=`+s.srv.prefix+`"`) {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	cookies := (&http.Response{Header: r.header}).Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	c := cookies[0]
	secrets.add(sessionSecret, c.Value)
	if c.Name != CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != s.srv.prefix || c.Value == tok {
		t.Fatalf("cookie %+v", c)
	}
	// The session reads the page.
	page := rc.do(t, http.MethodGet, s.page(), nil, map[string]string{"Cookie": CookieName + "=" + c.Value})
	if page.status != http.StatusOK || !strings.Contains(page.body, "/static/app.js") {
		t.Fatalf("page: %d", page.status)
	}
	if strings.Contains(page.body, "<script>") || strings.Contains(page.body, " onclick=") {
		t.Error("the page has inline script")
	}
	// Single use, and short-lived.
	if r := rc.do(t, http.MethodGet, u, nil, nil); r.status != http.StatusUnauthorized || r.header.Get("Set-Cookie") != "" {
		t.Fatalf("second use: %d %v", r.status, r.header)
	}
	u2 := s.srv.LoginURL()
	secrets.add(loginSecret, strings.TrimPrefix(u2, s.srv.URL()+"/login?token="))
	s.srv.sessions.mu.Lock()
	s.srv.sessions.now = func() time.Time { return time.Now().Add(LoginTokenTTL + time.Second) }
	s.srv.sessions.mu.Unlock()
	if r := rc.do(t, http.MethodGet, u2, nil, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("expired login token: %d", r.status)
	}
	s.srv.sessions.mu.Lock()
	s.srv.sessions.now = time.Now
	s.srv.sessions.mu.Unlock()
	// The CLI asks for one on the socket (`remotemcp open`).
	lu, err := s.c.LoginURL(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	secrets.add(loginSecret, strings.TrimPrefix(lu.URL, s.srv.URL()+"/login?token="))
	if r := rc.do(t, http.MethodGet, lu.URL, nil, nil); r.status != http.StatusOK || lu.Expires.Before(time.Now()) {
		t.Fatalf("CLI login URL: %d, expires %v", r.status, lu.Expires)
	}
	// Logout ends the session, and clears the cookie of the prefix.
	out := rc.do(t, http.MethodPost, s.page()+"api/logout", nil, map[string]string{"Cookie": CookieName + "=" + c.Value, "Origin": s.srv.URL()})
	if out.status != http.StatusNoContent || !strings.Contains(out.header.Get("Set-Cookie"), "Path="+s.srv.prefix+";") {
		t.Fatalf("logout: %d %v", out.status, out.header)
	}
	if r := rc.do(t, http.MethodGet, s.page()+"api/health", nil, map[string]string{"Cookie": CookieName + "=" + c.Value}); r.status != http.StatusUnauthorized {
		t.Fatalf("after logout: %d", r.status)
	}
}

// Every kind of response carries the security headers (TestMain checks all
// of them again, for every response of the run, the socket's included).
func TestSecurityHeaders(t *testing.T) {
	hs, h := handlerServer(t)
	host := "127.0.0.1:7717"
	cookie := map[string]string{"Cookie": CookieName + "=" + session(t, hs)}
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
	}{
		{"GET", hs.prefix, cookie}, {"GET", hs.prefix, nil}, {"GET", "/", nil}, {"GET", hs.prefix + "api/health", cookie},
		{"GET", hs.prefix + "api/nope", nil}, {"GET", strings.TrimSuffix(hs.prefix, "/"), nil}, {"GET", "/s/nope/", nil},
		{"GET", "/static/app.js", nil}, {"GET", "/static/style.css", nil},
		{"GET", "/static/nope.js", nil}, {"GET", "/static/index.html", nil}, {"GET", "/login?token=bad", nil},
		{"GET", "/mcp-oauth?code=x&state=y", nil}, {"GET", "/mcp-oauth", nil}, {"GET", "/api/health", nil},
		{"GET", "/nope", nil}, {"POST", "/", nil}, {"DELETE", "/api/servers/nope", nil},
	} {
		w := serveReq(h, c.method, c.path, host, c.hdr, "")
		if got := w.Header().Get("Content-Security-Policy"); got != ContentSecurityPolicy {
			t.Errorf("%s %s (%d): CSP %q", c.method, c.path, w.Code, got)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
			if w.Header().Get(k) != v {
				t.Errorf("%s %s: %s = %q", c.method, c.path, k, w.Header().Get(k))
			}
		}
	}
	w := serveReq(h, http.MethodGet, hs.prefix, host, cookie, "")
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "style=") || strings.Contains(w.Body.String(), "<script>") {
		t.Fatalf("page %d has inline style or script", w.Code)
	}
	if w := serveReq(h, http.MethodGet, "/static/app.js", host, nil, ""); !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js content type %q", w.Header().Get("Content-Type"))
	}
}

// /mcp-oauth needs no credential but the engine accepts only a state it
// is waiting for, and the page never echoes what it was sent.
func TestCallbackNeedsState(t *testing.T) {
	_, h := handlerServer(t)
	host := "127.0.0.1:7717"
	code := "callback-code-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secrets.add("authorization code", code)
	for _, q := range []string{"code=" + code + "&state=unknown-state-value", "code=" + code, "error=access_denied&state=nope", "code=" + code + "&state=a&state=b"} {
		w := serveReq(h, http.MethodGet, "/mcp-oauth?"+q, host, nil, "")
		if w.Code < 400 || w.Code > 499 {
			t.Errorf("callback %s: %d", q, w.Code)
		}
		if strings.Contains(w.Body.String(), "unknown-state-value") {
			t.Errorf("callback echoes the state")
		}
	}
	if w := serveReq(h, http.MethodPost, "/mcp-oauth?code=a&state=b", host, nil, ""); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST callback: %d", w.Code)
	}
}

// A second daemon on the same data directory is refused while the first
// runs.
func TestSecondDaemonRefused(t *testing.T) {
	s := newStack(t, stackOpts{})
	s2, err := New(Options{Engine: s.eng, DataDir: s.dir, Addr: "127.0.0.1:0", Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.cancel()
	// The refusal names the daemon that owns the directory (issue #19 item 2).
	if err := s2.Listen(testkit.Context(t)); !errors.Is(err, ErrDataDirOwned) || !strings.Contains(err.Error(), "a daemon (pid ") {
		t.Fatalf("second daemon: %v", err)
	}
	if _, err := s.c.Health(testkit.Context(t)); err != nil {
		t.Fatalf("the first daemon after the refusal: %v", err)
	}
}

func TestNewRefusesNonLoopback(t *testing.T) {
	eng := openEngine(t)
	for _, addr := range []string{"0.0.0.0:7717", ":7717", "192.0.2.1:7717", "localhost:7717", "[::]:7717"} {
		if _, err := New(Options{Engine: eng, DataDir: t.TempDir(), Addr: addr}); err == nil {
			t.Errorf("New with %s succeeded", addr)
		}
	}
	if _, err := New(Options{DataDir: t.TempDir()}); err == nil {
		t.Error("New without an engine succeeded")
	}
	if _, err := New(Options{Engine: eng}); err == nil {
		t.Error("New without a data directory succeeded")
	}
}

// Browsers do not isolate cookies by port, so the session cookie is
// scoped to the page's secret prefix, and only accepted there.
func TestSessionCookieOnlyUnderPrefix(t *testing.T) {
	s := newStack(t, stackOpts{})
	rc := newRawClient(t)
	sess := s.login(t, rc)
	u := s.srv.URL()
	cookie := map[string]string{"Cookie": CookieName + "=" + sess, "Origin": u}
	// A made-up prefix is nothing at all.
	if r := rc.do(t, http.MethodGet, u+"/s/"+strings.Repeat("A", 26)+"/api/health", nil, cookie); r.status != http.StatusNotFound {
		t.Errorf("cookie under another prefix: %d", r.status)
	}
	if r := rc.do(t, http.MethodGet, u+"/", nil, cookie); r.status != http.StatusUnauthorized {
		t.Errorf("cookie at the root: %d", r.status)
	}
	if r := rc.do(t, http.MethodGet, s.page()+"api/health", nil, cookie); r.status != http.StatusOK {
		t.Fatalf("cookie under the prefix: %d %s", r.status, r.body)
	}

	// A cookie jar that follows RFC 6265 as browsers do sends the cookie
	// only below the prefix: not to the root, not to /api/ — of this
	// daemon or of another server on 127.0.0.1.
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	lu := s.srv.LoginURL()
	secrets.add(loginSecret, strings.TrimPrefix(lu, u+"/login?token="))
	r := rc.do(t, http.MethodGet, lu, nil, nil)
	pu, _ := url.Parse(lu)
	cs := (&http.Response{Header: r.header}).Cookies()
	for _, c := range cs {
		secrets.add(sessionSecret, c.Value)
	}
	jar.SetCookies(pu, cs)
	for _, to := range []string{u + "/", u + "/api/health", u + "/static/app.js", "http://127.0.0.1:1/", "http://127.0.0.1:1/api/health"} {
		tu, _ := url.Parse(to)
		if got := jar.Cookies(tu); len(got) != 0 {
			t.Errorf("the session cookie would be sent to %s", to)
		}
	}
	if pu, _ := url.Parse(s.page() + "api/health"); len(jar.Cookies(pu)) != 1 {
		t.Errorf("the session cookie would not be sent to the page's API")
	}
	// The prefix is 130 random bits, new for every daemon.
	if !regexp.MustCompile(`^/s/[A-Z2-7]{26}/$`).MatchString(s.srv.prefix) {
		t.Fatalf("prefix %q", s.srv.prefix)
	}
	if newPagePrefix() == newPagePrefix() {
		t.Fatal("the prefix is not random")
	}
}

// Secrets the API received are scrubbed from every answer, even from a
// server's error text that echoes one.
func TestScrubsReceivedSecrets(t *testing.T) {
	sc := newScrubber()
	tok := "received-secret-" + randomToken()
	sc.add(tok, "short")
	b := sc.scrub([]byte(`{"error":{"message":"the server said ` + tok + `"}}`))
	if strings.Contains(string(b), tok) || !strings.Contains(string(b), "[redacted]") {
		t.Fatalf("scrubbed %s", b)
	}
	if got := string(sc.scrub([]byte("a short word"))); got != "a short word" {
		t.Fatalf("short values are scrubbed: %s", got)
	}
}
