// Package agent is the bridge between remote MCP servers and a host agent
// (SPEC §4), as pure functions and immutable values: each server tool
// becomes an [AgentTool] with a unique name ([ToolName], [AssignNames]),
// prompts become /server:prompt commands, resources feed @ search, and
// everything a server returns reaches the model as an untrusted, fenced
// [ContextBlock], cut to a size budget (R4.6).
//
// A [Snapshot] is built from the servers' catalogs ([NewSnapshot]); the
// arguments of a call are parsed leniently ([ParseArguments]); a server's
// answer becomes the model's result ([NewToolResult], [NewPromptResult],
// [NewResourceResult]). The package keeps no state and sends nothing: the
// engine (package engine) follows the manager, holds the snapshot, and
// runs each call through its one pipeline (issue #21 item 2). Every remote
// tool is a write tool that is never retried (R4.1), whatever the
// server's annotations say.
package agent

import (
	"encoding/json"
	"errors"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Effects says what a tool may do to the world.
type Effects string

// Effects values. Without a per-server trust configuration every remote
// tool is EffectsWrite (R4.1); EffectsRead exists for hosts that add one.
const (
	EffectsWrite Effects = "write"
	EffectsRead  Effects = "read"
)

// RetryPolicy says whether a host may repeat a failed call on its own.
type RetryPolicy string

// RetryNever: a remote call that failed may have run; never repeat it.
const RetryNever RetryPolicy = "never"

// Annotations are the server's tool hints, kept for display only: they
// never lower approval or retry risk (R4.1).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

func annotationsOf(a *mcp.ToolAnnotations) *Annotations {
	if a == nil {
		return nil
	}
	out := &Annotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, IdempotentHint: a.IdempotentHint}
	if a.DestructiveHint != nil {
		v := *a.DestructiveHint
		out.DestructiveHint = &v
	}
	if a.OpenWorldHint != nil {
		v := *a.OpenWorldHint
		out.OpenWorldHint = &v
	}
	return out
}

func (a *Annotations) clone() *Annotations {
	if a == nil {
		return nil
	}
	c := *a
	if a.DestructiveHint != nil {
		v := *a.DestructiveHint
		c.DestructiveHint = &v
	}
	if a.OpenWorldHint != nil {
		v := *a.OpenWorldHint
		c.OpenWorldHint = &v
	}
	return &c
}

// AgentTool is one remote tool as the host offers it to the model.
type AgentTool struct {
	// Name is mcp__{serverId}__{tool}, sanitised to [A-Za-z0-9_-], at most
	// 64 characters and unique in the snapshot (see ToolName).
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the server's inputSchema exactly as it sent it: the
	// model provider sees $ref, $defs and unknown keywords unchanged.
	InputSchema json.RawMessage `json:"inputSchema"`
	Effects     Effects         `json:"effects"`
	Retry       RetryPolicy     `json:"retry"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	ServerID    string          `json:"serverId"`
	// ToolName is the server's own name of the tool.
	ToolName string `json:"toolName"`
	// OutputSchema and Meta (_meta) are the server's bytes, Icons its
	// icons as JSON; each is absent when the server sent none. An
	// outputSchema that is not a JSON object was left out when the tool
	// was listed.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	// Title and Description show invisible characters as "[U+XXXX]"
	// (ShowHidden: tag characters, zero-width and bidi format characters),
	// so the model reads what a person sees (issue #20 item 3).
	//
	// Own is the server's own title and description when Title or
	// Description differ from them (the title taken from the annotations,
	// the description cut to Options.MaxDescription, invisible characters
	// shown): the MCP front end
	// passes the server's own to its hosts (issue #19 item 4). nil when
	// they are the same.
	Own *ToolText `json:"own,omitempty"`
}

// ToolText is a tool's title and description as its server sent them.
type ToolText struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

func (t AgentTool) clone() AgentTool {
	t.InputSchema = slices.Clone(t.InputSchema)
	t.Annotations = t.Annotations.clone()
	t.OutputSchema = slices.Clone(t.OutputSchema)
	t.Icons = slices.Clone(t.Icons)
	t.Meta = slices.Clone(t.Meta)
	if t.Own != nil {
		own := *t.Own
		t.Own = &own
	}
	return t
}

// Errors callers branch on.
var (
	// ErrUnknownCommand: no such /server:prompt command.
	ErrUnknownCommand = errors.New("no such prompt command")
	// ErrBadMention: a resource mention is not of the form @server:URI.
	ErrBadMention = errors.New("resource mention must look like @server:URI")
)
