package frontend

import (
	"net/url"
	"strings"

	"github.com/remotemcp/remotemcp/agent"
)

// MaxNameLength is the longest front-end tool or prompt name. Hosts add
// their own prefix (Claude's mcp__remotemcp__ is 16 characters of a
// 64-character limit), so the names remotemcp gives are at most 48.
const MaxNameLength = 48

// URIScheme is the scheme of the URIs given to resources whose own URI
// more than one enabled server lists: remotemcp://{server}/{escaped URI}.
const URIScheme = "remotemcp"

// Names gives every (server, name) its front-end name {server}__{name}:
// sanitised, at most MaxNameLength characters, and unique, by the rules
// of the agent's tool names (R4.1).
func Names(keys []agent.NameKey) map[agent.NameKey]string {
	return agent.AssignNames("", MaxNameLength, keys)
}

// ExposedURI is the URI under which a resource (or a URI template) of
// server is offered: its own when unique is set (no other enabled server
// lists it), else remotemcp://{server}/{url-escaped original}. A
// template's braces are kept, so the host can still fill it in.
func ExposedURI(server, uri string, unique bool) string {
	if unique {
		return uri
	}
	esc := url.PathEscape(uri)
	esc = strings.NewReplacer("%7B", "{", "%7D", "}").Replace(esc)
	return URIScheme + "://" + url.PathEscape(server) + "/" + esc
}

// OriginalURI undoes ExposedURI for a URI the host asks for: the server's
// own URI, given the server the exposed URI was made for.
func OriginalURI(server, exposed string) string {
	rest, ok := strings.CutPrefix(exposed, URIScheme+"://"+url.PathEscape(server)+"/")
	if !ok {
		return exposed
	}
	if u, err := url.PathUnescape(rest); err == nil {
		return u
	}
	return rest
}
