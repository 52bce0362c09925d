package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/apiclient"
	"github.com/remotemcp/remotemcp/internal/browser"
	"github.com/remotemcp/remotemcp/internal/clitext"
)

// envHome is the environment variable naming the data directory.
const envHome = "REMOTEMCP_HOME"

// envStore is the environment variable naming a gateway's PostgreSQL
// database (serve --store).
const envStore = "REMOTEMCP_STORE"

// envValue is the environment variable's value ("" when unset).
func (a *app) envValue(key string) string {
	v, _ := a.env(key)
	return v
}

// dataDirPath is --data-dir, else $REMOTEMCP_HOME, else <config dir>/remotemcp.
func (a *app) dataDirPath() string {
	if a.dataDir != "" {
		return a.dataDir
	}
	if v, ok := a.env(envHome); ok && v != "" {
		return v
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "remotemcp")
}

// Engine is what every command talks to (apiclient.Engine).
type Engine = apiclient.Engine

// api is where this invocation finds the local API.
func (a *app) api() apiclient.Options {
	return apiclient.Options{DataDir: a.dataDirPath(), NoDaemon: a.noDaemon, User: a.user, Log: a.log, Err: a.streams.Err}
}

// do wraps a command body: it gets the engine (apiclient.Command), and
// the engine is released when the body returns.
func (a *app) do(fn func(ctx context.Context, e Engine, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		e, release, inProcess, err := apiclient.Command(ctx, a.api())
		if err != nil {
			return err
		}
		defer release()
		a.inProcess = inProcess
		return fn(ctx, e, args)
	}
}

func newOpenCmd(a *app) *cobra.Command {
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "open",
		Short: "Open the running daemon's settings page in a browser (prints its one-time URL too)",
		Long: `Ask the running daemon for a one-time login URL of its settings page,
print it on its own line, and launch the system browser on it (unless
--no-browser). When no browser can be started, open the printed URL
yourself; it works once.`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := apiclient.Daemon(ctx, a.dataDirPath())
			if err != nil {
				return err
			}
			u, err := c.LoginURL(ctx)
			if err != nil {
				return err
			}
			if note := a.movedPageNote(ctx); note != "" {
				fmt.Fprintln(a.streams.Err, note)
			}
			a.browse(ctx, u.URL, noBrowser)
			return nil
		},
	}
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the URL")
	return cmd
}

// browse prints u on its own line and, unless noBrowser, opens it in a
// browser and waits for the opener's verdict. The URL carries secrets, so
// the opener's argv (readable in /proc) names a 0600 redirect page instead.
func (a *app) browse(ctx context.Context, u string, noBrowser bool) {
	fmt.Fprintln(a.streams.Out, u)
	if noBrowser {
		return
	}
	if err := a.openBrowser(ctx, u); err != nil {
		a.log.Debug("browser", "err", err)
		fmt.Fprintln(a.streams.Err, "could not open a browser: open the URL above yourself")
		return
	}
	fmt.Fprintln(a.streams.Err, "opened the URL above in your browser")
}

// openBrowser opens u in the desktop's browser (browser.Open).
func (a *app) openBrowser(ctx context.Context, u string) error {
	return browser.Open(ctx, a.dataDirPath(), u, a.env)
}

// selfCommand is how another shell reaches this data directory.
func (a *app) selfCommand() string {
	if a.dataDir != "" {
		return "remotemcp --data-dir " + clitext.ShellQuote(a.dataDir)
	}
	return "remotemcp"
}
