package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/localapi"
)

// Tool pinning (issue #20 item 3): "tools review [SERVER]" and "tools
// accept SERVER TOOL...|--all".

// pinReviewer is the engine's pin review; every remotemcp engine has it.
func pinReviewer(e Engine) (localapi.PinReviewer, error) {
	pr, ok := e.(localapi.PinReviewer)
	if !ok {
		return nil, errors.New("this remotemcp does not pin tool definitions")
	}
	return pr, nil
}

func newToolsReviewCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
		Use:   "review [SERVER]",
		Short: "Show the tools held because their definition changed",
		Long: `Show every tool held because the server changed its definition (title,
description, input or output schema, annotations) since remotemcp first saw
it, of every server or of SERVER: the pinned and the new text, and a schema
diff naming the properties and required arguments added, removed or changed.
A held tool is not offered to the agent or to MCP hosts, and its calls are
refused, until "remotemcp tools accept" pins the new definition. Without a
daemon, the servers' tools are listed first (connecting), so the review is
current. --json prints one object per held tool (serverId, tool, old, new,
oldHash, newHash, pinned, seen, changes).`,
		Example: `  remotemcp tools review
  remotemcp tools review github --json`,
		Args: argsRange(0, 1, "[SERVER]"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			pr, err := pinReviewer(e)
			if err != nil {
				return err
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			if a.inProcess {
				// See what the servers offer now (the stored catalogs may be
				// older): that is what pins or holds.
				servers, err := pick(ctx, e, args)
				if err != nil {
					return err
				}
				wctx, cancel := context.WithTimeout(ctx, defaultStatusWait)
				var wg sync.WaitGroup
				for _, s := range servers {
					if s.Enabled {
						wg.Go(func() { _, _ = e.Connect(wctx, s.ID) })
					}
				}
				wg.Wait()
				cancel()
				_, _ = e.Tools(ctx, localapi.ToolsRequest{ServerID: id})
			}
			held, err := pr.HeldTools(ctx, id)
			if err != nil {
				return err
			}
			if a.asJSON {
				return writeJSONLines(a.streams.Out, nonNil(held))
			}
			return writeHeld(a.streams.Out, held)
		}),
	}, "print a JSON array, one held tool per line")
}

// writeHeld prints held changes for a person: server text goes through
// text() and cell(), so it cannot move the cursor or fake a line of ours.
func writeHeld(w io.Writer, held []localapi.HeldTool) error {
	if len(held) == 0 {
		_, err := fmt.Fprintln(w, "no tool is held: every tool's definition is the one first seen")
		return err
	}
	var b strings.Builder
	for i, h := range held {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s %s: held since %s; pinned %s\n", cell(h.ServerID), cell(h.Tool), stamp(h.Seen), stamp(h.Pinned))
		for _, c := range h.Changes {
			fmt.Fprintf(&b, "  %s %s\n", cell(c.Path), c.Kind)
			if c.Old != "" {
				b.WriteString(indented("    old: ", c.Old))
			}
			if c.New != "" {
				b.WriteString(indented("    new: ", c.New))
			}
		}
		fmt.Fprintf(&b, "  accept: remotemcp tools accept %s %s\n", cell(h.ServerID), cell(h.Tool))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// indented prints untrusted multi-line text under a label, each further
// line indented like the first, so no line of it starts where ours do.
func indented(label, s string) string {
	pad := strings.Repeat(" ", len(label))
	lines := strings.Split(text(s), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = label + lines[i]
		} else {
			lines[i] = pad + lines[i]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func newToolsAcceptCmd(a *app) *cobra.Command {
	var all bool
	cmd := a.jsonFlag(&cobra.Command{
		Use:   "accept SERVER TOOL...|--all",
		Short: "Pin the new definitions of held tools, so they are offered again",
		Long: `Accept the changed definitions of the named held tools of SERVER, or with
--all of every held tool of SERVER: the new definition is pinned, and the
tool is offered again to the agent and to MCP hosts (which are told their
tool list changed). Review the change first with "remotemcp tools review
SERVER". --json prints {serverId, accepted}.`,
		Example: `  remotemcp tools accept github create_issue
  remotemcp tools accept github --all`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usageErrorf("name the server: remotemcp tools accept SERVER TOOL...|--all")
			case all && len(args) > 1:
				return usageErrorf("name tools or give --all, not both")
			case !all && len(args) == 1:
				return usageErrorf("name the tools to accept, or give --all (see \"remotemcp tools review %s\")", args[0])
			}
			return nil
		},
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			pr, err := pinReviewer(e)
			if err != nil {
				return err
			}
			res, err := pr.AcceptTools(ctx, args[0], localapi.AcceptToolsRequest{Tools: args[1:], All: all})
			if err != nil {
				return err
			}
			if a.asJSON {
				return writeJSON(a.streams.Out, res)
			}
			if len(res.Accepted) == 0 {
				_, err = fmt.Fprintf(a.streams.Out, "no tool of %s is held\n", cell(res.ServerID))
				return err
			}
			_, err = fmt.Fprintf(a.streams.Out, "accepted the new definition of %s on %s; offered again\n", cell(strings.Join(res.Accepted, ", ")), cell(res.ServerID))
			return err
		}),
	}, "print the result as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "accept every held tool of the server")
	return cmd
}

// printHeld names the held tools of servers after the status table.
func (a *app) printHeld(servers []localapi.Server) {
	for _, s := range servers {
		if len(s.HeldTools) > 0 {
			fmt.Fprintf(a.streams.Out, "held on %s (definition changed): %s; review with \"remotemcp tools review %s\"\n",
				cell(s.ID), cell(strings.Join(s.HeldTools, ", ")), cell(s.ID))
		}
	}
}
