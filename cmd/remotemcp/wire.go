package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/daemon/launch"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/demo"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/localapi"
)

// newServeCmd is "serve": the daemon.
//
// Long: one cobra command whose RunE is the daemon's start-up in order:
// check the data directory and the address are free, open the engine, bind
// the page and --mcp-http listeners, add --demo, print the login URL and
// serve, then stop in reverse. The order is the point (a refused serve must
// change nothing), and the defers that undo each step run from this one
// function.
func newServeCmd(a *app) *cobra.Command {
	var (
		addr     string
		mcpHTTP  string
		idle     string
		withDemo bool
		notify   bool
		fallback bool
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

--addr takes HOST:PORT on loopback, or PORT alone (127.0.0.1:PORT); when
another program has it, serve refuses (a daemon that "remotemcp mcp"
starts in the background takes a free port instead, and "status" and
"open" say so). The page's port is also the OAuth redirect URI
http://127.0.0.1:PORT/mcp-oauth of every server without --port.
--demo also runs the bundled test MCP server on a free loopback port and
adds it as the server "demo" (or "demo-2" … when that id is taken), so the
page is not empty; it is removed, with its origin's grant, when serve
stops. A refused serve (address taken, another daemon on the data
directory) changes nothing.
--notify shows a desktop notification (notify-send, where it is installed)
when a server needs you to sign in again: it is paused until you do.
--mcp-http 127.0.0.1:PORT also serves every enabled server to MCP hosts as
Streamable HTTP at http://127.0.0.1:PORT/mcp, like "remotemcp mcp --http"
(loopback only, bearer tokens of "remotemcp mcp token").`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			listen, err := flagLoopbackAddr("--addr", addr)
			if err != nil {
				return err
			}
			sessionIdle, err := sessionIdleFlag(idle)
			if err != nil {
				return err
			}
			log := a.log
			if !a.verbose {
				log = newLogger(a.streams.Err, false)
			}
			dir := a.dataDirPath()
			// A daemon that already runs is named before anything is
			// opened: a refused serve changes nothing (issue #19 item 8).
			if err := daemon.CheckFree(dir); err != nil {
				return err
			}
			// So is a taken address, before the engine opens and connects
			// its startup servers. The daemon binds again below; losing the
			// port in between is still refused there.
			if !fallback {
				ln, err := net.Listen("tcp", listen)
				if errors.Is(err, syscall.EADDRINUSE) {
					err = fmt.Errorf("%w (%w)", daemon.ErrAddrInUse, err)
				}
				if err != nil {
					return serveListenError(listen, err)
				}
				ln.Close()
			}
			eng, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, Logger: log})
			if err != nil {
				return fmt.Errorf("open the data directory: %w", err)
			}
			defer eng.Close()
			srv, err := daemon.New(daemon.Options{Engine: eng, DataDir: dir, Addr: listen, AddrFallback: fallback, Version: remotemcp.Version, Notify: notify, Logger: log})
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
				return serveListenError(listen, err)
			}
			fmt.Fprintf(a.streams.Err, "remotemcp daemon on %s\n", srv.URL())
			// Only now, with the data directory and the address ours, is
			// the demo server added: a refused serve writes nothing.
			if withDemo {
				d, err := demo.Start(ctx, eng)
				if err != nil {
					if mcpLn != nil {
						mcpLn.Close()
					}
					// Listen succeeded: Serve releases what it took.
					cctx, cancel := context.WithCancel(ctx)
					cancel()
					srv.Serve(cctx)
					return fmt.Errorf("--demo: %w", err)
				}
				defer d.Stop(log)
				describeDemo(a.streams.Err, d, a.cliName())
			}
			fmt.Fprintln(a.streams.Err, "open the settings page (this link works once):")
			fmt.Fprintln(a.streams.Out, srv.LoginURL())
			// The endpoint lives as long as the daemon serves: it is
			// stopped (mcancel) and waited for before the engine closes.
			mctx, mcancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			defer wg.Wait()
			defer mcancel()
			if mcpLn != nil {
				wg.Go(func() {
					if err := serveDaemonMcpHTTP(mctx, eng, dir, mcpLn, a.streams.Err, log, frontend.HTTPOptions{SessionIdle: sessionIdle}); err != nil {
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
	addSessionIdleFlag(cmd, &idle, "--mcp-http")
	cmd.Flags().BoolVar(&withDemo, "demo", false, "also run the bundled test MCP server and add it as the server \"demo\" until serve stops")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7717", "loopback address of the settings page and OAuth callback: HOST:PORT or PORT")
	// Hidden: what "remotemcp mcp" passes to the daemon it starts in the
	// background, whose page port is not worth failing a host for.
	cmd.Flags().BoolVar(&fallback, launch.AddrFallbackFlag, false, "when --addr is taken, listen on a free loopback port instead")
	_ = cmd.Flags().MarkHidden(launch.AddrFallbackFlag)
	return cmd
}

// serveListenError is the error of a serve whose Listen failed: the real
// cause, and the flag that fixes it. remotemcp's words end with the
// system's error ("bind: address already in use"); run shows the chain
// ("listen tcp …: …") only with --verbose.
func serveListenError(listen string, err error) error {
	var oe *net.OpError
	found := errors.As(err, &oe)
	switch {
	case errors.Is(err, daemon.ErrAddrInUse):
		ce := &explain.CauseError{Words: fmt.Sprintf("another program has this port: %s is taken; choose another address with --addr (e.g. --addr 127.0.0.1:7718, or --addr 0 for any free port)", listen), Err: err}
		if found {
			ce.Inner, ce.Err = opCause(oe), oe
		}
		return ce
	case errors.Is(err, daemon.ErrDataDirOwned):
		return err
	}
	ce := &explain.CauseError{Words: "listen on " + listen, Err: err}
	if found {
		ce.Inner = opCause(oe)
	}
	return ce
}

// opCause is a network operation's own error, "bind: address already in
// use", without the operation and address before it.
func opCause(oe *net.OpError) string {
	if oe.Err == nil {
		return ""
	}
	return oe.Err.Error()
}

// serveDaemonMcpHTTP is serve --mcp-http: the aggregate front end over the
// daemon's own engine on ln until ctx ends. A failure ends the endpoint,
// not the daemon.
func serveDaemonMcpHTTP(ctx context.Context, eng localapi.Engine, dir string, ln net.Listener, w io.Writer, log *slog.Logger, o frontend.HTTPOptions) error {
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng, Name: "remotemcp", Version: remotemcp.Version, Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	return serveMcpHTTP(ctx, fe, dir, ln, w, log, o)
}

// describeDemo says what --demo did and what to try next.
func describeDemo(w io.Writer, d *demo.Server, rm string) {
	fmt.Fprintf(w, "added the demo server %q (the bundled test server at %s); it is removed when this daemon stops\n", d.ID(), d.URL())
	fmt.Fprintln(w, "try, in another terminal:")
	fmt.Fprintf(w, "  %s call mcp__%s__echo '{\"text\":\"hi\"}' --yes\n", rm, d.ID())
	fmt.Fprintf(w, "  %s hosts connect HOST    # HOST: claude-code, cursor, … (%s hosts list)\n", rm, rm)
}

// cliName is the command line that reaches this invocation's data
// directory from another terminal: "remotemcp", with --data-dir DIR
// whenever a shell without this one's environment would compute another
// directory (the same rule as the hosts' entries).
func (a *app) cliName() string {
	dir := a.dataDirPath()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if sys, err := a.hostSystem(); err == nil && hosts.DataDirArg(sys, dir) == "" {
		return "remotemcp"
	}
	return "remotemcp --data-dir " + clitext.ShellQuote(dir)
}
