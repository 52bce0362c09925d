package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/agent"
)

// resourceRow is one resource or template in `resources --json`.
type resourceRow struct {
	// Mention is what "read" takes: @SERVER:URI.
	Mention string `json:"mention"`
	agent.ResourceEntry
}

func newResourcesCmd(a *app) *cobra.Command {
	var (
		serverID, query string
		asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "resources",
		Short: "Search the resources of every enabled server (@ search)",
		Long: `Connect to every enabled server, or to --server ID, and list their
resources and resource templates as @SERVER:URI mentions (what "read"
takes), best match first for --query: exact before prefix before
substring, name before title before URI. A query of the form SERVER:REST
searches that server only.`,
		Example: `  remotemcp resources --query readme
  remotemcp resources --query 'docs:guide' --json`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			b, err := a.bridgeFor(ctx, serverID, bridgeOptions{})
			if err != nil {
				return err
			}
			defer b.Close()
			failed := b.reportFailures(nil)
			rows := []resourceRow{}
			for _, e := range b.reg.SearchResources(query, 0) {
				rows = append(rows, resourceRow{Mention: e.Mention(), ResourceEntry: e})
			}
			if asJSON {
				err = writeJSON(a.streams.Out, rows)
			} else {
				if len(rows) == 0 && query != "" {
					fmt.Fprintf(a.streams.Err, "no resource matches %q\n", query)
				}
				err = writeResourceTable(a.streams.Out, rows)
			}
			if err == nil && failed {
				err = reported
			}
			return err
		},
	}
	cmd.Flags().StringVar(&serverID, "server", "", "only this server")
	cmd.Flags().StringVarP(&query, "query", "q", "", "search text (name, title or URI)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// writeResourceTable prints MENTION, KIND, NAME, MIME and DESCRIPTION.
func writeResourceTable(w io.Writer, rows []resourceRow) error {
	if len(rows) == 0 {
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "MENTION\tKIND\tNAME\tMIME\tDESCRIPTION")
	for _, r := range rows {
		kind := "resource"
		if r.Template {
			kind = "template"
		}
		name := r.Name
		if r.Title != "" {
			name = r.Title
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(r.Mention), kind, cell(orDash(name)), cell(orDash(r.MIMEType)), cell(firstLine(r.Description)))
	}
	return tw.Flush()
}

func newReadCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "read @SERVER:URI",
		Short: "Read a resource",
		Long: `Read a resource named as @SERVER:URI (see "remotemcp resources"). Text
is printed as it is; binary content (images, blobs) is summarised with its
type and size, never dumped on the terminal. --json prints the contents as
blocks with their provenance, binary data base64-encoded. A template's
variables must be filled in first: @docs:docs://pages/{id} is read as
@docs:docs://pages/42.`,
		Example: `  remotemcp read @docs:docs://readme
  remotemcp read @fx:test://items/7 --json`,
		Args: argsExactly(1, "@SERVER:URI"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id, uri, err := agent.ParseMention(args[0])
			if err != nil {
				return usageErrorf("%s, e.g. @docs:docs://readme (see \"remotemcp resources\")", err)
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			srv, err := enabledServer(ctx, c.Store, id)
			if err != nil {
				c.Close()
				return err
			}
			b, err := a.startBridge(ctx, c, targetsOf(srv), bridgeOptions{})
			if err != nil {
				return err
			}
			defer b.Close()
			if b.reportFailures(nil) {
				return reported
			}
			for _, e := range b.reg.Snapshot().Resources() {
				if e.Template && e.ServerID == id && e.URI == uri {
					return usageErrorf("%s is a URI template: replace each {variable} in it with a value first", cell(args[0]))
				}
			}
			res, err := b.reg.Read(ctx, args[0])
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var rpc *jsonrpc.Error
				if errors.As(err, &rpc) {
					return fmt.Errorf("the server refused to read it: %w; see \"remotemcp resources --server %s\" for what it offers", err, id)
				}
				reportFailure(a.streams.Err, srv, reasonOf(b.l.m, id, err), err)
				return reported
			}
			if asJSON {
				return writeJSON(a.streams.Out, res)
			}
			for _, bl := range res.Blocks {
				s := text(bl.Text)
				if bl.Binary() {
					s = fmt.Sprintf("%s %s (not shown; use --json for the data)", cell(bl.Text), cell(bl.Provenance.URI))
				}
				if _, err := fmt.Fprintln(a.streams.Out, strings.TrimSuffix(s, "\n")); err != nil {
					return err
				}
				if t := bl.Truncated; t != nil {
					fmt.Fprintf(a.streams.Err, "[remotemcp: output truncated: showing the first %d of %d characters]\n", t.ShownChars, t.OriginalChars)
				}
			}
			for _, n := range res.Notes {
				fmt.Fprintln(a.streams.Err, cell(n))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the contents as JSON blocks with provenance")
	return cmd
}
