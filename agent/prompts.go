package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PromptCommand is a server prompt offered as a /server:prompt command
// (R4.2), with what a form needs to ask for its arguments.
type PromptCommand struct {
	// Command is "/" + serverId + ":" + the prompt name.
	Command     string           `json:"command"`
	ServerID    string           `json:"serverId"`
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	// Icons and Meta (_meta) are the server's, as JSON; absent when it
	// sent none.
	Icons json.RawMessage `json:"icons,omitempty"`
	Meta  json.RawMessage `json:"_meta,omitempty"`
}

// PromptArgument is one field of a prompt's form.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

func promptCommand(server string, p *mcp.Prompt) PromptCommand {
	// Titles and descriptions with invisible characters shown, as a
	// tool's (issue #20 item 3, review finding 2); names stay the
	// server's, as they name the prompt and its arguments in a get.
	pc := PromptCommand{Command: "/" + server + ":" + p.Name, ServerID: server, Name: p.Name, Title: ShowHidden(p.Title),
		Description: ShowHidden(p.Description), Icons: rawJSON(p.Icons), Meta: rawJSON(p.Meta)}
	for _, a := range p.Arguments {
		if a != nil {
			pc.Arguments = append(pc.Arguments, PromptArgument{Name: a.Name, Title: ShowHidden(a.Title),
				Description: ShowHidden(a.Description), Required: a.Required})
		}
	}
	return pc
}

// PromptResult is a prompt's output, to attach to the user's message as
// untrusted context (R4.2).
type PromptResult struct {
	Command string `json:"command"`
	// Description is the server's description of this result (untrusted).
	Description string         `json:"description,omitempty"`
	Blocks      []ContextBlock `json:"blocks"`
	Notes       []string       `json:"notes,omitempty"`
	// Raw is the server's validated GetPromptResult, unchanged, when
	// NewPromptResult's raw asked for it and nothing was cut to fit the
	// budget: for the MCP front end, whose host is the agent (SPEC §9
	// A8), so embedded resources and annotations reach it as sent.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// ArgumentError is a prompt form filled in wrongly; it names the argument.
type ArgumentError struct {
	Command, Argument, Problem string
}

// Error names the command, the argument and the problem.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("%s: argument %q %s", e.Command, e.Argument, e.Problem)
}

// CheckPromptArguments checks args against the prompt's form before
// anything is sent, so the form can point at the field: a required
// argument that is missing or blank, or one the prompt does not have, is
// an *ArgumentError naming it.
func CheckPromptArguments(pc PromptCommand, args map[string]string) error {
	for _, a := range pc.Arguments {
		if a.Required && strings.TrimSpace(args[a.Name]) == "" {
			return &ArgumentError{Command: pc.Command, Argument: a.Name, Problem: "is required"}
		}
	}
	for name := range args {
		if !slices.ContainsFunc(pc.Arguments, func(a PromptArgument) bool { return a.Name == name }) {
			return &ArgumentError{Command: pc.Command, Argument: name, Problem: "is not an argument of this prompt"}
		}
	}
	return nil
}

// NewPromptResult converts a prompt's validated result for the model:
// each message becomes an untrusted ContextBlock, cut to budget b. With
// raw, the server's result rides along unchanged when nothing was cut
// (PromptResult.Raw).
func NewPromptResult(pc PromptCommand, res *mcp.GetPromptResult, b Budget, raw bool) *PromptResult {
	out := &PromptResult{Command: pc.Command, Description: res.Description}
	bu := b.start()
	prov := Provenance{Server: pc.ServerID, Kind: KindPrompt, Name: pc.Name}
	for _, m := range res.Messages {
		if m == nil || m.Content == nil {
			continue
		}
		if blk, ok := bu.content(m.Content, prov, string(m.Role)); ok {
			out.Blocks = append(out.Blocks, blk)
		}
	}
	out.Notes = bu.notes()
	if raw && !bu.truncated && bu.droppedBinary == 0 {
		out.Raw, _ = json.Marshal(res)
	}
	return out
}

// clone copies what a caller could change.
func (p PromptCommand) clone() PromptCommand {
	p.Arguments = slices.Clone(p.Arguments)
	p.Icons, p.Meta = slices.Clone(p.Icons), slices.Clone(p.Meta)
	return p
}
