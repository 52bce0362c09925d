package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Outcome classifies how a call ended.
type Outcome string

// Call outcomes. Only OutcomeOK carries the server's answer (which may
// still be a tool error, see ToolResult.IsError).
const (
	OutcomeOK               Outcome = "ok"
	OutcomeDenied           Outcome = "denied"
	OutcomeApprovalFailed   Outcome = "approval-failed"
	OutcomeInvalidArguments Outcome = "invalid-arguments"
	OutcomeUnavailable      Outcome = "unavailable"
	OutcomeCancelled        Outcome = "cancelled"
	OutcomeTimeout          Outcome = "timeout"
	OutcomeFailed           Outcome = "failed"
	// OutcomeInterrupted: the call was waiting for the person's answer to
	// a server question when remotemcp shut down or restarted (R6.2).
	OutcomeInterrupted Outcome = "interrupted"
)

// ToolResult is what a call gives back for the model. Message and Notes
// are remotemcp's own (trusted) words; Content is the server's (untrusted)
// output. Render puts them together.
type ToolResult struct {
	// Tool is the AgentTool name; ServerID and ToolName the server's.
	Tool        string  `json:"tool"`
	ServerID    string  `json:"serverId,omitempty"`
	ToolName    string  `json:"toolName,omitempty"`
	OperationID string  `json:"operationId"`
	Outcome     Outcome `json:"outcome"`
	// IsError is the server's isError for OutcomeOK, and true for every
	// other outcome.
	IsError bool `json:"isError"`
	// MaybeExecuted is true when the request may have reached the server.
	// The call is never re-sent (R4.1).
	MaybeExecuted bool   `json:"maybeExecuted"`
	Message       string `json:"message,omitempty"`
	// Content is the server's output (or error text), fenced on Render.
	Content []ContextBlock `json:"content,omitempty"`
	// StructuredContent is the server's structured result, when it fitted
	// the budget.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// Notes say what the size budget cut (R4.6).
	Notes []string `json:"notes,omitempty"`
	// Truncated is set when anything was cut; OriginalChars and ShownChars
	// count the text (and structured content) before and after.
	Truncated     bool `json:"truncated,omitempty"`
	OriginalChars int  `json:"originalChars,omitempty"`
	ShownChars    int  `json:"shownChars,omitempty"`
	// Raw is the server's validated CallToolResult, unchanged, when the
	// caller asked for it and it fitted the size budget whole
	// (nothing Truncated): the MCP front end passes it to the host as it
	// is (SPEC §9 A8). Otherwise the budgeted Content stands.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Render returns the text to give the model: the trusted message, the
// fenced server content, then the notes.
func (r *ToolResult) Render() string {
	var parts []string
	if r.Message != "" {
		parts = append(parts, r.Message)
	}
	for _, b := range r.Content {
		parts = append(parts, b.Render())
	}
	parts = append(parts, r.Notes...)
	if len(parts) == 0 {
		return "[remotemcp: the tool returned no content]"
	}
	return strings.Join(parts, "\n\n")
}

// NewToolResult converts the validated result of a call of tool t
// (operation opID) for the model, under budget b: the content becomes
// untrusted ContextBlocks, the structured content is kept when it fits
// whole, and Notes say what was cut. The outcome is OutcomeOK; IsError is
// the server's.
func NewToolResult(t ToolRef, opID string, res *mcp.CallToolResult, b Budget) *ToolResult {
	out := &ToolResult{Tool: t.Name, ServerID: t.ServerID, ToolName: t.ToolName, OperationID: opID,
		Outcome: OutcomeOK, IsError: res.IsError, MaybeExecuted: true}
	bu := b.start()
	prov := Provenance{Server: t.ServerID, Kind: KindTool, Name: t.ToolName}
	hasText := false
	for _, c := range res.Content {
		if b, ok := bu.content(c, prov, ""); ok {
			out.Content = append(out.Content, b)
			hasText = hasText || !b.Binary()
		}
	}
	var structNote string
	if res.StructuredContent != nil {
		out.StructuredContent, structNote = bu.structured(res.StructuredContent)
		if out.StructuredContent != nil && !hasText {
			// Nothing else for the model to read: show the JSON itself
			// (already counted against the budget).
			out.Content = append(out.Content, ContextBlock{Provenance: prov, MIMEType: "application/json",
				Text: string(out.StructuredContent), fence: newFence()})
		}
	}
	out.Notes = bu.notes()
	if structNote != "" {
		out.Notes = append(out.Notes, structNote)
	}
	out.Truncated, out.OriginalChars, out.ShownChars = bu.truncated, bu.originalChars, bu.shownChars
	if res.IsError {
		out.Message = fmt.Sprintf("Tool %q reported an error; its output follows.", t.Name)
	}
	return out
}

// ErrorBlock is a failed call's error as untrusted content of the tool's
// server: errors can carry server text (JSON-RPC error messages), so they
// are fenced like any output of the server.
//
// text is the error's words with the advice a person needs
// (internal/advice.Text): the agent package names no CLI command.
func ErrorBlock(serverID, tool, text string) ContextBlock {
	return ContextBlock{Provenance: Provenance{Server: serverID, Kind: KindTool, Name: tool},
		MIMEType: "text/plain", Text: text, fence: newFence()}
}
