package config

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits enforced by validation. They are generous for real configs and
// exist so that a pasted blob cannot end up in the store, the UI or prompts.
const (
	// MaxIDLength is the longest server id.
	MaxIDLength = 63
	// MaxNameLength is the longest display name, in characters.
	MaxNameLength = 200
	// MaxToolTimeout is the longest per-server tool call timeout.
	MaxToolTimeout = 24 * time.Hour
	// maxSecretLength bounds bearer tokens and client secrets; JWTs with
	// many claims reach a few KiB, nothing legitimate reaches 16.
	maxSecretLength = 16 << 10
	// maxClientIDLength bounds client ids; a CIMD-style URL id fits easily.
	maxClientIDLength = 2048
)

const idRule = "use 1-63 characters from a-z, 0-9, '_' and '-', starting with a letter or digit"

// ValidateID checks a server id: [a-z0-9][a-z0-9_-]{0,62}. Ids appear in
// tool names (server__tool), prompt commands (/server:prompt), file names and
// URLs, so they are kept to characters that need no escaping anywhere.
// The error is a *FieldError with Field "id".
func ValidateID(id string) error {
	fail := func(problem string) error { return &FieldError{Field: "id", Problem: problem} }
	if id == "" {
		return fail("is empty; " + idRule)
	}
	if len(id) > MaxIDLength {
		return fail(fmt.Sprintf("%q is %d characters long; the limit is %d", id, len(id), MaxIDLength))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			continue
		}
		if i > 0 && (c == '-' || c == '_') {
			continue
		}
		if i == 0 && (c == '-' || c == '_') {
			return fail(fmt.Sprintf("%q must start with a lower-case letter or digit", id))
		}
		if c >= 'A' && c <= 'Z' {
			return fail(fmt.Sprintf("%q contains upper-case %q; ids are lower-case (%q)", id, c, strings.ToLower(id)))
		}
		r, _ := utf8.DecodeRuneInString(id[i:])
		return fail(fmt.Sprintf("%q contains %q; %s", id, r, idRule))
	}
	return nil
}

// ValidateURL checks a server URL: an absolute https URL, or http only for a
// loopback host (local development, as R3.6 allows); no user information, no
// fragment, a host, at most MaxURLLength bytes, and a form that
// CanonicalResource accepts. A query is allowed. The error is a *FieldError
// with Field "url".
func ValidateURL(raw string) error {
	p, err := splitURL(raw)
	if err != nil {
		return err
	}
	if p.fragment {
		return urlProblem("must not contain a fragment (the part from '#'); remove it")
	}
	if p.scheme == "http" && !IsLoopbackHost(p.hostname()) {
		return urlProblem("http:// is only allowed for loopback hosts (127.0.0.1, ::1, localhost); use https://")
	}
	return nil
}

// IsLoopbackHost reports whether host (without port; "[::1]" and "::1" both
// work) names the local machine: "localhost" in any case, 127.0.0.0/8, or
// ::1 (also IPv4-mapped, ::ffff:127.x.y.z). Other names that might resolve to
// loopback do not count: the check must hold without consulting DNS.
func IsLoopbackHost(host string) bool {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return a.WithZone("").Unmap().IsLoopback()
}

// Validate checks one server config and returns the first problem as a
// *FieldError naming the server (when its id is valid) and the field.
func (s Server) Validate() error {
	if err := ValidateID(s.ID); err != nil {
		return err
	}
	fail := func(field, problem string) error {
		return &FieldError{ServerID: s.ID, Field: field, Problem: problem}
	}
	if err := ValidateURL(s.URL); err != nil {
		fe := err.(*FieldError)
		return fail(fe.Field, fe.Problem)
	}
	if p := checkText(s.Name, MaxNameLength); p != "" {
		return fail("name", p)
	}
	if err := s.Auth.validate(s.ID); err != nil {
		return err
	}
	for i, t := range s.DisabledTools {
		if t == "" {
			return fail(fmt.Sprintf("disabledTools[%d]", i), "is empty; give the tool's name")
		}
	}
	for i, t := range s.PinnedTools {
		if t == "" {
			return fail(fmt.Sprintf("pinnedTools[%d]", i), "is empty; give the tool's name")
		}
	}
	if s.IdleTimeout != nil {
		switch d := time.Duration(*s.IdleTimeout); {
		case d < 0:
			return fail("idleTimeout", fmt.Sprintf("is negative (%s); use 0 to never hibernate, or a positive duration", d))
		case d > MaxIdleTimeout:
			return fail("idleTimeout", fmt.Sprintf("is %s; the limit is %s", d, MaxIdleTimeout))
		}
	}
	switch d := time.Duration(s.ToolTimeout); {
	case d < 0:
		return fail("toolTimeout", fmt.Sprintf("is negative (%s); use 0 for the default of 60s, or a positive duration", d))
	case d > MaxToolTimeout:
		return fail("toolTimeout", fmt.Sprintf("is %s; the limit is 24h", d))
	}
	if len(s.Headers) > MaxHeaders {
		return fail("headers", fmt.Sprintf("has %d headers; the limit is %d", len(s.Headers), MaxHeaders))
	}
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		if p := checkHeader(name, s.Headers[name]); p != "" {
			// A name that is no header name may be a pasted "Name: value"
			// line, so it is not echoed whole (checkHeader shows the
			// valid part).
			if !validHeaderName(name) {
				return fail("headers", p)
			}
			return fail("headers."+name, p)
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			return fail("headers."+name, fmt.Sprintf("is the same header as %q (names ignore case); keep one", other))
		}
		seen[strings.ToLower(name)] = name
	}
	if v := s.ProtocolVersion; v != "" && !slices.Contains(ProtocolVersions, v) {
		return fail("protocolVersion", fmt.Sprintf("%q is not a revision remotemcp speaks; use one of %s, or leave it out for the default", v, strings.Join(ProtocolVersions, ", ")))
	}
	if v := s.LogLevel; v != "" && !slices.Contains(LogLevels, v) {
		return fail("logLevel", fmt.Sprintf("%q is not a log level; use one of %s", v, strings.Join(LogLevels, ", ")))
	}
	if v := s.Approval; v != "" && !slices.Contains(Approvals, v) {
		return fail("approval", fmt.Sprintf("%q is not an approval; use host (the MCP host approves, the default) or ask (remotemcp asks you before every call)", v))
	}
	return s.Limits.validate(fail)
}

// validate checks the auth section of server id.
//
// Long: the auth checks in the order a person fixes them: the kind, then
// settings that do not belong to it (one table), then each kind's own
// values, then the client metadata URL; every message names the field
// through the one fail helper.
func (a Auth) validate(id string) error {
	fail := func(field, problem string) error {
		return &FieldError{ServerID: id, Field: "auth." + field, Problem: problem}
	}
	switch a.Kind {
	case AuthNone, AuthBearer, AuthOAuth, AuthAuto:
	case "":
		return fail("kind", `is missing; use "none" for a server without authentication, "bearer" for a static token, "oauth", or "auto" (OAuth only if the server asks for it)`)
	default:
		return fail("kind", fmt.Sprintf(`%q is not a kind; use "none", "bearer", "oauth" or "auto"`, a.Kind))
	}

	// Material of another kind is refused rather than ignored: a token left
	// under "none" is a secret stored for nothing, and an oauth binding
	// under "bearer" would make ConnectionEqual and the store disagree
	// about what the connection uses. Auto keeps what OAuth itself records
	// or needs for its redirect (binding, redirectPort); a client id,
	// secret or scopes are settings of kind "oauth".
	if a.Kind != AuthBearer && a.Token != "" {
		return fail("token", fmt.Sprintf(`is only used with kind "bearer" (kind is %q); remove it or change the kind`, a.Kind))
	}
	for _, f := range []struct {
		name string
		set  bool
		auto bool // also allowed with kind "auto"
	}{
		{"clientId", a.ClientID != "", false},
		{"clientSecret", a.ClientSecret != "", false},
		{"scopes", len(a.Scopes) > 0, false},
		{"binding", a.Binding != nil, true},
		{"redirectPort", a.RedirectPort != 0, true},
	} {
		switch {
		case !f.set || a.Kind == AuthOAuth || f.auto && a.Kind == AuthAuto:
		case f.auto:
			return fail(f.name, fmt.Sprintf(`is only used with kind "oauth" or "auto" (kind is %q); remove it or change the kind`, a.Kind))
		case a.Kind == AuthAuto:
			return fail(f.name, `is not used with kind "auto", which discovers everything; use kind "oauth" to configure it`)
		default:
			return fail(f.name, fmt.Sprintf(`is only used with kind "oauth" (kind is %q); remove it or change the kind`, a.Kind))
		}
	}

	switch a.Kind {
	case AuthBearer:
		if p := checkToken(a.Token); p != "" {
			return fail("token", p)
		}
	case AuthOAuth, AuthAuto:
		if a.ClientID != "" {
			if p := checkCredential(a.ClientID, maxClientIDLength); p != "" {
				return fail("clientId", p)
			}
		}
		if a.ClientSecret != "" {
			if a.ClientID == "" {
				return fail("clientSecret", "is set without auth.clientId; a client secret belongs to a pre-registered client id, so give both or neither")
			}
			if p := checkCredential(a.ClientSecret, maxSecretLength); p != "" {
				return fail("clientSecret", p)
			}
		}
		for i, sc := range a.Scopes {
			if p := checkScope(sc); p != "" {
				return fail(fmt.Sprintf("scopes[%d]", i), p)
			}
		}
		if a.RedirectPort < 0 || a.RedirectPort > 65535 {
			return fail("redirectPort", fmt.Sprintf("%d is out of range; use 0 for the default (%d) or a port 1-65535", a.RedirectPort, DefaultRedirectPort))
		}
		if b := a.Binding; b != nil {
			// Half a binding would bind tokens to "any issuer" or "any
			// resource", which is exactly what R3.10 forbids.
			switch {
			case b.Resource == "" && b.Issuer != "":
				return fail("binding.resource", "is empty while binding.issuer is set; a binding needs both")
			case b.Resource != "" && b.Issuer == "":
				return fail("binding.issuer", "is empty while binding.resource is set; a binding needs both")
			}
			if p := checkText(b.Resource, MaxURLLength); p != "" {
				return fail("binding.resource", p)
			}
			if p := checkText(b.Issuer, MaxURLLength); p != "" {
				return fail("binding.issuer", p)
			}
		}
	}
	if u := a.ClientMetadataURL; u != "" {
		pu, err := url.Parse(u)
		switch {
		case err != nil || pu.Scheme != "https" || pu.Host == "":
			return fail("clientMetadataUrl", "must be an https URL of a client ID metadata document, e.g. https://app.example.com/client.json")
		case pu.Path == "" || pu.Path == "/":
			return fail("clientMetadataUrl", "must have a path (the document's location), e.g. https://app.example.com/client.json")
		case pu.Fragment != "" || pu.User != nil:
			return fail("clientMetadataUrl", "must not carry a fragment or user info")
		}
	}
	return nil
}

// checkText checks a display string: valid UTF-8, at most max characters, no
// control characters and no bidirectional overrides, which could make a name
// shown in the UI or in a prompt read differently from what it is.
func checkText(s string, max int) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	if n := utf8.RuneCountInString(s); n > max {
		return fmt.Sprintf("is %d characters long; the limit is %d", n, max)
	}
	for i, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return fmt.Sprintf("contains the control character %U at byte %d; remove it", r, i)
		}
		if r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' {
			return fmt.Sprintf("contains the bidirectional control %U at byte %d; remove it", r, i)
		}
	}
	return ""
}

// checkToken checks a bearer token. It goes into an Authorization header
// verbatim, so it must be printable ASCII without spaces (RFC 6750 §2.1
// b64token is stricter still, but real servers issue tokens outside it).
// The token itself never appears in the message.
func checkToken(t string) string {
	if t == "" {
		return `is empty; give the token, or use kind "none"`
	}
	if len(t) > 7 && strings.EqualFold(t[:7], "bearer ") {
		return `starts with "Bearer "; give only the token, without the scheme`
	}
	if len(t) > maxSecretLength {
		return fmt.Sprintf("is %d bytes long; the limit is %d", len(t), maxSecretLength)
	}
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return fmt.Sprintf("contains whitespace at byte %d; a token is a single word (check for a stray space or newline from copying)", i)
		case c < 0x20 || c == 0x7f:
			return fmt.Sprintf("contains a control character at byte %d", i)
		case c >= 0x80:
			return fmt.Sprintf("contains a non-ASCII character at byte %d; tokens are ASCII", i)
		}
	}
	return ""
}

// checkCredential checks a client id or secret: RFC 6749 Appendix A allows
// VSCHAR (printable ASCII and space); leading or trailing spaces are refused
// as copy-paste accidents. The value never appears in the message.
func checkCredential(v string, max int) string {
	if len(v) > max {
		return fmt.Sprintf("is %d bytes long; the limit is %d", len(v), max)
	}
	if strings.TrimSpace(v) != v {
		return "has leading or trailing whitespace; remove it"
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return fmt.Sprintf("contains a character outside printable ASCII at byte %d", i)
		}
	}
	return ""
}

// checkScope checks one scope-token of RFC 6749 §3.3:
// 1*( %x21 / %x23-5B / %x5D-7E ).
func checkScope(s string) string {
	if s == "" {
		return "is empty; remove it"
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			return fmt.Sprintf("%q contains a space; give each scope as its own array element", s)
		case c < 0x21 || c > 0x7e || c == '"' || c == '\\':
			return fmt.Sprintf("%q contains %q, which is not allowed in a scope (RFC 6749 §3.3)", s, c)
		}
	}
	return ""
}

// ValidateAll checks every server and that no two share an id. A problem in
// a server whose id is itself invalid is reported with its position,
// servers[i], since there is no id to name it by.
func ValidateAll(servers []Server) error {
	seen := make(map[string]int, len(servers))
	for i, s := range servers {
		if err := s.Validate(); err != nil {
			if fe, ok := err.(*FieldError); ok && fe.ServerID == "" {
				return &FieldError{Field: fmt.Sprintf("servers[%d].%s", i, fe.Field), Problem: fe.Problem}
			}
			return err
		}
		if j, dup := seen[s.ID]; dup {
			return &FieldError{ServerID: s.ID, Field: "id", Problem: fmt.Sprintf("duplicate id %q (servers[%d] and servers[%d]); ids must be unique", s.ID, j, i)}
		}
		seen[s.ID] = i
	}
	return nil
}

// MaxHeaders bounds a server's custom headers, and MaxHeaderValue each
// value's length.
const (
	MaxHeaders     = 32
	MaxHeaderValue = 8 << 10
)

// checkHeader says what is wrong with a custom header, or "".
func checkHeader(name, value string) string {
	if name == "" {
		return "has an empty name"
	}
	for i, r := range name {
		if !headerNameRune(r) {
			// Only the part before the bad character is shown: the rest
			// may be a value pasted along with the name.
			prefix := name[:i]
			if len(prefix) > 64 {
				prefix = prefix[:64] + "…"
			}
			if prefix == "" {
				return fmt.Sprintf("a name starting with %q is not a valid header name (use letters, digits and !#$%%&'*+-.^_`|~)", r)
			}
			return fmt.Sprintf("the name %q followed by %q is not a valid header name (use letters, digits and !#$%%&'*+-.^_`|~; give the value separately)", prefix, r)
		}
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			if strings.EqualFold(r, "Authorization") {
				return `cannot be set: remotemcp sends Authorization itself; use auth kind "bearer" or "oauth" instead`
			}
			return "cannot be set: the MCP transport owns this header"
		}
	}
	if len(value) > MaxHeaderValue {
		return fmt.Sprintf("value is %d bytes; the limit is %d", len(value), MaxHeaderValue)
	}
	for _, r := range value {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return "value contains a control character (a line break, say)"
		}
	}
	return ""
}

// headerNameRune reports whether r may appear in a header name: the
// token characters of RFC 9110.
func headerNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// validHeaderName reports whether name is a non-empty RFC 9110 token.
func validHeaderName(name string) bool {
	for _, r := range name {
		if !headerNameRune(r) {
			return false
		}
	}
	return name != ""
}
