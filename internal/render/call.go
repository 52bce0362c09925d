package render

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// Approval shows what a call's approval is about: the server, the tool,
// the server's description and annotations (its own words, which do not
// make the call safe), and the arguments.
func Approval(w io.Writer, r localapi.ApprovalRequest) {
	fmt.Fprintf(w, "%s wants to run:\n", clitext.Cell(r.Tool))
	server := r.ServerID
	if r.ServerName != "" && r.ServerName != r.ServerID {
		server += " (" + r.ServerName + ")"
	}
	fmt.Fprintf(w, "  server:      %s\n", clitext.Cell(server))
	tool := r.ToolName
	if r.Title != "" {
		tool += " (" + r.Title + ")"
	}
	fmt.Fprintf(w, "  tool:        %s\n", clitext.Cell(tool))
	if d := clitext.FirstLine(r.Description); d != "" {
		fmt.Fprintf(w, "  description: %s (from the server)\n", clitext.Clip(clitext.Cell(d), 200))
	}
	if h := hints(r.Annotations); h != "" {
		fmt.Fprintf(w, "  annotations: %s (the server's own hints: they do not make the call safe)\n", h)
	}
	fmt.Fprintf(w, "  arguments:   %s\n", clitext.Cell(string(r.Arguments)))
}

// ApprovalQuestion is the yes-or-no question after Approval.
func ApprovalQuestion(r localapi.ApprovalRequest) string {
	return fmt.Sprintf("Allow %s to run with %s?", clitext.Cell(r.Tool), clitext.Clip(clitext.Cell(string(r.Arguments)), 200))
}

// hints lists a tool's annotations: "readOnlyHint, destructiveHint=false".
func hints(raw json.RawMessage) string {
	var an map[string]any
	if json.Unmarshal(raw, &an) != nil {
		return ""
	}
	var h []string
	for _, k := range []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
		switch v := an[k].(type) {
		case string:
			h = append(h, fmt.Sprintf("%s=%q", k, clitext.Cell(v)))
		case bool:
			if v && k != "destructiveHint" && k != "openWorldHint" {
				h = append(h, k)
			} else {
				h = append(h, fmt.Sprintf("%s=%t", k, v))
			}
		}
	}
	return strings.Join(h, ", ")
}

// Progress shows a progress notification on w (stderr).
func Progress(w io.Writer, p localapi.Progress) {
	s := fmt.Sprintf("progress %g", p.Progress)
	if p.Total > 0 {
		s += fmt.Sprintf("/%g", p.Total)
	}
	if p.Message != "" {
		s += ": " + clitext.Cell(p.Message)
	}
	fmt.Fprintln(w, s)
}

// Result prints an answered call's text blocks on out (binary ones
// summarised), then its structured content unless a text block says the
// same; what was cut and remotemcp's notes go to errw.
func Result(out, errw io.Writer, res *localapi.ToolResult) error {
	var texts []string
	for _, bl := range res.Content {
		s := clitext.Text(bl.Text)
		if bl.Binary() {
			s = clitext.Cell(bl.Text) + " (not shown; use --json for the data)"
		} else {
			texts = append(texts, bl.Text)
		}
		if _, err := fmt.Fprintln(out, strings.TrimSuffix(s, "\n")); err != nil {
			return err
		}
		Truncated(errw, bl)
	}
	if len(res.StructuredContent) > 0 && !sameJSONAsText(res.StructuredContent, texts) {
		if err := clitext.WriteJSON(out, res.StructuredContent); err != nil {
			return err
		}
	}
	Notes(errw, res.Notes)
	return nil
}

// sameJSONAsText reports whether a text block is the JSON value raw.
func sameJSONAsText(raw json.RawMessage, texts []string) bool {
	var want any
	if json.Unmarshal(raw, &want) != nil {
		return false
	}
	for _, t := range texts {
		var got any
		if json.Unmarshal([]byte(t), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

// ToolError notes on w (stderr) that the tool answered with isError,
// which is an answer: the exit status stays 0.
func ToolError(w io.Writer, res *localapi.ToolResult) {
	fmt.Fprintf(w, "note: tool %s reported an error (isError); the server answered, so the exit status is 0\n", clitext.Cell(res.Tool))
}

// Interrupted says on w (stderr) what became of a call cancelled by
// Ctrl-C: whether it may have run.
func Interrupted(w io.Writer, res *localapi.ToolResult) {
	if res.MaybeExecuted {
		fmt.Fprintf(w, "remotemcp: interrupted: the call of %s was cancelled while it ran; the server was told to stop, "+
			"but the call may or may not have run. It was not re-sent.\n", clitext.Cell(res.Tool))
	} else {
		fmt.Fprintf(w, "remotemcp: interrupted: the call of %s was cancelled before it was sent; it did not run.\n", clitext.Cell(res.Tool))
	}
}

// Failed prints on w (stderr) a call that got no answer: its outcome,
// whether it was sent, remotemcp's words first (the library's chain of
// srv's reason, the server of an unavailable call, only when verbose),
// the error blocks, the server's state and what to do (hint, from
// OutcomeHint).
func Failed(w io.Writer, res *localapi.ToolResult, srv *localapi.Server, hint string, verbose bool) {
	status := map[bool]string{false: " (nothing was sent)"}[res.MaybeExecuted]
	words, chain := explain.SplitChain(res.Message, srv)
	fmt.Fprintf(w, "remotemcp: %s%s: %s\n", res.Outcome, status, clitext.Cell(redact.Text(words)))
	for _, bl := range res.Content {
		fmt.Fprintf(w, "  %s\n", clitext.Cell(bl.Text))
	}
	if srv != nil {
		explain.Error(w, &localapi.Error{Message: res.Message, Server: srv})
	}
	if hint != "" {
		fmt.Fprintf(w, "  what to do: %s\n", hint)
	}
	explain.Cause(w, chain, verbose)
}

// OutcomeHint says what to do after a call without an answer; cards
// lists the question cards, read only for an interrupted call (its card
// names the retry).
func OutcomeHint(res *localapi.ToolResult, cards func() ([]localapi.Card, error)) string {
	switch res.Outcome {
	case "timeout":
		return fmt.Sprintf("if the tool needs longer, give --timeout (e.g. --timeout 5m), or raise the server's limit with \"remotemcp servers set %s --tool-timeout 5m\"", res.ServerID)
	case "interrupted":
		if cards, err := cards(); err == nil {
			for _, c := range cards {
				if c.OperationID == res.OperationID && c.Status == localapi.CardInterrupted {
					return fmt.Sprintf("if re-running the tool is safe, re-send it with \"remotemcp elicitations retry %s\"", c.ID)
				}
			}
		}
		return "see \"remotemcp elicitations list\""
	case "invalid-arguments":
		return fmt.Sprintf("check the arguments against the tool's input schema (\"remotemcp tools --server %s --json\")", res.ServerID)
	case "failed":
		if res.MaybeExecuted {
			return "check whether the call had an effect before running it again"
		}
	}
	return ""
}
