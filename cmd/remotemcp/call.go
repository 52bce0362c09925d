package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/ask"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/internal/opid"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// callFlags are the flags of commands that call a tool.
type callFlags struct {
	yes     bool
	timeout time.Duration
}

func (f *callFlags) register(a *app, cmd *cobra.Command, yesHelp string) {
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, yesHelp)
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "time limit of the call besides the server's toolTimeout (default 60s), e.g. 5m")
	a.jsonFlag(cmd, "print the whole result as JSON, content blocks with their provenance")
}

// errNoTerminal is the refusal of a call that nobody can approve.
var errNoTerminal = errors.New("every remote tool call needs approval, and stdin is not a terminal to ask on; " +
	"run the command in a terminal, or add --yes to approve this call")

func newCallCmd(a *app) *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call NAME [ARGS_JSON|-]",
		Short: "Call a tool once, after your approval",
		Long: `Call a tool and print its result. NAME is mcp__SERVER__TOOL (see "remotemcp
tools") or SERVER/TOOL; ARGS_JSON is a JSON object (default {}), or "-" for
stdin. Every call needs approval: a terminal shows the server, tool,
description, annotations (which never skip the question) and arguments;
without one, only --yes approves. Progress goes to stderr. A server's
question is asked at the terminal; without one, the command that answers it
is printed. Exit status: 0 when the server answered (isError included), 1
when the call failed or was not sent, 4 when no answer came and it may have
run. Ctrl-C tells the server to stop. A call is never re-sent.`,
		Example: `  remotemcp call mcp__docs__search '{"query": "oauth"}'
  remotemcp call docs/search '{"query": "oauth"}' --yes --json
  echo '{"ms": 5000}' | remotemcp call mcp__fx__slow - --yes --timeout 10s`,
		Args: argsRange(1, 2, "NAME [ARGS_JSON|-]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if f.timeout < 0 {
				return usageErrorf("--timeout must be positive, e.g. --timeout 30s")
			}
			if s, t, ok := strings.Cut(name, "/"); !strings.HasPrefix(name, "mcp__") && (!ok || s == "" || t == "") {
				return usageErrorf("NAME %q must be mcp__SERVER__TOOL or SERVER/TOOL (see \"remotemcp tools\")", name)
			}
			raw, fromStdin := "{}", false
			if len(args) == 2 {
				raw = args[1]
			}
			if raw == "-" {
				b, err := io.ReadAll(io.LimitReader(a.streams.In, 1<<20))
				if err != nil {
					return fmt.Errorf("read the arguments from stdin: %w", err)
				}
				raw, fromStdin = string(b), true
			}
			callArgs, err := parseObject("ARGS_JSON", raw)
			if err != nil {
				return err
			}
			if !f.yes && fromStdin {
				return fmt.Errorf("refused (nothing was sent): the call of %s needs approval, and stdin carried the arguments; add --yes to approve it", name)
			}
			if !f.yes && !a.term.Interactive() {
				return fmt.Errorf("refused (nothing was sent): the call of %s: %w", name, errNoTerminal)
			}
			req := localapi.CallRequest{Tool: name, Arguments: callArgs, Approved: f.yes}
			if f.timeout > 0 {
				req.Timeout = f.timeout.String()
			}
			return a.do(func(ctx context.Context, e Engine, _ []string) error {
				return a.call(ctx, e, req, f)
			})(cmd, args)
		},
	}
	f.register(a, cmd, "approve the call without asking (needed without a terminal)")
	return cmd
}

// parseObject checks that raw is one JSON object.
func parseObject(what, raw string) (json.RawMessage, error) {
	t := bytes.TrimSpace([]byte(raw))
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		why := "not a JSON object"
		if err != nil {
			why = err.Error()
		}
		return nil, usageErrorf(`%s must be one JSON object such as '{"text": "hi"}' (%s)`, what, why)
	}
	return json.RawMessage(t), nil
}

// call runs one tool call and renders its stream: approval, progress,
// questions, then the result.
func (a *app) call(ctx context.Context, e Engine, req localapi.CallRequest, f callFlags) error {
	qctx, stop := context.WithCancel(ctx)
	qs := &ask.Questions{T: a.term, E: e, Self: a.selfCommand()}
	h := localapi.CallHandler{
		Approve: func(r localapi.ApprovalRequest) (localapi.Decision, error) {
			if !a.term.Interactive() {
				return localapi.Decision{Reason: errNoTerminal.Error()}, nil
			}
			a.describeCall(r)
			return localapi.Decision{Approved: a.term.YesNo(fmt.Sprintf("Allow %s to run with %s?", clitext.Cell(r.Tool), clitext.Clip(clitext.Cell(string(r.Arguments)), 200)))}, nil
		},
		Progress: a.printProgress,
		Question: func(c localapi.Card) { qs.Present(qctx, c) },
	}
	// Ctrl-C cancels the call in the engine; its outcome still arrives.
	req.OperationID = opid.New("op-")
	cctx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	defer context.AfterFunc(ctx, func() {
		_ = e.CancelCall(cctx, req.OperationID)
		time.AfterFunc(cancelGrace, abort)
	})()
	res, err := e.Call(cctx, req, h)
	stop()
	qs.Wait()
	return a.finishCall(ctx, e, req.Tool, res, err, f)
}

// cancelGrace is how long a cancelled call may take to report its outcome.
const cancelGrace = 5 * time.Second

// describeCall shows what the approval is about.
func (a *app) describeCall(r localapi.ApprovalRequest) {
	w := a.streams.Err
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

// printProgress shows a progress notification on stderr.
func (a *app) printProgress(p localapi.Progress) {
	s := fmt.Sprintf("progress %g", p.Progress)
	if p.Total > 0 {
		s += fmt.Sprintf("/%g", p.Total)
	}
	if p.Message != "" {
		s += ": " + clitext.Cell(p.Message)
	}
	fmt.Fprintln(a.streams.Err, s)
}

// finishCall prints a call's outcome and returns the command's error.
func (a *app) finishCall(ctx context.Context, e Engine, tool string, res *localapi.ToolResult, err error, f callFlags) error {
	w := a.streams.Err
	if res == nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the call of %s failed: %w", tool, err) // explain says whether it was sent
	}
	if a.asJSON {
		if err := clitext.WriteJSON(a.streams.Out, res); err != nil {
			return err
		}
	}
	if res.Outcome == "ok" {
		if !a.asJSON {
			if err := a.writePlain(a.streams.Out, res); err != nil {
				return err
			}
		}
		if res.IsError {
			fmt.Fprintf(w, "note: tool %s reported an error (isError); the server answered, so the exit status is 0\n", clitext.Cell(res.Tool))
		}
		return nil
	}
	if res.Outcome == "cancelled" && ctx.Err() != nil {
		if res.MaybeExecuted {
			fmt.Fprintf(w, "remotemcp: interrupted: the call of %s was cancelled while it ran; the server was told to stop, "+
				"but the call may or may not have run. It was not re-sent.\n", clitext.Cell(res.Tool))
		} else {
			fmt.Fprintf(w, "remotemcp: interrupted: the call of %s was cancelled before it was sent; it did not run.\n", clitext.Cell(res.Tool))
		}
		return &exitError{code: exitInterrupted}
	}
	status := map[bool]string{false: " (nothing was sent)"}[res.MaybeExecuted]
	// remotemcp's words first; the library's chain of an unavailable
	// server only with --verbose.
	var srv *localapi.Server
	if res.Outcome == "unavailable" {
		if s, err := e.Server(context.WithoutCancel(ctx), res.ServerID); err == nil && s.Reason != nil {
			srv = s
		}
	}
	words, chain := explain.SplitChain(res.Message, srv)
	fmt.Fprintf(w, "remotemcp: %s%s: %s\n", res.Outcome, status, clitext.Cell(redact.Text(words)))
	for _, bl := range res.Content {
		fmt.Fprintf(w, "  %s\n", clitext.Cell(bl.Text))
	}
	if srv != nil {
		explain.Error(w, &localapi.Error{Message: res.Message, Server: srv})
	}
	if h := a.outcomeHint(ctx, e, res); h != "" {
		fmt.Fprintf(w, "  what to do: %s\n", h)
	}
	explain.Cause(w, chain, a.verbose)
	if res.MaybeExecuted {
		return &exitError{code: exitNoAnswer}
	}
	return reported
}

// outcomeHint says what to do after a call without an answer.
func (a *app) outcomeHint(ctx context.Context, e Engine, res *localapi.ToolResult) string {
	switch res.Outcome {
	case "timeout":
		return fmt.Sprintf("if the tool needs longer, give --timeout (e.g. --timeout 5m), or raise the server's limit with \"remotemcp servers set %s --tool-timeout 5m\"", res.ServerID)
	case "interrupted":
		if cards, err := e.Cards(context.WithoutCancel(ctx)); err == nil {
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

// writePlain prints a result's text blocks (binary ones summarised), then
// its structured content unless a text block says the same.
func (a *app) writePlain(out io.Writer, res *localapi.ToolResult) error {
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
		truncated(a, bl)
	}
	if len(res.StructuredContent) > 0 && !sameJSONAsText(res.StructuredContent, texts) {
		if err := clitext.WriteJSON(out, res.StructuredContent); err != nil {
			return err
		}
	}
	printNotes(a, res.Notes)
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
