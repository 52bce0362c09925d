package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/store"
)

// newElicitationsCmd is `remotemcp elicitations …`: the questions servers
// asked during tool calls (R6.1) and the calls they interrupted (R6.2).
func newElicitationsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "elicitations",
		Aliases: []string{"elicitation", "cards"},
		Short:   "List and answer the questions servers ask during tool calls; retry interrupted calls",
		Long: `A server may ask a question while one of its tools runs (elicitation). The
question becomes a card: "remotemcp call" asks it at the terminal, or,
without one, waits while the card is answered from another shell with
"remotemcp elicitations answer". A card whose process ended before the
call finished is interrupted: the answer never reached the server, and the
call is re-sent only when you confirm it with "elicitations retry".`,
		Args: noSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newElicitationsListCmd(a), newElicitationsAnswerCmd(a), newElicitationsRetryCmd(a))
	return cmd
}

// cardRow is one card in `elicitations list --json`.
type cardRow struct {
	ID      string        `json:"id"`
	Server  string        `json:"server"`
	Tool    string        `json:"tool"`
	Message string        `json:"message"`
	Created time.Time     `json:"created"`
	Status  elicit.Status `json:"status"`
	// Reason says why a card is interrupted.
	Reason string `json:"reason,omitempty"`
}

// liveness remembers which card owners still run.
type liveness struct {
	ctx   context.Context
	st    *store.SQLite
	known map[string]bool
}

func newLiveness(ctx context.Context, st *store.SQLite) *liveness {
	return &liveness{ctx: ctx, st: st, known: map[string]bool{}}
}

func (l *liveness) alive(owner string) bool {
	v, ok := l.known[owner]
	if !ok {
		v = ownerAlive(l.ctx, l.st, owner)
		l.known[owner] = v
	}
	return v
}

// Reasons of cards whose process is gone but that no process has closed
// yet (the next command that opens the cards records them so).
const (
	reasonGonePending = "the remotemcp process that asked is gone, so an answer can no longer reach the server"
	reasonGoneRunning = "the remotemcp process ended before the tool call finished; its result was lost"
)

// effectiveStatus is a card's status as the person should see it: a card
// whose process is gone is interrupted even before a process records it
// so. show is false for finished cards.
func effectiveStatus(c elicit.Card, l *liveness) (st elicit.Status, reason string, show bool) {
	switch {
	case c.Status == elicit.StatusPending:
		if l.alive(c.Owner) {
			return elicit.StatusPending, "", true
		}
		return elicit.StatusInterrupted, reasonGonePending, true
	case c.Status == elicit.StatusInterrupted:
		return c.Status, c.Reason, !c.Resent
	case !c.Settled && !l.alive(c.Owner):
		return elicit.StatusInterrupted, reasonGoneRunning, true
	}
	return c.Status, c.Reason, false
}

func newElicitationsListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the questions waiting for an answer and the interrupted calls",
		Long: `List the pending cards (a call is waiting for the answer) and the
interrupted ones (the call ended without it; see "elicitations retry"):
id, server, tool, the server's message, when it was asked and the status.`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				return a.listCardsViaDaemon(ctx, dc, asJSON)
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			cards, err := storedCards(ctx, c.Store)
			if err != nil {
				return err
			}
			l := newLiveness(ctx, c.Store)
			rows := []cardRow{}
			for _, card := range cards {
				st, reason, show := effectiveStatus(card, l)
				if show {
					rows = append(rows, cardRow{ID: card.ID, Server: card.ServerID, Tool: card.Tool, Message: card.Message,
						Created: card.Created, Status: st, Reason: reason})
				}
			}
			if asJSON {
				return writeJSON(a.streams.Out, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.streams.Err, "no questions are waiting for an answer, and no call was interrupted")
				return nil
			}
			return writeCardTable(a.streams.Out, rows)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// writeCardTable prints ID, STATUS, SERVER, TOOL, CREATED and MESSAGE.
func writeCardTable(w io.Writer, rows []cardRow) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tSTATUS\tSERVER\tTOOL\tCREATED\tMESSAGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cell(r.ID), r.Status, cell(r.Server), cell(orDash(r.Tool)),
			r.Created.Local().Format(time.DateTime), clip(cell(r.Message), 80))
	}
	return tw.Flush()
}
