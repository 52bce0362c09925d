package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// dataDirPath is the data directory this invocation uses, resolved the way
// open resolves it.
func (a *app) dataDirPath() (string, error) {
	dir := a.dataDir
	if dir == "" {
		if v, ok := a.env(store.EnvHome); ok {
			dir = v
		}
	}
	return store.DataDir(dir)
}

// daemonClient returns the client of the daemon running on this data
// directory, or nil when none runs: then the command works in-process.
// With a daemon, commands that need live sessions or in-memory access
// tokens go through it, so the CLI and the daemon never disagree.
func (a *app) daemonClient(ctx context.Context) (*daemon.Client, error) {
	if a.noDaemon {
		return nil, nil
	}
	dir, err := a.dataDirPath()
	if err != nil {
		return nil, err
	}
	info, err := daemon.Discover(dir)
	if errors.Is(err, daemon.ErrNotRunning) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find the daemon of %s: %w (run with --no-daemon to work without it)", dir, err)
	}
	a.log.Debug("using the daemon", "daemon", info.String())
	return info.Client(), nil
}

func newServeCmd(a *app) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: connection manager, local API and settings page",
		Long: `Run the daemon on a loopback address: it keeps the sessions of every
server (connecting those with connectOnStartup), serves the settings page and
the local API the CLI uses while it runs, and the OAuth callback
/mcp-oauth. It prints a one-time login URL for the settings page. Only
one daemon runs per data directory. SIGINT/SIGTERM shut it down cleanly.`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			dir, err := a.dataDirPath()
			if err != nil {
				return err
			}
			// The cards are opened like the CLI's (cardsKV): the daemon's
			// open questions are marked as a live process's, and opening
			// them never takes over those of a CLI call still waiting.
			var cards *elicit.Cards
			elicitFn := func(ctx context.Context, info manager.ElicitInfo, req *remotemcp.ElicitRequest) (*remotemcp.ElicitResult, error) {
				return cards.Handle(ctx, info, req)
			}
			// AskHost stays nil: a refused origin becomes a pending
			// approval that the page shows beside its server (R2.2).
			c, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, Logger: a.log, NoStart: true, Elicit: elicitFn})
			if err != nil {
				return fmt.Errorf("open the data directory: %w", err)
			}
			defer c.Close()
			kv := newCardsKV(c.Store)
			if cards, err = kv.open(ctx, elicit.Options{Logger: a.log}); err != nil {
				return fmt.Errorf("open the elicitation cards: %w", err)
			}
			defer kv.release()
			// Deferred in reverse: the cards close first (Serve has cancelled
			// the calls in flight), then the owner locks go, then c.Close
			// stops the manager and the store.
			defer cards.Close()
			cards.Watch(c.Manager)
			if err := c.Manager.Start(ctx); err != nil {
				return err
			}
			o := daemon.ClientOptions(c)
			o.Cards = cards
			o.Addr, o.Logger, o.Version = addr, a.log, remotemcp.Version
			srv, err := daemon.New(o)
			if err != nil {
				return err
			}
			if err := srv.Listen(ctx); err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			fmt.Fprintf(a.streams.Err, "remotemcp daemon on %s (data directory %s)\n", srv.URL(), dir)
			fmt.Fprintf(a.streams.Err, "open the settings page (this link works once):\n")
			fmt.Fprintln(a.streams.Out, srv.LoginURL())
			err = srv.Serve(ctx)
			if ctx.Err() != nil {
				fmt.Fprintln(a.streams.Err, "remotemcp daemon: shutting down")
				return nil
			}
			return err
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7717", "loopback address to listen on (the OAuth redirect port defaults to 7717 too)")
	return cmd
}

func newOpenCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "open",
		Short: "Print a one-time login URL for the running daemon's settings page",
		Args:  argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dc, err := a.daemonClient(cmd.Context())
			if err != nil {
				return err
			}
			if dc == nil {
				return errors.New("no daemon runs on this data directory; start one with \"remotemcp serve\"")
			}
			u, err := dc.LoginURL(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintln(a.streams.Out, u.URL)
			if err := a.openBrowser(u.URL); err == nil {
				fmt.Fprintln(a.streams.Err, "opened the settings page in your browser")
			}
			return nil
		},
	}
}

// rowOfView is a server as the daemon sees it, live.
func rowOfView(v daemon.ServerView) serverRow {
	return serverRow{
		ID: v.ID, Name: v.Name, URL: v.URL, Enabled: v.Enabled,
		ConnectOnStartup: v.ConnectOnStartup, Auth: authKind(v.Auth.Kind),
		State: v.State, Reason: v.Reason, ToolCount: v.ToolCount,
	}
}

// listViaDaemon prints the daemon's live server list (servers list, status).
func (a *app) listViaDaemon(ctx context.Context, dc *daemon.Client, asJSON bool) error {
	views, err := dc.Servers(ctx)
	if err != nil {
		return err
	}
	rows := make([]serverRow, 0, len(views))
	for _, v := range views {
		rows = append(rows, rowOfView(v))
	}
	if asJSON {
		return writeJSON(a.streams.Out, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.streams.Err, "no servers configured; add one with \"remotemcp servers add ID URL\"")
		return nil
	}
	return writeServerTable(a.streams.Out, rows, true)
}

// connectViaDaemon connects a server in the daemon, where the session
// stays after the command ends.
func (a *app) connectViaDaemon(ctx context.Context, dc *daemon.Client, id string) error {
	fmt.Fprintf(a.streams.Err, "connecting to %s through the daemon…\n", id)
	v, err := dc.Connect(ctx, id)
	if err != nil {
		return fmt.Errorf("connect %s: %w", id, err)
	}
	if v.State != "ready" {
		reason := ""
		if v.Reason != nil {
			reason = ": " + v.Reason.String()
		}
		return fmt.Errorf("server %s is %s%s", id, v.State, reason)
	}
	fmt.Fprintf(a.streams.Out, "ready: %d tools (session kept by the daemon)\n", v.ToolCount)
	return nil
}

// callViaDaemon asks the person here, then has the daemon make the call
// with its live session.
func (a *app) callViaDaemon(ctx context.Context, dc *daemon.Client, name string, args []byte, f callFlags) error {
	if !f.yes {
		if !a.interactive() {
			return fmt.Errorf("refused: the call of %s was not sent: %w", name, errNoTerminal)
		}
		if !a.askYesNo(fmt.Sprintf("Allow %s to run with %s?", name, clip(string(args), 200))) {
			return fmt.Errorf("denied: the call of %s was not sent", name)
		}
	}
	req := daemon.CallRequest{Tool: name, Arguments: args, Approved: true}
	if f.timeout > 0 {
		req.Timeout = f.timeout.String()
	}
	res, err := dc.Call(ctx, req)
	return (&bridge{a: a}).finishCall(ctx, res, err, f)
}

// toolsViaDaemon lists the daemon's agent tools.
func (a *app) toolsViaDaemon(ctx context.Context, dc *daemon.Client, server string, asJSON bool) error {
	tv, err := dc.Tools(ctx, false)
	if err != nil {
		return err
	}
	var rows []toolRow
	for _, t := range tv.Tools {
		if server != "" && t.ServerID != server {
			continue
		}
		row := toolRow{
			Name: t.Name, Server: t.ServerID, Tool: t.ToolName, Description: t.Description,
			InputSchema: t.InputSchema, Effects: agent.Effects(t.Effects), Retry: agent.RetryPolicy(t.Retry),
			Enabled: true,
		}
		if len(t.Annotations) > 0 {
			var an agent.Annotations
			if json.Unmarshal(t.Annotations, &an) == nil {
				row.Annotations = &an
			}
		}
		rows = append(rows, row)
	}
	if asJSON {
		return writeToolsJSON(a.streams.Out, rows)
	}
	for id, msg := range tv.Errors {
		fmt.Fprintf(a.streams.Err, "server %s: %s\n", id, cell(msg))
	}
	return writeToolTable(a.streams.Out, rows)
}

// loginViaDaemon runs Authorize in the daemon, whose /mcp-oauth receives
// the browser's redirect, so the daemon holds the new access token.
func (a *app) loginViaDaemon(ctx context.Context, dc *daemon.Client, id string, noBrowser bool, timeout time.Duration) error {
	flow, err := dc.Authorize(ctx, id)
	if err != nil {
		return fmt.Errorf("sign-in to %s: %w", id, err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for flow.Phase == "starting" {
		time.Sleep(100 * time.Millisecond)
		if flow, err = dc.Authorization(wctx, id); err != nil {
			return err
		}
	}
	if flow.Phase == "waiting" && flow.AuthorizationURL != "" {
		if noBrowser || a.openBrowser(flow.AuthorizationURL) != nil {
			fmt.Fprintln(a.streams.Err, "open this URL in a browser to authorize remotemcp:")
			fmt.Fprintln(a.streams.Out, flow.AuthorizationURL)
		}
		fmt.Fprintln(a.streams.Err, "waiting for the browser to return to the daemon …")
		if flow, err = dc.WaitAuthorization(wctx, id); err != nil {
			return err
		}
	}
	switch flow.Phase {
	case "done":
		fmt.Fprintf(a.streams.Err, "signed in to %s through the daemon\n", id)
		return a.connectViaDaemon(ctx, dc, id)
	case "failed":
		msg := flow.Error
		if flow.Permission != nil {
			msg += fmt.Sprintf(" (approve it with \"remotemcp grants approve %s\", then sign in again)", flow.Permission.Origin)
		}
		return fmt.Errorf("sign-in to %s failed: %s", id, strings.TrimSpace(msg))
	}
	return fmt.Errorf("sign-in to %s: unexpected state %q", id, flow.Phase)
}

// listCardsViaDaemon lists the daemon's open and interrupted cards.
func (a *app) listCardsViaDaemon(ctx context.Context, dc *daemon.Client, asJSON bool) error {
	cards, err := dc.Cards(ctx)
	if err != nil {
		return err
	}
	rows := []cardRow{}
	for _, cv := range cards {
		c := cv.Card
		if c.Status != elicit.StatusPending && c.Status != elicit.StatusInterrupted {
			continue
		}
		rows = append(rows, cardRow{ID: c.ID, Server: c.ServerID, Tool: c.Tool, Message: c.Message,
			Created: c.Created, Status: c.Status, Reason: c.Reason})
	}
	if asJSON {
		return writeJSON(a.streams.Out, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.streams.Err, "no questions are waiting for an answer, and no call was interrupted")
		return nil
	}
	return writeCardTable(a.streams.Out, rows)
}
