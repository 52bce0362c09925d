package store

import (
	"strings"
)

// redacted stands for a password in a connection string shown in a
// message.
const redacted = "[redacted]"

// unshownDSN stands for a connection string redactDSN cannot tell the
// passwords of: one that does not parse (pgx refuses it too, and says
// why), or one with a password stranded outside its place.
const unshownDSN = "(connection string not shown: it is malformed, and a password in it could not be told apart)"

// redactDSN is dsn for messages: every password in it (the password of a
// postgres:// URL's user, and the password and sslpassword parameters)
// replaced by [redacted], the rest as it was.
//
// It reads dsn by the rules pgx reads it by, libpq's (a URL only after
// "postgres://" or "postgresql://"; in key=value form quoted values,
// backslash escapes and spaces around '='), so what pgx would take for a
// password is never shown, however it is spelled. A string it cannot
// read, which pgx refuses too, is not shown at all: there the password's
// place is unknown. Neither is one where a password was likely meant but
// landed elsewhere: a URL with an '@' left in its hosts or database name
// (postgres://u:pa@ss@host/db: pgx reads the password "pa"), or a
// key=value string whose keys are no names (mysql://u:pw@host/db?x=y).
func redactDSN(dsn string) string {
	if strings.IndexByte(dsn, 0) >= 0 {
		return unshownDSN
	}
	var (
		out string
		ok  bool
	)
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		out, ok = redactURL(dsn)
	} else {
		out, ok = redactKeywordValue(dsn)
	}
	if !ok {
		return unshownDSN
	}
	return out
}

// secretKey reports whether a connection parameter holds a secret: pgx's
// password and sslpassword, and, to be safe, any other key that names a
// password.
func secretKey(key string) bool {
	return strings.Contains(strings.ToLower(key), "password")
}

// redactURL redacts a postgres:// or postgresql:// URL as pgx's
// parseURLSettings reads it.
func redactURL(dsn string) (string, bool) {
	scheme := "postgres://"
	if strings.HasPrefix(dsn, "postgresql://") {
		scheme = "postgresql://"
	}
	var b strings.Builder
	b.WriteString(scheme)
	p := dsn[len(scheme):]

	// User info ends at the first '@' before any '/'; the password
	// follows the first ':' in it.
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		user, password, hasPassword := strings.Cut(p[:i], ":")
		b.WriteString(user)
		if hasPassword {
			b.WriteByte(':')
			if password != "" {
				b.WriteString(redacted)
			}
		}
		b.WriteByte('@')
		p = p[i+1:]
	}

	q, ok := urlQueryStart(p)
	if !ok {
		return "", false
	}
	if q < 0 {
		q = len(p)
	}
	if strings.IndexByte(p[:q], '@') >= 0 {
		return "", false // a password's end stranded in the host or database name
	}
	if q == len(p) {
		b.WriteString(p)
		return b.String(), true
	}
	b.WriteString(p[:q+1])
	for n, pair := range strings.Split(p[q+1:], "&") {
		if n > 0 {
			b.WriteByte('&')
		}
		rawKey, rawValue, found := strings.Cut(pair, "=")
		if !found || strings.IndexByte(rawValue, '=') >= 0 {
			return "", false
		}
		key, ok := uriDecodeKey(rawKey)
		if !ok {
			return "", false
		}
		b.WriteString(rawKey)
		b.WriteByte('=')
		if secretKey(key) && rawValue != "" {
			b.WriteString(redacted)
		} else {
			b.WriteString(rawValue)
		}
	}
	return b.String(), true
}

// urlQueryStart returns where the query ('?') of the rest of a URL after
// its user info begins, -1 when there is none, as pgx finds it: past a
// list of hosts (an IPv6 one in brackets, which may hold a '?'), their
// ports, and the database name. ok is false for a bracket pgx refuses.
func urlQueryStart(p string) (at int, ok bool) {
	i := 0
	for {
		if i < len(p) && p[i] == '[' {
			end := strings.IndexByte(p[i:], ']')
			if end < 0 {
				return 0, false
			}
			i += end + 1
			if i < len(p) && !strings.ContainsRune(":/?,", rune(p[i])) {
				return 0, false
			}
		} else {
			end := strings.IndexAny(p[i:], ":/?,")
			if end < 0 {
				return -1, true
			}
			i += end
		}
		if i < len(p) && p[i] == ':' {
			end := strings.IndexAny(p[i+1:], "/?,")
			if end < 0 {
				return -1, true
			}
			i += 1 + end
		}
		if i < len(p) && p[i] == ',' {
			i++
			continue
		}
		break
	}
	if i < len(p) && p[i] == '/' {
		end := strings.IndexByte(p[i:], '?')
		if end < 0 {
			return -1, true
		}
		return i + end, true
	}
	if i < len(p) && p[i] == '?' {
		return i, true
	}
	return -1, true
}

// uriDecodeKey percent-decodes a URL query key as pgx does: surrounding
// spaces dropped, none inside, %XX with two hex digits, never %00.
func uriDecodeKey(raw string) (string, bool) {
	raw = strings.Trim(raw, " ")
	if strings.IndexByte(raw, ' ') >= 0 {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] != '%' {
			b.WriteByte(raw[i])
			continue
		}
		if i+2 >= len(raw) {
			return "", false
		}
		hi, ok1 := unhex(raw[i+1])
		lo, ok2 := unhex(raw[i+2])
		if !ok1 || !ok2 || hi == 0 && lo == 0 {
			return "", false
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// isKVSpace is the white space of key=value strings (C's isspace).
func isKVSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// trimKVSpace drops leading white space.
func trimKVSpace(s string) string {
	return strings.TrimLeft(s, " \t\n\r\v\f")
}

// kvKeyName reports whether key is a parameter name: a libpq keyword or
// a server setting (letters, digits, '_', '.').
func kvKeyName(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// redactKeywordValue redacts a key=value string as pgx's
// parseKeywordValueSettings reads it: values unquoted (up to white space,
// '\' escaping the next byte) or in single quotes ('\' escaping too),
// white space allowed around '='.
func redactKeywordValue(dsn string) (string, bool) {
	var b strings.Builder
	s := dsn
	// Keep the leading white space as it was.
	lead := len(s) - len(trimKVSpace(s))
	b.WriteString(s[:lead])
	s = s[lead:]
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return "", false
		}
		key := strings.Trim(s[:eq], " \t\n\r\v\f")
		if !kvKeyName(key) {
			return "", false
		}
		secret := secretKey(key)
		afterEq := trimKVSpace(s[eq+1:])
		b.WriteString(s[:len(s)-len(afterEq)]) // key, '=', spaces
		s = afterEq
		var value string // the value as written, quotes included
		switch {
		case s == "":
		case s[0] != '\'':
			end := 0
			for ; end < len(s) && !isKVSpace(s[end]); end++ {
				if s[end] == '\\' {
					end++
					if end == len(s) {
						break
					}
				}
			}
			value, s = s[:end], s[end:]
			if secret && value != "" {
				value = redacted
			}
		default:
			end := 1
			for ; end < len(s) && s[end] != '\''; end++ {
				if s[end] == '\\' {
					end++
					if end == len(s) {
						return "", false
					}
				}
			}
			if end == len(s) {
				return "", false
			}
			value, s = s[:end+1], s[end+1:]
			if secret && value != "''" {
				value = "'" + redacted + "'"
			}
		}
		b.WriteString(value)
		rest := trimKVSpace(s)
		b.WriteString(s[:len(s)-len(rest)])
		s = rest
	}
	return b.String(), true
}
