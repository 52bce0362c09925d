package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

func newConnectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "connect ID",
		Short: "Connect to a server and report what it offers",
		Long: `Connect to a server (initialize and list its capabilities), print what it
offers, or which step failed and what to do. Without a daemon the session
ends when the command exits, so this checks that the server works.`,
		Args: argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, id := cmd.Context(), args[0]
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				return a.connectViaDaemon(ctx, dc, id)
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			return a.connectAndReport(ctx, c, id)
		},
	}
}

// connectOne starts a manager for server id over the opened data
// directory c and connects it, showing progress on stderr. It takes
// ownership of c: on success l.Close closes it, on failure it is closed
// already and the attributed reason has been printed.
func (a *app) connectOne(ctx context.Context, c *remotemcp.Client, id string) (*live, config.Server, error) {
	srv, err := getServer(ctx, c.Store, id)
	if err == nil && !srv.Enabled {
		err = fmt.Errorf("server %s is disabled; enable it with \"remotemcp servers enable %s\"", id, id)
	}
	if err != nil {
		c.Close()
		return nil, config.Server{}, err
	}
	l, err := a.startManager(ctx, c, []string{id}, 0)
	if err != nil {
		c.Close()
		return nil, config.Server{}, err
	}
	fmt.Fprintf(a.streams.Err, "connecting to %s (%s)…\n", id, cell(srv.URL))
	if err := l.m.Connect(ctx, id); err != nil {
		err = a.connectFailed(ctx, l.m, srv, err)
		l.Close()
		return nil, config.Server{}, err
	}
	return l, srv, nil
}

// connectAndReport connects server id in-process (taking ownership of
// c), lists its catalog and prints "ready: …" or the attributed failure.
func (a *app) connectAndReport(ctx context.Context, c *remotemcp.Client, id string) error {
	l, srv, err := a.connectOne(ctx, c, id)
	if err != nil {
		return err
	}
	defer l.Close()
	cat, err := l.m.Catalog(ctx, id)
	if err != nil {
		return a.connectFailed(ctx, l.m, srv, err)
	}
	fmt.Fprintf(a.streams.Out, "ready: %s\n", describeCatalog(cat))
	return nil
}

// connectFailed reports a failed connect of srv and returns the command's
// error.
func (a *app) connectFailed(ctx context.Context, m *manager.Manager, srv config.Server, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	reportFailure(a.streams.Err, srv, reasonOf(m, srv.ID, err), err)
	return reported
}

// describeCatalog summarizes a catalog: "3 tools, 1 prompt, 2 resources".
func describeCatalog(c *session.Catalog) string {
	s := fmt.Sprintf("%s, %s, %s", plural(len(c.Tools), "tool", "tools"),
		plural(len(c.Prompts), "prompt", "prompts"), plural(len(c.Resources), "resource", "resources"))
	if n := len(c.Templates); n > 0 {
		s += fmt.Sprintf(" (and %s)", plural(n, "resource template", "resource templates"))
	}
	return s
}

func newDisconnectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "disconnect ID",
		Short: "Disconnect a server in the daemon (without one there is no live session)",
		Args:  argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, id := cmd.Context(), args[0]
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				if _, err := dc.Disconnect(ctx, id); err != nil {
					return fmt.Errorf("disconnect %s: %w", id, err)
				}
				fmt.Fprintf(a.streams.Err, "disconnected %s\n", id)
				return nil
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := getServer(ctx, c.Store, id); err != nil && !errors.Is(err, store.ErrSealOpen) {
				return err
			}
			fmt.Fprintf(a.streams.Out, "%s has no live session to close: without a running daemon, each remotemcp command connects on its own and disconnects when it exits\n", id)
			return nil
		},
	}
}

// defaultStatusWait bounds how long `status` waits for connections.
const defaultStatusWait = 15 * time.Second

func newStatusCmd(a *app) *cobra.Command {
	var (
		asJSON bool
		wait   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Connect every enabled server and show its live state",
		Long: `Connect every enabled server in parallel (each for at most --timeout) and
print its state, the reason of a failure (class, step and message) and its
tool count. The JSON objects have the fields of "servers list --json".`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if wait <= 0 {
				return usageErrorf("--timeout must be positive")
			}
			ctx := cmd.Context()
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				return a.listViaDaemon(ctx, dc, asJSON)
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			servers, err := c.Store.ListServers(ctx)
			if err != nil && !errors.Is(err, store.ErrSealOpen) {
				c.Close()
				return fmt.Errorf("list servers: %w", err)
			}
			l, err := a.startManager(ctx, c, nil, wait)
			if err != nil {
				c.Close()
				return err
			}
			defer l.Close()

			var enabled []string
			for _, s := range servers {
				if s.Enabled {
					enabled = append(enabled, s.ID)
				}
			}
			if len(enabled) > 0 {
				fmt.Fprintf(a.streams.Err, "connecting to %s (waiting up to %s)…\n", plural(len(enabled), "server", "servers"), wait)
			}
			// The handshake timeout is the bound; the extra seconds let
			// attempts report their own timeout instead of being cut off.
			wctx, cancel := context.WithTimeout(ctx, wait+2*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for _, id := range enabled {
				wg.Go(func() { _ = l.m.Connect(wctx, id) })
			}
			wg.Wait()
			if ctx.Err() != nil {
				return ctx.Err()
			}

			byID := map[string]manager.ServerStatus{}
			for _, st := range l.m.Status() {
				byID[st.ID] = st
			}
			rows := make([]serverRow, 0, len(servers))
			for _, s := range servers {
				if st, ok := byID[s.ID]; ok {
					rows = append(rows, rowOfStatus(st))
				} else {
					rows = append(rows, rowOfConfig(s))
				}
			}
			if asJSON {
				return writeJSON(a.streams.Out, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.streams.Err, "no servers configured; add one with \"remotemcp servers add ID URL\"")
				return nil
			}
			return writeServerTable(a.streams.Out, rows, true)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().DurationVar(&wait, "timeout", defaultStatusWait, "how long to wait for each server")
	return cmd
}
