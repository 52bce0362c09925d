package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

// jsonFlag adds --json to cmd; one command runs per invocation.
func (a *app) jsonFlag(cmd *cobra.Command, help string) *cobra.Command {
	cmd.Flags().BoolVar(&a.asJSON, "json", false, help)
	return cmd
}

// printList prints items as a JSON array with --json, else as table.
func printList[T any](a *app, items []T, table render.Table[T]) error {
	if a.asJSON {
		return clitext.WriteJSON(a.streams.Out, clitext.NonNil(items))
	}
	return table.Write(a.streams.Out, a.streams.Err, items)
}

// printOne prints v as JSON with --json, else with text.
func (a *app) printOne(v any, plain func(w io.Writer) error) error {
	if a.asJSON {
		return clitext.WriteJSON(a.streams.Out, v)
	}
	return plain(a.streams.Out)
}

// printServers prints servers as the listing commands do.
// Without --verbose a reason shows remotemcp's words and the innermost
// cause, and stderr says where the whole one is.
func (a *app) printServers(servers []localapi.Server) error {
	cut := false
	defer func() {
		if cut && !a.asJSON {
			fmt.Fprintln(a.streams.Err, render.MoreReason)
		}
	}()
	return printList(a, servers, render.Servers(a.verbose, &cut))
}
