package engine

import (
	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
)

// The conversions from the libraries' types to localapi's wire types.
// localapi owns its JSON and imports none of agent, session or hostperm,
// so a change in a library cannot change what the API sends unnoticed:
// where the two types have the same fields (tags aside) the conversion is
// a Go type conversion, which stops compiling when one of them changes;
// the others copy field by field, and wire_test.go checks that every
// pair encodes to the same bytes.

// classOf is a failure class as the API names it.
func classOf(c manager.Class) localapi.Class { return localapi.Class(c) }

// purposeOf is a request's purpose as the API names it.
func purposeOf(p hostperm.Purpose) localapi.Purpose { return localapi.Purpose(p) }

// toolTextOf is a tool's own title and description; it shares the
// agent's value, which is never changed once listed.
func toolTextOf(t *agent.ToolText) *localapi.ToolText { return (*localapi.ToolText)(t) }

// grantOf is one grant.
func grantOf(g hostperm.Grant) localapi.Grant {
	return localapi.Grant{Origin: g.Origin, GrantedAt: g.GrantedAt, By: localapi.By(g.By)}
}

// grantsOf converts the broker's answer; nil stays nil.
func grantsOf(gs []hostperm.Grant, err error) ([]localapi.Grant, error) {
	if gs == nil {
		return nil, err
	}
	out := make([]localapi.Grant, len(gs))
	for i, g := range gs {
		out[i] = grantOf(g)
	}
	return out, err
}

// pendingOf is one pending approval.
func pendingOf(p hostperm.Pending) localapi.Pending {
	return localapi.Pending{Origin: p.Origin, Purpose: purposeOf(p.Purpose), ServerID: p.ServerID,
		FirstSeen: p.FirstSeen, LastSeen: p.LastSeen, Count: p.Count}
}

// pendingsOf converts the broker's answer; nil stays nil.
func pendingsOf(ps []hostperm.Pending, err error) ([]localapi.Pending, error) {
	if ps == nil {
		return nil, err
	}
	out := make([]localapi.Pending, len(ps))
	for i, p := range ps {
		out[i] = pendingOf(p)
	}
	return out, err
}

// logEntryOf is one exchange of a server's request log.
func logEntryOf(x session.Exchange) localapi.LogEntry {
	return localapi.LogEntry{Time: x.Time, ConnectionID: x.ConnectionID, HTTPMethod: x.HTTPMethod, RPCMethod: x.RPCMethod,
		Status: x.Status, Millis: x.Millis, Error: x.Error, Kind: localapi.LogKind(x.Kind), Step: x.Step, URL: x.URL,
		Level: x.Level, Message: x.Message}
}

// logOf converts the manager's answer; nil stays nil.
func logOf(xs []session.Exchange, err error) ([]localapi.LogEntry, error) {
	if xs == nil {
		return nil, err
	}
	out := make([]localapi.LogEntry, len(xs))
	for i, x := range xs {
		out[i] = logEntryOf(x)
	}
	return out, err
}

// promptOf is one prompt command; its strings and JSON are shared with
// the registry's snapshot, which never changes them.
func promptOf(p agent.PromptCommand) localapi.Prompt {
	out := localapi.Prompt{Command: p.Command, ServerID: p.ServerID, Name: p.Name, Title: p.Title,
		Description: p.Description, Icons: p.Icons, Meta: p.Meta}
	if p.Arguments != nil {
		out.Arguments = make([]localapi.PromptArgument, len(p.Arguments))
		for i, a := range p.Arguments {
			out.Arguments[i] = localapi.PromptArgument(a)
		}
	}
	return out
}

// promptResultOf is a prompt's result; its strings, notes and raw JSON
// are shared with the registry's value, which never changes them.
func promptResultOf(r *agent.PromptResult) *localapi.PromptResult {
	return &localapi.PromptResult{Command: r.Command, Description: r.Description, Blocks: blocksOf(r.Blocks),
		Notes: r.Notes, Raw: r.Raw}
}

// resourceOf is one resource or template entry.
func resourceOf(r agent.ResourceEntry) localapi.Resource { return localapi.Resource(r) }

// readResultOf is a read resource; its strings and notes are shared.
func readResultOf(r *agent.ResourceResult) *localapi.ReadResult {
	return &localapi.ReadResult{Mention: r.Mention, Blocks: blocksOf(r.Blocks), Notes: r.Notes}
}

// toolResultOf is a call's result; its strings, notes and JSON are shared
// with the registry's value, which never changes them. It is a copy, not
// a type conversion, because the blocks differ (blockOf) and Outcome is
// typed on each side.
func toolResultOf(r *agent.ToolResult) *localapi.ToolResult {
	return &localapi.ToolResult{Tool: r.Tool, ServerID: r.ServerID, ToolName: r.ToolName, OperationID: r.OperationID,
		Outcome: localapi.Outcome(r.Outcome), IsError: r.IsError, MaybeExecuted: r.MaybeExecuted, Message: r.Message,
		Content: blocksOf(r.Content), StructuredContent: r.StructuredContent, Notes: r.Notes, Truncated: r.Truncated,
		OriginalChars: r.OriginalChars, ShownChars: r.ShownChars, Raw: r.Raw}
}

// blockOf is one block of server content. The agent's block also holds
// the fence its Render uses, which is not part of the wire type (nor of
// its JSON): nothing renders a localapi block, so it is dropped.
func blockOf(b agent.ContextBlock) localapi.ContextBlock {
	p := b.Provenance
	return localapi.ContextBlock{
		Provenance: localapi.Provenance{Server: p.Server, Kind: localapi.BlockKind(p.Kind), Name: p.Name, URI: p.URI},
		MIMEType:   b.MIMEType,
		Role:       b.Role,
		Text:       b.Text,
		Data:       b.Data,
		Truncated:  (*localapi.Truncation)(b.Truncated), // shared: set once, never changed
	}
}

// blocksOf converts a result's blocks; nil stays nil, because a prompt's
// or a resource's "blocks" is sent as null then (the field has no
// omitempty).
func blocksOf(bs []agent.ContextBlock) []localapi.ContextBlock {
	if bs == nil {
		return nil
	}
	out := make([]localapi.ContextBlock, len(bs))
	for i, b := range bs {
		out[i] = blockOf(b)
	}
	return out
}
