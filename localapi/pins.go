package localapi

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Tool pinning (issue #20 item 3): the first definition seen of each tool
// is pinned; a changed one holds the tool until the person accepts it.

// ToolDefinition is what is pinned of a tool: untrusted server text and
// JSON, shown as such.
type ToolDefinition struct {
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"inputSchema,omitempty"`
	OutputSchema any    `json:"outputSchema,omitempty"`
	Annotations  any    `json:"annotations,omitempty"`
}

// DefinitionChange is one difference between the pinned definition and
// the new one: Path names the part ("description",
// "inputSchema.properties.key", "inputSchema.required"), Kind is added,
// removed or changed, Old and New the text or canonical JSON.
type DefinitionChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// HeldTool is a tool held because its definition changed since it was
// pinned: not offered to the agent or hosts, its calls refused.
type HeldTool struct {
	ServerID string `json:"serverId"`
	Tool     string `json:"tool"`
	// Old is the pinned definition, New the changed one.
	Old     ToolDefinition     `json:"old"`
	New     ToolDefinition     `json:"new"`
	OldHash string             `json:"oldHash"`
	NewHash string             `json:"newHash"`
	Pinned  time.Time          `json:"pinned"`
	Seen    time.Time          `json:"seen"`
	Changes []DefinitionChange `json:"changes"`
	// Unpinnable, when set, says why the tool's definition cannot be
	// pinned: it is never offered, and there is no change to accept (the
	// other fields but ServerID and Tool are empty).
	Unpinnable string `json:"unpinnable,omitempty"`
}

// AcceptToolsRequest accepts held definitions of one server: the named
// tools, or All. Expect maps a tool to the NewHash the person reviewed;
// a definition that changed again since is refused (conflict).
type AcceptToolsRequest struct {
	Tools  []string          `json:"tools,omitempty"`
	All    bool              `json:"all,omitempty"`
	Expect map[string]string `json:"expect,omitempty"`
}

// AcceptToolsResult names the tools whose new definitions were pinned.
type AcceptToolsResult struct {
	ServerID string   `json:"serverId"`
	Accepted []string `json:"accepted"`
}

// PinReviewer is implemented by an engine that pins tool definitions
// (the remotemcp engine does): GET /api/held-tools[?server=ID] and POST
// /api/servers/{id}/held-tools/accept.
type PinReviewer interface {
	HeldTools(ctx context.Context, serverID string) ([]HeldTool, error)
	AcceptTools(ctx context.Context, serverID string, req AcceptToolsRequest) (*AcceptToolsResult, error)
}

var _ PinReviewer = (*Client)(nil)

// HeldTools lists the held tools of a server, or of all ("").
func (c *Client) HeldTools(ctx context.Context, serverID string) ([]HeldTool, error) {
	var q url.Values
	if serverID != "" {
		q = url.Values{"server": {serverID}}
	}
	return list[HeldTool](ctx, c, "/api/held-tools", q)
}

// AcceptTools pins the new definitions of held tools of a server.
func (c *Client) AcceptTools(ctx context.Context, serverID string, req AcceptToolsRequest) (*AcceptToolsResult, error) {
	return send[AcceptToolsResult](ctx, c, http.MethodPost, serverPath(serverID, "held-tools/accept"), req)
}
