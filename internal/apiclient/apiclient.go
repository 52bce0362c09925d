// Package apiclient reaches the local API (localapi.Engine) for one CLI
// command: the running daemon's over its Unix socket; for an MCP host, a
// daemon started in the background; else, or with --no-daemon, an engine
// opened lazily on the data directory in this process for the command's
// length. Every command thus takes one code path: the same API, whoever
// serves it.
package apiclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/daemon/launch"
	"github.com/remotemcp/remotemcp/hosttoken"
	"github.com/remotemcp/remotemcp/localapi"
)

// Engine is what every command talks to: the local API, through a
// *localapi.Client connected to the daemon or to the in-process handlers.
type Engine interface {
	localapi.Engine
	LoginURL(ctx context.Context) (*localapi.LoginURL, error)
}

// Options say where the API is and how to report.
type Options struct {
	// DataDir is the data directory.
	DataDir string
	// NoDaemon works in-process even when a daemon runs (--no-daemon).
	NoDaemon bool
	// User is the person of a gateway the command acts for (--user
	// EMAIL): the gateway's daemon must run, and every request names
	// them (localapi.UserHeader).
	User string
	// Log is the log of an engine opened in this process.
	Log *slog.Logger
	// Err takes the notes for the person (stderr).
	Err io.Writer
}

// daemonOf returns the client of the daemon running on dir, nil when
// none runs.
func daemonOf(ctx context.Context, dir string) (*localapi.Client, error) {
	c, err := daemon.Dial(ctx, dir)
	switch {
	case errors.Is(err, daemon.ErrNotRunning):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reach the daemon: %w (run with --no-daemon to work without it)", err)
	}
	return c, nil
}

// Open opens a lazy engine on dir in this process: it connects a server
// when a command first uses it, not at start.
func Open(ctx context.Context, dir string, log *slog.Logger) (*remotemcp.Client, error) {
	return remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, Logger: log, NoStartupConnect: true})
}

// Command returns a command's API client and its release: the daemon's,
// else the in-process API of an engine opened for the command
// (inProcess).
func Command(ctx context.Context, o Options) (e Engine, release func(), inProcess bool, err error) {
	if o.User != "" {
		c, err := asUser(ctx, o)
		if err != nil {
			return nil, nil, false, err
		}
		return c, c.CloseIdleConnections, false, nil
	}
	if !o.NoDaemon {
		c, err := daemonOf(ctx, o.DataDir)
		if err != nil {
			return nil, nil, false, err
		}
		if c != nil {
			o.Log.Debug("using the daemon")
			return c, c.CloseIdleConnections, false, nil
		}
		if _, serr := os.Stat(filepath.Join(o.DataDir, daemon.InfoFileName)); serr == nil {
			fmt.Fprintln(o.Err, "the daemon is not running; working in-process")
		}
	}
	eng, err := Open(ctx, o.DataDir, o.Log)
	if err != nil {
		return nil, nil, false, fmt.Errorf("open the data directory: %w", err)
	}
	// The API outlives a Ctrl-C until the command ends, so that a
	// cancelled call still delivers its outcome.
	c, stop, err := daemon.InProcess(context.WithoutCancel(ctx), eng)
	if err != nil {
		eng.Close()
		return nil, nil, false, err
	}
	return c, func() { stop(); eng.Close() }, true, nil
}

// errNoGateway: --user without a gateway daemon to act on.
var errNoGateway = errors.New("--user acts for a person of a gateway, and no daemon runs on this data directory: start the gateway with \"remotemcp serve --store postgres://…\" (on this data directory), then run the command again")

// asUser is the running gateway daemon's client acting for o.User.
func asUser(ctx context.Context, o Options) (*localapi.Client, error) {
	if o.NoDaemon {
		return nil, errors.New("--user and --no-daemon do not go together: a gateway's people are served by its daemon")
	}
	c, err := daemonOf(ctx, o.DataDir)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errNoGateway
	}
	c.ActAs(o.User)
	return c, nil
}

// Admin returns the client of the running daemon for the admins' routes
// of a gateway (users), or says that none runs.
func Admin(ctx context.Context, dir string) (*localapi.Client, error) {
	c, err := daemon.Dial(ctx, dir)
	if errors.Is(err, daemon.ErrNotRunning) {
		return nil, errors.New("no daemon runs on this data directory; start the gateway with \"remotemcp serve --store postgres://…\"")
	}
	return c, err
}

// Daemon returns the client of the running daemon, or says that none
// runs.
func Daemon(ctx context.Context, dir string) (Engine, error) {
	c, err := daemon.Dial(ctx, dir)
	if errors.Is(err, daemon.ErrNotRunning) {
		return nil, errors.New("no daemon runs on this data directory; start one with \"remotemcp serve\"")
	}
	return c, err
}

// Frontend is the engine of the MCP front end ("remotemcp mcp"): the
// running daemon's, else a daemon's started in the background by spawn
// with its settings page on listen, else (NoDaemon) an engine of this
// process, called directly: the front end needs no local API hop.
func Frontend(ctx context.Context, o Options, listen string, spawn launch.SpawnFunc) (localapi.Engine, func(), error) {
	if o.User != "" {
		c, err := asUser(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		return c, c.CloseIdleConnections, nil
	}
	if o.NoDaemon {
		eng, err := Open(ctx, o.DataDir, o.Log)
		if err != nil {
			return nil, nil, fmt.Errorf("open the data directory: %w", err)
		}
		return eng, func() { eng.Close() }, nil
	}
	c, err := daemonOf(ctx, o.DataDir)
	if err != nil {
		return nil, nil, err
	}
	if c != nil {
		return c, c.CloseIdleConnections, nil
	}
	st, stop, err := launch.Start(ctx, launch.Options{Dir: o.DataDir, Listen: listen, Spawn: spawn})
	if err != nil {
		return nil, nil, err
	}
	if st.Winner != 0 {
		fmt.Fprintf(o.Err, "remotemcp: using the daemon (pid %d) that another host started at the same time\n", st.Winner)
	} else {
		fmt.Fprintf(o.Err, "remotemcp: started the daemon (pid %d, log %s)\n", st.PID, st.Log)
	}
	if st.RequestedAddr != "" {
		fmt.Fprintf(o.Err, "remotemcp: %s was taken, so the daemon's settings page is on %s\n", st.RequestedAddr, st.URL)
	}
	c, err = daemon.Dial(ctx, o.DataDir)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("reach the daemon started in the background: %w", err)
	}
	return c, func() { c.CloseIdleConnections(); stop() }, nil
}

// Tokens reaches the bearer tokens of the data directory dir (which may
// be another than o.DataDir: the one a host's entry names) through the
// local API: the daemon's, else an engine opened in this process (failing
// with the words what). With ifExists (a dry run) it opens nothing where
// dir has no database yet and returns nil: no token can be valid there.
func Tokens(ctx context.Context, o Options, dir string, ifExists bool, what string) (localapi.HostTokens, func(), error) {
	if o.User != "" {
		o.DataDir = dir
		c, err := asUser(ctx, o)
		if err != nil {
			return nil, nil, err
		}
		return c, c.CloseIdleConnections, nil
	}
	if ifExists && !hosttoken.Kept(dir) {
		return nil, func() {}, nil
	}
	if !o.NoDaemon {
		c, err := daemonOf(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		if c != nil {
			return c, c.CloseIdleConnections, nil
		}
	}
	eng, err := Open(ctx, dir, o.Log)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return eng, func() { eng.Close() }, nil
}
