// Command remotemcp manages and uses remote MCP servers from the command
// line. Every command is flags, one or two calls of the local API
// (localapi.Engine, always through a *localapi.Client) and rendering: with
// a daemon running the client talks to it over its Unix socket; without one
// (or with --no-daemon) the command serves the same API in-process for its
// own length. stdout carries results only; progress, questions and errors
// go to stderr. Exit statuses are localapi's.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/internal/ask"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/internal/interrupt"
	"github.com/remotemcp/remotemcp/localapi"
)

func main() {
	ctx, stop := interrupt.Context(context.Background(), os.Stderr) // a second signal ends the process
	code := run(ctx, os.Args[1:], Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.LookupEnv)
	stop()
	os.Exit(code)
}

// Streams are the standard streams of one invocation.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// Terminal marks In as an interactive terminal whatever its type.
	Terminal bool
}

// Env looks up an environment variable, like os.LookupEnv.
type Env func(key string) (string, bool)

// Exit statuses: localapi's table, and the shell's for SIGINT.
const (
	exitOK          = localapi.ExitOK
	exitFail        = localapi.ExitFailed
	exitUsage       = localapi.ExitUsage
	exitNotReady    = localapi.ExitNotReady
	exitNoAnswer    = localapi.ExitNoAnswer
	exitInterrupted = 130
)

// run executes one command line and returns its exit status.
func run(ctx context.Context, args []string, s Streams, env Env) int {
	root := newRootCmd(s, env)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitFail
	var ee *exit.Error
	if errors.As(err, &ee) {
		code = ee.Code
		if ee.Err == nil {
			return code
		}
		err = ee.Err
	}
	if e, ok := localapi.AsError(err); ok && e.Code == localapi.CodeUserRequired {
		// A gateway, and the command did not say for whom: a mistake
		// on the command line, which the message names the fix of.
		code = exitUsage
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(s.Err, "remotemcp: interrupted")
		return exitInterrupted
	}
	explain.Failure(s.Err, err, verbose(args))
	return code
}

// verbose reports whether the command line asked for --verbose (-v):
// run reports errors after the command tree, and its flags, are gone.
func verbose(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--verbose" || a == "--verbose=true" || a == "-v":
			return true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "v") && len(a) <= 4:
			// Grouped short flags such as -vy.
			return true
		}
	}
	return false
}

// app is the state of one invocation.
type app struct {
	streams  Streams
	env      Env
	dataDir  string // --data-dir
	verbose  bool
	noDaemon bool   // --no-daemon: always work in-process
	user     string // --user: the gateway person a command acts for
	log      *slog.Logger

	inProcess bool // the command's engine runs in this process
	asJSON    bool // --json

	term *ask.Terminal // the person at stdin and stderr
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
	s.Out, s.Err = &lockedWriter{w: s.Out}, &lockedWriter{w: s.Err}
	a := &app{streams: s, env: env, log: slog.New(slog.DiscardHandler), term: &ask.Terminal{In: s.In, Err: s.Err, Forced: s.Terminal}}
	root := &cobra.Command{
		Use:   "remotemcp",
		Short: "Use remote MCP servers (Streamable HTTP) safely",
		Long: `remotemcp keeps a list of remote MCP servers, connects to them over
Streamable HTTP, lists their tools and calls them.

With "remotemcp serve" running, every command goes through that daemon;
without it, each command does its work in-process and connects only the
servers it needs. Tokens are never taken from the command line: give them
with --bearer-env (an environment variable) or --bearer-stdin, and they are
stored encrypted in the data directory.

Exit statuses: 0 ok (a tool's own isError answer included), 1 failed,
2 usage error, 3 "status ID" found the server in error or needs-auth,
4 a tool call got no answer (it may have run; it is never re-sent).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       remotemcp.Version,
		Args:          noSubcommand,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRun: func(*cobra.Command, []string) {
			if a.verbose {
				a.log = newLogger(s.Err, true)
			}
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetVersionTemplate(versionLine() + "\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return exit.Usagef("%s (see \"%s --help\")", err, cmd.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.dataDir, "data-dir", "", "data directory (default $REMOTEMCP_HOME, else <user config dir>/remotemcp)")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "debug logging on stderr (secrets are redacted)")
	pf.BoolVar(&a.noDaemon, "no-daemon", false, "work in-process even when a daemon runs on the data directory")
	pf.StringVar(&a.user, "user", "", "on a gateway (serve --store postgres://…), act for this person (EMAIL): for its admins, on its host")

	root.AddCommand(
		newServersCmd(a), newConnectCmd(a), newDisconnectCmd(a), newStatusCmd(a),
		newAuthCmd(a), newGrantsCmd(a), newServeCmd(a), newOpenCmd(a), newLogsCmd(a),
		newToolsCmd(a), newCallCmd(a), newPromptsCmd(a), newPromptCmd(a),
		newResourcesCmd(a), newReadCmd(a), newElicitationsCmd(a), newMcpCmd(a), newHostsCmd(a), newUsersCmd(a), newStoreCmd(a),
		a.jsonFlag(&cobra.Command{
			Use:   "version",
			Short: "Print the remotemcp version (the same as --version)",
			Long:  `Print the remotemcp version; --json prints {"version": "…"}.`,
			Args:  argsExactly(0, ""),
			RunE: func(*cobra.Command, []string) error {
				return a.printOne(versionInfo{Version: remotemcp.Version}, func(w io.Writer) error {
					_, err := fmt.Fprintln(w, versionLine())
					return err
				})
			},
		}, "print a JSON object"),
	)
	return root
}

// versionInfo is what "version --json" prints.
type versionInfo struct {
	Version string `json:"version"`
}

// versionLine is what both "version" and "--version" print.
func versionLine() string { return "remotemcp " + remotemcp.Version }

// group makes a command that only groups subcommands.
func group(use, short, long string, sub ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Args: noSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(sub...)
	return cmd
}

// argsExactly checks the number of positional arguments.
func argsExactly(n int, names string) cobra.PositionalArgs {
	return argsRange(n, n, names)
}

// argsRange checks for lo to hi positional arguments (hi < 0: any).
func argsRange(lo, hi int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= lo && (hi < 0 || len(args) <= hi) {
			return nil
		}
		if hi == 0 {
			return exit.Usagef("%s takes no arguments, got %q", cmd.CommandPath(), args)
		}
		return exit.Usagef("usage: %s %s (got %d argument(s); see \"%s --help\")", cmd.CommandPath(), names, len(args), cmd.CommandPath())
	}
}

// noSubcommand is the Args of a command that only groups subcommands.
func noSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return exit.Usagef("unknown command %q for %q (see \"%s --help\")", args[0], cmd.CommandPath(), cmd.CommandPath())
	}
	return nil
}
