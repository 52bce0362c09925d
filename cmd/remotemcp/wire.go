package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// engine returns the command's API client and its release: the daemon's,
// else one of an engine opened lazily in this process.
func (a *app) engine(ctx context.Context) (Engine, func(), error) {
	dir := a.dataDirPath()
	if !a.noDaemon {
		c, err := daemon.Dial(ctx, dir)
		if err == nil {
			a.log.Debug("using the daemon")
			return c, c.CloseIdleConnections, nil
		}
		if !errors.Is(err, daemon.ErrNotRunning) {
			return nil, nil, fmt.Errorf("reach the daemon: %w (run with --no-daemon to work without it)", err)
		}
		if _, serr := os.Stat(filepath.Join(dir, daemon.InfoFileName)); serr == nil {
			fmt.Fprintln(a.streams.Err, "the daemon is not running; working in-process")
		}
	}
	eng, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, Logger: a.log, NoStartupConnect: true})
	if err != nil {
		return nil, nil, fmt.Errorf("open the data directory: %w", err)
	}
	// The API outlives a Ctrl-C until the command ends, so that a
	// cancelled call still delivers its outcome (see call).
	c, stop, err := daemon.InProcess(context.WithoutCancel(ctx), eng)
	if err != nil {
		eng.Close()
		return nil, nil, err
	}
	a.inProcess = true
	return c, func() { stop(); eng.Close() }, nil
}

// dial returns the client of the running daemon, or says that none runs.
func (a *app) dial(ctx context.Context) (Engine, error) {
	c, err := daemon.Dial(ctx, a.dataDirPath())
	if errors.Is(err, daemon.ErrNotRunning) {
		return nil, errors.New("no daemon runs on this data directory; start one with \"remotemcp serve\"")
	}
	return c, err
}

func newServeCmd(a *app) *cobra.Command {
	var (
		addr    string
		mcpHTTP string
		demo    bool
		notify  bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: the engine, the local API and the settings page",
		Long: `Run the daemon: it owns the sessions of every server (connecting those with
connectOnStartup), answers the local API on a Unix socket in the data
directory (the CLI uses it while it runs), and serves the settings page and
the OAuth callback /mcp-oauth on a loopback TCP address. It prints a
one-time login URL for the settings page. Only one daemon runs per data
directory. SIGINT/SIGTERM shut it down cleanly.

--addr takes HOST:PORT on loopback, or PORT alone (127.0.0.1:PORT).
--demo also runs the bundled test MCP server on a free loopback port and
adds it (or points it) as the server "demo", so the page is not empty.
--notify shows a desktop notification (notify-send, where it is installed)
when a server needs you to sign in again: it is paused until you do.
--mcp-http 127.0.0.1:PORT also serves every enabled server to MCP hosts as
Streamable HTTP at http://127.0.0.1:PORT/mcp, like "remotemcp mcp --http"
(loopback only, bearer tokens of "remotemcp mcp token").`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			listen, err := loopbackAddr(addr)
			if err != nil {
				return err
			}
			log := a.log
			if !a.verbose {
				log = newLogger(a.streams.Err, false)
			}
			dir := a.dataDirPath()
			eng, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, Logger: log})
			if err != nil {
				return fmt.Errorf("open the data directory: %w", err)
			}
			defer eng.Close()
			if demo {
				stop, err := startDemo(ctx, eng)
				if err != nil {
					return fmt.Errorf("--demo: %w", err)
				}
				defer stop()
			}
			srv, err := daemon.New(daemon.Options{Engine: eng, DataDir: dir, Addr: listen, Version: remotemcp.Version, Notify: notify, Logger: log})
			if err != nil {
				return err
			}
			// Bound before the daemon's own listener, so a bad or taken
			// address fails the start instead of leaving a daemon without it.
			var mcpLn net.Listener
			if mcpHTTP != "" {
				if mcpLn, err = mcpHTTPListen("--mcp-http", mcpHTTP); err != nil {
					return err
				}
			}
			if err := srv.Listen(ctx); err != nil {
				if mcpLn != nil {
					mcpLn.Close()
				}
				return fmt.Errorf("listen on %s: %w (is the port taken? choose another with --addr)", listen, err)
			}
			fmt.Fprintf(a.streams.Err, "remotemcp daemon on %s\nopen the settings page (this link works once):\n", srv.URL())
			fmt.Fprintln(a.streams.Out, srv.LoginURL())
			// The endpoint lives as long as the daemon serves: it is
			// stopped (mcancel) and waited for before the engine closes.
			mctx, mcancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			defer wg.Wait()
			defer mcancel()
			if mcpLn != nil {
				wg.Go(func() {
					if err := serveDaemonMcpHTTP(mctx, eng, dir, mcpLn, a.streams.Err, log); err != nil {
						fmt.Fprintf(a.streams.Err, "remotemcp: --mcp-http: %v\n", err)
					}
				})
			}
			err = srv.Serve(ctx)
			if ctx.Err() != nil {
				fmt.Fprintln(a.streams.Err, "remotemcp daemon: shutting down")
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&notify, "notify", false, "show a desktop notification (notify-send) when a server needs you to sign in")
	cmd.Flags().StringVar(&mcpHTTP, "mcp-http", "", "also serve the MCP endpoint (Streamable HTTP, bearer tokens of \"mcp token\") on this loopback HOST:PORT")
	cmd.Flags().BoolVar(&demo, "demo", false, "also run the bundled test MCP server and add it as the server \"demo\"")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7717", "loopback address of the settings page and OAuth callback: HOST:PORT or PORT (the OAuth redirect port defaults to 7717 too)")
	return cmd
}

// serveDaemonMcpHTTP is serve --mcp-http: the aggregate front end over the
// daemon's own engine on ln until ctx ends. A failure ends the endpoint,
// not the daemon.
func serveDaemonMcpHTTP(ctx context.Context, eng localapi.Engine, dir string, ln net.Listener, w io.Writer, log *slog.Logger) error {
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng, Name: "remotemcp", Version: remotemcp.Version, Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	return serveMcpHTTP(ctx, fe, dir, ln, w, log)
}

// startDemo runs the bundled test MCP server on a free loopback port for
// the daemon's lifetime and adds it as "demo" (or points an existing
// "demo" at its new port), through the same API as any other server.
func startDemo(ctx context.Context, eng localapi.Engine) (func(), error) {
	f, err := fixture.Start(fixture.Options{})
	if err != nil {
		return nil, fmt.Errorf("start the test server: %w", err)
	}
	u := f.URL()
	_, err = eng.AddServer(ctx, localapi.AddServerRequest{ID: "demo", Name: "Demo (bundled test server)", URL: u, By: localapi.ByServersAdd})
	if localapi.HasCode(err, localapi.CodeConflict) {
		_, err = eng.UpdateServer(ctx, "demo", localapi.UpdateServerRequest{URL: &u})
		if err == nil {
			err = eng.Grant(ctx, "http://"+f.Addr(), localapi.ByCLI)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
