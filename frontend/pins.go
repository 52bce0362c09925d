package frontend

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/internal/advice"
	"github.com/remotemcp/remotemcp/localapi"
)

// heldCall answers a host's call of a tool that is held because its
// definition changed (issue #20 item 3). The front end no longer offers
// such a tool (the host was told list_changed), so go-sdk refuses the
// call as an unknown tool; a host that calls it anyway (it listed before
// the change reached it) is told why instead, and how the person reviews
// the change. Nothing is sent to the server either way.
func (f *Frontend) heldCall(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil || method != "tools/call" {
			return res, err
		}
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if !ok || p == nil {
			return res, err
		}
		server, tool, why, held := f.heldName(ctx, p.Name)
		switch {
		case !held:
			return res, err
		case why != "":
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
				"Tool %q of MCP server %q %s; the call was not sent. There is nothing for the user to review or accept.",
				tool, server, why)}}}, nil
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: advice.Held(tool, server)}}}, nil
	}
}

// heldName reports whether name is the offered name of a held tool, and
// for one that cannot be pinned why. Names are given as syncTools gives
// them: to the offered and the held tools together (a held tool was
// offered beside the others, and when names collided and were hashed,
// that hashed name is what the host calls; issue #20 item 3 review).
func (f *Frontend) heldName(ctx context.Context, name string) (server, tool, why string, held bool) {
	servers, err := f.o.Engine.Servers(ctx)
	if err != nil {
		return "", "", "", false
	}
	var heldKeys []agent.NameKey
	for _, s := range servers {
		if f.o.ServerID != "" && s.ID != f.o.ServerID {
			continue
		}
		for _, h := range s.HeldTools {
			heldKeys = append(heldKeys, agent.NameKey{Server: s.ID, Name: h})
		}
	}
	if len(heldKeys) == 0 {
		return "", "", "", false
	}
	keys := slices.Clone(heldKeys)
	if tl, err := f.o.Engine.Tools(ctx, localapi.ToolsRequest{ServerID: f.o.ServerID}); err == nil {
		for _, t := range tl.Tools {
			keys = append(keys, agent.NameKey{Server: t.ServerID, Name: t.ToolName})
		}
	}
	names := f.names(keys)
	for _, k := range heldKeys {
		if names[k] == name {
			for _, s := range servers {
				if s.ID == k.Server {
					why = s.Unpinnable[k.Name]
				}
			}
			return k.Server, k.Name, why, true
		}
	}
	return "", "", "", false
}
