package daemon

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// LoopbackHost reports whether host, a Host header, names a loopback
// listener on port: 127.0.0.1, [::1] or localhost with that port. Any other
// name may be a DNS rebinding (evil.example resolving to 127.0.0.1), so
// it is refused. The settings page and the MCP endpoint (serve --mcp-http,
// mcp --http) share this rule.
func LoopbackHost(host string, port int) bool {
	h, p, err := net.SplitHostPort(host)
	if err != nil || p != strconv.Itoa(port) {
		return false
	}
	switch strings.ToLower(h) {
	case "127.0.0.1", "::1", "localhost":
		return true
	}
	return false
}

// foreignOrigin reports whether r carries an Origin other than the one a
// same-origin request to its Host carries. No Origin is not foreign:
// non-browser clients send none, and a browser always sends one on the
// cross-origin requests that matter.
func foreignOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o != "" && !strings.EqualFold(o, ownOrigin(r))
}

// GuardLoopback wraps next in the settings page's outer checks, for
// another endpoint on a loopback port (the MCP endpoint): the security
// headers, a loopback Host with port (else 403), and no foreign Origin
// (else 403). Authentication is next's business.
func GuardLoopback(port int, next http.Handler) http.Handler {
	return GuardPublic(port, nil, next)
}

// GuardPublic is GuardLoopback for an endpoint that a proxy on this host
// also forwards to from a public URL (a gateway's MCP endpoint with
// --mcp-public-url, as its page with --public-url): that URL's host is a
// Host it accepts too, and its origin an Origin. public nil is
// GuardLoopback.
func GuardPublic(port int, public *url.URL, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		isPublic := public != nil && strings.EqualFold(r.Host, public.Host)
		if !isPublic && !LoopbackHost(r.Host, port) {
			http.Error(w, "the Host header must be 127.0.0.1, [::1] or localhost with this port (DNS rebinding protection)", http.StatusForbidden)
			return
		}
		if foreignOrigin(r) && !(public != nil && strings.EqualFold(r.Header.Get("Origin"), public.Scheme+"://"+public.Host)) {
			http.Error(w, "cross-origin requests are refused", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
