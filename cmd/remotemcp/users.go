package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/apiclient"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

// newUsersCmd is "users": a gateway's people, for its admins (the CLI on
// the gateway's host, over the daemon's socket).
func newUsersCmd(a *app) *cobra.Command {
	admin := func(fn func(ctx context.Context, c *localapi.Client, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			c, err := apiclient.Admin(cmd.Context(), a.dataDirPath())
			if err != nil {
				return err
			}
			defer c.CloseIdleConnections()
			return fn(cmd.Context(), c, args)
		}
	}
	list := a.jsonFlag(&cobra.Command{
		Use:   "list",
		Short: "List the gateway's users",
		Args:  argsExactly(0, ""),
		RunE: admin(func(ctx context.Context, c *localapi.Client, _ []string) error {
			users, err := c.Users(ctx)
			if err != nil {
				return err
			}
			return printList(a, users, render.Users)
		}),
	}, "print a JSON array")
	add := a.jsonFlag(&cobra.Command{
		Use:   "add EMAIL",
		Short: "Add a user to the gateway",
		Long: `Add a person to the gateway by email. Act for them with the global
--user EMAIL ("remotemcp --user EMAIL servers add …", "mcp token create
NAME" for their hosts).`,
		Args: argsExactly(1, "EMAIL"),
		RunE: admin(func(ctx context.Context, c *localapi.Client, args []string) error {
			u, err := c.AddUser(ctx, args[0])
			if err != nil {
				return err
			}
			return a.printOne(u, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "added %s (%s)\n", u.Email, u.ID)
				return err
			})
		}),
	}, "print the user as JSON")
	remove := &cobra.Command{
		Use:   "remove EMAIL",
		Short: "Remove a user and everything of theirs from the gateway",
		Long: `Remove a person from the gateway: their servers, tokens, secrets, host
tokens, questions and logs are deleted, their sessions to remote servers
close and their hosts' sessions end. There is no undo.`,
		Args: argsExactly(1, "EMAIL"),
		RunE: admin(func(ctx context.Context, c *localapi.Client, args []string) error {
			if err := c.RemoveUser(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.streams.Out, "removed %s\n", args[0])
			return nil
		}),
	}
	return group("users", "Manage the people of a gateway (serve --store postgres://…)",
		`A gateway ("remotemcp serve --store postgres://…") serves many people,
each with their own servers, tokens and hosts. Its admins manage them with
these commands on the gateway's host, and act for one with the global
--user EMAIL.`, list, add, remove)
}
