package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/daemon/launch"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/apiclient"
	"github.com/remotemcp/remotemcp/internal/cliflag"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/serve"
	"github.com/remotemcp/remotemcp/localapi"
)

// newMcpCmd is "mcp": the front end for MCP hosts.
//
// Long: one cobra command; most of its length is the help text. The rest is
// its flags, their checks and the choice between --http and stdio, read top
// to bottom.
func newMcpCmd(a *app) *cobra.Command {
	var (
		serverID   string
		daemonAddr string
		httpAddr   string
		tools      string
		threshold  int
		idle       string
		noToken    bool
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the managed servers to an MCP host (Claude Desktop, Claude Code, Cursor, VS Code …) over stdio or --http",
		Long: `Run an MCP server on stdin/stdout for an MCP host to launch. It offers
every enabled server: tools and prompts named SERVER__NAME (at most 48
characters), resources under their own URIs (remotemcp://SERVER/ESCAPED-URI
when two servers list the same URI), and the connected servers'
instructions. Results, progress, cancellation and list_changed pass through;
a server's question goes to the host when it supports elicitation, else it
waits on the settings page and in "remotemcp elicitations". The host's
approval of a call is the approval.

With --server ID one server passes through with its names unchanged: a
drop-in for "npx mcp-remote URL".

It goes through the running daemon, and starts one in the background
(remotemcp serve, output in DATA-DIR/daemon.log) when none runs, so every
host shares the same sessions, tokens and questions. --no-daemon serves
from this process instead.

--http 127.0.0.1:PORT serves Streamable HTTP at http://127.0.0.1:PORT/mcp
instead of stdio, in the foreground until stopped (Ctrl-C, SIGTERM), for
hosts that take a URL. Like stdio it relays to the daemon, starting one
when none runs; with --no-daemon it owns the sessions itself, and no
daemon may start until it stops. Only loopback
addresses are allowed; the Host header must name that address (DNS
rebinding), a foreign Origin is refused, and every request needs
"Authorization: Bearer TOKEN" with a token of "remotemcp mcp token create".
A host session belongs to its token and ends after --session-idle with
no open stream and no request, or when its token is revoked; at most 64
per token and 1,024 in all (then 429).`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := newLogger(a.streams.Err, a.verbose)
			if !slices.Contains(frontend.Modes, tools) {
				return exit.Usagef("--tools %q: use one of %s", tools, strings.Join(frontend.Modes, ", "))
			}
			if threshold < 1 {
				return exit.Usagef("--search-threshold %d: give a number of tools, at least 1", threshold)
			}
			fo := frontend.Options{ServerID: serverID, Name: "remotemcp", Version: remotemcp.Version, Logger: log, Tools: tools, SearchThreshold: threshold}
			if httpAddr != "" {
				d, err := cliflag.SessionIdle(idle)
				if err != nil {
					return err
				}
				return a.runMcpHTTP(ctx, httpAddr, daemonAddr, fo, serve.HTTP{Options: frontend.HTTPOptions{SessionIdle: d}, NoToken: noToken})
			}
			eng, release, err := a.mcpEngine(ctx, daemonAddr)
			if err != nil {
				return err
			}
			defer release()
			fo.Engine = eng
			fe, err := frontend.New(ctx, fo)
			if err != nil {
				return err
			}
			t := &mcp.IOTransport{Reader: io.NopCloser(a.streams.In), Writer: nopWriteCloser{a.streams.Out}}
			err = fe.Run(ctx, t)
			if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
				return nil // the host left
			}
			return err
		},
	}
	cmd.Flags().StringVar(&serverID, "server", "", "pass one server through with its names unchanged")
	cmd.Flags().StringVar(&daemonAddr, "daemon-addr", "127.0.0.1:7717", "settings page address of the daemon started in the background when none runs (a free port when it is taken)")
	cmd.Flags().StringVar(&tools, "tools", frontend.ToolsAuto, "how tools are offered: all, search (a search tool and the pinned tools; found tools join the list) or auto (search above --search-threshold tools)")
	cmd.Flags().IntVar(&threshold, "search-threshold", frontend.DefaultSearchThreshold, "with --tools auto, search when there are more tools than this")
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve Streamable HTTP on this loopback HOST:PORT instead of stdio (needs a token: see \"mcp token\")")
	addSessionIdleFlag(cmd, &idle, "--http")
	cmd.AddCommand(newMcpTokenCmd(a))
	addMcpHTTPTestFlag(cmd, &noToken) // hidden: see mcp_http.go
	return cmd
}

// runMcpHTTP is "mcp --http": the front end over Streamable HTTP on a
// loopback address until ctx ends. Like stdio it relays to the daemon,
// starting one when none runs, so whatever starts first there is one
// owner (issue #19 item 2). Only with --no-daemon does this process own
// the engine, and then it holds the daemon lock: no daemon starts beside
// it.
func (a *app) runMcpHTTP(ctx context.Context, addr, daemonAddr string, fo frontend.Options, h serve.HTTP) error {
	ln, err := cliflag.ListenLoopback("--http", addr)
	if err != nil {
		return err
	}
	if a.noDaemon {
		// Taken before the engine opens: nothing runs beside a daemon.
		dir := a.dataDirPath()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			ln.Close()
			return fmt.Errorf("create the data directory: %w", err)
		}
		unlock, err := daemon.HoldOwnerLock(dir, "remotemcp --no-daemon mcp --http "+addr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("%w (without --no-daemon, mcp --http relays to it)", err)
		}
		defer unlock()
	}
	eng, release, err := a.mcpEngine(ctx, daemonAddr)
	if err != nil {
		ln.Close()
		return err
	}
	defer release()
	fo.Engine = eng
	fe, err := frontend.New(ctx, fo)
	if err != nil {
		ln.Close()
		return err
	}
	h.Frontend, h.Dir, h.Log, h.Err = fe, a.dataDirPath(), fo.Logger, a.streams.Err
	return h.Serve(ctx, ln)
}

// nopWriteCloser leaves the standard output open when the transport ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpEngine is the front end's engine (apiclient.Frontend), a daemon
// started in the background on --daemon-addr.
func (a *app) mcpEngine(ctx context.Context, daemonAddr string) (localapi.Engine, func(), error) {
	// Checked first, so a mistake shows whether or not a daemon runs.
	listen, err := cliflag.Loopback("--daemon-addr", daemonAddr)
	if err != nil {
		return nil, nil, err
	}
	return apiclient.Frontend(ctx, a.api(), listen, spawnDaemon)
}

// spawnDaemon starts the daemon in the background (launch.Exec). Tests,
// whose binary is not remotemcp, replace it with one that runs serve
// in-process until stop.
var spawnDaemon launch.SpawnFunc = launch.Exec
