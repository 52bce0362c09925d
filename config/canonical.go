package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// MaxURLLength is the longest server URL accepted, in bytes. Real MCP
// endpoints are short; the bound keeps pasted junk out of the store and of
// every log line that names the server.
const MaxURLLength = 2048

// urlParts is an http(s) URL split as RFC 3986 §3 splits it, every part
// already checked and the case-insensitive parts already lower-cased.
type urlParts struct {
	scheme   string // "http" or "https"
	host     string // lower-case DNS name, dotted IPv4, or bracketed IPv6 in RFC 5952 form
	port     string // decimal without leading zeros; "" when absent or the scheme's default
	rest     string // path and query exactly as written: "", "/mcp", "/mcp?x=1", "?x=1"
	fragment bool   // the URL had a '#'
}

// hostname is the host without IPv6 brackets, as net.Dial and
// IsLoopbackHost take it.
func (p urlParts) hostname() string { return strings.TrimSuffix(strings.TrimPrefix(p.host, "["), "]") }

func (p urlParts) origin() string {
	if p.port == "" {
		return p.scheme + "://" + p.host
	}
	return p.scheme + "://" + p.host + ":" + p.port
}

// CanonicalResource returns the canonical form of an MCP server URL, the
// resource indicator of RFC 8707 §2 that the MCP authorization spec sends as
// `resource` and that RFC 9728 protected resource metadata must echo.
// OAuth bindings (R3.10) are keyed by it, so two spellings of one server must
// give one string, and the result must never change when canonicalised again.
//
// The scheme (http or https only) and host are lower-cased, a default port
// (443 for https, 80 for http) or an empty one is dropped, IPv6 literals are
// bracketed in RFC 5952 form, and the path and query are kept byte for byte:
// "https://mcp.example.com" stays without a trailing slash and
// "https://mcp.example.com/" keeps it, because servers may treat the two
// differently and RFC 8707 leaves the choice to them. A fragment is refused,
// not dropped, since RFC 8707 says the resource "MUST NOT include a fragment
// component" and a silently changed identifier would hide the mistake.
// User information (user:pass@) is refused as well.
//
// Errors are *FieldError with Field "url".
func CanonicalResource(raw string) (string, error) {
	p, err := splitURL(raw)
	if err != nil {
		return "", err
	}
	if p.fragment {
		return "", urlProblem("must not contain a fragment (the part from '#'); remove it")
	}
	return p.origin() + p.rest, nil
}

// Origin returns scheme://host[:port] of an http(s) URL in the canonical form
// of CanonicalResource: lower case, default port dropped, IPv6 bracketed.
// A fragment is ignored, since it is not part of the origin (RFC 6454).
//
// Errors are *FieldError with Field "url".
func Origin(raw string) (string, error) {
	p, err := splitURL(raw)
	if err != nil {
		return "", err
	}
	return p.origin(), nil
}

// SameOrigin reports whether two http(s) URLs have the same origin
// (RFC 6454: scheme, host and port), as the same-origin check on a
// resource_metadata URL requires (R3.6). A URL that cannot be parsed is never
// same-origin with anything.
func SameOrigin(a, b string) bool {
	oa, err := Origin(a)
	if err != nil {
		return false
	}
	ob, err := Origin(b)
	return err == nil && oa == ob
}

// SameResource reports whether two URLs name the same protected resource:
// their canonical forms are equal, except that an empty path and "/" are the
// same, since for http(s) they are equivalent (RFC 3986 §6.2.3) and the MCP
// authorization spec lets servers write either. Any other path difference,
// a trailing slash on a longer path included, makes them different.
func SameResource(a, b string) bool {
	ca, err := CanonicalResource(a)
	if err != nil {
		return false
	}
	cb, err := CanonicalResource(b)
	return err == nil && (ca == cb || rootSlash(ca) == rootSlash(cb))
}

// rootSlash writes an empty path as "/".
func rootSlash(canonical string) string {
	p, _ := splitURL(canonical)
	if p.rest == "" || p.rest[0] == '?' {
		return p.origin() + "/" + p.rest
	}
	return canonical
}

func urlProblem(problem string) *FieldError { return &FieldError{Field: "url", Problem: problem} }

// splitURL parses an absolute http(s) URL with our own strict RFC 3986 reader
// rather than net/url alone: net/url accepts spaces, raw non-ASCII and
// percent-encoded hosts, and reconstructs rather than preserves the path, all
// of which would make the canonical form ambiguous. Everything accepted here
// is also accepted by net/url, which the HTTP client uses.
//
// Long: a single left-to-right read of the URL (bytes, scheme, authority,
// IPv6 or name host, port, fragment, path, query), each step working on
// what the one before cut off and returning its own message for the
// person; split, each piece would take and return the remainder.
func splitURL(raw string) (urlParts, error) {
	var p urlParts
	if raw == "" {
		return p, urlProblem("is empty; give an absolute URL such as https://mcp.example.com/mcp")
	}
	if len(raw) > MaxURLLength {
		return p, urlProblem(fmt.Sprintf("is %d bytes long; the limit is %d", len(raw), MaxURLLength))
	}
	for i := 0; i < len(raw); i++ {
		switch b := raw[i]; {
		case b == ' ' || b == '\t' || b == '\n' || b == '\r':
			if i == 0 || strings.TrimRight(raw, " \t\r\n") != raw {
				return p, urlProblem("has leading or trailing whitespace; remove it")
			}
			return p, urlProblem(fmt.Sprintf("contains whitespace at byte %d; percent-encode a space as %%20", i))
		case b < 0x20 || b == 0x7f:
			return p, urlProblem(fmt.Sprintf("contains a control character at byte %d", i))
		case b >= 0x80:
			return p, urlProblem(fmt.Sprintf("contains a non-ASCII character at byte %d; percent-encode it in the path, and write internationalized host names in their xn-- (punycode) form", i))
		}
	}

	colon := strings.IndexByte(raw, ':')
	if colon <= 0 || !validScheme(raw[:colon]) || !strings.HasPrefix(raw[colon+1:], "//") {
		// "mcp.example.com/mcp" or "localhost:8080/mcp": a host without
		// its scheme, the commonest slip; show the fix.
		hostFirst := isAlnum(raw[0]) && !strings.Contains(raw, "://") &&
			(colon < 0 || colon+1 < len(raw) && raw[colon+1] >= '0' && raw[colon+1] <= '9')
		if hostFirst {
			return p, urlProblem("has no scheme; write it in full, such as https://" + raw)
		}
		return p, urlProblem("is not an absolute http(s) URL; write it in full, such as https://mcp.example.com/mcp")
	}
	p.scheme = strings.ToLower(raw[:colon])
	if p.scheme != "https" && p.scheme != "http" {
		return p, urlProblem(fmt.Sprintf("scheme %q is not supported; use https:// (or http:// for a loopback host)", raw[:colon]))
	}
	rest := raw[colon+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if strings.Contains(authority, "@") {
		return p, urlProblem("must not contain user information (user:password@); put credentials in the auth section instead")
	}

	var portStr string
	hasPort := false
	if strings.HasPrefix(authority, "[") {
		closing := strings.IndexByte(authority, ']')
		if closing < 0 {
			return p, urlProblem("has an IPv6 address without its closing ']'")
		}
		lit, after := authority[1:closing], authority[closing+1:]
		if strings.Contains(lit, "%") {
			return p, urlProblem(fmt.Sprintf("host [%s] has an IPv6 zone; zones are not supported", lit))
		}
		a, err := netip.ParseAddr(lit)
		if err != nil || !a.Is6() {
			return p, urlProblem(fmt.Sprintf("host [%s] is not a valid IPv6 address", lit))
		}
		p.host = "[" + a.String() + "]"
		if after != "" {
			if after[0] != ':' {
				return p, urlProblem(fmt.Sprintf("has %q after the IPv6 address; only :port may follow it", after))
			}
			portStr, hasPort = after[1:], true
		}
	} else {
		h := authority
		if i := strings.LastIndexByte(authority, ':'); i >= 0 {
			h, portStr, hasPort = authority[:i], authority[i+1:], true
		}
		if h == "" {
			return p, urlProblem("has no host; give one, such as https://mcp.example.com/mcp")
		}
		h = strings.ToLower(h)
		for i := 0; i < len(h); i++ {
			if c := h[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
				if c == ':' {
					return p, urlProblem(fmt.Sprintf("host %q has more than one ':'; write an IPv6 address in brackets, such as http://[::1]:8080/mcp", authority))
				}
				return p, urlProblem(fmt.Sprintf("host %q contains %q, which is not allowed in a host name", h, c))
			}
		}
		// A host of digits and dots is an IPv4 address to every resolver; the
		// short and octal-looking forms ("127.1", "010.0.0.1") mean different
		// addresses to different resolvers, so only the plain dotted quad passes.
		if strings.Trim(h, "0123456789.") == "" {
			if a, err := netip.ParseAddr(h); err != nil || !a.Is4() {
				return p, urlProblem(fmt.Sprintf("host %q is not a valid IPv4 address; write four decimal parts without leading zeros, such as 127.0.0.1", h))
			}
		}
		p.host = h
	}
	// An empty port ("host:") means the default port (RFC 3986 §6.2.3).
	if hasPort && portStr != "" {
		if strings.Trim(portStr, "0123456789") != "" {
			return p, urlProblem(fmt.Sprintf("port %q is not a number", portStr))
		}
		n, err := strconv.Atoi(portStr)
		if err != nil || n < 1 || n > 65535 {
			return p, urlProblem(fmt.Sprintf("port %s is out of range; use 1-65535", portStr))
		}
		if !(p.scheme == "https" && n == 443 || p.scheme == "http" && n == 80) {
			p.port = strconv.Itoa(n)
		}
	}

	if i := strings.IndexByte(tail, '#'); i >= 0 {
		if bad := badURIChars(tail[i+1:], "/?"); bad != "" {
			return p, urlProblem("fragment " + bad)
		}
		p.fragment = true
		tail = tail[:i]
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if bad := badURIChars(path, "/"); bad != "" {
		return p, urlProblem("path " + bad)
	}
	if hasQuery {
		if bad := badURIChars(query, "/?"); bad != "" {
			return p, urlProblem("query " + bad)
		}
	}
	p.rest = tail

	// Belt and braces: the HTTP client parses with net/url, so whatever we
	// accept must parse there too.
	if _, err := url.Parse(raw); err != nil {
		return p, urlProblem("is not a valid URL: " + strings.TrimPrefix(err.Error(), "parse "+strconv.Quote(raw)+": "))
	}
	return p, nil
}

// validScheme reports RFC 3986 §3.1 syntax: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !alpha && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}

// badURIChars checks s against RFC 3986 pchar (unreserved, sub-delims, ':',
// '@', pct-encoded) plus the extra characters allowed in this component, and
// describes the first offence, or returns "".
func badURIChars(s, extra string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0, strings.IndexByte(extra, c) >= 0:
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "has a '%' that does not start an escape such as %2F; write a literal % as %25"
			}
			i += 2
		default:
			return fmt.Sprintf("contains %q, which must be percent-encoded (%%%02X)", c, c)
		}
	}
	return ""
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
