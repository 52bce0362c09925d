package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
)

// grantServerOrigin grants the origin of a server the user just added or
// re-pointed: adding a server is the explicit user action that allows its
// own origin (R2.2). Authorization servers found later are not covered.
func (a *app) grantServerOrigin(ctx context.Context, c *remotemcp.Client, rawURL string) error {
	origin, err := config.Origin(rawURL)
	if err != nil {
		return err
	}
	if ok, err := c.Hosts.Allowed(ctx, origin); err == nil && ok {
		return nil // already allowed: write nothing
	}
	if dc, err := a.daemonClient(ctx); err == nil && dc != nil {
		if _, err := dc.Grant(ctx, origin); err == nil {
			return nil
		}
	}
	if err := c.Hosts.Grant(ctx, origin, hostperm.ByServersAdd); err != nil {
		return fmt.Errorf("grant %s: %w", origin, err)
	}
	return nil
}

// askHost is the CLI's hostperm.Options.Ask: on a terminal the person is
// asked; otherwise the request is refused and stays a pending approval
// that "remotemcp grants approve" turns into a grant.
func (a *app) askHost(_ context.Context, p hostperm.PermissionRequiredError) bool {
	if !a.interactive() {
		return false
	}
	what := string(p.Purpose)
	if what == "" {
		what = "request"
	}
	if p.ServerID != "" {
		what += " for server " + p.ServerID
	}
	return a.askYesNo(fmt.Sprintf("remotemcp has no permission to contact %s (%s). Allow it from now on?", p.Origin, what))
}

func newGrantsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "grants",
		Short: "Origins remotemcp may contact, and pending approvals (R2.2)",
		Long: `Every request remotemcp makes (MCP endpoints, OAuth metadata, registration,
token requests) goes to an origin the user has allowed. Adding a server
allows its own origin; an authorization server found later waits as a
pending approval until you approve it here or in the settings page.`,
		Args: noSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List granted origins and pending approvals",
		Args:  argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			// Grants live in the store, which the daemon shares: no need
			// to go through it.
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			grants, err := c.Hosts.Grants(ctx)
			if err != nil {
				return err
			}
			pending, err := c.Hosts.Pending(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if grants == nil {
					grants = []hostperm.Grant{}
				}
				if pending == nil {
					pending = []hostperm.Pending{}
				}
				enc := json.NewEncoder(a.streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"grants": grants, "pending": pending})
			}
			tw := tabwriter.NewWriter(a.streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ORIGIN\tSTATUS\tDETAIL")
			for _, g := range grants {
				fmt.Fprintf(tw, "%s\tgranted\t%s, %s\n", cell(g.Origin), g.By, g.GrantedAt.Format(time.RFC3339))
			}
			for _, p := range pending {
				srv := p.ServerID
				if srv == "" {
					srv = "-"
				}
				fmt.Fprintf(tw, "%s\tpending\t%s for server %s, %d× since %s\n", cell(p.Origin), p.Purpose, cell(srv), p.Count, p.FirstSeen.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	approve := &cobra.Command{
		Use:   "approve ORIGIN",
		Short: "Allow remotemcp to contact ORIGIN (scheme://host[:port])",
		Args:  argsExactly(1, "ORIGIN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				// Through the daemon, which also reconnects the servers
				// that failed for want of this grant.
				if _, err := dc.Grant(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.streams.Err, "granted %s\n", args[0])
				return nil
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.Hosts.Grant(ctx, args[0], hostperm.ByCLI); err != nil {
				return err
			}
			fmt.Fprintf(a.streams.Err, "granted %s\n", args[0])
			return nil
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ORIGIN",
		Short: "Stop remotemcp from contacting ORIGIN",
		Args:  argsExactly(1, "ORIGIN"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				// Through the daemon, which disconnects that origin's servers.
				if _, err := dc.Revoke(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(a.streams.Err, "revoked %s\n", args[0])
				return nil
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.Hosts.Revoke(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.streams.Err, "revoked %s\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(list, approve, revoke)
	return cmd
}
