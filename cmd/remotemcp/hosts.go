package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/render"
)

// newHostsCmd is `remotemcp hosts …`: remotemcp's entry in MCP hosts'
// own configuration files.
func newHostsCmd(a *app) *cobra.Command {
	return group("hosts", "Connect MCP hosts (Claude Desktop, Claude Code, Cursor, VS Code …) to remotemcp",
		`Write (or remove) an entry named "remotemcp" in an MCP host's own
configuration file, in the host's format, that runs this remotemcp as
"remotemcp mcp" (with --data-dir DIR when the remotemcp the host starts
would not find the data directory by itself), or with --http the URL of
"remotemcp mcp --http" and a bearer token. The host then sees every
server remotemcp manages.

Only that entry changes: other entries, comments (VS Code's JSONC) and
formatting are kept, and a file that cannot be parsed is refused and left
as it is; so is anything but a regular file of at most 16 MiB, and a
--project file that resolves outside the project. A host writing the file
meanwhile keeps its write: the edit is redone on top of it. The file's
mode, owner and group are kept. Running a command twice changes nothing
the second time. When a
file changes, its previous version is saved as FILE.remotemcp-backup
(replacing an older backup); --dry-run prints the change and writes
nothing. Restart the host (or reload its MCP servers) afterwards.

Hosts and their user-level files here (--project: the project-level file):
`+render.HostsHelp(),
		newHostsListCmd(a), newHostsConnectCmd(a, true), newHostsConnectCmd(a, false))
}

// projectFlag adds --project[=DIR] to cmd.
func projectFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "project", "", "the host's project-level file in project directory `DIR` (--project alone: the current directory) instead of its user-level one")
	cmd.Flags().Lookup("project").NoOptDefVal = "."
}

// projectDir resolves --project's value ("" stays "": user-level files).
func projectDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("hosts: project directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", exit.Usagef("--project %s: not a directory", dir)
	}
	return abs, nil
}

// hostSystem is this machine for the hosts table: the home directory
// and environment come from the invocation's environment.
func (a *app) hostSystem() (hosts.System, error) { return hosts.Current(a.env) }

// hostPlace is the system the host files are found on and the project
// directory of --project ("" without it).
func (a *app) hostPlace(project string) (hosts.System, string, error) {
	dir, err := projectDir(project)
	if err != nil {
		return hosts.System{}, "", err
	}
	sys, err := a.hostSystem()
	return sys, dir, err
}

func newHostsListCmd(a *app) *cobra.Command {
	var project string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the hosts: installed, connected, and their files",
		Long: `List every host remotemcp can connect: whether it looks installed (its
configuration directory exists, e.g. ~/.cursor; for Claude Code ~/.claude
or $CLAUDE_CONFIG_DIR), whether its file has a "remotemcp" entry, and the
file. With --project, the project-level files instead.`,
		Args: argsExactly(0, ""),
		RunE: func(*cobra.Command, []string) error {
			sys, dir, err := a.hostPlace(project)
			if err != nil {
				return err
			}
			list := hosts.List(sys, dir)
			if a.asJSON {
				return clitext.WriteJSON(a.streams.Out, list)
			}
			return render.Hosts(a.streams.Out, a.streams.Err, list)
		},
	}
	projectFlag(cmd, &project)
	return a.jsonFlag(cmd, "print JSON: id, name, installed, connected, file, exists, note, error")
}

// newHostsConnectCmd is "hosts connect" (connect) or "hosts disconnect".
func newHostsConnectCmd(a *app, connect bool) *cobra.Command {
	var (
		project string
		dryRun  bool
		command string
		httpURL string
	)
	cmd := &cobra.Command{
		Use:   "disconnect HOST",
		Short: `Remove the "remotemcp" entry from a host's configuration file`,
		Long: `Remove the "remotemcp" entry from HOST's configuration file, leaving
everything else as it is. A file without one is left alone.

HOST is one of: ` + strings.Join(hosts.IDs(), ", ") + ".",
		Args:      argsExactly(1, "HOST"),
		ValidArgs: hosts.IDs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runHostsConnect(cmd.Context(), args[0], project, command, httpURL, connect, dryRun)
		},
	}
	if connect {
		cmd.Use = "connect HOST"
		cmd.Short = `Add remotemcp to a host's configuration file (an entry named "remotemcp")`
		cmd.Long = `Write an entry named "remotemcp" into HOST's configuration file that runs
this program as "remotemcp mcp", by its absolute path (symbolic links
resolved; --command names another), with --data-dir DIR (absolute)
whenever the data directory is not the one a process with an empty
environment computes (~/.config/remotemcp on Linux, ~/Library/Application
Support/remotemcp on macOS; on Windows always): hosts start their servers
with HOME but without $XDG_CONFIG_HOME or $REMOTEMCP_HOME. The file and
its directory are created if missing; an existing entry is replaced;
everything else is kept. A binary of "go run" is refused: it is deleted
when it exits.

With --http URL (the endpoint of "remotemcp mcp --http", e.g.
http://127.0.0.1:8765/mcp) the entry is the host's remote (HTTP) server
entry instead: the URL and an "Authorization: Bearer TOKEN" header, with a
token it creates in this data directory (named host-HOST; see "remotemcp
mcp token list"), so the host is never refused. Running it again keeps a
token that is still valid. The file is made readable by you alone.
--dry-run creates no token and shows a placeholder. Claude Desktop takes no
remote servers in its file (use its stdio entry), and a project file is
refused (it is shared; the token would leak).

HOST is one of: ` + strings.Join(hosts.IDs(), ", ") + "."
		cmd.Flags().StringVar(&httpURL, "http", "", "write an HTTP entry for the endpoint of \"remotemcp mcp --http\" at `URL` (http://127.0.0.1:PORT/mcp), with a bearer token it creates")
		cmd.Flags().StringVar(&command, "command", "", "absolute path the host should run instead of this program's own (e.g. a stable symbolic link such as /opt/homebrew/bin/remotemcp)")
	}
	projectFlag(cmd, &project)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the change as a diff and write nothing")
	return cmd
}

// runHostsConnect is "hosts connect" (connect) or "hosts disconnect" of
// host id: the file, one change, the report.
func (a *app) runHostsConnect(ctx context.Context, id, project, command, httpURL string, connect, dryRun bool) error {
	h, ok := hosts.Lookup(id)
	if !ok {
		return exit.Usagef("unknown host %q: choose one of %s", id, strings.Join(hosts.IDs(), ", "))
	}
	if httpURL != "" {
		if command != "" {
			return exit.Usagef("--http and --command exclude each other: an HTTP entry runs no program")
		}
		if _, err := hostHTTPURL(httpURL); err != nil {
			return err
		}
		if h.Remote == nil {
			return exit.Usagef("%s over HTTP: %s", h.ID, h.NoRemote)
		}
		if project != "" {
			return exit.Usagef("--http with --project is refused: the entry holds a bearer token, and a project's file is shared (often committed); connect the user-level file (drop --project), or use the stdio entry (drop --http), which needs no token")
		}
	}
	sys, dir, err := a.hostPlace(project)
	if err != nil {
		return err
	}
	f, err := h.File(sys, dir)
	if errors.Is(err, hosts.ErrNoProjectFile) {
		return exit.Usagef("%s has no project-level configuration file: drop --project", h.Name)
	}
	if err != nil {
		return err
	}
	if connect && httpURL != "" {
		return a.runHostsConnectHTTP(ctx, sys, f, httpURL, dryRun)
	}
	old, _, err := f.Entry()
	if err != nil {
		return err
	}
	var c hosts.Change
	if connect {
		e, err := a.hostEntry(sys, command)
		if err != nil {
			return err
		}
		if c, err = f.Connect(e, dryRun); err != nil {
			return err
		}
	} else if c, err = f.Disconnect(dryRun); err != nil {
		return err
	}
	if err := render.HostChange(a.streams.Out, a.streams.Err, sys, f, c, connect, dryRun); err != nil {
		return err
	}
	if c.Written {
		a.revokeHostToken(ctx, sys, h, old)
	}
	return nil
}

// hostEntry is the entry connect writes: this program (or --command)
// with the data directory when the host's remotemcp would not find it.
func (a *app) hostEntry(sys hosts.System, command string) (hosts.Entry, error) {
	exe, err := hosts.Program(runtime.GOOS, command)
	if errors.Is(err, hosts.ErrCommand) {
		return hosts.Entry{}, exit.Usagef("%s", strings.TrimSuffix(err.Error(), ": "+hosts.ErrCommand.Error()))
	}
	if err != nil {
		return hosts.Entry{}, err
	}
	dir, err := a.hostDataDir(sys)
	if err != nil {
		return hosts.Entry{}, err
	}
	return hosts.NewEntry(exe, hosts.DataDirArg(sys, dir)), nil
}

// hostDataDir is this invocation's data directory as an absolute path:
// --data-dir, else $REMOTEMCP_HOME, else <config dir>/remotemcp, where
// the config directory honours $XDG_CONFIG_HOME as os.UserConfigDir does
// (computed from the invocation's environment, so that tests can set it).
// A host's remotemcp sees none of these variables (hosts.DataDirArg).
func (a *app) hostDataDir(sys hosts.System) (string, error) {
	return hosts.DataDir(sys, a.dataDir, envHome)
}
