package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// jsonFlag adds --json to cmd; one command runs per invocation.
func (a *app) jsonFlag(cmd *cobra.Command, help string) *cobra.Command {
	cmd.Flags().BoolVar(&a.asJSON, "json", false, help)
	return cmd
}

// printList prints items as a JSON array with --json, else as a table of
// header and row(item) lines; an empty list says empty on stderr.
func printList[T any](a *app, items []T, empty, header string, row func(T) string) error {
	if a.asJSON {
		return clitext.WriteJSON(a.streams.Out, clitext.NonNil(items))
	}
	if len(items) == 0 {
		if empty != "" {
			fmt.Fprintln(a.streams.Err, empty)
		}
		return nil
	}
	tw := clitext.NewTable(a.streams.Out)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, row(it))
	}
	return tw.Flush()
}

// printOne prints v as JSON with --json, else with text.
func (a *app) printOne(v any, plain func(w io.Writer) error) error {
	if a.asJSON {
		return clitext.WriteJSON(a.streams.Out, v)
	}
	return plain(a.streams.Out)
}

// printNotes prints remotemcp's notes on stderr.
func printNotes(a *app, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(a.streams.Err, clitext.Cell(n))
	}
}

// truncated notes on stderr what the size budget cut of a block.
func truncated(a *app, bl localapi.ContextBlock) {
	if t := bl.Truncated; t != nil {
		fmt.Fprintf(a.streams.Err, "[remotemcp: output truncated: showing the first %d of %d characters]\n", t.ShownChars, t.OriginalChars)
	}
}

// printServers prints servers as the listing commands do.
// Without --verbose a reason shows remotemcp's words and the innermost
// cause, and stderr says where the whole one is.
func (a *app) printServers(servers []localapi.Server) error {
	cut := false
	defer func() {
		if cut && !a.asJSON {
			fmt.Fprintln(a.streams.Err, "(run again with --verbose for the whole reason)")
		}
	}()
	return printList(a, servers, "no servers configured; add one with \"remotemcp servers add ID URL\" or \"remotemcp servers import FILE\"",
		"ID\tNAME\tENABLED\tCONNECT\tAUTH\tSTATE\tTOOLS\tURL\tREASON", func(s localapi.Server) string {
			connect, state, tools, reason := "startup", string(s.State), "-", ""
			if !s.ConnectOnStartup {
				connect = "lazy"
			}
			if !s.Enabled {
				state = "disabled"
			}
			if s.State == localapi.StateReady || s.ToolCount > 0 {
				tools = fmt.Sprint(s.ToolCount)
			}
			if len(s.HeldTools) > 0 {
				tools += fmt.Sprintf(" +%d held", len(s.HeldTools))
			}
			if s.Reason != nil {
				var short bool
				reason, short = explain.ReasonText(s, a.verbose)
				cut = cut || short
			}
			return strings.Join([]string{clitext.Cell(s.ID), clitext.Cell(clitext.OrDash(s.Name)), clitext.YesNo(s.Enabled), connect,
				string(s.Auth.Kind), state, tools, clitext.Cell(redact.URL(s.URL)), reason}, "\t")
		})
}
