package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/admin"
	"github.com/remotemcp/remotemcp/localapi"
)

// withShared adds --shared to cmd (admin.WithShared), run over the socket.
func withShared(a *app, cmd *cobra.Command, help string, run func(ctx context.Context, c *localapi.Client, o admin.Out, args []string) error) *cobra.Command {
	return admin.WithShared(cmd, help, func(cmd *cobra.Command, args []string) error {
		return a.admin(cmd.Context(), "--shared", func(c *localapi.Client, o admin.Out) error { return run(cmd.Context(), c, o, args) })
	})
}

// admin runs an admin command's work over the gateway daemon's socket.
func (a *app) admin(ctx context.Context, what string, fn func(c *localapi.Client, o admin.Out) error) error {
	o := admin.Out{Out: a.streams.Out, Err: a.streams.Err, JSON: a.asJSON}
	return admin.Run(ctx, a.dataDirPath(), a.user, what, func(c *localapi.Client) error { return fn(c, o) })
}
