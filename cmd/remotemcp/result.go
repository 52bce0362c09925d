package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/elicit"
)

// finishCall prints the outcome of a call and returns the command's
// error: nil when the server answered (even with isError), else non-nil
// after a clear message on stderr.
func (b *bridge) finishCall(ctx context.Context, res *agent.ToolResult, err error, f callFlags) error {
	a := b.a
	w := a.streams.Err
	if res == nil {
		return fmt.Errorf("the call failed: %w", err)
	}
	if f.asJSON {
		if werr := writeJSON(a.streams.Out, res); werr != nil {
			return werr
		}
	}
	if res.Outcome == agent.OutcomeOK {
		if !f.asJSON {
			if err := writePlain(a.streams.Out, w, res); err != nil {
				return err
			}
		}
		if res.IsError {
			fmt.Fprintf(w, "note: tool %s reported an error (isError); the server answered, so the exit status is 0\n", cell(res.Tool))
		}
		return nil
	}
	if res.Outcome == agent.OutcomeCancelled && (errors.Is(err, agent.ErrCancelled) || ctx.Err() != nil) {
		if res.MaybeExecuted {
			fmt.Fprintf(w, "remotemcp: interrupted: the call of %s was cancelled while it ran; the server was told to stop, "+
				"but the call may or may not have run. It was not re-sent.\n", cell(res.Tool))
		} else {
			fmt.Fprintf(w, "remotemcp: interrupted: the call of %s was cancelled before it was sent; it did not run.\n", cell(res.Tool))
		}
		return &exitError{code: exitInterrupted}
	}
	fmt.Fprintf(w, "remotemcp: %s: %s\n", res.Outcome, cell(res.Message))
	for _, bl := range res.Content {
		fmt.Fprintf(w, "  %s\n", cell(bl.Text))
	}
	if h := b.outcomeHint(ctx, res); h != "" {
		fmt.Fprintf(w, "  what to do: %s\n", h)
	}
	return reported
}

// outcomeHint says what the user can do after a call without an answer.
func (b *bridge) outcomeHint(ctx context.Context, res *agent.ToolResult) string {
	switch res.Outcome {
	case agent.OutcomeTimeout:
		return fmt.Sprintf("if the tool needs longer, give --timeout (e.g. --timeout 5m), or raise the server's limit with \"remotemcp servers set %s --tool-timeout 5m\"", res.ServerID)
	case agent.OutcomeInterrupted:
		if b.cards != nil {
			if cards, err := b.cards.List(ctx); err == nil {
				for _, c := range cards {
					if c.OperationID == res.OperationID && c.Status == elicit.StatusInterrupted {
						return fmt.Sprintf("if re-running the tool is safe, re-send it with \"remotemcp elicitations retry %s\"", c.ID)
					}
				}
			}
		}
		return "see \"remotemcp elicitations list\""
	case agent.OutcomeInvalidArguments:
		return fmt.Sprintf("check the arguments against the tool's input schema (\"remotemcp tools --server %s --json\")", res.ServerID)
	case agent.OutcomeFailed:
		if res.MaybeExecuted {
			return "check whether the call had an effect before running it again"
		}
		return "run the command again with --verbose for details"
	}
	return ""
}

// writePlain prints a result for a person: the text of each block (binary
// content summarised), then the structured content as JSON unless a text
// block already says the same. What the size budget cut is noted on
// errw, so that out carries the result only.
func writePlain(out, errw io.Writer, res *agent.ToolResult) error {
	var texts []string
	for _, bl := range res.Content {
		s := text(bl.Text)
		if bl.Binary() {
			s = cell(bl.Text) + " (not shown; use --json for the data)"
		} else {
			texts = append(texts, bl.Text)
		}
		if _, err := fmt.Fprintln(out, strings.TrimSuffix(s, "\n")); err != nil {
			return err
		}
		if t := bl.Truncated; t != nil {
			fmt.Fprintf(errw, "[remotemcp: output truncated: showing the first %d of %d characters]\n", t.ShownChars, t.OriginalChars)
		}
	}
	if len(res.StructuredContent) > 0 && !sameJSONAsText(res.StructuredContent, texts) {
		if err := writeJSON(out, res.StructuredContent); err != nil {
			return err
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintln(errw, cell(n))
	}
	return nil
}

// sameJSONAsText reports whether one of the text blocks is the same JSON
// value as raw (servers usually send structured content also as text).
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
