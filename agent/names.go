package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// MaxNameLength is the longest AgentTool name: the limit of OpenAI-style
// function names, which most model providers share.
const MaxNameLength = 64

// hashLen is the length of the stable hash suffix ("_" + 8 hex digits).
const hashLen = 9

// rawName is the unsanitised mcp__{serverId}__{tool}.
func rawName(server, tool string) string { return "mcp__" + server + "__" + tool }

// Sanitize replaces every character outside [A-Za-z0-9_-] with '_' (one
// '_' per rune, and per byte of invalid UTF-8). It does not shorten.
func Sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// hashed cuts a sanitised name so that a "_" and 8 hex digits of a hash of
// (server, tool, n) fit within MaxNameLength. The hash is of the original
// names, so it is stable across rebuilds and processes.
func hashed(sanitized, server, tool string, n int) string {
	h := sha256.New()
	h.Write([]byte(server))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	if n > 0 {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(n)))
	}
	sum := hex.EncodeToString(h.Sum(nil))[:hashLen-1]
	return sanitized[:min(len(sanitized), MaxNameLength-hashLen)] + "_" + sum
}

// ToolName is the AgentTool name of a tool when nothing collides with it:
// mcp__{serverId}__{tool}, sanitised, and cut with a hash suffix when
// longer than MaxNameLength.
func ToolName(server, tool string) string {
	s := Sanitize(rawName(server, tool))
	if len(s) <= MaxNameLength {
		return s
	}
	return hashed(s, server, tool, 0)
}

type toolKey struct{ server, tool string }

// assignNames gives every (server, tool) a unique name. A name that needed
// no change (already valid and short enough) wins a collision, so renaming
// only hits tools whose name was mangled anyway; ties go by server id,
// then tool name. The losers get a hash suffix; if even that is taken
// (practically never), the hash input gets a counter.
func assignNames(keys []toolKey) map[toolKey]string {
	type req struct {
		k     toolKey
		base  string
		exact bool
	}
	reqs := make([]req, len(keys))
	for i, k := range keys {
		raw := rawName(k.server, k.tool)
		base := ToolName(k.server, k.tool)
		reqs[i] = req{k: k, base: base, exact: base == raw}
	}
	slices.SortFunc(reqs, func(a, b req) int {
		if a.exact != b.exact {
			if a.exact {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.k.server, b.k.server); c != 0 {
			return c
		}
		return strings.Compare(a.k.tool, b.k.tool)
	})
	taken := make(map[string]bool, len(reqs))
	out := make(map[toolKey]string, len(reqs))
	for _, r := range reqs {
		name := r.base
		if taken[name] {
			s := Sanitize(rawName(r.k.server, r.k.tool))
			for n := 0; ; n++ {
				name = hashed(s, r.k.server, r.k.tool, n)
				if !taken[name] {
					break
				}
			}
		}
		taken[name] = true
		out[r.k] = name
	}
	return out
}
