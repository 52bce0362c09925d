package session

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is a catalog category.
type Kind int

// The catalog categories, each refreshed and committed on its own (R4.4).
const (
	KindTools Kind = iota
	KindPrompts
	KindResources
	KindTemplates
	numKinds
)

// AllKinds lists every category.
var AllKinds = []Kind{KindTools, KindPrompts, KindResources, KindTemplates}

func (k Kind) String() string {
	switch k {
	case KindTools:
		return "tools"
	case KindPrompts:
		return "prompts"
	case KindResources:
		return "resources"
	case KindTemplates:
		return "resource templates"
	}
	return "unknown"
}

// Tool is a server tool with the raw bytes of its input schema as the server
// sent them (R4.1: the model provider must see $ref, $defs and 2020-12
// keywords unchanged). A catalog decoded from storage (DecodeCatalog)
// keeps the bytes only: its Tool.InputSchema is nil.
type Tool struct {
	*mcp.Tool
	RawInputSchema json.RawMessage
	// RawOutputSchema and RawMeta are the server's bytes of the tool's
	// outputSchema and _meta (nil when it sent none), so that the hosts of
	// the MCP front end get them unchanged (issue #19 item 4). An
	// outputSchema that is not a JSON object is left out of the catalog
	// (Tool.OutputSchema too), with a log line; the tool stays.
	RawOutputSchema json.RawMessage
	RawMeta         json.RawMessage
}

// Catalog is an immutable snapshot of a server's capabilities. Each
// category carries the generation of the refresh that committed it; a
// category whose latest refresh failed keeps its last good list and records
// the failure in Errors (R4.4).
type Catalog struct {
	Tools     []Tool
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate
	// Generations holds, per Kind, the generation of the committed list.
	Generations [numKinds]uint64
	// Errors holds, per Kind, the error of the latest failed refresh (nil
	// when the latest refresh committed).
	Errors [numKinds]error
	// Instructions are the server's instructions from initialize:
	// untrusted server text, at most MaxInstructions bytes.
	Instructions string
	// HeldTools names the tools the manager left out of this catalog
	// because their definition changed since it was pinned (issue #20
	// item 3); never set on a session's own catalog, never stored.
	HeldTools []string
	// Unpinnable maps the held tools whose definition cannot be pinned
	// (there is no change to review; they are never offered) to why, for
	// the person; nil when none. Set with HeldTools only.
	Unpinnable map[string]string
}

// Supported reports whether the server advertised the category.
func supported(caps *mcp.ServerCapabilities, k Kind) bool {
	if caps == nil {
		return false
	}
	switch k {
	case KindTools:
		return caps.Tools != nil
	case KindPrompts:
		return caps.Prompts != nil
	case KindResources, KindTemplates:
		return caps.Resources != nil
	}
	return false
}
