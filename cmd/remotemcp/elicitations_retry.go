package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/elicit"
)

func newElicitationsRetryCmd(a *app) *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "Re-send the tool call of an interrupted card, once, after you confirm it is safe",
		Long: `Re-send the tool call an interrupted card belongs to (R6.2). Its first
run may have had effects: the answer never reached the server, and how far
the call got is unknown. You are shown the call and asked to confirm that
running it again is safe; without a terminal, --yes confirms. Your
confirmation is also the approval of the re-sent call. A card's call is
re-sent at most once; the result is printed as "call" prints it.`,
		Example: `  remotemcp elicitations retry el-ABC
  remotemcp elicitations retry el-ABC --yes --json`,
		Args: argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dc, err := a.daemonClient(cmd.Context()); err != nil {
				return err
			} else if dc != nil {
				// The daemon owns the cards: it re-sends, after the person
				// confirmed here (R6.2).
				id := args[0]
				if !f.yes {
					if !a.interactive() {
						return fmt.Errorf("refused: %s was not re-sent: %w", id, errNoTerminal)
					}
					if !a.askYesNo(fmt.Sprintf("Re-send the interrupted call of card %s? Only if running the tool again is safe.", id)) {
						return fmt.Errorf("not re-sent: %s", id)
					}
				}
				res, err := dc.Retry(cmd.Context(), id, true)
				return (&bridge{a: a}).finishCall(cmd.Context(), res, err, f)
			}
			if err := f.check(); err != nil {
				return err
			}
			ctx, id := cmd.Context(), args[0]
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			card, err := storedCard(ctx, c.Store, id)
			if err == nil {
				err = checkRetryable(card, newLiveness(ctx, c.Store))
			}
			if err != nil {
				c.Close()
				return err
			}
			server, err := enabledServer(ctx, c.Store, card.ServerID)
			if err != nil {
				c.Close()
				return err
			}
			name := agent.ToolName(card.ServerID, card.Tool)
			if !f.yes {
				if !a.interactive() {
					c.Close()
					return fmt.Errorf("refused: re-sending the call of card %s needs your confirmation that running %s again is safe, "+
						"and stdin is not a terminal to ask on; run the command in a terminal, or add --yes to confirm", id, name)
				}
				fmt.Fprintf(a.streams.Err, "card %s: %s\n", id, cell(failureOf(card)))
				a.describeCall(agent.AgentTool{Name: name, ServerID: card.ServerID, ToolName: card.Tool}, card.Arguments)
				if !a.askYesNo(fmt.Sprintf("Re-send %s with %s? It may already have had its effect once.", name, clip(cell(string(card.Arguments)), 200))) {
					c.Close()
					fmt.Fprintf(a.streams.Err, "remotemcp: not confirmed: the call of card %s was not re-sent\n", id)
					return reported
				}
			}
			// The confirmation is the approval of the one call re-sent.
			b, err := a.startBridge(ctx, c, targetsOf(server), bridgeOptions{
				toolTimeout: f.timeout, approver: cliApprover{a: a, yes: true}, cards: true,
			})
			if err != nil {
				return err
			}
			defer b.Close()
			if err := b.cards.ConfirmRetry(ctx, id); err != nil {
				return fmt.Errorf("confirm the re-send of card %s: %w", id, err)
			}
			res, err := b.reg.Resend(ctx, id, agent.CallOptions{
				Progress: func(p agent.Progress) { a.printProgress(name, p) },
				Timeout:  f.timeout,
			})
			if res == nil {
				if b.reportFailures(nil) {
					return reported
				}
				return fmt.Errorf("card %s: nothing was re-sent: %w", id, err)
			}
			return b.finishCall(ctx, res, err, f)
		},
	}
	f.register(cmd, "confirm that re-sending is safe without asking (needed without a terminal)")
	return cmd
}

// checkRetryable refuses a card whose call cannot or must not be re-sent.
func checkRetryable(card elicit.Card, l *liveness) error {
	st, _, _ := effectiveStatus(card, l)
	switch {
	case st == elicit.StatusPending:
		return fmt.Errorf("card %s is still waiting for an answer in another remotemcp process: answer it with \"remotemcp elicitations answer %s accept|decline|cancel\" instead", card.ID, card.ID)
	case st != elicit.StatusInterrupted:
		return fmt.Errorf("card %s is %s, not interrupted: its call finished, so there is nothing to re-send", card.ID, card.Status)
	case card.Tool == "":
		return fmt.Errorf("card %s: %w (the question came while several calls ran on server %s)", card.ID, elicit.ErrNotAttributed, card.ServerID)
	case card.Resent:
		return fmt.Errorf("card %s: %w (operation %s)", card.ID, elicit.ErrAlreadyResent, card.ResendOperationID)
	}
	return nil
}

// failureOf explains an interrupted card.
func failureOf(card elicit.Card) string {
	if card.Status != elicit.StatusInterrupted {
		card.Status = elicit.StatusInterrupted
		card.Reason = reasonGonePending
		if card.Response != nil {
			card.Reason = reasonGoneRunning
		}
	}
	return card.FailureMessage()
}
