package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/agent"
)

func newPromptsCmd(a *app) *cobra.Command {
	var (
		serverID string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "prompts",
		Short: "List the prompts of every enabled server as /server:prompt commands",
		Long: `Connect to every enabled server, or to --server ID, and list their prompts
as /SERVER:PROMPT commands with their arguments (what "remotemcp prompt"
takes). --json prints each command with its argument definitions.`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			b, err := a.bridgeFor(ctx, serverID, bridgeOptions{})
			if err != nil {
				return err
			}
			defer b.Close()
			failed := b.reportFailures(nil)
			prompts := b.reg.Snapshot().Prompts()
			if asJSON {
				err = writeJSON(a.streams.Out, prompts)
			} else {
				err = writePromptTable(a.streams.Out, prompts)
			}
			if err == nil && failed {
				err = reported
			}
			return err
		},
	}
	cmd.Flags().StringVar(&serverID, "server", "", "only this server")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array with the argument definitions")
	return cmd
}

// writePromptTable prints COMMAND, ARGUMENTS (as "prompt" takes them) and
// DESCRIPTION.
func writePromptTable(w io.Writer, prompts []agent.PromptCommand) error {
	if len(prompts) == 0 {
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "COMMAND\tARGUMENTS\tDESCRIPTION")
	for _, p := range prompts {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(p.Command), cell(orDash(argUsage(p))), cell(firstLine(p.Description)))
	}
	return tw.Flush()
}

// argUsage is "name=VALUE [style=VALUE]": required arguments first.
func argUsage(p agent.PromptCommand) string {
	var req, opt []string
	for _, a := range p.Arguments {
		if a.Required {
			req = append(req, a.Name+"=VALUE")
		} else {
			opt = append(opt, "["+a.Name+"=VALUE]")
		}
	}
	return strings.Join(append(req, opt...), " ")
}

func newPromptCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "prompt /SERVER:PROMPT [NAME=VALUE ...]",
		Short: "Get a prompt's messages",
		Long: `Run a /SERVER:PROMPT command (see "remotemcp prompts") with its arguments
given as NAME=VALUE, and print the messages the server returns, each
under its role. The messages are the server's text: treat them as such.
--json prints them as content blocks with their provenance.`,
		Example: `  remotemcp prompt /docs:summarize topic=oauth
  remotemcp prompt /fx:greet name=Ada style=formal --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("usage: %s /SERVER:PROMPT [NAME=VALUE ...] (see \"remotemcp prompts\")", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			command := "/" + strings.TrimPrefix(args[0], "/")
			id, name, ok := strings.Cut(command[1:], ":")
			if !ok || id == "" || name == "" {
				return usageErrorf("%q is not a prompt command: want /SERVER:PROMPT, e.g. /docs:summarize (see \"remotemcp prompts\")", args[0])
			}
			values := map[string]string{}
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usageErrorf("argument %q must be NAME=VALUE", kv)
				}
				if _, dup := values[k]; dup {
					return usageErrorf("argument %q is given twice", k)
				}
				values[k] = v
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
			pc, err := b.findPrompt(command, id)
			if err != nil {
				return err
			}
			if err := checkPromptArgs(pc, values); err != nil {
				return err
			}
			res, err := b.reg.GetPrompt(ctx, command, values)
			if err != nil {
				var ae *agent.ArgumentError
				if errors.As(err, &ae) {
					return usageErrorf("%s", err)
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				reportFailure(a.streams.Err, srv, reasonOf(b.l.m, id, err), err)
				return reported
			}
			if asJSON {
				return writeJSON(a.streams.Out, res)
			}
			for _, bl := range res.Blocks {
				fmt.Fprintf(a.streams.Out, "[%s]\n%s\n", cell(orDash(bl.Role)), strings.TrimSuffix(text(bl.Text), "\n"))
			}
			for _, n := range res.Notes {
				fmt.Fprintln(a.streams.Err, cell(n))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the messages as JSON content blocks with provenance")
	return cmd
}

// findPrompt looks a command up, or explains why it is not there.
func (b *bridge) findPrompt(command, id string) (agent.PromptCommand, error) {
	var names []string
	for _, p := range b.reg.Snapshot().Prompts() {
		if p.Command == command {
			return p, nil
		}
		if p.ServerID == id {
			names = append(names, p.Command)
		}
	}
	if b.reportFailures(nil) {
		return agent.PromptCommand{}, reported
	}
	have := "no prompts"
	if len(names) > 0 {
		have = "these prompts: " + cell(strings.Join(names, ", "))
	}
	return agent.PromptCommand{}, fmt.Errorf("server %s has no prompt command %s (it has %s); see \"remotemcp prompts --server %s\"", id, cell(command), have, id)
}

// checkPromptArgs lists every missing required argument and every unknown
// one at once, before anything is sent.
func checkPromptArgs(pc agent.PromptCommand, values map[string]string) error {
	var missing, unknown []string
	for _, a := range pc.Arguments {
		if a.Required && strings.TrimSpace(values[a.Name]) == "" {
			m := a.Name
			if a.Description != "" {
				m += " (" + firstLine(a.Description) + ")"
			}
			missing = append(missing, m)
		}
	}
	for k := range values {
		if !slices.ContainsFunc(pc.Arguments, func(a agent.PromptArgument) bool { return a.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	var probs []string
	if len(missing) > 0 {
		probs = append(probs, "missing required argument(s): "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		probs = append(probs, "unknown argument(s): "+strings.Join(unknown, ", "))
	}
	if len(probs) == 0 {
		return nil
	}
	usage := argUsage(pc)
	if usage == "" {
		usage = "(no arguments)"
	}
	return usageErrorf("%s: %s; usage: remotemcp prompt %s %s", cell(pc.Command), cell(strings.Join(probs, "; ")), cell(pc.Command), cell(usage))
}
