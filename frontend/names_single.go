package frontend

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/remotemcp/remotemcp/agent"
)

// maxMCPName is the longest tool or prompt name MCP allows (SEP-986: 1 to
// 128 characters of A-Z, a-z, 0-9, '_', '-' and '.').
const maxMCPName = 128

// ValidName reports whether name is a tool or prompt name as MCP defines
// it (SEP-986): 1 to 128 characters, each an ASCII letter or digit, '_',
// '-' or '.'.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > maxMCPName {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// SingleServerNames are the names offered in single-server mode
// ("remotemcp mcp --server ID"): the server's own where they are valid MCP
// names (ValidName), so a host sees the server as it would directly. Any
// other (tag, zero-width, bidi or look-alike characters, spaces, an empty
// or over-long name) is renamed as aggregate mode renames: sanitised
// (agent.Sanitize), cut to MaxNameLength with "_" and 8 hex digits of a
// hash of (server, name), so the name stays stable across listings and
// processes and never equals a valid name of the server (issue #20 item
// 3, review finding 3). Renaming rather than leaving the tool out keeps
// the tool usable; its title and description, shown to the host, say
// what it is.
func SingleServerNames(keys []agent.NameKey) map[agent.NameKey]string {
	out := make(map[agent.NameKey]string, len(keys))
	taken := make(map[string]bool, len(keys))
	var bad []agent.NameKey
	for _, k := range keys {
		if ValidName(k.Name) {
			out[k] = k.Name
			taken[k.Name] = true
		} else {
			bad = append(bad, k)
		}
	}
	// In a fixed order, so that a collision of hashes (practically never)
	// goes the same way every time.
	slices.SortFunc(bad, func(a, b agent.NameKey) int {
		if a.Server != b.Server {
			return strings.Compare(a.Server, b.Server)
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, k := range bad {
		s := agent.Sanitize(k.Name)
		for n := 0; ; n++ {
			name := hashedName(s, k, n)
			if !taken[name] {
				out[k], taken[name] = name, true
				break
			}
		}
	}
	return out
}

// hashedName is sanitized cut to fit "_" and 8 hex digits of a hash of
// the server, the name and n (n > 0 only after a collision).
func hashedName(sanitized string, k agent.NameKey, n int) string {
	h := sha256.New()
	h.Write([]byte(k.Server))
	h.Write([]byte{0})
	h.Write([]byte(k.Name))
	if n > 0 {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(n)))
	}
	const suffix = 9 // "_" + 8 hex digits
	return sanitized[:min(len(sanitized), MaxNameLength-suffix)] + "_" + hex.EncodeToString(h.Sum(nil))[:suffix-1]
}
