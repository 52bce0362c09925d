package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/ask"
	"github.com/remotemcp/remotemcp/internal/cliflag"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

// newElicitationsCmd is `remotemcp elicitations …`: the questions servers
// ask during tool calls and the calls they interrupted.
func newElicitationsCmd(a *app) *cobra.Command {
	cmd := group("elicitations", "List and answer the questions servers ask during tool calls; retry interrupted calls",
		`A question a server asks during a call becomes a card: "call" asks it at the
terminal or prints the "elicitations answer" command. A card whose process
ended is interrupted; its call is re-sent only with "elicitations retry".`,
		newElicitationsListCmd(a), newElicitationsAnswerCmd(a), newElicitationsRetryCmd(a))
	cmd.Aliases = []string{"elicitation", "cards"}
	return cmd
}

func newElicitationsListCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the questions waiting for an answer and the interrupted calls",
		Long: `List the pending and interrupted cards. --json prints an array (id,
serverId, tool, message, form, status, reason, created …).`,
		Args: argsExactly(0, ""),
		RunE: a.do(func(ctx context.Context, e Engine, _ []string) error {
			all, err := e.Cards(ctx)
			cards := slices.DeleteFunc(all, func(c localapi.Card) bool {
				return c.Status != localapi.CardPending && (c.Status != localapi.CardInterrupted || c.Resent)
			})
			if err != nil {
				return err
			}
			return printList(a, cards, render.Cards)
		}),
	}, "print a JSON array")
}

func newElicitationsAnswerCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "answer ID accept [CONTENT_JSON] | decline | cancel",
		Short: "Answer a question a server asked during a tool call",
		Long: `Answer a pending card: accept with a JSON object checked against the form
(missing fields take their defaults), decline or cancel. The waiting call
goes on in its own process.`,
		Example: `  remotemcp elicitations answer el-ABC accept '{"name": "Ada"}'
  remotemcp elicitations answer el-ABC decline`,
		Args: argsRange(2, 3, "ID accept [CONTENT_JSON] | decline | cancel"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, ans := args[0], localapi.Answer{Action: localapi.Action(strings.ToLower(args[1]))}
			switch ans.Action {
			case "accept":
				raw := "{}"
				if len(args) == 3 {
					raw = args[2]
				}
				obj, err := cliflag.Object("CONTENT_JSON", raw)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(obj, &ans.Content); err != nil {
					return exit.Usagef("CONTENT_JSON: %s", err)
				}
			case "decline", "cancel":
				if len(args) == 3 {
					return exit.Usagef("%s takes no content; only accept does", ans.Action)
				}
			default:
				return exit.Usagef("the answer must be accept, decline or cancel, got %q", args[1])
			}
			return a.do(func(ctx context.Context, e Engine, _ []string) error {
				err := e.Answer(ctx, id, ans)
				if le, ok := localapi.AsError(err); ok && len(le.Problems) > 0 {
					for _, p := range le.Problems {
						fmt.Fprintf(a.streams.Err, "  field %q: %s\n", p.Field, clitext.Cell(p.Problem))
					}
					if c, cerr := e.Card(ctx, id); cerr == nil && c.Form != nil {
						fmt.Fprintln(a.streams.Err, "the form's fields:")
						for _, f := range c.Form.Fields {
							fmt.Fprintf(a.streams.Err, "  %s\n", ask.FieldLabel(f))
						}
					}
				}
				if c, cerr := e.Card(ctx, id); err != nil && cerr == nil && c.Status == localapi.CardInterrupted && !c.Resent {
					return fmt.Errorf("%w; the answer can no longer reach the server: if running the tool again is safe, re-send the call with \"remotemcp elicitations retry %s\"", err, id)
				}
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(a.streams.Out, "answered %s: %s\n", id, ans.Action)
				return err
			})(cmd, args)
		},
	}
}

func newElicitationsRetryCmd(a *app) *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "Re-send the tool call of an interrupted card, once, after you confirm it is safe",
		Long: `Re-send an interrupted card's call, once, after you confirm that running it
again is safe (its first run may have had effects); without a terminal,
--yes confirms. The confirmation approves the call.`,
		Example: `  remotemcp elicitations retry el-ABC
  remotemcp elicitations retry el-ABC --yes --json`,
		Args: argsExactly(1, "ID"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			id := args[0]
			c, err := e.Card(ctx, id)
			if err != nil {
				return err
			}
			name := "mcp__" + c.ServerID + "__" + c.Tool
			switch {
			case c.Status == localapi.CardPending:
				return fmt.Errorf("card %s is still waiting for an answer: answer it with \"remotemcp elicitations answer %s accept|decline|cancel\" instead", id, id)
			case c.Status != localapi.CardInterrupted:
				return fmt.Errorf("card %s is %s, not interrupted: its call finished, so there is nothing to re-send", id, c.Status)
			case c.Resent:
				return fmt.Errorf("card %s: its call was already re-sent once", id)
			case !f.yes && !a.term.Interactive():
				return fmt.Errorf("refused: re-sending the call of card %s needs your confirmation that running %s again is safe, "+
					"and stdin is not a terminal to ask on; run the command in a terminal, or add --yes to confirm; nothing was sent", id, name)
			case !f.yes:
				fmt.Fprintf(a.streams.Err, "card %s: %s\n", id, clitext.Cell(clitext.OrDash(redact.Text(c.FailureMessage))))
				render.Approval(a.streams.Err, localapi.ApprovalRequest{Tool: name, ServerID: c.ServerID, ToolName: c.Tool, Arguments: c.Arguments})
				if !a.term.YesNo(fmt.Sprintf("Re-send %s with %s? It may already have had its effect once.", clitext.Cell(name), clitext.Clip(clitext.Cell(string(c.Arguments)), 200))) {
					fmt.Fprintf(a.streams.Err, "remotemcp: not confirmed: the call of card %s was not re-sent\n", id)
					return exit.Reported
				}
			}
			qs := &ask.Questions{T: a.term, E: e, Self: a.selfCommand()}
			started := time.Now().Add(-time.Second)
			stop := qs.Watch(ctx, e, func(q localapi.Card) bool {
				return q.ServerID == c.ServerID && q.Tool == c.Tool && q.Created.After(started)
			})
			res, err := e.Retry(ctx, id, true)
			stop()
			return a.finishCall(ctx, e, name, res, err, f)
		}),
	}
	f.register(a, cmd, "confirm that re-sending is safe without asking (needed without a terminal)")
	return cmd
}
