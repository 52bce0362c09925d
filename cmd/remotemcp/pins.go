package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/render"
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
				return clitext.WriteJSONLines(a.streams.Out, clitext.NonNil(held))
			}
			return render.Held(a.streams.Out, held)
		}),
	}, "print a JSON array, one held tool per line")
}

// newToolsAcceptCmd is "tools accept SERVER TOOL...|--all".
//
// Long: one cobra command: its help, the argument checks for the three forms
// (--hash, named tools, --all), the held changes read to fix what is
// accepted, the refusals turned into advice, and the per-tool lines that
// reuse what was read; the read and the printing share one map.
func newToolsAcceptCmd(a *app) *cobra.Command {
	var (
		all  bool
		hash string
	)
	cmd := a.jsonFlag(&cobra.Command{
		Use:   "accept SERVER TOOL...|--all",
		Short: "Pin the new definitions of held tools, so they are offered again",
		Long: `Accept the changed definitions of the named held tools of SERVER, or with
--all of every held tool of SERVER: the new definition is pinned, and the
tool is offered again to the agent and to MCP hosts (which are told their
tool list changed).

The safe form is the one "remotemcp tools review" prints for each change,
with --hash: it accepts only the definition you reviewed, and is refused
if the server changed the tool again since (review it again then).
Without --hash, accept reads the held changes and accepts exactly those,
printing each tool's new hash and a summary of what changed; what it
accepted may be newer than what you reviewed. --json prints {serverId,
accepted}.`,
		Example: `  remotemcp tools accept github create_issue --hash sha256:…
  remotemcp tools accept github create_issue
  remotemcp tools accept github --all`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return exit.Usagef("name the server: remotemcp tools accept SERVER TOOL...|--all")
			case all && hash != "":
				return exit.Usagef("--hash accepts one reviewed definition; name its tool instead of --all (remotemcp tools accept %s TOOL --hash HASH)", args[0])
			case all && len(args) > 1:
				return exit.Usagef("name tools or give --all, not both")
			case !all && len(args) == 1:
				return exit.Usagef("name the tools to accept, or give --all (see \"remotemcp tools review %s\")", args[0])
			case hash != "" && len(args) != 2:
				return exit.Usagef("--hash is the hash of one tool's new definition: name exactly one tool (see \"remotemcp tools review %s\")", args[0])
			}
			return nil
		},
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			pr, err := pinReviewer(e)
			if err != nil {
				return err
			}
			server := args[0]
			req := localapi.AcceptToolsRequest{Tools: args[1:], Expect: map[string]string{}}
			shown := map[string]localapi.HeldTool{}
			if hash != "" {
				req.Expect[args[1]] = hash
			} else {
				// Accept exactly what is read here, and say what it was.
				held, err := pr.HeldTools(ctx, server)
				if err != nil {
					return err
				}
				for _, h := range held {
					if h.Unpinnable != "" {
						continue
					}
					if all || slices.Contains(req.Tools, h.Tool) {
						shown[h.Tool] = h
						req.Expect[h.Tool] = h.NewHash
					}
				}
				if all {
					req.Tools = slices.Sorted(maps.Keys(shown))
					if len(req.Tools) == 0 {
						req.All = true // nothing held: the answer says so
					}
				}
			}
			res, err := pr.AcceptTools(ctx, server, req)
			var le *localapi.Error
			if errors.As(err, &le) && le.Code == localapi.CodeNotFound {
				// A tool that cannot be pinned has no change to accept.
				for _, u := range unpinnableOf(ctx, pr, server) {
					if slices.Contains(req.Tools, u.Tool) {
						return fmt.Errorf("tool %s of %s %s: there is nothing to accept: %w", clitext.Shown(u.Tool), clitext.Cell(server), clitext.Shown(u.Unpinnable), err)
					}
				}
			}
			if errors.As(err, &le) && le.Code == localapi.CodeConflict {
				return fmt.Errorf("the definition of a tool of %s changed again since it was shown; nothing was accepted: review it again with \"remotemcp tools review %s\" and accept with the new --hash: %w", clitext.Cell(server), clitext.Cell(server), err)
			}
			if err != nil {
				return err
			}
			if a.asJSON {
				return clitext.WriteJSON(a.streams.Out, res)
			}
			return render.Accepted(a.streams.Out, res, shown, hash)
		}),
	}, "print the result as JSON")
	cmd.Flags().BoolVar(&all, "all", false, "accept every held tool of the server")
	cmd.Flags().StringVar(&hash, "hash", "", "accept only this new definition of the tool (the hash \"tools review\" prints)")
	return cmd
}

// unpinnableOf lists the server's tools that cannot be pinned.
func unpinnableOf(ctx context.Context, pr localapi.PinReviewer, server string) []localapi.HeldTool {
	held, err := pr.HeldTools(ctx, server)
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(held, func(h localapi.HeldTool) bool { return h.Unpinnable == "" })
}

// printHeld names the held tools of servers after the status table:
// those whose definition changed (to review), and apart those that
// cannot be pinned, with why (never offered; nothing to review).
func (a *app) printHeld(servers []localapi.Server) {
	for _, s := range servers {
		render.HeldNames(a.streams.Out, s, "; review with", "")
	}
}
