package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/store"
)

// newServersCmd is `remotemcp servers …`: the stored server list. These
// commands never touch the network.
func newServersCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "servers",
		Aliases: []string{"server"},
		Short:   "Add, import, list, show, change and remove servers (no network)",
		Args:    noSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(
		newServersAddCmd(a),
		newServersImportCmd(a),
		newServersListCmd(a),
		newServersShowCmd(a),
		newServersRmCmd(a),
		newServersEnableCmd(a, true),
		newServersEnableCmd(a, false),
		newServersSetCmd(a),
	)
	return cmd
}

// bearerFlags are --bearer-env and --bearer-stdin, shared by add and set.
type bearerFlags struct {
	env   string
	stdin bool
}

func (b *bearerFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.env, "bearer-env", "", "read the bearer token from this environment variable")
	cmd.Flags().BoolVar(&b.stdin, "bearer-stdin", false, "read the bearer token from the first line of stdin")
}

func (b *bearerFlags) given() bool { return b.env != "" || b.stdin }

// token reads the bearer token from where the flags say. Tokens never come
// from argv, where other local users and shell history would see them.
func (b *bearerFlags) token(a *app, id string) (string, error) {
	if b.env != "" && b.stdin {
		return "", usageErrorf("give the bearer token with --bearer-env or --bearer-stdin, not both")
	}
	if b.env != "" {
		v, ok := a.env(b.env)
		switch {
		case !ok:
			return "", fmt.Errorf("--bearer-env: environment variable %s is not set; export it with the token, or use --bearer-stdin", b.env)
		case strings.TrimSpace(v) == "":
			return "", fmt.Errorf("--bearer-env: environment variable %s is empty; it must hold the bearer token", b.env)
		}
		return strings.TrimSpace(v), nil
	}
	if f, ok := a.streams.In.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprintf(a.streams.Err, "bearer token for %s (one line; it is echoed): ", id)
		}
	}
	line, err := bufio.NewReader(io.LimitReader(a.streams.In, 64<<10)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("--bearer-stdin: read the token: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.TrimSpace(line) == "" {
		return "", errors.New("--bearer-stdin: stdin gave no token; pipe the token in, e.g. `printenv MY_TOKEN | remotemcp servers add ... --bearer-stdin`")
	}
	return strings.TrimSpace(line), nil
}

// fieldError returns the config.FieldError inside err, if any, so that its
// precise text is what the user sees.
func fieldError(err error) error {
	var fe *config.FieldError
	if errors.As(err, &fe) {
		return fe
	}
	return err
}

func newServersAddCmd(a *app) *cobra.Command {
	var (
		name            string
		bearer          bearerFlags
		oauth           bool
		clientID        string
		scopes          []string
		lazy, disabledF bool
	)
	cmd := &cobra.Command{
		Use:   "add ID URL",
		Short: "Add a server",
		Long: `Add a remote MCP server under ID (lower-case letters, digits, '-' and '_').

The URL must be https://, or http:// on a loopback host for local development.
Authentication: none by default; --bearer-env VAR or --bearer-stdin for a
static token; --oauth for OAuth 2.1 (optionally with a pre-registered
--client-id and --scope). A token is never given on the command line.`,
		Example: `  remotemcp servers add docs https://mcp.example.com/mcp
  MY_TOKEN=... remotemcp servers add gh https://api.example.com/mcp --bearer-env MY_TOKEN
  printenv MY_TOKEN | remotemcp servers add gh https://api.example.com/mcp --bearer-stdin`,
		Args: argsExactly(2, "ID URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, url := args[0], args[1]
			if oauth && bearer.given() {
				return usageErrorf("--oauth and --bearer-env/--bearer-stdin exclude each other: a server uses one kind of authentication")
			}
			if !oauth && (clientID != "" || len(scopes) > 0) {
				return usageErrorf("--client-id and --scope are OAuth settings; add --oauth")
			}
			if name == "" {
				name = id
			}
			srv := config.Server{
				ID: id, Name: name, URL: url, Auth: config.Auth{Kind: config.AuthNone},
				Enabled: !disabledF, ConnectOnStartup: !lazy,
			}
			if oauth {
				srv.Auth = config.Auth{Kind: config.AuthOAuth, ClientID: clientID, Scopes: scopes}
			}
			// Check what the command line alone can tell before asking for
			// a token or touching the data directory.
			if err := srv.Validate(); err != nil {
				return fieldError(err)
			}
			if bearer.given() {
				tok, err := bearer.token(a, id)
				if err != nil {
					return err
				}
				srv.Auth = config.Auth{Kind: config.AuthBearer, Token: tok}
				if err := srv.Validate(); err != nil {
					return fieldError(err)
				}
			}

			ctx := cmd.Context()
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := c.Store.GetServer(ctx, id); err == nil || errors.Is(err, store.ErrSealOpen) {
				return errExists(id)
			}
			// Grant first: a running daemon connects the server as soon as
			// it sees it, and must find its origin allowed.
			if err := a.grantServerOrigin(ctx, c, srv.URL); err != nil {
				return err
			}
			if err := c.Store.AddServer(ctx, srv); err != nil {
				if errors.Is(err, store.ErrDuplicate) {
					return errExists(id)
				}
				return fmt.Errorf("add server %s: %w", id, fieldError(err))
			}
			fmt.Fprintf(a.streams.Out, "added %s %s\n", id, url)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "display name (default: the ID)")
	bearer.register(cmd)
	f.BoolVar(&oauth, "oauth", false, "authenticate with OAuth 2.1")
	f.StringVar(&clientID, "client-id", "", "pre-registered OAuth client id (default: dynamic client registration)")
	f.StringArrayVar(&scopes, "scope", nil, "OAuth scope, used when the server names none (repeatable)")
	f.BoolVar(&lazy, "lazy", false, "connect on first use instead of at startup")
	f.BoolVar(&disabledF, "disabled", false, "add the server switched off")
	return cmd
}

// errExists is the error for a server id that is already taken.
func errExists(id string) error {
	return fmt.Errorf("server %s already exists; use \"remotemcp servers set\" to change it", id)
}

func newServersListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the configured servers (live state when a daemon runs; see \"status\")",
		Args:    argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				return a.listViaDaemon(ctx, dc, asJSON)
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			servers, err := c.Store.ListServers(ctx)
			if err != nil {
				if !errors.Is(err, store.ErrSealOpen) {
					return fmt.Errorf("list servers: %w", err)
				}
				fmt.Fprintf(a.streams.Err, "warning: %s\n", cell(err.Error()))
			}
			rows := make([]serverRow, 0, len(servers))
			for _, s := range servers {
				rows = append(rows, rowOfConfig(s))
			}
			if asJSON {
				return writeJSON(a.streams.Out, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(a.streams.Err, "no servers configured; add one with \"remotemcp servers add ID URL\" or \"remotemcp servers import FILE\"")
				return nil
			}
			return writeServerTable(a.streams.Out, rows, false)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// sealedMark stands in for a stored secret in `servers show`.
const sealedMark = "(sealed)"

func newServersShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one server's configuration (secrets are not shown)",
		Args:  argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			srv, err := c.Store.GetServer(ctx, args[0])
			unreadable := errors.Is(err, store.ErrSealOpen)
			switch {
			case errors.Is(err, store.ErrNotFound):
				return errNoServer(args[0])
			case unreadable:
				fmt.Fprintf(a.streams.Err, "warning: %s\n", cell(sealError(args[0], err).Error()))
			case err != nil:
				return fmt.Errorf("read server %s: %w", args[0], err)
			}
			mark := sealedMark
			if unreadable {
				mark = "(sealed; cannot be opened)"
			}
			if srv.Auth.Token != "" || unreadable && srv.Auth.Kind == config.AuthBearer {
				srv.Auth.Token = mark
			}
			if srv.Auth.ClientSecret != "" {
				srv.Auth.ClientSecret = mark
			}
			if asJSON {
				return writeJSON(a.streams.Out, srv)
			}
			return writeServerDetails(a.streams.Out, srv)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the configuration as JSON")
	return cmd
}

// writeServerDetails prints one server as "key: value" lines.
func writeServerDetails(w io.Writer, s config.Server) error {
	tw := newTable(w)
	kv := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, cell(v)) }
	kv("id", s.ID)
	kv("name", s.Name)
	kv("url", s.URL)
	kv("enabled", fmt.Sprint(s.Enabled))
	if s.ConnectOnStartup {
		kv("connect", "at startup")
	} else {
		kv("connect", "lazily, on first use")
	}
	kv("auth", authKind(s.Auth.Kind))
	switch s.Auth.Kind {
	case config.AuthBearer:
		kv("token", orDash(s.Auth.Token))
	case config.AuthOAuth:
		kv("client id", orDash(s.Auth.ClientID))
		if s.Auth.ClientSecret != "" {
			kv("client secret", s.Auth.ClientSecret)
		}
		kv("scopes", orDash(strings.Join(s.Auth.Scopes, " ")))
		if b := s.Auth.Binding; b != nil {
			kv("bound to", fmt.Sprintf("resource %s, issuer %s", b.Resource, b.Issuer))
		}
		if s.Auth.RedirectPort != 0 {
			kv("redirect port", fmt.Sprint(s.Auth.RedirectPort))
		}
	}
	if len(s.DisabledTools) > 0 {
		kv("disabled tools", strings.Join(s.DisabledTools, ", "))
	}
	if s.ToolTimeout != 0 {
		kv("tool timeout", time.Duration(s.ToolTimeout).String())
	} else {
		kv("tool timeout", "60s (default)")
	}
	return tw.Flush()
}

func newServersRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a server and its stored secrets",
		Args:    argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if err := c.Store.DeleteServer(ctx, args[0]); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return errNoServer(args[0])
				}
				return fmt.Errorf("remove server %s: %w", args[0], err)
			}
			fmt.Fprintf(a.streams.Out, "removed %s\n", args[0])
			return nil
		},
	}
}

// newServersEnableCmd is `servers enable ID` (on) or `servers disable ID`.
func newServersEnableCmd(a *app, on bool) *cobra.Command {
	verb, short := "enable", "Switch a server on"
	if !on {
		verb, short = "disable", "Switch a server off (it keeps its configuration)"
	}
	return &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return a.updateServer(cmd.Context(), id, false, func(srv *config.Server) (bool, error) {
				if srv.Enabled == on {
					fmt.Fprintf(a.streams.Out, "%s is already %sd\n", id, verb)
					return false, nil
				}
				srv.Enabled = on
				return true, nil
			}, func() { fmt.Fprintf(a.streams.Out, "%sd %s\n", verb, id) })
		},
	}
}

// updateServer reads a server, lets edit change it and writes it back.
// edit returns false when there is nothing to write. rebind confirms that
// a bearer token in the edit was re-supplied by the user for the new URL.
func (a *app) updateServer(ctx context.Context, id string, rebind bool, edit func(*config.Server) (bool, error), done func()) error {
	c, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	srv, err := getServer(ctx, c.Store, id)
	if err != nil {
		// A secret that cannot be opened would be written back empty;
		// only a re-supplied token may replace it.
		if !rebind || !errors.Is(err, store.ErrSealOpen) {
			return err
		}
	}
	changed, err := edit(&srv)
	if err != nil || !changed {
		return err
	}
	if err := srv.Validate(); err != nil {
		return fieldError(err)
	}
	err = c.Store.UpdateServerWith(ctx, srv, store.UpdateOptions{RebindBearer: rebind})
	if err == nil {
		// Pointing a server at a new URL is the user's choice of origin.
		// After the update, so a refused change writes nothing; a running
		// daemon is told through its API, which reconnects the servers
		// that failed for want of the grant.
		err = a.grantServerOrigin(ctx, c, srv.URL)
	}
	switch {
	case errors.Is(err, store.ErrBearerRebind):
		return fmt.Errorf("server %s: the new URL %s is a different resource than the old one, and its bearer token was given for the old URL, so it does not follow the server (nothing was changed); "+
			"re-supply the token for the new URL: \"remotemcp servers set %s --url %s --bearer-env VAR\" (or --bearer-stdin)", id, srv.URL, id, srv.URL)
	case errors.Is(err, store.ErrNotFound):
		return errNoServer(id)
	case err != nil:
		return fmt.Errorf("update server %s: %w", id, fieldError(err))
	}
	done()
	return nil
}

func newServersSetCmd(a *app) *cobra.Command {
	var (
		url, name         string
		lazy, startup     bool
		timeout           time.Duration
		disableT, enableT []string
		bearer            bearerFlags
	)
	cmd := &cobra.Command{
		Use:   "set ID",
		Short: "Change a server's settings",
		Long: `Change a server's settings; flags not given stay as they are.

Moving a bearer-token server to a URL of another resource (another host,
port, path or query) needs the token again, given with --bearer-env or --bearer-stdin: a
token issued for one server is never sent to another on its own. The same
flags replace the token, or switch the server to bearer authentication.`,
		Example: `  remotemcp servers set docs --url https://mcp.example.com/v2/mcp --bearer-env DOCS_TOKEN
  remotemcp servers set docs --lazy --tool-timeout 5m --disable-tool delete_page`,
		Args: argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			f := cmd.Flags()
			if lazy && startup {
				return usageErrorf("--lazy and --startup exclude each other")
			}
			for _, t := range disableT {
				if slices.Contains(enableT, t) {
					return usageErrorf("tool %q is given to both --disable-tool and --enable-tool", t)
				}
			}
			if !slices.ContainsFunc([]string{"url", "name", "lazy", "startup", "tool-timeout", "disable-tool", "enable-tool", "bearer-env", "bearer-stdin"}, f.Changed) {
				return usageErrorf("nothing to change; give at least one of --url, --name, --lazy, --startup, --tool-timeout, --disable-tool, --enable-tool, --bearer-env, --bearer-stdin")
			}
			if f.Changed("url") {
				if err := config.ValidateURL(url); err != nil {
					var fe *config.FieldError
					if errors.As(err, &fe) {
						return &config.FieldError{ServerID: id, Field: fe.Field, Problem: fe.Problem}
					}
					return err
				}
			}
			token := ""
			if bearer.given() {
				var err error
				if token, err = bearer.token(a, id); err != nil {
					return err
				}
			}
			var what []string
			return a.updateServer(cmd.Context(), id, token != "", func(srv *config.Server) (bool, error) {
				if f.Changed("url") && url != srv.URL {
					srv.URL = url
					what = append(what, "url")
				}
				if f.Changed("name") && name != srv.Name {
					srv.Name = name
					what = append(what, "name")
				}
				if lazy && srv.ConnectOnStartup || startup && !srv.ConnectOnStartup {
					srv.ConnectOnStartup = startup
					what = append(what, "connect")
				}
				if f.Changed("tool-timeout") && config.Duration(timeout) != srv.ToolTimeout {
					srv.ToolTimeout = config.Duration(timeout)
					what = append(what, "tool timeout")
				}
				for _, t := range disableT {
					if !slices.Contains(srv.DisabledTools, t) {
						srv.DisabledTools = append(srv.DisabledTools, t)
						what = append(what, "disabled "+t)
					}
				}
				for _, t := range enableT {
					if i := slices.Index(srv.DisabledTools, t); i >= 0 {
						srv.DisabledTools = slices.Delete(srv.DisabledTools, i, i+1)
						what = append(what, "enabled "+t)
					}
				}
				if token != "" {
					srv.Auth = config.Auth{Kind: config.AuthBearer, Token: token}
					what = append(what, "bearer token")
				}
				if len(what) == 0 {
					fmt.Fprintf(a.streams.Out, "%s: nothing changed (the settings already have these values)\n", id)
					return false, nil
				}
				return true, nil
			}, func() { fmt.Fprintf(a.streams.Out, "updated %s: %s\n", id, strings.Join(what, ", ")) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&url, "url", "", "new server URL")
	fl.StringVar(&name, "name", "", "new display name")
	fl.BoolVar(&lazy, "lazy", false, "connect on first use")
	fl.BoolVar(&startup, "startup", false, "connect at startup")
	fl.DurationVar(&timeout, "tool-timeout", 0, "tool call timeout, e.g. 5m (0: the default of 60s)")
	fl.StringArrayVar(&disableT, "disable-tool", nil, "switch a tool off (repeatable)")
	fl.StringArrayVar(&enableT, "enable-tool", nil, "switch a tool back on (repeatable)")
	bearer.register(cmd)
	return cmd
}
