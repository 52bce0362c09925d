// Package serve runs the servers the CLI keeps running until it is
// stopped: the daemon ("remotemcp serve": the engine, the local API, the
// settings page, and on request the MCP endpoint and the demo server) and
// the MCP endpoint for hosts over Streamable HTTP ("mcp --http", "serve
// --mcp-http"). Start-up goes in an order where a refused start changes
// nothing; shutdown undoes it in reverse.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/demo"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/explain"
)

// Daemon is a daemon to run: "remotemcp serve" and its flags.
type Daemon struct {
	// Dir is the data directory.
	Dir string
	// Addr is the settings page's loopback HOST:PORT (--addr).
	Addr string
	// AddrFallback listens on a free loopback port when Addr is taken
	// (the daemon "remotemcp mcp" starts in the background).
	AddrFallback bool
	// Notify shows a desktop notification when a server needs a sign-in.
	Notify bool
	// Store, when set, is the PostgreSQL database of a gateway (--store):
	// the daemon serves many people (runGateway), each within the
	// quotas (servers, calls in flight, questions waiting; 0:
	// gateway.DefaultQuotas).
	Store                                    string
	QuotaServers, QuotaCalls, QuotaQuestions int
	// Page are the flags of a gateway's page (sign-in, listening beyond
	// loopback); Env reads the environment (the client secret's
	// variable).
	Page PageFlags
	Env  func(string) (string, bool)
	// ListenMCP, when set, binds the MCP endpoint (--mcp-http), whose
	// host sessions end after SessionIdle.
	ListenMCP   func() (net.Listener, error)
	SessionIdle time.Duration
	// MCP are a gateway's flags of that endpoint: its public URL, which
	// hosts' OAuth access tokens name (with Page.Issuer, the OpenID
	// issuer of hosts' OAuth too).
	MCP MCPFlags
	// Demo runs the bundled test server as a server of the daemon; Name is
	// the command line that reaches the data directory from another
	// terminal, for the commands to try.
	Demo bool
	Name string
	Log  *slog.Logger
	// Out takes the login URL; Err what the daemon does.
	Out, Err io.Writer
}

// Run runs the daemon until ctx ends: check the data directory and the
// address are free, open the engine, bind the MCP endpoint and the page,
// add the demo server, print the login URL and serve, then stop in
// reverse. A refused start (another daemon on the data directory, the
// address taken) writes nothing.
//
// Long: the daemon's start-up in order; the order is the point (a refused
// serve must change nothing), and the defers that undo each step run from
// this one function.
func (d Daemon) Run(ctx context.Context) error {
	if d.Store != "" {
		return d.runGateway(ctx)
	}
	if d.Page.set() {
		return exit.Usagef("--oidc-…, --trusted-…, --admin, --public-url, --listen, --tls-… and --behind-proxy are for a gateway's page (serve --store postgres://…); a personal daemon's page opens with its login link")
	}
	if d.MCP.PublicURL != "" {
		return exit.Usagef("--mcp-public-url is for a gateway's MCP endpoint (serve --store postgres://… --mcp-http …); a personal endpoint is reached on loopback with its tokens")
	}
	// A daemon that already runs is named before anything is opened: a
	// refused serve changes nothing (issue #19 item 8).
	if err := daemon.CheckFree(d.Dir); err != nil {
		return err
	}
	if err := d.checkAddr(); err != nil {
		return err
	}
	eng, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: d.Dir, Logger: d.Log})
	if err != nil {
		return fmt.Errorf("open the data directory: %w", err)
	}
	defer eng.Close()
	srv, err := daemon.New(daemon.Options{Engine: eng, DataDir: d.Dir, Addr: d.Addr, AddrFallback: d.AddrFallback, Version: remotemcp.Version, Notify: d.Notify, Logger: d.Log})
	if err != nil {
		return err
	}
	// Bound before the daemon's own listener, so a bad or taken address
	// fails the start instead of leaving a daemon without it.
	var mcpLn net.Listener
	if d.ListenMCP != nil {
		if mcpLn, err = d.ListenMCP(); err != nil {
			return err
		}
	}
	if err := srv.Listen(ctx); err != nil {
		if mcpLn != nil {
			mcpLn.Close()
		}
		return listenError(d.Addr, err)
	}
	fmt.Fprintf(d.Err, "remotemcp daemon on %s\n", srv.URL())
	// Only now, with the data directory and the address ours, is the demo
	// server added: a refused serve writes nothing.
	if d.Demo {
		ds, err := demo.Start(ctx, eng)
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
		defer ds.Stop(d.Log)
		describeDemo(d.Err, ds, d.Name)
	}
	fmt.Fprintln(d.Err, "open the settings page (this link works once):")
	fmt.Fprintln(d.Out, srv.LoginURL())
	// The endpoint lives as long as the daemon serves: it is stopped
	// (mcancel) and waited for before the engine closes.
	mctx, mcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer mcancel()
	if mcpLn != nil {
		wg.Go(func() {
			// A failure ends the endpoint, not the daemon.
			err := func() error {
				fe, err := frontend.New(mctx, frontend.Options{Engine: eng, Name: "remotemcp", Version: remotemcp.Version, Logger: d.Log})
				if err != nil {
					mcpLn.Close()
					return err
				}
				return HTTP{Frontend: fe, Dir: d.Dir, Log: d.Log, Err: d.Err, Options: frontend.HTTPOptions{SessionIdle: d.SessionIdle}}.Serve(mctx, mcpLn)
			}()
			if err != nil {
				fmt.Fprintf(d.Err, "remotemcp: --mcp-http: %v\n", err)
			}
		})
	}
	err = srv.Serve(ctx)
	if ctx.Err() != nil {
		fmt.Fprintln(d.Err, "remotemcp daemon: shutting down")
		return nil
	}
	return err
}

// checkAddr refuses a taken address before the engine opens and connects
// its startup servers. The daemon binds again later; losing the port in
// between is still refused there.
func (d Daemon) checkAddr() error {
	if d.AddrFallback {
		return nil
	}
	ln, err := net.Listen("tcp", d.Addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		err = fmt.Errorf("%w (%w)", daemon.ErrAddrInUse, err)
	}
	if err != nil {
		return listenError(d.Addr, err)
	}
	ln.Close()
	return nil
}

// listenError is the error of a serve whose Listen failed: the real
// cause, and the flag that fixes it. remotemcp's words end with the
// system's error ("bind: address already in use"); the chain ("listen
// tcp …: …") shows only with --verbose (explain.CauseError).
func listenError(listen string, err error) error {
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

// describeDemo says what --demo did and what to try next; rm is the
// command line that reaches the data directory.
func describeDemo(w io.Writer, d *demo.Server, rm string) {
	fmt.Fprintf(w, "added the demo server %q (the bundled test server at %s); it is removed when this daemon stops\n", d.ID(), d.URL())
	fmt.Fprintln(w, "try, in another terminal:")
	fmt.Fprintf(w, "  %s call mcp__%s__echo '{\"text\":\"hi\"}' --yes\n", rm, d.ID())
	fmt.Fprintf(w, "  %s hosts connect HOST    # HOST: claude-code, cursor, … (%s hosts list)\n", rm, rm)
}
