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

// namer builds names prefix{server}__{tool} of at most max characters with
// the rules of R4.1: the agent's (mcp__, 64) and the MCP front end's
// ("", 48, since hosts add their own prefix) differ only in these two.
type namer struct {
	prefix string
	max    int
}

// agentNames are the AgentTool names.
var agentNames = namer{prefix: "mcp__", max: MaxNameLength}

func (n namer) raw(server, tool string) string { return n.prefix + server + "__" + tool }

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
func (nm namer) hashed(sanitized, server, tool string, n int) string {
	h := sha256.New()
	h.Write([]byte(server))
	h.Write([]byte{0})
	h.Write([]byte(tool))
	if n > 0 {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(n)))
	}
	sum := hex.EncodeToString(h.Sum(nil))[:hashLen-1]
	return sanitized[:min(len(sanitized), nm.max-hashLen)] + "_" + sum
}

// ToolName is the AgentTool name of a tool when nothing collides with it:
// mcp__{serverId}__{tool}, sanitised, and cut with a hash suffix when
// longer than MaxNameLength.
func ToolName(server, tool string) string { return agentNames.name(server, tool) }

func (nm namer) name(server, tool string) string {
	s := Sanitize(nm.raw(server, tool))
	if len(s) <= nm.max {
		return s
	}
	return nm.hashed(s, server, tool, 0)
}

type toolKey struct{ server, tool string }

// NameKey is one (server, name) pair to name with [AssignNames].
type NameKey struct{ Server, Name string }

// AssignNames gives every key a unique name {prefix}{server}__{name} of
// at most maxLen characters (at least 16), by the rules of the AgentTool
// names (R4.1): sanitised, cut with a stable hash suffix when too long,
// and on a collision the name that needed no change wins. The MCP front
// end uses it with prefix "" and 48.
func AssignNames(prefix string, maxLen int, keys []NameKey) map[NameKey]string {
	nm := namer{prefix: prefix, max: max(maxLen, 16)}
	tk := make([]toolKey, len(keys))
	for i, k := range keys {
		tk[i] = toolKey{k.Server, k.Name}
	}
	out := make(map[NameKey]string, len(keys))
	for k, v := range nm.assign(tk) {
		out[NameKey{k.server, k.tool}] = v
	}
	return out
}

// assignNames gives every (server, tool) a unique name. A name that needed
// no change (already valid and short enough) wins a collision, so renaming
// only hits tools whose name was mangled anyway; ties go by server id,
// then tool name. The losers get a hash suffix; if even that is taken
// (practically never), the hash input gets a counter.
func assignNames(keys []toolKey) map[toolKey]string { return agentNames.assign(keys) }

func (nm namer) assign(keys []toolKey) map[toolKey]string {
	type req struct {
		k     toolKey
		base  string
		exact bool
	}
	reqs := make([]req, len(keys))
	for i, k := range keys {
		raw := nm.raw(k.server, k.tool)
		base := nm.name(k.server, k.tool)
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
			s := Sanitize(nm.raw(r.k.server, r.k.tool))
			for n := 0; ; n++ {
				name = nm.hashed(s, r.k.server, r.k.tool, n)
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
