package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/apiclient"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/localapi"
)

// withShared adds --shared to cmd: with it, the command acts on the
// servers a gateway's admins share with everyone (run, over the
// daemon's socket, without --user) instead of one person's.
func withShared(a *app, cmd *cobra.Command, help string, run func(ctx context.Context, c *localapi.Client, args []string) error) *cobra.Command {
	var shared bool
	cmd.Flags().BoolVar(&shared, "shared", false, "on a gateway: "+help)
	own := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !shared {
			return own(cmd, args)
		}
		c, err := a.adminClient(cmd.Context())
		if err != nil {
			return err
		}
		defer c.CloseIdleConnections()
		return run(cmd.Context(), c, args)
	}
	return cmd
}

// adminClient is the gateway daemon's client for the admins' routes;
// --user does not go with them.
func (a *app) adminClient(ctx context.Context) (*localapi.Client, error) {
	if a.user != "" {
		return nil, exit.Usagef("--shared is for the gateway's admins and acts for everyone: leave out --user")
	}
	return apiclient.Admin(ctx, a.dataDirPath())
}

func (a *app) addShared(ctx context.Context, req localapi.AddServerRequest) error {
	c, err := a.adminClient(ctx)
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	s, err := c.AddSharedServer(ctx, req)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.streams.Out, "shared %s %s with everyone; each person signs in with their own account\n", s.ID, s.URL)
	return err
}

func (a *app) listShared(ctx context.Context, c *localapi.Client, _ []string) error {
	list, err := c.SharedServers(ctx)
	if err != nil {
		return err
	}
	if a.asJSON {
		return clitext.WriteJSON(a.streams.Out, clitext.NonNil(list))
	}
	if len(list) == 0 {
		fmt.Fprintln(a.streams.Err, "no shared servers: an admin shares one with \"remotemcp servers add ID URL --shared\"")
		return nil
	}
	tw := clitext.NewTable(a.streams.Out)
	fmt.Fprintln(tw, "ID\tURL\tAUTH")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", clitext.Cell(s.ID), clitext.Cell(s.URL), s.Auth)
	}
	return tw.Flush()
}

func (a *app) removeShared(ctx context.Context, c *localapi.Client, args []string) error {
	if err := c.RemoveSharedServer(ctx, args[0]); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.streams.Out, "stopped sharing %s; every person's copy was removed\n", args[0])
	return err
}
