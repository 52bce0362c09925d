package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/cliflag"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/internal/toollines"
	"github.com/remotemcp/remotemcp/localapi"
)

func newToolsCmd(a *app) *cobra.Command {
	var serverID string
	cmd := a.jsonFlag(&cobra.Command{
		Use:   "tools",
		Short: "List the tools of every enabled server, or of one",
		Long: `List the tools of every enabled server, or of --server ID, as mcp__SERVER__TOOL
names (what "call" takes). Switched-off tools are named on stderr. --json
prints an array, one tool per line: name, serverId, toolName, title,
description, inputSchema (the server's bytes), annotations, effects and
retry. Exit status 1 when a server could not be listed.`,
		Args: argsExactly(0, ""),
		RunE: a.do(func(ctx context.Context, e Engine, _ []string) error {
			req := localapi.ToolsRequest{ServerID: serverID, Connect: true}
			if el, ok := e.(localapi.EncodedToolLister); ok && a.asJSON {
				// The daemon's encoding, not decoded (issue #21).
				list, err := toollines.List(ctx, el, req)
				if err != nil {
					return err
				}
				return toolNotes(ctx, a, e, serverID, list.Errors, toollines.Write(a.streams.Out, list.Tools))
			}
			list, err := e.Tools(ctx, req)
			if err != nil {
				return err
			}
			tools := clitext.NonNil(list.Tools)
			slices.SortFunc(tools, func(x, y localapi.Tool) int { return strings.Compare(x.Name, y.Name) })
			if a.asJSON {
				err = clitext.WriteJSONLines(a.streams.Out, tools)
			} else {
				err = printList(a, tools, render.Tools)
			}
			return toolNotes(ctx, a, e, serverID, list.Errors, err)
		}),
	}, "print a JSON array with input schemas and annotations")
	cmd.Flags().StringVar(&serverID, "server", "", "only this server")
	cmd.AddCommand(newToolsReviewCmd(a), newToolsAcceptCmd(a)) // pins.go
	return cmd
}

// toolNotes ends a tools listing: the switched-off and held tools and the
// servers that could not be listed on stderr, and the exit status.
func toolNotes(ctx context.Context, a *app, e Engine, serverID string, errs []localapi.ServerError, err error) error {
	if servers, serr := e.Servers(ctx); serr == nil {
		for _, s := range servers {
			if len(s.DisabledTools) > 0 && (serverID == "" || s.ID == serverID) {
				fmt.Fprintf(a.streams.Err, "switched off on %s: %s (switch one on with \"remotemcp servers set %s --enable-tool TOOL\")\n",
					s.ID, clitext.Cell(strings.Join(s.DisabledTools, ", ")), s.ID)
			}
			if len(s.HeldTools) > 0 && (serverID == "" || s.ID == serverID) {
				// Issue #20 item 3: a changed tool is not listed.
				render.HeldNames(a.streams.Err, s, " (review with", ")")
			}
		}
	}
	return serverErrors(a, errs, err)
}

// serverErrors reports the servers a listing could not reach.
func serverErrors(a *app, errs []localapi.ServerError, err error) error {
	for _, se := range errs {
		fmt.Fprintf(a.streams.Err, "%s: %s\n", se.ServerID, clitext.Cell(redact.Text(se.Message)))
	}
	if err == nil && len(errs) > 0 {
		return exit.Reported
	}
	return err
}

func newPromptsCmd(a *app) *cobra.Command {
	var serverID string
	cmd := a.jsonFlag(&cobra.Command{
		Use:   "prompts",
		Short: "List the prompts of every enabled server as /server:prompt commands",
		Long: `List the prompts of every enabled server, or of --server ID, as
/SERVER:PROMPT commands (what "prompt" takes). --json prints an array
(command, serverId, name, title, description, arguments).`,
		Args: argsExactly(0, ""),
		RunE: a.do(func(ctx context.Context, e Engine, _ []string) error {
			prompts, err := e.Prompts(ctx, serverID)
			if err != nil {
				return err
			}
			return printList(a, prompts, render.Prompts)
		}),
	}, "print a JSON array with the argument definitions")
	cmd.Flags().StringVar(&serverID, "server", "", "only this server")
	return cmd
}

func newPromptCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
		Use:   "prompt /SERVER:PROMPT [NAME=VALUE ...]",
		Short: "Get a prompt's messages",
		Long: `Run a /SERVER:PROMPT command with NAME=VALUE arguments and print the
server's messages under their roles; --json prints content blocks with
their provenance.`,
		Example: `  remotemcp prompt /docs:summarize topic=oauth
  remotemcp prompt /fx:greet name=Ada style=formal --json`,
		Args: argsRange(1, -1, "/SERVER:PROMPT [NAME=VALUE ...]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			command := "/" + strings.TrimPrefix(args[0], "/")
			id, name, ok := strings.Cut(command[1:], ":")
			if !ok || id == "" || name == "" {
				return exit.Usagef("%q is not a prompt command: want /SERVER:PROMPT, e.g. /docs:summarize (see \"remotemcp prompts\")", args[0])
			}
			values := map[string]string{}
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return exit.Usagef("argument %q must be NAME=VALUE", kv)
				}
				if _, dup := values[k]; dup {
					return exit.Usagef("argument %q is given twice", k)
				}
				values[k] = v
			}
			return a.do(func(ctx context.Context, e Engine, _ []string) error {
				prompts, err := e.Prompts(ctx, id)
				if err != nil {
					return err
				}
				i := slices.IndexFunc(prompts, func(p localapi.Prompt) bool { return p.Command == command })
				if i < 0 {
					var names []string
					for _, p := range prompts {
						names = append(names, p.Command)
					}
					return fmt.Errorf("server %s has no prompt command %s (it has %s); see \"remotemcp prompts --server %s\"",
						id, clitext.Cell(command), clitext.OrDash(clitext.Cell(strings.Join(names, ", "))), id)
				}
				if err := cliflag.PromptArgs(prompts[i], values); err != nil {
					return err
				}
				res, err := e.GetPrompt(ctx, localapi.GetPromptRequest{Command: command, Arguments: values})
				if err != nil {
					return err
				}
				return a.printOne(res, func(w io.Writer) error {
					render.Messages(w, a.streams.Err, res)
					return nil
				})
			})(cmd, args)
		},
	}, "print the messages as JSON content blocks with provenance")
}

func newResourcesCmd(a *app) *cobra.Command {
	var serverID, query string
	cmd := a.jsonFlag(&cobra.Command{
		Use:   "resources",
		Short: "Search the resources of every enabled server (@ search)",
		Long: `List resources and templates as @SERVER:URI mentions (what "read" takes),
best match first for --query (SERVER:REST searches one server). --json
prints an array (serverId, uri, template, name, title, description,
mimeType, size).`,
		Example: `  remotemcp resources --query readme
  remotemcp resources --query 'docs:guide' --json`,
		Args: argsExactly(0, ""),
		RunE: a.do(func(ctx context.Context, e Engine, _ []string) error {
			list, err := e.Resources(ctx, localapi.ResourcesRequest{ServerID: serverID, Query: query})
			if err != nil {
				return err
			}
			if len(list) == 0 && query != "" && !a.asJSON {
				fmt.Fprintf(a.streams.Err, "no resource matches %q\n", query)
			}
			return printList(a, list, render.Resources)
		}),
	}, "print a JSON array")
	cmd.Flags().StringVar(&serverID, "server", "", "only this server")
	cmd.Flags().StringVarP(&query, "query", "q", "", "search text (name, title or URI)")
	return cmd
}

func newReadCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
		Use:   "read @SERVER:URI",
		Short: "Read a resource",
		Long: `Read a resource named @SERVER:URI (fill a template's {variables} in first).
Text is printed as it is, binary content summarised; --json prints blocks
with their provenance, binary data base64-encoded.`,
		Example: `  remotemcp read @docs:docs://readme
  remotemcp read @fx:test://items/7 --json`,
		Args: argsExactly(1, "@SERVER:URI"),
		RunE: func(cmd *cobra.Command, args []string) error {
			mention := args[0]
			server, uri, ok := strings.Cut(strings.TrimPrefix(mention, "@"), ":")
			if !ok || server == "" || uri == "" {
				return exit.Usagef("%q must look like @server:URI, e.g. @docs:docs://readme (see \"remotemcp resources\")", mention)
			}
			if strings.Contains(uri, "{") && strings.Contains(uri, "}") {
				return exit.Usagef("%s is a URI template: replace each {variable} in it with a value first", clitext.Cell(mention))
			}
			return a.do(func(ctx context.Context, e Engine, _ []string) error {
				res, err := e.ReadResource(ctx, localapi.ReadRequest{Mention: mention})
				if err != nil {
					return err
				}
				return a.printOne(res, func(w io.Writer) error { return render.Contents(w, a.streams.Err, res) })
			})(cmd, args)
		},
	}, "print the contents as JSON blocks with provenance")
}
