package frontend

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/agent"
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
		if server, tool, held := f.heldName(ctx, p.Name); held {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
				"Tool %q of MCP server %q is held: the server changed its definition after it was first seen, and the user has not accepted the change; the call was not sent. The user can review the change with \"remotemcp tools review %s\".",
				tool, server, server)}}}, nil
		}
		return res, err
	}
}

// heldName reports whether name is the offered name of a held tool.
func (f *Frontend) heldName(ctx context.Context, name string) (server, tool string, held bool) {
	servers, err := f.o.Engine.Servers(ctx)
	if err != nil {
		return "", "", false
	}
	for _, s := range servers {
		if f.o.ServerID != "" && s.ID != f.o.ServerID {
			continue
		}
		for _, h := range s.HeldTools {
			k := agent.NameKey{Server: s.ID, Name: h}
			if f.names([]agent.NameKey{k})[k] == name {
				return s.ID, h, true
			}
		}
	}
	return "", "", false
}
