// Command remotemcp manages and uses remote MCP servers (Streamable HTTP)
// from the command line: it edits the stored server list, imports other
// clients' configs, connects, lists tools and calls them (each call
// approved), runs prompts, searches and reads resources, and answers the
// questions servers ask during calls (elicitation cards).
//
// Without a running daemon every command works in-process: it opens the data
// directory, connects what it needs and disconnects when it exits.
//
// stdout carries results only (tables, JSON, tool output) so that it can be
// piped; progress, warnings and errors go to stderr. The exit status is 0 on
// success, 1 when the command failed and 2 for a usage error.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/session"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, a second one kills the process the usual way.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.LookupEnv)
	stop()
	os.Exit(code)
}

// Streams are the standard streams of one invocation.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// Terminal marks In as an interactive terminal whatever its type (tests
	// and embedders that relay a terminal); otherwise In is a terminal when
	// it is an *os.File on a character device.
	Terminal bool
}

// Env looks up an environment variable, like os.LookupEnv.
type Env func(key string) (string, bool)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
	// exitInterrupted is the shell's status for a command ended by SIGINT.
	exitInterrupted = 130
)

// exitError carries an exit status. A nil err means the problem has already
// been reported on stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// reported is the error of a command that already explained its failure.
var reported = &exitError{code: exitFail}

// usageErrorf is a mistake on the command line (exit status 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// run executes one command line and returns its exit status; errors are
// printed to s.Err.
func run(ctx context.Context, args []string, s Streams, env Env) int {
	root := newRootCmd(s, env)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitFail
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
		err = ee.err
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(s.Err, "remotemcp: interrupted")
		return exitInterrupted
	}
	fmt.Fprintf(s.Err, "remotemcp: %s\n", err)
	return code
}

// app is the state of one invocation: its streams, environment and global
// flags. Nothing is kept between invocations.
type app struct {
	streams  Streams
	env      Env
	dataDir  string
	verbose  bool
	noDaemon bool // --no-daemon: always work in-process
	log      *slog.Logger

	inMu sync.Mutex
	in   *bufio.Reader // lines typed at prompts; see readLine
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// newRootCmd builds the command tree for one invocation.
func newRootCmd(s Streams, env Env) *cobra.Command {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	// Progress, prompts and results may be written from several goroutines
	// (progress notifications, elicitation prompts); each write is whole.
	s.Out, s.Err = &lockedWriter{w: s.Out}, &lockedWriter{w: s.Err}
	a := &app{streams: s, env: env, log: slog.New(slog.DiscardHandler)}
	root := &cobra.Command{
		Use:   "remotemcp",
		Short: "Use remote MCP servers (Streamable HTTP) safely",
		Long: `remotemcp keeps a list of remote MCP servers, connects to them over
Streamable HTTP, lists their tools and calls them.

Tokens are never taken from the command line: give them with --bearer-env
(an environment variable) or --bearer-stdin, and they are stored encrypted
in the data directory.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       remotemcp.Version,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			a.log = newLogger(s.Err, a.verbose)
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetVersionTemplate("remotemcp {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%s (see \"%s --help\")", err, cmd.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.dataDir, "data-dir", "", "data directory (default $REMOTEMCP_HOME, else <user config dir>/remotemcp)")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "debug logging on stderr (secrets are redacted)")
	pf.BoolVar(&a.noDaemon, "no-daemon", false, "work in-process even when a daemon runs on the data directory")

	root.AddCommand(
		newServersCmd(a),
		newConnectCmd(a),
		newAuthCmd(a),
		newGrantsCmd(a),
		newServeCmd(a),
		newLogsCmd(a),
		newOpenCmd(a),
		newDisconnectCmd(a),
		newStatusCmd(a),
		newToolsCmd(a),
		newCallCmd(a),
		newPromptsCmd(a),
		newPromptCmd(a),
		newResourcesCmd(a),
		newReadCmd(a),
		newElicitationsCmd(a),
		newVersionCmd(a),
	)
	return root
}

// newVersionCmd prints the version.
func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the remotemcp version",
		Args:  argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(a.streams.Out, "remotemcp %s (MCP protocol %s)\n", remotemcp.Version, session.ProtocolVersion)
			return nil
		},
	}
}

// argsExactly checks the number of positional arguments; names describes
// them for the usage error ("ID URL").
func argsExactly(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		if n == 0 {
			return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
		}
		return usageErrorf("usage: %s %s (got %d argument(s); see \"%s --help\")", cmd.CommandPath(), names, len(args), cmd.CommandPath())
	}
}

// noSubcommand is the Args of a command that only groups subcommands.
func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unknown command %q for %q (see \"%s --help\")", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return nil
}

// argsRange checks for between lo and hi positional arguments.
func argsRange(lo, hi int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= lo && len(args) <= hi {
			return nil
		}
		return usageErrorf("usage: %s %s (got %d argument(s); see \"%s --help\")", cmd.CommandPath(), names, len(args), cmd.CommandPath())
	}
}
