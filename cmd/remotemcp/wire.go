package main

import (
	"cmp"
	"net"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/daemon/launch"
	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/internal/cliflag"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/serve"
)

// newServeCmd is "serve": the daemon (serve.Daemon).
//
// Long: one cobra command: its help, its flags (the personal daemon's and
// the gateway's) and the one serve.Daemon built from them, top to bottom.
func newServeCmd(a *app) *cobra.Command {
	var (
		addr     string
		mcpHTTP  string
		idle     string
		withDemo bool
		notify   bool
		fallback bool
		dsn      string
		quotas   [3]int
		page     serve.PageFlags
		mcpFlags serve.MCPFlags
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
(loopback only, bearer tokens of "remotemcp mcp token").
--store postgres://… (or $REMOTEMCP_STORE) runs a gateway for many people
on that database (README "Gateway"; "remotemcp users", --user EMAIL); the
data directory keeps the key file that seals its secrets: back it up. Its
settings page signs people in with OpenID Connect (--oidc-issuer …) or
through an authenticating proxy (--trusted-user-header …); with
--oidc-issuer, hosts on --mcp-http may also sign in by OAuth (access tokens
for --mcp-public-url).`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			listen, err := cliflag.Loopback("--addr", addr)
			if err != nil {
				return err
			}
			sessionIdle, err := cliflag.SessionIdle(idle)
			if err != nil {
				return err
			}
			log := a.log
			if !a.verbose {
				log = newLogger(a.streams.Err, false)
			}
			d := serve.Daemon{Dir: a.dataDirPath(), Addr: listen, AddrFallback: fallback, Notify: notify, SessionIdle: sessionIdle,
				Demo: withDemo, Store: cmp.Or(dsn, a.envValue(envStore)), QuotaServers: quotas[0], QuotaCalls: quotas[1], QuotaQuestions: quotas[2],
				Page: page, MCP: mcpFlags, Env: a.env, Log: log, Out: a.streams.Out, Err: a.streams.Err}
			if mcpHTTP != "" {
				d.ListenMCP = func() (net.Listener, error) { return cliflag.ListenLoopback("--mcp-http", mcpHTTP) }
			}
			if withDemo {
				d.Name = a.cliName()
			}
			return d.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&dsn, "store", "", "run as a gateway for many people on this PostgreSQL database (postgres://…; default $"+envStore+"); the personal mode keeps SQLite in the data directory")
	addQuotaFlags(cmd, &quotas)
	page.Register(cmd.Flags())
	mcpFlags.Register(cmd.Flags())
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

// addQuotaFlags adds a gateway's per-person quotas to serve (0: the
// defaults, README "Gateway").
func addQuotaFlags(cmd *cobra.Command, q *[3]int) {
	cmd.Flags().IntVar(&q[0], "quota-servers", 0, "with --store: the most servers per person (default 50)")
	cmd.Flags().IntVar(&q[1], "quota-calls", 0, "with --store: the most tool calls in flight per person (default 16)")
	cmd.Flags().IntVar(&q[2], "quota-questions", 0, "with --store: the most server questions waiting per person (default 10)")
}
