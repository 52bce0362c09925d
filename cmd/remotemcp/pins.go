package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/visible"
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
			return writeHeld(a.streams.Out, held)
		}),
	}, "print a JSON array, one held tool per line")
}

// writeHeld prints held changes for a person: server text goes through
// shown(), text() and cell(), so it cannot move the cursor, fake a line
// of ours, or hide characters a model reads (issue #20 item 3 review:
// tag, zero-width and bidi characters are written as [U+XXXX]). Each
// change names the hash of its new definition and the accept command
// that takes exactly that one.
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
		if h.Unpinnable != "" {
			fmt.Fprintf(&b, "%s %s: %s\n", clitext.Shown(h.ServerID), clitext.Shown(h.Tool), clitext.Shown(h.Unpinnable))
			continue
		}
		fmt.Fprintf(&b, "%s %s: held since %s; pinned %s\n", clitext.Shown(h.ServerID), clitext.Shown(h.Tool), stamp(h.Seen), stamp(h.Pinned))
		for _, c := range h.Changes {
			fmt.Fprintf(&b, "  %s %s\n", clitext.Shown(c.Path), c.Kind)
			if c.Old != "" {
				b.WriteString(clitext.Indented("    old: ", visible.ShowHidden(c.Old)))
			}
			if c.New != "" {
				b.WriteString(clitext.Indented("    new: ", visible.ShowHidden(c.New)))
			}
		}
		fmt.Fprintf(&b, "  new definition: %s\n", clitext.Cell(h.NewHash))
		fmt.Fprintf(&b, "  accept: %s\n", acceptCommand(h))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// acceptCommand is the command that accepts exactly the definition of
// h that was shown (and is refused if the server changed it again).
func acceptCommand(h localapi.HeldTool) string {
	return fmt.Sprintf("remotemcp tools accept %s %s --hash %s", shellWord(h.ServerID), shellWord(visible.ShowHidden(h.Tool)), clitext.Cell(h.NewHash))
}

// shellWord quotes s for a POSIX shell when it is not a plain word.
func shellWord(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r == '/' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(clitext.Cell(s), "'", `'\''`) + "'"
}

// changeSummary is a one-line summary of a held change, for accept.
func changeSummary(h localapi.HeldTool) string {
	const most = 4
	parts := make([]string, 0, most+1)
	for i, c := range h.Changes {
		if i == most {
			parts = append(parts, fmt.Sprintf("%d more", len(h.Changes)-most))
			break
		}
		parts = append(parts, clitext.Shown(c.Path)+" "+c.Kind)
	}
	if len(parts) == 0 {
		return "no listed change"
	}
	return strings.Join(parts, ", ")
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
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
				return usageErrorf("name the server: remotemcp tools accept SERVER TOOL...|--all")
			case all && hash != "":
				return usageErrorf("--hash accepts one reviewed definition; name its tool instead of --all (remotemcp tools accept %s TOOL --hash HASH)", args[0])
			case all && len(args) > 1:
				return usageErrorf("name tools or give --all, not both")
			case !all && len(args) == 1:
				return usageErrorf("name the tools to accept, or give --all (see \"remotemcp tools review %s\")", args[0])
			case hash != "" && len(args) != 2:
				return usageErrorf("--hash is the hash of one tool's new definition: name exactly one tool (see \"remotemcp tools review %s\")", args[0])
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
			if len(res.Accepted) == 0 {
				_, err = fmt.Fprintf(a.streams.Out, "no tool of %s is held\n", clitext.Cell(res.ServerID))
				return err
			}
			var b strings.Builder
			for _, t := range res.Accepted {
				h, ok := shown[t]
				switch {
				case ok:
					fmt.Fprintf(&b, "accepted the new definition of %s on %s: %s (%s); offered again\n", clitext.Shown(t), clitext.Cell(res.ServerID), clitext.Cell(h.NewHash), changeSummary(h))
				case hash != "":
					fmt.Fprintf(&b, "accepted the new definition of %s on %s: %s; offered again\n", clitext.Shown(t), clitext.Cell(res.ServerID), clitext.Cell(hash))
				default:
					fmt.Fprintf(&b, "accepted the new definition of %s on %s; offered again\n", clitext.Shown(t), clitext.Cell(res.ServerID))
				}
			}
			_, err = io.WriteString(a.streams.Out, b.String())
			return err
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
		writeHeldNames(a.streams.Out, s, "; review with", "")
	}
}

// writeHeldNames prints a server's held tools: one line for the changed
// ones (sep and end surround the review command), one per tool that cannot be
// pinned.
func writeHeldNames(w io.Writer, s localapi.Server, sep, end string) {
	changed := slices.DeleteFunc(slices.Clone(s.HeldTools), func(t string) bool { _, u := s.Unpinnable[t]; return u })
	if len(changed) > 0 {
		shown := make([]string, len(changed))
		for i, t := range changed {
			shown[i] = clitext.Shown(t)
		}
		fmt.Fprintf(w, "held on %s (definition changed): %s%s \"remotemcp tools review %s\"%s\n",
			clitext.Cell(s.ID), strings.Join(shown, ", "), sep, clitext.Cell(s.ID), end)
	}
	for _, t := range slices.Sorted(maps.Keys(s.Unpinnable)) {
		fmt.Fprintf(w, "not offered on %s: %s %s\n", clitext.Cell(s.ID), clitext.Shown(t), clitext.Shown(s.Unpinnable[t]))
	}
}
