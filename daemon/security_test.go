package daemon

import (
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// handlerServer is a Server whose handler is tested with httptest, without
// a listener: port and token are set by hand.
func handlerServer(t *testing.T) (*Server, http.Handler) {
	t.Helper()
	s := newStack(t, stackOpts{})
	// A second Server over the same parts, never served: only its
	// handler is used.
	hs, err := New(Options{Store: s.st, Manager: s.m, Broker: s.broker, Cards: s.cards, OAuth: s.auth, DataDir: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hs.cancel(); hs.registry.Close() })
	hs.port = 7717
	hs.baseURL = "http://127.0.0.1:7717"
	hs.token = "handler-test-token-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secrets.add("API token", hs.token)
	addPrefixSecret(hs)
	return hs, recorded.wrap(hs.handler())
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

// DNS rebinding: a page on evil.example whose name resolves to 127.0.0.1
// reaches the socket, but its requests name evil.example in Host.
func TestHostHeaderChecked(t *testing.T) {
	hs, h := handlerServer(t)
	auth := map[string]string{"Authorization": "Bearer " + hs.token}
	for _, c := range []struct {
		host string
		want int
	}{
		{"127.0.0.1:7717", http.StatusOK},
		{"localhost:7717", http.StatusOK},
		{"LOCALHOST:7717", http.StatusOK},
		{"[::1]:7717", http.StatusOK},
		{"evil.example:7717", http.StatusForbidden},
		{"evil.example", http.StatusForbidden},
		{"127.0.0.1", http.StatusForbidden},
		{"127.0.0.1:7718", http.StatusForbidden},
		{"127.0.0.2:7717", http.StatusForbidden},
		{"localhost.evil.example:7717", http.StatusForbidden},
		{"", http.StatusForbidden},
	} {
		for _, path := range []string{"/api/health", hs.prefix, hs.prefix + "api/health", "/", "/login?token=x", "/mcp-oauth?code=a&state=b", "/static/app.js"} {
			w := serveReq(h, http.MethodGet, path, c.host, auth, "")
			want := c.want
			if want == http.StatusOK {
				switch path {
				case "/", "/login?token=x":
					want = http.StatusUnauthorized
				case "/mcp-oauth?code=a&state=b":
					want = http.StatusBadRequest
				}
			}
			if w.Code != want {
				t.Errorf("GET %s with Host %q: %d, want %d", path, c.host, w.Code, want)
			}
		}
	}

	// And against the real listener.
	s := newStack(t, stackOpts{})
	rc := newRawClient(t)
	r := rc.do(t, http.MethodGet, s.srv.URL()+"/api/health", nil, map[string]string{"Host": "evil.example:" + strconv.Itoa(s.srv.Port()), "Authorization": "Bearer " + s.srv.token})
	if r.status != http.StatusForbidden {
		t.Fatalf("real listener, Host evil.example: %d %s", r.status, r.body)
	}
	r = rc.do(t, http.MethodGet, s.srv.URL()+"/api/health", nil, s.bearer())
	if r.status != http.StatusOK {
		t.Fatalf("real listener, own Host: %d %s", r.status, r.body)
	}
}

func TestTokenRequired(t *testing.T) {
	hs, h := handlerServer(t)
	host := "127.0.0.1:7717"
	var paths []string
	for _, p := range []string{"api/health", "api/servers", "api/events", "api/grants", "api/cards", "api/tools", "api/nonexistent"} {
		paths = append(paths, "/"+p, hs.prefix+p)
	}
	for _, path := range append(paths, "/", hs.prefix) {
		for name, hdr := range map[string]map[string]string{
			"no token":        nil,
			"wrong bearer":    {"Authorization": "Bearer not-the-token"},
			"empty bearer":    {"Authorization": "Bearer "},
			"basic scheme":    {"Authorization": "Basic " + hs.token},
			"token as cookie": {"Cookie": CookieName + "=" + hs.token},
			"unknown session": {"Cookie": CookieName + "=made-up-session"},
		} {
			w := serveReq(h, http.MethodGet, path, host, hdr, "")
			if w.Code != http.StatusUnauthorized {
				t.Errorf("GET %s, %s: %d, want 401", path, name, w.Code)
			}
		}
	}
	// A token in the query string is not a credential.
	if w := serveReq(h, http.MethodGet, "/api/health?token="+hs.token, host, nil, ""); w.Code != http.StatusUnauthorized {
		t.Errorf("token in the query: %d", w.Code)
	}
	// A wrong Authorization header is not rescued by a valid cookie.
	sess, _ := hs.sessions.redeem(mustLoginToken(hs))
	secrets.add(sessionSecret, sess)
	w := serveReq(h, http.MethodGet, hs.prefix+"api/health", host, map[string]string{"Authorization": "Bearer wrong", "Cookie": CookieName + "=" + sess}, "")
	if w.Code != http.StatusUnauthorized {
		t.Errorf("wrong bearer + good cookie: %d", w.Code)
	}
	if w := serveReq(h, http.MethodGet, hs.prefix+"api/health", host, map[string]string{"Cookie": CookieName + "=" + sess}, ""); w.Code != http.StatusOK {
		t.Errorf("good cookie: %d %s", w.Code, w.Body)
	}
	// The page answers 401 with a page, the API with JSON.
	for _, path := range []string{"/", hs.prefix} {
		if w := serveReq(h, http.MethodGet, path, host, nil, ""); !strings.Contains(w.Header().Get("Content-Type"), "text/html") {
			t.Errorf("401 page at %s: content type %q", path, w.Header().Get("Content-Type"))
		}
	}
	for _, path := range []string{"/api/servers", hs.prefix + "api/servers"} {
		if w := serveReq(h, http.MethodGet, path, host, nil, ""); !strings.Contains(w.Body.String(), `"code":"unauthorized"`) {
			t.Errorf("401 API body at %s: %s", path, w.Body)
		}
	}
}

func mustLoginToken(s *Server) string {
	tok, _ := s.sessions.newLoginToken()
	return tok
}

// CSRF: the cookie is attached by the browser on its own, so a cookie
// request that changes state must come with our Origin. The CLI's bearer
// requests carry none; a foreign Origin is refused whatever the credential.
func TestOriginChecked(t *testing.T) {
	hs, h := handlerServer(t)
	host := "127.0.0.1:7717"
	sess, _ := hs.sessions.redeem(mustLoginToken(hs))
	secrets.add(sessionSecret, sess)
	cookie := CookieName + "=" + sess
	bearer := "Bearer " + hs.token
	body := `{"origin":"https://example.com"}`
	// want is the answer under the page prefix; root the answer at /api/…,
	// where the cookie is no credential at all (401 unless the Host/Origin
	// guard refuses first).
	for _, c := range []struct {
		name       string
		method     string
		hdr        map[string]string
		want, root int
	}{
		{"cookie, own origin", "POST", map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:7717"}, http.StatusOK, http.StatusUnauthorized},
		{"cookie, own origin as localhost", "POST", map[string]string{"Cookie": cookie, "Origin": "http://localhost:7717"}, http.StatusForbidden, http.StatusForbidden},
		{"cookie, no origin", "POST", map[string]string{"Cookie": cookie}, http.StatusForbidden, http.StatusUnauthorized},
		{"cookie, foreign origin", "POST", map[string]string{"Cookie": cookie, "Origin": "https://evil.example"}, http.StatusForbidden, http.StatusForbidden},
		{"cookie, null origin", "POST", map[string]string{"Cookie": cookie, "Origin": "null"}, http.StatusForbidden, http.StatusForbidden},
		{"cookie, other local port", "POST", map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:8080"}, http.StatusForbidden, http.StatusForbidden},
		{"cookie, own origin, cross-site fetch", "POST", map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:7717", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, http.StatusUnauthorized},
		{"cookie GET", "GET", map[string]string{"Cookie": cookie}, http.StatusOK, http.StatusUnauthorized},
		{"cookie GET, cross-site fetch", "GET", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, http.StatusUnauthorized},
		{"cookie GET, foreign origin", "GET", map[string]string{"Cookie": cookie, "Origin": "https://evil.example"}, http.StatusForbidden, http.StatusForbidden},
		{"bearer, no origin", "POST", map[string]string{"Authorization": bearer}, http.StatusOK, http.StatusOK},
		{"bearer, foreign origin", "POST", map[string]string{"Authorization": bearer, "Origin": "https://evil.example"}, http.StatusForbidden, http.StatusForbidden},
		{"no credentials, foreign origin", "POST", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, http.StatusForbidden},
		{"no credentials, own origin", "POST", map[string]string{"Origin": "http://127.0.0.1:7717"}, http.StatusUnauthorized, http.StatusUnauthorized},
	} {
		path := "api/pending/dismiss"
		b := body
		if c.method == "GET" {
			path, b = "api/grants", ""
		}
		if w := serveReq(h, c.method, hs.prefix+path, host, c.hdr, b); w.Code != c.want {
			t.Errorf("%s: %d, want %d (%s)", c.name, w.Code, c.want, w.Body)
		}
		if w := serveReq(h, c.method, "/"+path, host, c.hdr, b); w.Code != c.root {
			t.Errorf("%s, outside the prefix: %d, want %d (%s)", c.name, w.Code, c.root, w.Body)
		}
	}
	// A preflight gets no CORS answer.
	w := serveReq(h, http.MethodOptions, "/api/servers", host, map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, "")
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
	if c.Name != CookieName || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != s.srv.prefix || c.Value == s.srv.token || c.Value == tok {
		t.Fatalf("cookie %+v", c)
	}
	sc := r.header.Get("Set-Cookie")
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=" + s.srv.prefix + ";"} {
		if !strings.Contains(sc, attr) {
			t.Errorf("Set-Cookie %q lacks %s", sc, attr)
		}
	}
	// The session works, and reads the page.
	page := rc.do(t, http.MethodGet, s.page(), nil, map[string]string{"Cookie": CookieName + "=" + c.Value})
	if page.status != http.StatusOK || !strings.Contains(page.body, "/static/app.js") {
		t.Fatalf("page: %d", page.status)
	}
	if strings.Contains(page.body, "<script>") || strings.Contains(page.body, " onclick=") {
		t.Error("the page has inline script")
	}
	// Single use.
	if r := rc.do(t, http.MethodGet, u, nil, nil); r.status != http.StatusUnauthorized || r.header.Get("Set-Cookie") != "" {
		t.Fatalf("second use: %d %v", r.status, r.header)
	}
	// Short-lived.
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
	// The CLI can ask for one.
	lu, err := s.c.LoginURL(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	secrets.add(loginSecret, strings.TrimPrefix(lu.URL, s.srv.URL()+"/login?token="))
	if r := rc.do(t, http.MethodGet, lu.URL, nil, nil); r.status != http.StatusOK {
		t.Fatalf("CLI login URL: %d", r.status)
	}
	// Logout ends the session, and clears the cookie of the prefix.
	if health := rc.do(t, http.MethodGet, s.page()+"api/health", nil, map[string]string{"Cookie": CookieName + "=" + c.Value}); health.status != http.StatusOK {
		t.Fatalf("before logout: %d", health.status)
	}
	out := rc.do(t, http.MethodPost, s.page()+"api/logout", nil, map[string]string{"Cookie": CookieName + "=" + c.Value, "Origin": s.srv.URL()})
	if out.status != http.StatusNoContent || !strings.Contains(out.header.Get("Set-Cookie"), "Path="+s.srv.prefix+";") {
		t.Fatalf("logout: %d %v", out.status, out.header)
	}
	if r := rc.do(t, http.MethodGet, s.page()+"api/health", nil, map[string]string{"Cookie": CookieName + "=" + c.Value}); r.status != http.StatusUnauthorized {
		t.Fatalf("after logout: %d", r.status)
	}
}

// Every kind of response carries the security headers (TestMain checks all
// of them again, for every response of the run).
func TestSecurityHeaders(t *testing.T) {
	hs, h := handlerServer(t)
	host := "127.0.0.1:7717"
	auth := map[string]string{"Authorization": "Bearer " + hs.token}
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
	}{
		{"GET", hs.prefix, auth}, {"GET", hs.prefix, nil}, {"GET", "/", auth}, {"GET", "/", nil}, {"GET", hs.prefix + "api/health", auth},
		{"GET", hs.prefix + "api/nope", nil}, {"GET", strings.TrimSuffix(hs.prefix, "/"), nil}, {"GET", "/s/nope/", nil},
		{"GET", "/static/app.js", nil}, {"GET", "/static/style.css", nil},
		{"GET", "/static/nope.js", nil}, {"GET", "/static/index.html", nil}, {"GET", "/login?token=bad", nil},
		{"GET", "/mcp-oauth?code=x&state=y", nil}, {"GET", "/mcp-oauth", nil}, {"GET", "/api/health", auth},
		{"GET", "/api/nope", auth}, {"GET", "/nope", auth}, {"POST", "/", auth}, {"DELETE", "/api/servers/nope", auth},
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
	// The settings page only loads same-origin script and style.
	w := serveReq(h, http.MethodGet, hs.prefix, host, auth, "")
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "style=") || strings.Contains(w.Body.String(), "<script>") {
		t.Fatalf("page %d has inline style or script", w.Code)
	}
	if w := serveReq(h, http.MethodGet, "/static/app.js", host, nil, ""); !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js content type %q", w.Header().Get("Content-Type"))
	}
}

// /mcp-oauth needs no token but accepts only a state it is waiting for,
// and never echoes what it was sent.
func TestCallbackNeedsState(t *testing.T) {
	_, h := handlerServer(t)
	host := "127.0.0.1:7717"
	code := "callback-code-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secrets.add("authorization code", code)
	for _, q := range []string{"code=" + code + "&state=unknown-state-value", "code=" + code, "error=access_denied&state=nope", "code=" + code + "&state=a&state=b"} {
		w := serveReq(h, http.MethodGet, "/mcp-oauth?"+q, host, nil, "")
		if w.Code != http.StatusBadRequest {
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

func TestDaemonJSONAndDiscover(t *testing.T) {
	s := newStack(t, stackOpts{})
	p := filepath.Join(s.dir, InfoFileName)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("daemon.json mode %v", st.Mode().Perm())
	}
	in, err := readInfo(s.dir)
	if err != nil || in.PID != os.Getpid() || in.URL != s.srv.URL() || in.Token != s.srv.token {
		t.Fatalf("daemon.json %+v, %v", in, err)
	}
	ci, err := Discover(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	if ci.URL != s.srv.URL() || strings.Contains(ci.String(), s.srv.token) {
		t.Fatalf("ClientInfo %v", ci)
	}
	h, err := ci.Client().Health(ctxT(t))
	if err != nil || !h.OK || h.PID != os.Getpid() {
		t.Fatalf("health %+v %v", h, err)
	}

	// A second daemon on the same data directory is refused.
	s2, err := New(Options{Store: s.st, Manager: s.m, Broker: s.broker, Cards: s.cards, Addr: "127.0.0.1:0", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Listen(ctxT(t)); err == nil || !strings.Contains(err.Error(), "another remotemcp daemon") {
		t.Fatalf("second daemon: %v", err)
	}
	s2.cancel()
	s2.registry.Close()

	// A world-readable file is not trusted.
	os.Chmod(p, 0o644)
	if _, err := Discover(s.dir); err == nil || !strings.Contains(err.Error(), "readable by other users") {
		t.Fatalf("world-readable daemon.json: %v", err)
	}
	os.Chmod(p, 0o600)

	// After shutdown the file is gone and Discover says so.
	s.close()
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("daemon.json after shutdown: %v", err)
	}
	if _, err := Discover(s.dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Discover after shutdown: %v", err)
	}
	// A stale file of a daemon that died without cleaning up.
	if err := writeInfo(s.dir, info{URL: "http://127.0.0.1:1", PID: 999999, Token: "stale-token-value"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(s.dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Discover with a stale file: %v", err)
	}
}

func TestNewRefusesNonLoopback(t *testing.T) {
	s := newStack(t, stackOpts{})
	for _, addr := range []string{"0.0.0.0:7717", ":7717", "192.0.2.1:7717", "localhost:7717", "[::]:7717"} {
		if _, err := New(Options{Store: s.st, Manager: s.m, Broker: s.broker, Cards: s.cards, Addr: addr}); err == nil {
			t.Errorf("New with %s succeeded", addr)
		}
	}
	if _, err := New(Options{Store: s.st}); err == nil {
		t.Error("New without parts succeeded")
	}
}

// The same checks against a real listener, with a session from a real
// login.
func TestRealListenerChecks(t *testing.T) {
	s := newStack(t, stackOpts{})
	rc := newRawClient(t)
	sess := s.login(t, rc)
	u := s.srv.URL()
	cookie := CookieName + "=" + sess
	body := map[string]string{"origin": "https://granted.example"}
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no credentials", nil, http.StatusUnauthorized},
		{"cookie, no Origin", map[string]string{"Cookie": cookie}, http.StatusForbidden},
		{"cookie, foreign Origin", map[string]string{"Cookie": cookie, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"cookie, rebinding Host", map[string]string{"Cookie": cookie, "Origin": "http://evil.example:" + strconv.Itoa(s.srv.Port()), "Host": "evil.example:" + strconv.Itoa(s.srv.Port())}, http.StatusForbidden},
		{"bearer, foreign Origin", map[string]string{"Authorization": "Bearer " + s.srv.token, "Origin": "https://evil.example"}, http.StatusForbidden},
		{"cookie, own Origin", map[string]string{"Cookie": cookie, "Origin": u}, http.StatusOK},
	} {
		r := rc.do(t, http.MethodPost, s.page()+"api/grants", body, c.hdr)
		if r.status != c.want {
			t.Errorf("%s: %d, want %d: %s", c.name, r.status, c.want, r.body)
		}
		for k := range r.header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("%s: CORS header %s", c.name, k)
			}
		}
		if r.header.Get("Content-Security-Policy") != ContentSecurityPolicy {
			t.Errorf("%s: CSP %q", c.name, r.header.Get("Content-Security-Policy"))
		}
	}
	g, _ := s.c.Grants(ctxT(t))
	if len(g.Grants) != 1 || g.Grants[0].By != "user: settings page" {
		t.Fatalf("only the page's own request may grant: %+v", g)
	}
}

// Browsers do not isolate cookies by port, so the session cookie is
// scoped to the page's secret prefix, and only accepted there: a cookie
// presented anywhere else — as another local web server that received it
// would replay it, with our Origin — is no credential. The bearer token
// (the CLI) keeps working at /api/….
func TestSessionCookieOnlyUnderPrefix(t *testing.T) {
	s := newStack(t, stackOpts{})
	ctx := ctxT(t)
	rc := newRawClient(t)
	sess := s.login(t, rc)
	u := s.srv.URL()
	cookie := map[string]string{"Cookie": CookieName + "=" + sess, "Origin": u}
	grant := map[string]string{"origin": "https://replayed.example"}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/api/health", nil},
		{http.MethodGet, "/api/servers", nil},
		{http.MethodGet, "/api/events", nil},
		{http.MethodGet, "/api/cards", nil},
		{http.MethodPost, "/api/grants", grant},
		{http.MethodPost, "/api/login-url", nil},
		{http.MethodGet, "/", nil},
	} {
		r := rc.do(t, c.method, u+c.path, c.body, cookie)
		if r.status != http.StatusUnauthorized {
			t.Errorf("cookie at %s %s: %d, want 401: %s", c.method, c.path, r.status, r.body)
		}
	}
	if g, err := s.c.Grants(ctx); err != nil || len(g.Grants) != 0 {
		t.Fatalf("a cookie outside the prefix granted: %+v %v", g, err)
	}
	// A made-up prefix is nothing at all.
	if r := rc.do(t, http.MethodGet, u+"/s/"+strings.Repeat("A", 26)+"/api/health", nil, cookie); r.status != http.StatusNotFound {
		t.Errorf("cookie under another prefix: %d", r.status)
	}
	// Under the prefix, the same cookie works.
	if r := rc.do(t, http.MethodGet, s.page()+"api/health", nil, cookie); r.status != http.StatusOK {
		t.Fatalf("cookie under the prefix: %d %s", r.status, r.body)
	}
	if r := rc.do(t, http.MethodPost, s.page()+"api/grants", grant, cookie); r.status != http.StatusOK {
		t.Fatalf("cookie under the prefix, POST: %d %s", r.status, r.body)
	}
	// The token works at both.
	if h, err := s.c.Health(ctx); err != nil || !h.OK {
		t.Fatalf("bearer at /api/health: %+v %v", h, err)
	}
	if r := rc.do(t, http.MethodGet, s.page()+"api/health", nil, s.bearer()); r.status != http.StatusOK {
		t.Fatalf("bearer under the prefix: %d", r.status)
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
