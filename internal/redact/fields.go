package redact

import "strings"

// fieldKind is how a field's value is hidden.
type fieldKind int

const (
	plainField  fieldKind = iota // not secret
	secretField                  // the value is hidden
	numberField                  // the value is hidden unless it is a number ("code")
	headerField                  // the rest of the line is hidden, an auth scheme kept
)

// classify says whether a field name speaks of a secret. The name counts
// after its last '.', so "oauth.client_secret" is secret and the host
// "auth.example.com" is not. Names are compared in lower case without
// '_' and '-', so that snake, kebab and camel case are alike: any name
// containing token, secret, pass (password, passwd, passphrase), pwd,
// key, credential, session, jwt, sig (signature), auth, cookie, verifier
// (code_verifier), bearer, assertion, saml or private is secret, and so is
// a name with a word tok, pin, otp, sid or pw. A name with the word code
// is an OAuth code unless its value is a number (a status or error code).
func classify(name string) fieldKind {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	n := strings.Map(func(r rune) rune {
		switch {
		case r == '_' || r == '-':
			return -1
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, name)
	switch n {
	case "authorization", "proxyauthorization", "cookie", "setcookie":
		return headerField
	case "wwwauthenticate", "proxyauthenticate":
		return plainField // a challenge: its parameters are checked one by one
	}
	for _, w := range [...]string{"token", "secret", "pass", "pwd", "key", "credential", "session", "jwt", "sig", "auth", "cookie", "verifier", "bearer", "assertion", "saml", "private"} {
		if strings.Contains(n, w) {
			return secretField
		}
	}
	kind := plainField
	for _, w := range words(name) {
		switch w {
		case "tok", "pin", "otp", "sid", "pw":
			return secretField
		case "code":
			kind = numberField
		}
	}
	return kind
}

// strongName reports whether a field name is one that only credentials
// have, so that its value is hidden whatever it looks like.
func strongName(name string) bool {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	switch strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name)) {
	case "accesstoken", "refreshtoken", "idtoken", "clientsecret", "password", "passwd", "passphrase",
		"apikey", "privatekey", "codeverifier", "sessionid", "jsessionid", "phpsessid":
		return true
	}
	return false
}

// words splits a field name into lower-case words at '_', '-' and
// lower-to-upper case changes: "clientSecret" is client, secret.
func words(name string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(name); i++ {
		split := i == len(name) || name[i] == '_' || name[i] == '-'
		if !split && i > start && 'A' <= name[i] && name[i] <= 'Z' && 'a' <= name[i-1] && name[i-1] <= 'z' {
			out = append(out, strings.ToLower(name[start:i]))
			start = i
			continue
		}
		if split {
			if i > start {
				out = append(out, strings.ToLower(name[start:i]))
			}
			start = i + 1
		}
	}
	return out
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// fieldSpans finds the values of secret-named fields wherever s holds
// one: JSON ("access_token": "…", also with escaped quotes as in a
// quoted error), YAML (access_token: … at the start of a line hides the
// rest of the line), headers (X-Api-Key: …; Authorization and Cookie hide
// the rest of the line), and k=v (forms, queries, logfmt, cookies). A
// value is a quoted string (its inside is hidden), a bracketed list or
// object (its inside), or else a run up to whitespace or one of
// & " ' , ; ) ] } < > \. Inside a line, "name: value" with an unquoted
// name counts only when the value looks like a credential (see
// fieldValue): error chains are written that way too.
func fieldSpans(s string) []span {
	var spans []span
	for i := 0; i < len(s); {
		if !isNameByte(s[i]) || i > 0 && isNameByte(s[i-1]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isNameByte(s[j]) {
			j++
		}
		if n := ownPrefix(s, i, j); n > 0 {
			i += n
			continue
		}
		start, end, ok := fieldValue(s, i, j)
		if !ok {
			i = j
			continue
		}
		if start < end {
			spans = append(spans, span{start, end})
		}
		i = max(end, j)
	}
	return spans
}

// oauthSteps are the step names package oauth writes after "oauth: " in
// its errors (oauth.Step; this package cannot import it): "oauth:
// authorization: login required: …", "oauth: token: token request
// refused: …". Two of them, authorization and token, are also secret
// field names.
var oauthSteps = [...]string{"discovery-PRM", "discovery-AS", "registration", "authorization", "token", "refresh", "scope"}

// ownPrefix returns the length of remotemcp's own error prefix at s[i]
// (the name s[i:j]), 0 if there is none: "oauth: " and, after it, a step
// name with its colon; or the engine's reason "needs authorization: "
// (from "needs", the name being "authorization"). The name "oauth"
// contains "auth", and "authorization" is a header, so without this
// "oauth: discovery-PRM: the MCP URL …" lost its step, and "oauth:
// authorization: login required …" and "needs authorization: initialize:
// …" all their words. Only the prefix is skipped: what follows is looked
// at like any text, so a credential after it is still hidden when it has
// a shape (a scheme, a secret-named field, a URL); a bare token after the
// prefix would not be, but the prefix is followed by an error message,
// not by a header value. "oauth=…", "\"oauth\": …" and a YAML key
// "oauth:" (nothing after the colon on its line) stay fields, and so does
// an Authorization header with any other word, or none, before it.
func ownPrefix(s string, i, j int) int {
	n := ownPrefixLen(s, i, j)
	if n > 0 && tokenLikeAt(s, i+n) {
		// Our words are followed by words; a lone token-shaped value
		// after them ("oauth: sk_live_…") is hidden as before.
		return 0
	}
	return n
}

func ownPrefixLen(s string, i, j int) int {
	if s[i:j] == "authorization" && strings.HasPrefix(s[j:], ": ") && needsBefore(s, i) {
		return j + 2 - i
	}
	if s[i:j] != "oauth" || !strings.HasPrefix(s[j:], ": ") {
		return 0
	}
	k := j + 2
	for _, step := range oauthSteps {
		if strings.HasPrefix(s[k:], step) && strings.HasPrefix(s[k+len(step):], ":") {
			return k + len(step) + 1 - i
		}
	}
	return k - i
}

// tokenLikeAt reports whether the word at s[p] (after blanks) has the
// shape of a credential: 16 or more token characters, not all of them
// lower-case letters (a word of prose).
func tokenLikeAt(s string, p int) bool {
	for p < len(s) && (s[p] == ' ' || s[p] == '\t') {
		p++
	}
	e, lower := p, true
	for e < len(s) && isTokenByte(s[e]) {
		if s[e] < 'a' || s[e] > 'z' {
			lower = false
		}
		e++
	}
	// "access_token=abc" is a field, found by the scan that follows;
	// a token68's '=' are padding at its end.
	if q := strings.IndexByte(s[p:e], '='); q >= 0 && strings.Trim(s[p+q:e], "=") != "" {
		return false
	}
	return e-p >= 16 && !lower
}

func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0
}

// needsBefore reports whether the word "needs" (or "Needs") and a space
// stand right before s[i], the word starting at a word boundary: the
// engine's reason "needs authorization" (engine/servers.go
// reasonNeedsAuth), to which it adds ": " and the library's message.
func needsBefore(s string, i int) bool {
	const w = "needs "
	if i < len(w) || s[i-len(w)+1:i] != w[1:] || s[i-len(w)] != 'n' && s[i-len(w)] != 'N' {
		return false
	}
	return i == len(w) || !isWordByte(s[i-len(w)-1])
}

// fieldValue finds the value of the field whose name is s[i:j], if it is
// a secret field: ok is false when it is not a field or not secret, and
// start == end when there is nothing (left) to hide.
//
// Long: a single left-to-right read from the field name to its value
// (quoted name, separator, spaces, then the heuristics that tell a field
// from prose), each step moving the same index k/v and deciding on what
// the step before found (quotedName, sep, spaced, yaml).
func fieldValue(s string, i, j int) (start, end int, ok bool) {
	kind := classify(s[i:j])
	if kind == plainField {
		return 0, 0, false
	}
	k := j
	quotedName := false
	switch {
	case k < len(s) && (s[k] == '"' || s[k] == '\''):
		if !opensKey(s, i, s[k:k+1]) {
			return 0, 0, false
		}
		quotedName = true
		k++
	case strings.HasPrefix(s[k:], `\"`):
		if !opensKey(s, i, `\"`) {
			return 0, 0, false
		}
		quotedName = true
		k += 2
	}
	spaced := k
	for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
		k++
	}
	if k >= len(s) || s[k] != ':' && s[k] != '=' {
		return 0, 0, false
	}
	sep := s[k]
	spaced = k - spaced
	k++
	if sep == '=' && k < len(s) && s[k] == '=' {
		return 0, 0, false // a comparison, "token == x"
	}
	v := k
	// "k: v", "k = v", but in "k= v" the value of k is empty.
	if sep == ':' || spaced > 0 {
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
	}
	if v >= len(s) || strings.HasPrefix(s[v:], Redacted) {
		return v, v, true
	}
	yaml := sep == ':' && lineStartBefore(s, i) && strings.ContainsAny(s, "\n\r")
	// A header name as the last part of a dotted path ("headers.Authorization:
	// cannot be set") is a field path in an error chain, not a header line:
	// header names have no '.'. A scheme's credential after it is still
	// hidden (schemeSpans), and so is a value that looks like one.
	dottedHeader := kind == headerField && strings.IndexByte(s[i:j], '.') >= 0
	if sep == ':' && !quotedName && (kind != headerField || dottedHeader) && !yaml {
		// "name: value" in a line of prose is as likely an error chain
		// ("oauth: origin not allowed", "auth.token: starts with …") or
		// a host and port as a field. It counts only with a space after
		// the colon, and, unless the name is one that only credentials
		// have, with a value that looks like a credential.
		e := v
		for e < len(s) && !isDelim(s[e]) {
			e++
		}
		if v == k || !strongName(s[i:j]) && (strings.IndexByte(`"'[{`, s[v]) >= 0 || !looksLikeCredential("", s[v:e])) {
			return 0, 0, false
		}
	}
	if sep == ':' && quotedName && !yaml && strings.IndexByte(`"'[{\`, s[v]) < 0 {
		// A quoted name and then a short lower-case word: prose after a
		// quoted value (`create token "deploy key": a name is …`), not a
		// secret. Anything else after a quoted name ('secret': qwerty…,
		// header "X-Api-Key": abc…) is hidden.
		e := v
		for e < len(s) && 'a' <= s[e] && s[e] <= 'z' {
			e++
		}
		if e > v && e-v <= 12 && (e == len(s) || s[e] == ' ' || s[e] == ':' || s[e] == ',') {
			return 0, 0, false
		}
	}
	start, end = valueSpan(s, v, kind, yaml)
	if isKey(s, v, end) {
		// "the authorization: "refresh_token":"…"": the quoted string
		// is the name of the next field, not this one's value; hiding
		// it would hide the name that says a secret follows.
		return 0, 0, false
	}
	if kind == numberField && isNumber(strings.TrimSpace(s[start:end])) {
		return end, end, true
	}
	return start, end, true
}

// opensKey reports whether the name at s[i], followed by the quote q,
// is the end of a quoted key: whether q opens it, right before it or
// before words of the same key ("access_token", "API key"). In Go's
// `Post "https://as/token": dial tcp …` the name "token" (a name starts
// after a '/', which is not a name byte) ends a quoted URL: it is not a
// key, and "dial" is not its value. The price: a quoted key with a '/'
// in it ("x/access_token") is taken for a path too, and its value is
// not hidden. Only name bytes and blanks are looked back over, and the
// quote after the name stops the next look back, so the cost stays
// linear.
func opensKey(s string, i int, q string) bool {
	for i > 0 && (isNameByte(s[i-1]) || s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	return strings.HasSuffix(s[:i], q)
}

// isKey reports whether the value at s[v], whose inside ends at end, is
// a quoted string followed by a colon: a JSON name.
func isKey(s string, v, end int) bool {
	switch {
	case strings.HasPrefix(s[v:], `\"`) && strings.HasPrefix(s[end:], `\"`):
		end += 2
	case (s[v] == '"' || s[v] == '\'') && end < len(s) && s[end] == s[v]:
		end++
	default:
		return false
	}
	for end < len(s) && (s[end] == ' ' || s[end] == '\t') {
		end++
	}
	return end < len(s) && s[end] == ':'
}

// valueSpan returns the part of the value at s[v] to hide; yaml says
// that it is the rest of the line.
func valueSpan(s string, v int, kind fieldKind, yaml bool) (start, end int) {
	switch {
	case strings.HasPrefix(s[v:], `\"`):
		return closeAt(s, v+2, `\"`)
	case s[v] == '"' || s[v] == '\'':
		return closeQuote(s, v+1, s[v])
	case s[v] == '[' || s[v] == '{':
		return closeBracket(s, v)
	case kind == headerField:
		// Keep a known scheme ("Bearer"), hide the credentials after it;
		// an unknown first word may be the credential itself. A header
		// in quotes ("Authorization: …") ends at the closing quote.
		e := lineEnd(s, v, v > 0 && strings.LastIndexByte(s[:v], '"') > strings.LastIndexByte(s[:v], '\n'))
		w := v
		for w < e && isWordByte(s[w]) {
			w++
		}
		if _, known := schemeKind(strings.ToLower(s[v:w])); known && w < e && isSpace(s[w]) {
			for w < e && isSpace(s[w]) {
				w++
			}
			if strings.HasPrefix(s[w:], Redacted) {
				return w, w
			}
			if w < e {
				v = w
			}
		}
		return v, e
	case yaml:
		return v, lineEnd(s, v, false)
	}
	e := v
	for e < len(s) && !isDelim(s[e]) {
		e++
	}
	return v, e
}

// lineEnd is the end of the line that holds s[v], or with quoted the
// first '"', trailing spaces left out.
func lineEnd(s string, v int, quoted bool) int {
	e := v
	for e < len(s) && s[e] != '\n' && s[e] != '\r' && !(quoted && s[e] == '"') {
		e++
	}
	for e > v && (s[e-1] == ' ' || s[e-1] == '\t') {
		e--
	}
	return e
}

// lineStartBefore reports whether only indentation, a YAML list dash or
// an opening quote stands between the start of the line and s[i].
func lineStartBefore(s string, i int) bool {
	j := i - 1
	if j >= 0 && (s[j] == '"' || s[j] == '\'') {
		j--
	}
	for j >= 0 && (s[j] == ' ' || s[j] == '\t') {
		j--
	}
	if j >= 0 && s[j] == '-' {
		j--
		for j >= 0 && (s[j] == ' ' || s[j] == '\t') {
			j--
		}
	}
	return j < 0 || s[j] == '\n' || s[j] == '\r'
}

// closeAt returns the span from v to the next close, or to the end of
// the line when there is none.
func closeAt(s string, v int, close string) (int, int) {
	if strings.HasPrefix(s[v:], Redacted+close) {
		return v, v
	}
	if e := strings.Index(s[v:], close); e >= 0 {
		return v, v + e
	}
	return v, lineEnd(s, v, false)
}

// closeQuote returns the span from v to the quote q that closes a string
// (a backslash escapes it), or to the end of the line.
func closeQuote(s string, v int, q byte) (int, int) {
	if strings.HasPrefix(s[v:], Redacted+string(q)) {
		return v, v
	}
	for e := v; e < len(s); e++ {
		switch s[e] {
		case '\\':
			e++
		case q, '\n', '\r':
			return v, e
		}
	}
	return v, len(s)
}

// closeBracket returns the inside of the bracketed value that opens at
// s[v], or the rest of s when it does not close.
func closeBracket(s string, v int) (int, int) {
	depth := 0
	inString := byte(0)
	for e := v; e < len(s); e++ {
		c := s[e]
		switch {
		case inString != 0:
			if c == '\\' {
				e++
			} else if c == inString {
				inString = 0
			}
		case c == '"':
			inString = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth == 0 {
				if e == v+1 || s[v+1:e] == Redacted {
					return e, e
				}
				return v + 1, e
			}
		}
	}
	// Unclosed: everything after it is hidden. (Up to the end of the line
	// would do, but then every later unclosed value would scan to the end
	// of s again.)
	return v + 1, len(s)
}

func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
