package daemon

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/remotemcp/remotemcp/localapi"
)

// The threat model of the TCP listener is Syncthing's and the MCP
// Inspector proxy's hole: any web page the person visits, and any local
// process of any user, can send requests to 127.0.0.1:7717; and after the
// daemon exits, any local process can take the port. So:
//
//   - the API with full access is not on TCP at all: it is on the Unix
//     socket, whose file permissions are the access check, and which the
//     CLI verifies before it sends anything (Dial). /api/… on TCP is a 404,
//     whatever credential comes with it;
//   - the settings page and the API it uses live under a secret path
//     prefix, /s/<random>/, new at every start, and need a session cookie
//     (HttpOnly, SameSite=Strict, Path=<prefix>) obtained once through a
//     one-time login URL. Browsers do not isolate cookies by port, so a
//     cookie with Path=/ would also go to every other web server on
//     127.0.0.1 the person visits, which could replay it (with our Origin:
//     it can forge any header). With the prefix, the browser sends it only
//     to URLs under the prefix, which another server cannot make the
//     browser visit without knowing it. The prefix appears only in the
//     answer to a login URL (and in the URLs below it); the page uses
//     relative URLs, and no-referrer keeps it out of Referer headers;
//   - the login URL, the OAuth callback (protected by its state) and the
//     static assets need no credential;
//   - the Host header must name the daemon by a loopback address, so a DNS
//     rebinding page (evil.example resolving to 127.0.0.1) gets 403 even
//     though its requests reach the port;
//   - a foreign Origin is refused on every request, and a state-changing
//     request must carry our own Origin (CSRF);
//   - no CORS headers are ever sent, and every response carries a strict
//     Content-Security-Policy and friends.

// ContentSecurityPolicy is sent with every response.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// CookieName is the settings page's session cookie.
const CookieName = "remotemcp_session"

// newPagePrefix returns a fresh secret path prefix for the settings page,
// "/s/<130 random bits>/".
func newPagePrefix() string { return "/s/" + rand.Text() + "/" }

// setSecurityHeaders sets the headers every response carries.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	// Other sites may neither embed our responses as no-cors resources
	// (a <script src> of an API URL) nor keep a handle on our windows.
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// allowedHost reports whether the Host header names this daemon: a
// loopback address with our port. "localhost" is accepted because people
// type it; no other name is, since any other name may be a rebinding.
//
// A gateway's page with a public URL (SignIn.PublicURL) also answers to
// that URL's host: a proxy in front of it forwards the browser's Host.
func (s *Server) allowedHost(host string) bool {
	if s.signIn != nil && s.signIn.public != nil && strings.EqualFold(host, s.signIn.public.Host) {
		return true
	}
	return LoopbackHost(host, s.port)
}

// sameOrigin reports whether origin is the one a same-origin browser
// request to r's Host carries, or the public URL's origin of a gateway's
// page (whose proxy may forward the request to the loopback Host).
func (s *Server) sameOrigin(origin string, r *http.Request) bool {
	if s.signIn != nil && s.signIn.public != nil && strings.EqualFold(origin, s.signIn.public.String()) {
		return true
	}
	if s.tlsConf != nil {
		return strings.EqualFold(origin, "https://"+r.Host)
	}
	return strings.EqualFold(origin, ownOrigin(r))
}

// ownOrigin is the origin a same-origin browser request to this Host
// carries.
func ownOrigin(r *http.Request) string { return "http://" + strings.ToLower(r.Host) }

// stateChanging reports whether the method may change state.
func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// tcpHandler is everything the TCP listener serves, behind guard: the
// login URL, the OAuth callback, the static assets, the bare root, and
// below the secret prefix the settings page with its API (session
// only).
func (s *Server) tcpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", s.handleLogin)
	mux.Handle("GET "+localapi.CallbackPath, s.callbackHandler())
	mux.HandleFunc("GET /static/", s.handleStatic)
	mux.HandleFunc("GET /{$}", s.handleRoot)
	mux.HandleFunc("/api/", s.handleNoAPI)
	page := http.NewServeMux()
	page.HandleFunc("GET /{$}", s.handlePage)
	page.HandleFunc("POST /api/logout", s.handleLogout)
	s.api.register(page)
	mux.Handle(s.prefix, http.StripPrefix(strings.TrimSuffix(s.prefix, "/"), s.requireSession(page)))
	return s.guard(mux)
}

// guard is the outermost handler: security headers on everything, then the
// Host and Origin checks.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		if !s.allowedHost(r.Host) {
			s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden,
				"the Host header must be 127.0.0.1, [::1] or localhost with the daemon's port (DNS rebinding protection)")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !s.sameOrigin(o, r) {
			s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden, "cross-origin requests are refused")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handleNoAPI answers /api/… on TCP: the API is not served here, whatever
// credential comes along (the CLI no longer sends one to TCP).
func (s *Server) handleNoAPI(w http.ResponseWriter, r *http.Request) {
	s.api.error(w, &localapi.Error{Status: http.StatusNotFound, Code: localapi.CodeNotFound,
		Message: "the local API is not served on TCP: use the daemon's Unix socket (the CLI finds it through daemon.json)"})
}

// requireSession wraps the routes below the page prefix: a live session
// cookie, no cross-site fetch, and our Origin on anything that changes
// state. The cookie is what a browser attaches on its own, so a cookie
// request must prove it comes from our page.
func (s *Server) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(CookieName)
		if err != nil || !s.sessions.valid(c.Value) {
			s.deny(w, r, http.StatusUnauthorized, localapi.CodeUnauthorized,
				"not logged in: open the login URL that `remotemcp serve` printed, or run `remotemcp open` for a new one")
			return
		}
		if sfs := r.Header.Get("Sec-Fetch-Site"); sfs == "cross-site" || sfs == "same-site" {
			s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden, "cross-site requests are refused")
			return
		}
		if stateChanging(r.Method) && !s.sameOrigin(r.Header.Get("Origin"), r) {
			s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden, "a state-changing request from the settings page must carry the daemon's own Origin header")
			return
		}
		sum := sha256.Sum256([]byte(c.Value))
		who := caller{page: hex.EncodeToString(sum[:16])}
		next.ServeHTTP(w, r.WithContext(withCaller(r.Context(), who)))
	})
}

// deny answers a refused request: JSON for the API, a small page otherwise.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, s.prefix+"api/") {
		s.api.error(w, &localapi.Error{Status: status, Code: code, Message: msg})
		return
	}
	s.renderMessage(w, status, http.StatusText(status), msg)
}
