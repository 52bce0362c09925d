// Package admin does the work of a gateway admins' commands ("users …",
// "servers … --shared"): it reaches the daemon's admin routes over its
// socket and prints the answers, so the CLI keeps only their flags.
package admin

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/apiclient"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

// Out is where a command prints: answers on Out (JSON with JSON), notes
// on Err.
type Out struct {
	Out, Err io.Writer
	JSON     bool
}

// Run reaches the admin routes of the gateway daemon on dir and runs fn
// with its client. user is the global --user, which does not go with an
// admin command.
func Run(ctx context.Context, dir, user, what string, fn func(c *localapi.Client) error) error {
	if user != "" {
		return exit.Usagef("%s is for the gateway's admins and acts for no one person: leave out --user", what)
	}
	c, err := apiclient.Admin(ctx, dir)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	return fn(c)
}

// ListUsers prints the gateway's people.
func ListUsers(ctx context.Context, c *localapi.Client, o Out) error {
	users, err := c.Users(ctx)
	if err != nil {
		return err
	}
	if o.JSON {
		return clitext.WriteJSON(o.Out, clitext.NonNil(users))
	}
	return render.Users.Write(o.Out, o.Err, users)
}

// AddUser adds a person.
func AddUser(ctx context.Context, c *localapi.Client, o Out, email string) error {
	u, err := c.AddUser(ctx, email)
	if err != nil {
		return err
	}
	if o.JSON {
		return clitext.WriteJSON(o.Out, u)
	}
	_, err = fmt.Fprintf(o.Out, "added %s (%s)\n", u.Email, u.ID)
	return err
}

// RemoveUser removes a person and everything of theirs.
func RemoveUser(ctx context.Context, c *localapi.Client, o Out, email string) error {
	if err := c.RemoveUser(ctx, email); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.Out, "removed %s\n", email)
	return err
}

// AddShared shares a server with everyone.
func AddShared(ctx context.Context, c *localapi.Client, o Out, req localapi.AddServerRequest) error {
	s, err := c.AddSharedServer(ctx, req)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "shared %s %s with everyone; each person signs in with their own account\n", s.ID, s.URL)
	return err
}

// ListShared prints the servers shared with everyone.
func ListShared(ctx context.Context, c *localapi.Client, o Out) error {
	list, err := c.SharedServers(ctx)
	if err != nil {
		return err
	}
	if o.JSON {
		return clitext.WriteJSON(o.Out, clitext.NonNil(list))
	}
	return render.SharedServers.Write(o.Out, o.Err, list)
}

// RemoveShared stops sharing a server.
func RemoveShared(ctx context.Context, c *localapi.Client, o Out, id string) error {
	if err := c.RemoveSharedServer(ctx, id); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.Out, "stopped sharing %s; every person's copy was removed\n", id)
	return err
}

// WithShared adds --shared to cmd: with it, the command runs shared (it
// acts on the servers the admins share with everyone) instead of its own
// RunE (one person's servers).
func WithShared(cmd *cobra.Command, help string, shared func(cmd *cobra.Command, args []string) error) *cobra.Command {
	var on bool
	cmd.Flags().BoolVar(&on, "shared", false, "on a gateway: "+help)
	own := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if on {
			return shared(cmd, args)
		}
		return own(cmd, args)
	}
	return cmd
}
