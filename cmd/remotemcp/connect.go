package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

func newConnectCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
		Use:   "connect ID",
		Short: "Connect to a server and report what it offers",
		Long: `Connect to a server and print what it offers, or which step failed and
what to do. Without a daemon the session ends with the command. --json
prints the server as "status --json" does (the same fields), with
promptCount, resourceCount and resourceTemplateCount added.`,
		Args: argsExactly(1, "ID"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			return a.connectAndReport(ctx, e, args[0])
		}),
	}, "print a JSON object")
}

// connectAndReport connects server id and prints "ready: …".
func (a *app) connectAndReport(ctx context.Context, e Engine, id string) error {
	fmt.Fprintf(a.streams.Err, "connecting to %s…\n", id)
	s, err := e.Connect(ctx, id)
	if err != nil {
		return err
	}
	if s.State != localapi.StateReady {
		msg := fmt.Sprintf("server %s is %s", id, s.State)
		if s.Reason != nil {
			// Whole: run cuts the chain as it does an engine error's.
			msg += ": " + explain.ReasonTag(*s.Reason) + ": " + s.Reason.Message
		}
		return &localapi.Error{Code: localapi.CodeUnavailable, Message: msg, Server: s}
	}
	out := &render.Connected{Server: *s}
	p, perr := e.Prompts(ctx, id)
	r, rerr := e.Resources(ctx, localapi.ResourcesRequest{ServerID: id})
	out.Count(p, perr == nil, r, rerr == nil)
	return a.printOne(out, out.Write)
}

func newDisconnectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "disconnect ID",
		Short: "Disconnect a server (in the daemon; without one no session outlives a command)",
		Args:  argsExactly(1, "ID"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			if _, err := e.Disconnect(ctx, args[0]); err != nil {
				return err
			}
			_, err := fmt.Fprintf(a.streams.Out, "disconnected %s\n", args[0])
			return err
		}),
	}
}

// defaultStatusWait bounds how long `status` waits for connections.
const defaultStatusWait = 15 * time.Second

func newStatusCmd(a *app) *cobra.Command {
	var wait time.Duration
	cmd := a.jsonFlag(&cobra.Command{
		Use:   "status [ID...]",
		Short: "Show the live state of every server, or of the named ones",
		Long: `Print each server's state (disconnected, connecting, ready, reconnecting,
idle, needs-auth or error), why it failed, and its tool count: the daemon's
live view, or without one after connecting the enabled servers. --json
prints the objects of "servers list --json". Exit status 3 when a server
named on the command line is in error or needs-auth.`,
		RunE: a.do(func(ctx context.Context, e Engine, ids []string) error {
			if wait <= 0 {
				return exit.Usagef("--timeout must be positive")
			}
			servers, err := pick(ctx, e, ids)
			if err == nil && a.inProcess {
				wctx, cancel := context.WithTimeout(ctx, wait)
				var wg sync.WaitGroup
				for _, s := range servers {
					if s.Enabled {
						wg.Go(func() { _, _ = e.Connect(wctx, s.ID) })
					}
				}
				wg.Wait()
				cancel()
				servers, err = pick(ctx, e, ids)
			}
			if err != nil {
				return err
			}
			if err := a.printServers(servers); err != nil {
				return err
			}
			if !a.asJSON {
				a.printHeld(servers) // pins.go
			}
			// Where the daemon's page is (it may have moved off a taken
			// port); the JSON stays the servers array "servers list
			// --json" prints.
			if !a.asJSON && !a.inProcess {
				if l := a.daemonLine(ctx); l != "" {
					fmt.Fprintln(a.streams.Out, l)
				}
			}
			for _, s := range servers {
				if s.State.NotReady() && len(ids) > 0 {
					return &exit.Error{Code: exitNotReady, Err: fmt.Errorf("server %s is %s", s.ID, s.State)}
				}
			}
			return nil
		}),
	}, "print a JSON array")
	cmd.Flags().DurationVar(&wait, "timeout", defaultStatusWait, "how long to wait for each server")
	return cmd
}

// pick lists the servers named by ids, in their order (none: all).
func pick(ctx context.Context, e Engine, ids []string) ([]localapi.Server, error) {
	servers, err := e.Servers(ctx)
	if err != nil || len(ids) == 0 {
		return servers, err
	}
	var out []localapi.Server
	for _, id := range ids {
		i := slices.IndexFunc(servers, func(s localapi.Server) bool { return s.ID == id })
		if i < 0 {
			_, err := e.Server(ctx, id)
			return nil, cmp.Or(err, fmt.Errorf("no server %q", id))
		}
		out = append(out, servers[i])
	}
	return out, nil
}

func newLogsCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
		Use:   "logs ID",
		Short: "Show a server's last 50 exchanges and log messages (no secrets)",
		Long: `Show the server's last 50 log entries, oldest first: its HTTP exchanges
(no headers, bodies or secrets), the sign-in's OAuth requests (kind oauth,
with their step and URL) and the server's own log messages (kind log, with
their level and "logger: text"). It is the daemon's log, or without one the
log of connecting now. --json prints them as the settings page's Export
saves them.`,
		Args: argsExactly(1, "ID"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			id := args[0]
			if a.inProcess {
				if _, err := e.Server(ctx, id); err != nil {
					return err
				}
				cctx, cancel := context.WithTimeout(ctx, defaultStatusWait)
				if _, err := e.Connect(cctx, id); err != nil && ctx.Err() == nil {
					fmt.Fprintf(a.streams.Err, "connect failed: %s\n", clitext.Cell(redact.Text(err.Error())))
				}
				cancel()
			}
			log, err := e.Log(ctx, id)
			if err != nil {
				return err
			}
			// --json prints the API's entries as they are: the settings
			// page's Export saves the same bytes.
			return printList(a, log, render.Log)
		}),
	}, "print a JSON array")
}
