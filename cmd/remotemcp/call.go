package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/ask"
	"github.com/remotemcp/remotemcp/internal/cliflag"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/opid"
	"github.com/remotemcp/remotemcp/internal/render"
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
				return exit.Usagef("--timeout must be positive, e.g. --timeout 30s")
			}
			if s, t, ok := strings.Cut(name, "/"); !strings.HasPrefix(name, "mcp__") && (!ok || s == "" || t == "") {
				return exit.Usagef("NAME %q must be mcp__SERVER__TOOL or SERVER/TOOL (see \"remotemcp tools\")", name)
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
			callArgs, err := cliflag.Object("ARGS_JSON", raw)
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
			render.Approval(a.streams.Err, r)
			return localapi.Decision{Approved: a.term.YesNo(render.ApprovalQuestion(r))}, nil
		},
		Progress: func(p localapi.Progress) { render.Progress(a.streams.Err, p) },
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
			if err := render.Result(a.streams.Out, w, res); err != nil {
				return err
			}
		}
		if res.IsError {
			render.ToolError(w, res)
		}
		return nil
	}
	if res.Outcome == "cancelled" && ctx.Err() != nil {
		render.Interrupted(w, res)
		return &exit.Error{Code: exitInterrupted}
	}
	// remotemcp's words first; the library's chain of an unavailable
	// server only with --verbose.
	bg := context.WithoutCancel(ctx)
	var srv *localapi.Server
	if res.Outcome == "unavailable" {
		if s, err := e.Server(bg, res.ServerID); err == nil && s.Reason != nil {
			srv = s
		}
	}
	hint := render.OutcomeHint(res, func() ([]localapi.Card, error) { return e.Cards(bg) })
	render.Failed(w, res, srv, hint, a.verbose)
	if res.MaybeExecuted {
		return &exit.Error{Code: exitNoAnswer}
	}
	return exit.Reported
}
