// Package redact hides secrets in text that is logged or shown: error
// messages, URLs, headers, JSON, YAML and form bodies quoted in them.
//
// URLs are redacted by allowlist: every query value is hidden unless its
// key is known to be harmless (see safeQueryKey), and so is any password
// or bare user in the authority. Everywhere else the rules recognise the
// shapes secrets come in: the credentials of an Authorization header or
// of a scheme such as "Bearer …", and the values of fields whose names
// speak of tokens, secrets, passwords, keys, sessions and the like, in
// JSON, YAML, header and k=v form, in any letter case and in camelCase,
// snake_case or kebab-case.
package redact

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
)

// Redacted replaces every hidden value.
const Redacted = "[redacted]"

// safeQueryKey reports whether the values of query key k may be shown:
// paging, language and format switches, nothing a server would accept as
// a credential. Every other key is hidden, because a server URL may carry
// its credential under any name (?k=, ?apiKey=, ?x-token=, ?sig=, ?auth=).
// The list is short on purpose; a key missing from it costs a "[redacted]"
// in a status line, a key wrongly on it leaks a credential.
func safeQueryKey(k string) bool {
	switch strings.ToLower(k) {
	case "page", "per_page", "page_size", "limit", "offset", "lang", "locale", "version", "v", "format", "mode":
		return true
	}
	return false
}

// Text returns s with secrets replaced by "[redacted]": the query values
// (but for a few harmless keys) and user information of every URL in it,
// the credentials of every Authorization (or Proxy-Authorization) header,
// of every "Bearer …", "DPoP …", "Basic …", "Digest …" and similar scheme
// mention, and the values of secret-named fields. Text is idempotent, and
// its cost is linear in the length of s.
func Text(s string) string {
	s = urlPattern.ReplaceAllStringFunc(s, func(u string) string {
		end := trimURL(u)
		return URL(u[:end]) + u[end:]
	})
	// The other rules see the same text, and what they hide is merged:
	// applied one after the other, one could hide the name or scheme
	// that tells the other a secret follows ("token=Bearer X").
	return hideSpans(s, append(schemeSpans(s), fieldSpans(s)...))
}

// span is a part of a text to hide, [start, end).
type span struct{ start, end int }

// hideSpans replaces each span of s, overlapping and adjacent ones
// merged, with "[redacted]".
func hideSpans(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	done := 0
	for k := 0; k < len(spans); {
		sp := spans[k]
		for k++; k < len(spans) && spans[k].start <= sp.end; k++ {
			sp.end = max(sp.end, spans[k].end)
		}
		if sp.start < done {
			sp.start = done
		}
		if sp.start >= sp.end {
			continue
		}
		b.WriteString(s[done:sp.start])
		b.WriteString(Redacted)
		done = sp.end
	}
	b.WriteString(s[done:])
	return b.String()
}

// urlPattern finds absolute URLs in free text; trailing punctuation is
// trimmed before the URL is redacted, since prose puts it there.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>\x60\\]+`)

// trimURL returns the length of u without the punctuation that prose puts
// after a URL: a period, a comma, a closing bracket that was not opened
// within the URL (so "[redacted]" stays whole).
func trimURL(u string) int {
	const opens, closes = "([{", ")]}"
	var open, closed [3]int
	for i := range 3 {
		open[i], closed[i] = strings.Count(u, opens[i:i+1]), strings.Count(u, closes[i:i+1])
	}
	end := len(u)
	for end > 0 {
		c := u[end-1]
		if k := strings.IndexByte(closes, c); k >= 0 {
			if closed[k] <= open[k] {
				return end
			}
			closed[k]--
		} else if strings.IndexByte(".,;:!?'", c) < 0 {
			return end
		}
		end--
	}
	return end
}

// URL returns u fit to show: a password in its user information is
// replaced, and a user without a password too (a lone user is often a
// token, as in https://TOKEN@host/); every query and fragment value is
// replaced unless its key is a harmless one (page, per_page, page_size,
// limit, offset, lang, locale, version, v, format, mode), and a parameter
// without a value is replaced whole (but "…", which package oauth writes
// for a query it left out). Path parameters with secret names
// (";jsessionid=…") are hidden as in Text. URL works on malformed input
// too: it never fails, and it never returns a value it would hide.
func URL(u string) string {
	rest := u
	var b strings.Builder
	b.Grow(len(u) + 16)
	// Scheme and authority.
	if i := strings.Index(rest, "://"); i > 0 && validScheme(rest[:i]) {
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		auth := rest[:end]
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			user, _, hasPass := strings.Cut(auth[:at], ":")
			switch {
			case hasPass:
				b.WriteString(user + ":" + Redacted)
			case user == "":
			default:
				b.WriteString(Redacted)
			}
			auth = auth[at:]
		}
		b.WriteString(auth)
		rest = rest[end:]
	}
	path, query, fragment := rest, "", ""
	hasQuery, hasFragment := false, false
	if i := strings.IndexByte(path, '#'); i >= 0 {
		path, fragment, hasFragment = path[:i], path[i+1:], true
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, query, hasQuery = path[:i], path[i+1:], true
	}
	b.WriteString(hideSpans(path, fieldSpans(path)))
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(redactQuery(query))
	}
	if hasFragment {
		b.WriteByte('#')
		if strings.ContainsAny(fragment, "=&") {
			b.WriteString(redactQuery(fragment))
		} else {
			b.WriteString(fragment)
		}
	}
	return b.String()
}

func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// redactQuery hides the values of a query (or fragment) but for safe
// keys; parameters are separated by '&' or ';'.
func redactQuery(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	for i := 0; ; {
		end := strings.IndexAny(q[i:], "&;")
		if end < 0 {
			end = len(q)
		} else {
			end += i
		}
		param := q[i:end]
		k, _, hasValue := strings.Cut(param, "=")
		switch {
		case param == "" || param == Redacted || param == "…" || hasValue && param[len(k)+1:] == "":
			// "…" is what package oauth writes for a query it left out.
			b.WriteString(param)
		case !hasValue:
			if safeQueryKey(unescapeKey(k)) {
				b.WriteString(param)
			} else {
				b.WriteString(Redacted)
			}
		case safeQueryKey(unescapeKey(k)):
			b.WriteString(param)
		default:
			b.WriteString(k + "=" + Redacted)
		}
		if end == len(q) {
			return b.String()
		}
		b.WriteByte(q[end])
		i = end + 1
	}
}

// unescapeKey undoes the percent-encoding of a query key, so that
// "p%61ge" is not taken for a key other than "page" — nor, which matters,
// an encoded secret key for a safe one. Malformed escapes stay as they
// are, which no safe key matches.
func unescapeKey(k string) string {
	if !strings.ContainsAny(k, "%+") {
		return k
	}
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '+':
			b.WriteByte(' ')
		case c == '%' && i+2 < len(k) && isHex(k[i+1]) && isHex(k[i+2]):
			b.WriteByte(unhex(k[i+1])<<4 | unhex(k[i+2]))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// schemeKind says whether word (lower case) is an authorization scheme,
// and whether it is clear: a credential after a clear scheme name is
// always hidden, while the other names are English words too ("basic",
// "token"), so what follows them is hidden only when it looks like a
// credential.
func schemeKind(word string) (clear, ok bool) {
	switch word {
	case "bearer", "dpop", "digest", "aws4-hmac-sha256":
		return true, true
	case "basic", "token", "negotiate", "ntlm", "mac", "hoba", "mutual", "vapid", "gnap", "privatetoken", "scram-sha-1", "scram-sha-256":
		return false, true
	}
	return false, false
}

// schemeSpans finds the credential after each scheme name in s: in
// "Bearer abc", the "abc". Digest credentials are a list of parameters
// with quotes in them, so everything after "Digest" to the end of the
// line is hidden. A scheme followed by parameters (name=value, as in a
// WWW-Authenticate challenge) is left to fieldSpans, which finds the
// secret-named ones. Every word is looked at, also one that is itself
// the credential of the word before ("Bearer bearer X").
func schemeSpans(s string) []span {
	var spans []span
	// lineEnd is where the line of the last "Digest" ends: a Digest
	// value runs to it, and the next Digest on the same line (after one
	// whose value was not hidden) reuses it instead of scanning again,
	// which made "Digest [redacted] Digest …" quadratic.
	lineEnd := -1
	for i := 0; i < len(s); {
		if !wordStart(s, i) {
			i++
			continue
		}
		j := i
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		word := strings.ToLower(s[i:j])
		i = j
		clear, ok := schemeKind(word)
		if !ok || j >= len(s) || !isSpace(s[j]) {
			continue
		}
		v := j
		for v < len(s) && isSpace(s[v]) {
			v++
		}
		end := v
		if word == "digest" {
			if lineEnd < v {
				lineEnd = v
				for lineEnd < len(s) && s[lineEnd] != '\n' && s[lineEnd] != '\r' {
					lineEnd++
				}
			}
			end = lineEnd
		} else {
			for end < len(s) && !isDelim(s[end]) {
				end++
			}
		}
		val := s[v:end]
		if val != "" && !strings.HasPrefix(s[v:], Redacted) && (word == "digest" || !isParam(val, s[end:])) &&
			!proseAfterScheme(val) && (clear || looksLikeCredential(word, val)) {
			spans = append(spans, span{v, end})
			if word == "digest" {
				i = end // all of the line is hidden: nothing in it to look at
			}
		}
	}
	return spans
}

// proseAfterScheme reports whether val (from just after a scheme name
// to the end of the value) starts with a word that makes the scheme name
// prose: "a bearer token", "the Bearer challenge", "digest
// authentication". remotemcp's own messages say these, and no credential
// is one of these words.
func proseAfterScheme(val string) bool {
	w := 0
	for w < len(val) && isWordByte(val[w]) {
		w++
	}
	if w < len(val) && !isDelim(val[w]) {
		return false // "token.abc", "token=": not a lone word
	}
	switch strings.ToLower(val[:w]) {
	case "token", "tokens", "challenge", "challenges", "server", "servers", "header", "headers",
		"credential", "credentials", "auth", "authentication", "authorization", "scheme", "instead",
		"needs", "is", "or", "and", "only", "must":
		return true
	}
	return false
}

// isParam reports whether val, followed by after, is an auth parameter
// (realm="x", error=invalid_token) rather than a token68 credential,
// whose only '=' are padding at its end.
func isParam(val, after string) bool {
	i := strings.IndexByte(val, '=')
	if i < 0 {
		return false
	}
	if strings.Trim(val[i:], "=") != "" {
		return true
	}
	return strings.HasPrefix(after, `"`) || strings.HasPrefix(after, "'")
}

// looksLikeCredential tells a credential after an ambiguous scheme word
// from prose: "Basic dXNlcjpwYXNz" and "Token 3f9a…" are credentials,
// "basic authentication" and "token expired" are not.
func looksLikeCredential(scheme, v string) bool {
	if isFlag(v) {
		return false // "--bearer-env": a command-line flag, named in advice
	}
	if scheme == "basic" {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			if d, err := enc.DecodeString(v); err == nil && strings.Contains(string(d), ":") {
				return true
			}
		}
	}
	if len(v) < 4 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if '0' <= c && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0 || i > 0 && 'A' <= c && c <= 'Z' {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

func wordStart(s string, i int) bool { return isWordByte(s[i]) && (i == 0 || !isWordByte(s[i-1])) }

func isSpace(c byte) bool { return c == ' ' || '\t' <= c && c <= '\r' }

// isDelim reports whether c ends an unquoted value: whitespace and
// controls, and the punctuation that separates fields or closes what the
// value was quoted or bracketed in.
func isDelim(c byte) bool {
	return c <= ' ' || c == 0x7f || strings.IndexByte("&\"',;)]}<>\\", c) >= 0
}

// isFlag reports whether v is a long command-line flag: "--" and a
// lower-case name ("--bearer-env").
func isFlag(v string) bool {
	if len(v) < 3 || !strings.HasPrefix(v, "--") {
		return false
	}
	for i := 2; i < len(v); i++ {
		if c := v[i]; !('a' <= c && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}
