package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/pin"
	"github.com/remotemcp/remotemcp/store"
)

var _ localapi.PinReviewer = (*Engine)(nil)

// HeldTools lists the tools held because their definition changed since
// it was pinned (issue #20 item 3), of one server or ("") of all, with
// the old and new definitions and what changed.
func (c *Engine) HeldTools(ctx context.Context, serverID string) ([]localapi.HeldTool, error) {
	l, err := c.Manager.HeldChanges(ctx, serverID)
	if err != nil {
		return nil, fail(err)
	}
	out := make([]localapi.HeldTool, 0, len(l))
	for _, h := range l {
		if h.Unpinnable != "" {
			out = append(out, localapi.HeldTool{ServerID: h.ServerID, Tool: h.Tool, Unpinnable: h.Unpinnable, Changes: []localapi.DefinitionChange{}})
			continue
		}
		v := localapi.HeldTool{ServerID: h.ServerID, Tool: h.Tool, Old: definitionView(h.Old), New: definitionView(h.New),
			OldHash: h.OldHash, NewHash: h.NewHash, Pinned: h.Pinned, Seen: h.Seen, Changes: make([]localapi.DefinitionChange, len(h.Changes))}
		for i, ch := range h.Changes {
			v.Changes[i] = localapi.DefinitionChange{Path: ch.Path, Kind: ch.Kind, Old: ch.Old, New: ch.New}
		}
		out = append(out, v)
	}
	return out, nil
}

// definitionView is a pinned definition with its JSON parts as JSON.
func definitionView(d pin.Definition) localapi.ToolDefinition {
	raw := func(b []byte) any {
		if len(b) == 0 {
			return nil
		}
		return json.RawMessage(b)
	}
	return localapi.ToolDefinition{Title: d.Title, Description: d.Description,
		InputSchema: raw(d.InputSchema), OutputSchema: raw(d.OutputSchema), Annotations: raw(d.Annotations)}
}

// AcceptTools pins the new definitions of a server's held tools, so they
// are offered again (remotemcp tools accept; the page's Accept).
func (c *Engine) AcceptTools(ctx context.Context, serverID string, req localapi.AcceptToolsRequest) (*localapi.AcceptToolsResult, error) {
	switch {
	case req.All && len(req.Tools) > 0:
		return nil, badRequest("tools", "name tools or ask for all of them, not both")
	case !req.All && len(req.Tools) == 0:
		return nil, badRequest("tools", "name the tools to accept, or ask for all of them (remotemcp tools accept %s --all)", serverID)
	case slices.Contains(req.Tools, ""):
		return nil, badRequest("tools", "a tool name is empty")
	}
	tools := req.Tools
	if req.All {
		tools = nil
	}
	got, err := c.Manager.AcceptTools(ctx, serverID, tools, req.Expect)
	switch {
	case errors.Is(err, store.ErrHeldChanged):
		return nil, conflict("%v (remotemcp tools review %s)", err, serverID)
	case err != nil:
		return nil, fail(err)
	}
	if got == nil {
		got = []string{}
	}
	if c.hub != nil {
		c.hub.bump(topicServers)
	}
	return &localapi.AcceptToolsResult{ServerID: serverID, Accepted: got}, nil
}
