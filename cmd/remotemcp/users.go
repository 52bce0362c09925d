package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/admin"
	"github.com/remotemcp/remotemcp/localapi"
)

// newUsersCmd is "users": a gateway's people, for its admins (the CLI on
// the gateway's host, over the daemon's socket; internal/admin).
func newUsersCmd(a *app) *cobra.Command {
	run := func(fn func(ctx context.Context, c *localapi.Client, o admin.Out, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			return a.admin(cmd.Context(), "users", func(c *localapi.Client, o admin.Out) error { return fn(cmd.Context(), c, o, args) })
		}
	}
	list := a.jsonFlag(&cobra.Command{Use: "list", Short: "List the gateway's users", Args: argsExactly(0, ""),
		RunE: run(func(ctx context.Context, c *localapi.Client, o admin.Out, _ []string) error {
			return admin.ListUsers(ctx, c, o)
		}),
	}, "print a JSON array")
	add := a.jsonFlag(&cobra.Command{Use: "add EMAIL", Short: "Add a user to the gateway", Args: argsExactly(1, "EMAIL"),
		Long: `Add a person to the gateway by email. Act for them with the global
--user EMAIL ("remotemcp --user EMAIL servers add …", "mcp token create
NAME" for their hosts).`,
		RunE: run(func(ctx context.Context, c *localapi.Client, o admin.Out, args []string) error {
			return admin.AddUser(ctx, c, o, args[0])
		}),
	}, "print the user as JSON")
	remove := &cobra.Command{Use: "remove EMAIL", Short: "Remove a user and everything of theirs from the gateway", Args: argsExactly(1, "EMAIL"),
		Long: `Remove a person from the gateway: their servers, tokens, secrets, host
tokens, questions and logs are deleted, their sessions to remote servers
close and their hosts' sessions end. There is no undo.`,
		RunE: run(func(ctx context.Context, c *localapi.Client, o admin.Out, args []string) error {
			return admin.RemoveUser(ctx, c, o, args[0])
		}),
	}
	return group("users", "Manage the people of a gateway (serve --store postgres://…)",
		`A gateway ("remotemcp serve --store postgres://…") serves many people,
each with their own servers, tokens and hosts. Its admins manage them with
these commands on the gateway's host, and act for one with the global
--user EMAIL.`, list, add, remove)
}
