package daemon

import (
	"crypto/rand"
	"crypto/subtle"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// The threat model is Syncthing's and the MCP Inspector proxy's hole:
// any web page the person visits, and any local process, can send
// requests to 127.0.0.1:7717. So:
//
//   - every request must carry the API token (Authorization: Bearer, for
//     the CLI) or a session cookie (HttpOnly, SameSite=Strict, obtained
//     once through a one-time login URL), except the login URL itself, the
//     OAuth callback (protected by its state) and the static assets;
//   - the session cookie is scoped to a secret path prefix, /s/<random>/,
//     new at every daemon start, and accepted only there: browsers do not
//     isolate cookies by port, so a cookie with Path=/ would also go to
//     every other web server on 127.0.0.1 the person visits, which could
//     replay it (with our Origin: it can forge any header). With the
//     prefix, the browser sends it only to URLs under the prefix, which
//     another server cannot make the browser visit without knowing it. The
//     prefix appears only in the answer to a login URL (and in the URLs
//     below it); the page uses relative URLs, and no-referrer keeps it out
//     of Referer headers. Bearer requests use /api/ at the root;
//   - the Host header must name the daemon by a loopback address, so a DNS
//     rebinding page (evil.example resolving to 127.0.0.1) gets 403 even
//     though its requests reach the socket;
//   - a foreign Origin is refused on every request, and a state-changing
//     request authenticated by the cookie must carry our own Origin (the
//     CLI's bearer requests carry none; a browser cannot send our bearer
//     token without the page knowing it);
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

// authKind says how a request authenticated.
type authKind int

const (
	authNone authKind = iota
	authBearer
	authCookie
)

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
func (s *Server) allowedHost(host string) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != strconv.Itoa(s.port) {
		return false
	}
	switch strings.ToLower(h) {
	case "127.0.0.1", "::1", "localhost":
		return true
	}
	return false
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

// guard is the outermost handler: security headers on everything, then the
// Host and Origin checks; authentication is per route (requireAuth).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		if !s.allowedHost(r.Host) {
			s.deny(w, r, http.StatusForbidden, CodeForbidden,
				"the Host header must be 127.0.0.1, [::1] or localhost with the daemon's port (DNS rebinding protection)")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, ownOrigin(r)) {
			s.deny(w, r, http.StatusForbidden, CodeForbidden, "cross-origin requests are refused")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate checks the bearer token, or (when cookieOK: under the
// page prefix) the session cookie. A request with an Authorization header
// is judged by it alone: a wrong token is not rescued by a cookie.
func (s *Server) authenticate(r *http.Request, cookieOK bool) authKind {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if ok && strings.EqualFold(scheme, "Bearer") && s.token != "" &&
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.token)) == 1 {
			return authBearer
		}
		return authNone
	}
	if !cookieOK {
		return authNone
	}
	if c, err := r.Cookie(CookieName); err == nil && s.sessions.valid(c.Value) {
		return authCookie
	}
	return authNone
}

// requireAuth wraps a route that needs the token or, when cookieOK (the
// routes under the page prefix), a session.
func (s *Server) requireAuth(next http.Handler, cookieOK bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := s.authenticate(r, cookieOK)
		if kind == authNone {
			s.deny(w, r, http.StatusUnauthorized, CodeUnauthorized,
				"not logged in: open the login URL that `remotemcp serve` printed (or ask the CLI for a new one), or send the API token from daemon.json as Authorization: Bearer")
			return
		}
		if kind == authCookie {
			// The cookie is what a browser attaches on its own, so a
			// cookie request must prove it comes from our page: our Origin
			// on anything that changes state, and no cross-site fetch
			// metadata on anything at all.
			if sfs := r.Header.Get("Sec-Fetch-Site"); sfs == "cross-site" || sfs == "same-site" {
				s.deny(w, r, http.StatusForbidden, CodeForbidden, "cross-site requests are refused")
				return
			}
			if stateChanging(r.Method) && !strings.EqualFold(r.Header.Get("Origin"), ownOrigin(r)) {
				s.deny(w, r, http.StatusForbidden, CodeForbidden, "a state-changing request from the settings page must carry the daemon's own Origin header")
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(withAuth(r.Context(), kind)))
	})
}

// deny answers a refused request: JSON for the API, a small page otherwise.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, s.prefix+"api/") || r.Header.Get("Authorization") != "" {
		s.writeError(w, &APIError{Status: status, Code: code, Message: msg})
		return
	}
	s.renderMessage(w, status, http.StatusText(status), msg)
}
