package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/session"
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
	// PromptOptions.Raw asked for it and nothing was cut to fit the
	// budget: for the MCP front end, whose host is the agent (SPEC §9
	// A8), so embedded resources and annotations reach it as sent.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// PromptOptions adjust one GetPrompt.
type PromptOptions struct {
	// Raw asks for the server's result unchanged in PromptResult.Raw.
	Raw bool
}

// Render returns the fenced messages followed by the budget notes.
func (p *PromptResult) Render() string {
	parts := []string{RenderBlocks(p.Blocks)}
	parts = append(parts, p.Notes...)
	return strings.Join(parts, "\n\n")
}

// ArgumentError is a prompt form filled in wrongly; it names the argument.
type ArgumentError struct {
	Command, Argument, Problem string
}

// Error names the command, the argument and the problem.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("%s: argument %q %s", e.Command, e.Argument, e.Problem)
}

// GetPrompt runs a /server:prompt command. Required arguments are checked
// here, so the form can point at the missing field before anything is
// sent; each message of the result becomes an untrusted ContextBlock.
func (r *Registry) GetPrompt(ctx context.Context, command string, args map[string]string, opts ...PromptOptions) (*PromptResult, error) {
	cmd := command
	if !strings.HasPrefix(cmd, "/") {
		cmd = "/" + cmd
	}
	snap := r.Snapshot()
	i, ok := slices.BinarySearchFunc(snap.prompts, cmd, func(p PromptCommand, c string) int { return strings.Compare(p.Command, c) })
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownCommand, command)
	}
	pc := snap.prompts[i]
	for _, a := range pc.Arguments {
		if a.Required && strings.TrimSpace(args[a.Name]) == "" {
			return nil, &ArgumentError{Command: cmd, Argument: a.Name, Problem: "is required"}
		}
	}
	for name := range args {
		if !slices.ContainsFunc(pc.Arguments, func(a PromptArgument) bool { return a.Name == name }) {
			return nil, &ArgumentError{Command: cmd, Argument: name, Problem: "is not an argument of this prompt"}
		}
	}
	res, err := r.be.GetPrompt(ctx, pc.ServerID, pc.Name, args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if err := session.ValidatePromptResult(res); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	out := &PromptResult{Command: cmd, Description: res.Description}
	bu := newBudget(r.o.ResultBudget, r.o.BinaryCost)
	prov := Provenance{Server: pc.ServerID, Kind: KindPrompt, Name: pc.Name}
	for _, m := range res.Messages {
		if m == nil || m.Content == nil {
			continue
		}
		if b, ok := bu.content(m.Content, prov, string(m.Role)); ok {
			out.Blocks = append(out.Blocks, b)
		}
	}
	out.Notes = bu.notes()
	if len(opts) > 0 && opts[0].Raw && !bu.truncated && bu.droppedBinary == 0 {
		out.Raw, _ = json.Marshal(res)
	}
	return out, nil
}
