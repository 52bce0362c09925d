package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/frontend"
)

// daemonStartWait bounds the wait for a daemon started in the background.
const daemonStartWait = 30 * time.Second

// daemonLogName is the file in the data directory that gets the output of
// a daemon started by "remotemcp mcp" (its stdout must not reach the
// host: that is the MCP channel).
const daemonLogName = "daemon.log"

func newMcpCmd(a *app) *cobra.Command {
	var (
		serverID   string
		daemonAddr string
		httpAddr   string
		tools      string
		threshold  int
		idle       string
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
				return usageErrorf("--tools %q: use one of %s", tools, strings.Join(frontend.Modes, ", "))
			}
			if threshold < 1 {
				return usageErrorf("--search-threshold %d: give a number of tools, at least 1", threshold)
			}
			fo := frontend.Options{ServerID: serverID, Name: "remotemcp", Version: remotemcp.Version, Logger: log, Tools: tools, SearchThreshold: threshold}
			if httpAddr != "" {
				d, err := sessionIdleFlag(idle)
				if err != nil {
					return err
				}
				return a.runMcpHTTP(ctx, httpAddr, daemonAddr, fo, frontend.HTTPOptions{SessionIdle: d})
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
	addMcpHTTPTestFlag(cmd) // hidden: see mcp_http.go
	return cmd
}

// runMcpHTTP is "mcp --http": the front end over Streamable HTTP on a
// loopback address until ctx ends. Like stdio it relays to the daemon,
// starting one when none runs, so whatever starts first there is one
// owner (issue #19 item 2). Only with --no-daemon does this process own
// the engine, and then it holds the daemon lock: no daemon starts beside
// it.
func (a *app) runMcpHTTP(ctx context.Context, addr, daemonAddr string, fo frontend.Options, ho frontend.HTTPOptions) error {
	ln, err := mcpHTTPListen("--http", addr)
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
	return serveMcpHTTP(ctx, fe, a.dataDirPath(), ln, a.streams.Err, fo.Logger, ho)
}

// nopWriteCloser leaves the standard output open when the transport ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpEngine is the front end's engine: the running daemon's, else a
// daemon's started in the background, else (--no-daemon) in-process.
func (a *app) mcpEngine(ctx context.Context, daemonAddr string) (Engine, func(), error) {
	// Checked first, so a mistake shows whether or not a daemon runs.
	listen, err := flagLoopbackAddr("--daemon-addr", daemonAddr)
	if err != nil {
		return nil, nil, err
	}
	if a.noDaemon {
		return a.engine(ctx)
	}
	dir := a.dataDirPath()
	c, err := daemon.Dial(ctx, dir)
	if err == nil {
		return c, c.CloseIdleConnections, nil
	}
	if !errors.Is(err, daemon.ErrNotRunning) {
		return nil, nil, fmt.Errorf("reach the daemon: %w (run with --no-daemon to work without it)", err)
	}
	stop, err := a.startDaemon(ctx, dir, listen)
	if err != nil {
		return nil, nil, err
	}
	c, err = daemon.Dial(ctx, dir)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("reach the daemon started in the background: %w", err)
	}
	return c, func() { c.CloseIdleConnections(); stop() }, nil
}

// spawnDaemon starts "remotemcp ARGS" detached, its output to logf, and
// returns its pid, a channel closed when it exits, and stop. In
// production stop does nothing: the daemon outlives the command that
// started it, for the next host. Tests, whose binary is not remotemcp,
// replace it with one that runs serve in-process until stop.
var spawnDaemon = func(_ context.Context, args []string, logf *os.File) (pid int, exited <-chan struct{}, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("find this program: %w", err)
	}
	// Not tied to ctx: the daemon outlives this host's session.
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return 0, nil, nil, err
	}
	// Reap it if it ends while this process runs (it lost a race, or
	// failed); done says so.
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return cmd.Process.Pid, done, func() {}, nil
}

// startDaemon starts "remotemcp serve" detached on dir and waits, bounded,
// until its socket answers. Its page asks for listen but takes a free
// port when another program has it (--addr-fallback): hosts need only
// the socket. Losing the race to another host's daemon is fine: whichever
// daemon answers is the owner. stop is spawnDaemon's.
func (a *app) startDaemon(ctx context.Context, dir, listen string) (stop func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("start the daemon: create the data directory: %w", err)
	}
	logPath := filepath.Join(dir, daemonLogName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start the daemon: open its log: %w", err)
	}
	defer logf.Close()
	// What this start writes to the log begins here: a daemon that fails
	// says why in its last line, which the error repeats.
	logStart, _ := logf.Seek(0, io.SeekEnd)
	pid, exited, stop, err := spawnDaemon(ctx, []string{"--data-dir", dir, "serve", "--addr", listen, "--" + addrFallbackFlag}, logf)
	if err != nil {
		return nil, fmt.Errorf("start the daemon: %w", err)
	}
	deadline := time.Now().Add(daemonStartWait)
	for {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := daemon.Dial(dctx, dir)
		cancel()
		if err == nil {
			in, rerr := daemon.Running(ctx, dir)
			if rerr == nil && in.PID != pid {
				// Another host's daemon won the race; ours has stepped aside.
				fmt.Fprintf(a.streams.Err, "remotemcp: using the daemon (pid %d) that another host started at the same time\n", in.PID)
			} else {
				fmt.Fprintf(a.streams.Err, "remotemcp: started the daemon (pid %d, log %s)\n", pid, logPath)
			}
			if rerr == nil && in.RequestedAddr != "" {
				fmt.Fprintf(a.streams.Err, "remotemcp: %s was taken, so the daemon's settings page is on %s\n", in.RequestedAddr, in.URL)
			}
			return stop, nil
		}
		if ctx.Err() != nil {
			stop()
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("start the daemon: it did not answer within %s (see %s): %w", daemonStartWait, logPath, err)
		}
		select {
		case <-exited:
			// Another daemon may have won; give it the rest of the wait,
			// but a daemon that failed alone will not come.
			if _, serr := os.Stat(filepath.Join(dir, daemon.InfoFileName)); serr != nil {
				if why := lastLogLine(logPath, logStart); why != "" {
					return nil, fmt.Errorf("start the daemon: it exited: %s (log: %s)", why, logPath)
				}
				return nil, fmt.Errorf("start the daemon: it exited (see %s)", logPath)
			}
			exited = nil // wait for the winner at the pace below
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lastLogLine is the last non-empty line written to the log at path since
// offset from, read from at most its last 4 KiB; "" when there is none.
// It is the daemon's own words (its log is redacted), so it can be shown.
func lastLogLine(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const most = 4 << 10
	if fi, err := f.Stat(); err == nil && fi.Size()-from > most {
		from = fi.Size() - most
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, most))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	return strings.TrimPrefix(last, "remotemcp: ")
}
