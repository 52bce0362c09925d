package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/internal/admin"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/cliflag"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/credflags"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

// newServersCmd is `remotemcp servers …`: the stored server list.
func newServersCmd(a *app) *cobra.Command {
	cmd := group("servers", "Add, import, list, show, change and remove servers", "",
		newServersAddCmd(a), newServersImportCmd(a), newServersListCmd(a), newServersShowCmd(a),
		newServersRmCmd(a), newServersEnableCmd(a, true), newServersEnableCmd(a, false), newServersSetCmd(a))
	cmd.Aliases = []string{"server"}
	return cmd
}

// byCLI names the person at the command line in grant records.
const byCLI = "user: cli"

// secrets is where the credential flags read secrets: this invocation's
// environment and stdin.
func (a *app) secrets() credflags.Input { return credflags.Input{Env: a.env, Term: a.term} }

// newServersAddCmd is "servers add ID URL".
//
// Long: one cobra command: its help, its flags, their checks in order
// (id, URL, auth, headers, approval), the one request built from them
// and the lines printed for its answer, read top to bottom.
func newServersAddCmd(a *app) *cobra.Command {
	var (
		name             string
		auth             credflags.Auth
		headers          credflags.Headers
		lazy, disabledF  bool
		protocol, logLvl string
		approval         string
		trusted, shared  bool
	)
	cmd := &cobra.Command{
		Use:   "add ID URL",
		Short: "Add a server (and allow its origin)",
		Long: `Add a remote MCP server under ID (lower-case letters, digits, '-', '_'). The
URL is https://, or http:// on a loopback host. Adding a server allows
remotemcp to contact its origin; the command says so. Authentication: none
by default; --bearer-env VAR or --bearer-stdin for a static token; --auth
oauth (or --oauth) for OAuth 2.1; --auth auto switches to OAuth when the
server asks for it. Custom headers (an API key, a tenant) go to the MCP
endpoint only, their values stored sealed: --header-env Name=VAR or
--header-stdin Name for secrets, --header 'Name: value' for values that
may show on the command line. Authorization, Host, Mcp-Session-Id and the
other headers the transport sets are refused. --protocol-version pins the
MCP revision (` + strings.Join(config.ProtocolVersions, ", ") + `); --log-level sets the
level of the server's log messages (default warning). For "remotemcp mcp":
--approval ask makes remotemcp ask you before every call of the server's
tools (default host: the MCP host's approval is the approval), and
--trusted passes the server's tool annotations (readOnlyHint …) to hosts.`,
		Example: `  remotemcp servers add docs https://mcp.example.com/mcp
  MY_TOKEN=... remotemcp servers add gh https://api.example.com/mcp --bearer-env MY_TOKEN
  printenv MY_TOKEN | remotemcp servers add gh https://api.example.com/mcp --bearer-stdin
  API_KEY=... remotemcp servers add search https://search.example.com/mcp --header-env X-Api-Key=API_KEY --header 'X-Tenant: acme'`,
		Args: argsExactly(2, "ID URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, url := args[0], args[1]
			if err := config.ValidateID(id); err != nil {
				return err
			}
			if err := cliflag.ServerURL(id, url); err != nil {
				return err
			}
			ac, err := auth.Change(a.secrets(), id)
			if err != nil {
				return err
			}
			hv, err := headers.Values(a.secrets(), id)
			if err != nil {
				return err
			}
			ap, err := cliflag.Approval(approval, false)
			if err != nil {
				return err
			}
			req := localapi.AddServerRequest{ID: id, Name: name, URL: url, Enabled: new(!disabledF), ConnectOnStartup: new(!lazy), By: byCLI,
				Headers: hv, ProtocolVersion: protocol, LogLevel: logLvl, Approval: ap, Trusted: trusted}
			if ac != nil {
				req.Auth, req.Token, req.ClientID, req.ClientSecret, req.Scopes, req.RedirectPort = ac.Kind, ac.Token, ac.ClientID, ac.ClientSecret, ac.Scopes, ac.RedirectPort
				req.ClientMetadataURL = ac.ClientMetadataURL
			}
			if shared {
				return a.admin(cmd.Context(), "--shared", func(c *localapi.Client, o admin.Out) error { return admin.AddShared(cmd.Context(), c, o, req) })
			}
			return a.do(func(ctx context.Context, e Engine, _ []string) error {
				res, err := e.AddServer(ctx, req)
				if err != nil {
					return err
				}
				render.Added(a.streams.Out, res)
				return nil
			})(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "display name (default: the ID)")
	auth.Register(cmd)
	auth.RegisterOAuth(cmd)
	f.BoolVar(&lazy, "lazy", false, "connect on first use instead of at startup")
	f.BoolVar(&disabledF, "disabled", false, "add the server switched off")
	headers.Register(cmd, false)
	f.StringVar(&protocol, "protocol-version", "", "pin the MCP protocol revision: "+strings.Join(config.ProtocolVersions, ", ")+` (default: negotiate)`)
	f.StringVar(&logLvl, "log-level", "", "level of the server's log messages: "+strings.Join(config.LogLevels, ", ")+" (default warning)")
	f.StringVar(&approval, "approval", "", `who approves calls made through "remotemcp mcp": host (the MCP host, the default) or ask (remotemcp asks you first)`)
	f.BoolVar(&trusted, "trusted", false, "trust the server: pass its tool annotations (readOnlyHint …) to MCP hosts")
	f.BoolVar(&shared, "shared", false, "on a gateway (admins, without --user): share the server with everyone; each person signs in with their own account")
	return cmd
}

func newServersListCmd(a *app) *cobra.Command {
	return withShared(a, a.jsonFlag(&cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the configured servers with their state (see also \"status\")",
		Long: `List the configured servers. --json prints an array of the server objects
"status --json" and "servers show --json" print (id, name, url, origin,
enabled, connectOnStartup, auth, disabledTools, revision, state, reason,
toolCount, originGranted, pending …).`,
		Args: argsExactly(0, ""),
		RunE: a.do(func(ctx context.Context, e Engine, _ []string) error {
			servers, err := e.Servers(ctx)
			if err != nil {
				return err
			}
			return a.printServers(servers)
		}),
	}, "print a JSON array"), "list the servers shared with everyone (admins)",
		func(ctx context.Context, c *localapi.Client, o admin.Out, _ []string) error {
			return admin.ListShared(ctx, c, o)
		})
}

func newServersShowCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
		Use:   "show ID",
		Short: "Show one server's configuration and state (secrets are never shown)",
		Args:  argsExactly(1, "ID"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			s, err := e.Server(ctx, args[0])
			if err != nil {
				return err
			}
			return a.printOne(s, func(w io.Writer) error {
				reason, cut := explain.ReasonText(*s, a.verbose)
				if err := render.ServerDetails(w, s, reason); err != nil {
					return err
				}
				if cut {
					fmt.Fprintln(a.streams.Err, render.MoreReason)
				}
				return nil
			})
		}),
	}, "print the server as JSON")
}

func newServersRmCmd(a *app) *cobra.Command {
	return withShared(a, &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a server and its stored secrets",
		Args:    argsExactly(1, "ID"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			if err := e.RemoveServer(ctx, args[0]); err != nil {
				return err
			}
			_, err := fmt.Fprintf(a.streams.Out, "removed %s\n", args[0])
			return err
		}),
	}, "stop sharing the server: every person's copy goes (admins)",
		func(ctx context.Context, c *localapi.Client, o admin.Out, args []string) error {
			return admin.RemoveShared(ctx, c, o, args[0])
		})
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
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			id := args[0]
			s, err := e.Server(ctx, id)
			if err != nil {
				return err
			}
			if s.Enabled == on {
				fmt.Fprintf(a.streams.Out, "%s is already %sd\n", id, verb)
				return nil
			}
			if _, err := e.SetEnabled(ctx, id, on); err != nil {
				return err
			}
			fmt.Fprintf(a.streams.Out, "%sd %s\n", verb, id)
			return nil
		}),
	}
}

// newServersSetCmd is "servers set ID".
//
// Long: one cobra command: its help, its 27 flags, the checks between them
// (flags that exclude each other, nothing to change), the one partial
// UpdateServerRequest built from the flags given, and the summary of what
// changed, which compares the server before and after the same request;
// split up, each piece would need the whole flag set passed along.
func newServersSetCmd(a *app) *cobra.Command {
	var (
		url, name          string
		lazy, startup      bool
		toolTimeout        string
		idleTimeout        string
		disableT, enableT  []string
		pinT, unpinT       []string
		limits             []string
		auth               credflags.Auth
		headers            credflags.Headers
		protocol, logLvl   string
		approval           string
		trusted, untrusted bool
	)
	cmd := &cobra.Command{
		Use:   "set ID",
		Short: "Change a server's settings",
		Long: `Change a server's settings; flags not given stay as they are, and edits
from elsewhere are never lost. --auth none|bearer|oauth|auto replaces the
authentication, with --bearer-env/--bearer-stdin (alone they imply bearer),
or --client-id, --client-secret-env, --scope, --client-metadata-url and
--port: the settings not given again are dropped. --port alone changes only
an OAuth server's redirect port (http://127.0.0.1:PORT/mcp-oauth; "default"
or 0: back to the default) and keeps its client id, client secret, scopes
and client metadata URL. A bearer server moved to another resource needs
its token again. --disable-tool warns when the server is known not to
have the tool. --limit NAME=VALUE raises or lowers one of the limits
that bound what the server may send (sizes like 16MiB, counts,
listTimeout like 2m; "default" resets one): ` + strings.Join(config.LimitNames(), ", ") + `.
--header-env Name=VAR, --header-stdin Name and --header 'Name: value' set
a custom header (replacing one of the same name), --unset-header Name
removes one; the others stay. Header values are stored sealed and, like a
bearer token, do not follow a server moved to another resource: give
them again with the new --url, or remove them. --protocol-version and
--log-level take "default" to reset. --approval host|ask says who approves
calls made through "remotemcp mcp" (ask: remotemcp asks you first);
--trusted / --untrusted say whether the server's tool annotations reach
MCP hosts.`,
		Example: `  remotemcp servers set docs --url https://mcp.example.com/v2/mcp --bearer-env DOCS_TOKEN
  remotemcp servers set docs --lazy --tool-timeout 5m --disable-tool delete_page
  remotemcp servers set wiki --auth oauth --scope read
  remotemcp servers set wiki --port 7790
  remotemcp servers set big --limit maxMessageBytes=32MiB --limit listTimeout=2m
  printenv NEW_KEY | remotemcp servers set search --header-stdin X-Api-Key --unset-header X-Old
  remotemcp servers set legacy --protocol-version 2025-03-26 --log-level info`,
		Args: argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, f := args[0], cmd.Flags()
			if lazy && startup {
				return exit.Usagef("--lazy and --startup exclude each other")
			}
			if trusted && untrusted {
				return exit.Usagef("--trusted and --untrusted exclude each other")
			}
			for _, t := range disableT {
				if slices.Contains(enableT, t) {
					return exit.Usagef("tool %q is given to both --disable-tool and --enable-tool", t)
				}
			}
			for _, t := range pinT {
				if slices.Contains(unpinT, t) {
					return exit.Usagef("tool %q is given to both --pin-tool and --unpin-tool", t)
				}
			}
			names := []string{"url", "name", "lazy", "startup", "tool-timeout", "limit", "disable-tool", "enable-tool", "pin-tool", "unpin-tool", "idle-timeout", "auth", "bearer-env", "bearer-stdin", "client-id", "client-secret-env", "scope", "port",
				"header", "header-env", "header-stdin", "unset-header", "protocol-version", "log-level", "approval", "trusted", "untrusted"}
			if !slices.ContainsFunc(names, f.Changed) {
				return exit.Usagef("nothing to change; give at least one of --%s", strings.Join(names, ", --"))
			}
			req := localapi.UpdateServerRequest{DisableTools: disableT, EnableTools: enableT, PinTools: pinT, UnpinTools: unpinT}
			if f.Changed("url") {
				if err := cliflag.ServerURL(id, url); err != nil {
					return err
				}
				req.URL = &url
			}
			if f.Changed("name") {
				req.Name = &name
			}
			if lazy || startup {
				req.ConnectOnStartup = &startup
			}
			if f.Changed("tool-timeout") {
				v, err := cliflag.ToolTimeout(toolTimeout)
				if err != nil {
					return err
				}
				req.ToolTimeout = &v
			}
			if f.Changed("idle-timeout") {
				v, err := cliflag.IdleTimeout(idleTimeout)
				if err != nil {
					return err
				}
				req.IdleTimeout = &v
			}
			var err error
			if req.Limits, err = cliflag.Limits(limits); err != nil {
				return err
			}
			ac, err := auth.Change(a.secrets(), id)
			if err != nil {
				return err
			}
			req.Auth, req.RebindBearer = ac, ac != nil && ac.Token != ""
			if auth.PortOnly() {
				req.RedirectPort = new(auth.Port())
			}
			if req.Headers, err = headers.Values(a.secrets(), id); err != nil {
				return err
			}
			req.UnsetHeaders = headers.Unset()
			if f.Changed("protocol-version") {
				req.ProtocolVersion = &protocol
			}
			if f.Changed("log-level") {
				req.LogLevel = &logLvl
			}
			if f.Changed("approval") {
				ap, err := cliflag.Approval(approval, true)
				if err != nil {
					return err
				}
				req.Approval = &ap
			}
			if trusted || untrusted {
				req.Trusted = &trusted
			}
			return a.do(func(ctx context.Context, e Engine, _ []string) error {
				before, err := e.Server(ctx, id)
				if err != nil {
					return err
				}
				if req.RedirectPort != nil && !before.Auth.Kind.OAuthCapable() {
					return exit.Usagef("--port is an OAuth setting and server %s uses %s auth; switch it to OAuth with \"remotemcp servers set %s --auth oauth --port %d\"", id, before.Auth.Kind, id, auth.Port())
				}
				res, err := e.UpdateServer(ctx, id, req)
				headerConflict := false
				if le, ok := localapi.AsError(err); ok && le.Code == localapi.CodeConflict && le.Field == "headers" {
					headerConflict = true
				}
				switch {
				case headerConflict && req.URL != nil:
					return fmt.Errorf("%w; re-supply the header values: \"remotemcp servers set %s --url %s --header-env NAME=VAR\" (or --header-stdin NAME) for each, or remove them with --unset-header NAME", err, id, url)
				case localapi.HasCode(err, localapi.CodeConflict) && req.URL != nil && before.Auth.Kind == "bearer" && ac == nil:
					return fmt.Errorf("%w; re-supply the token: \"remotemcp servers set %s --url %s --bearer-env VAR\" (or --bearer-stdin)", err, id, url)
				}
				if err != nil {
					return err
				}
				for _, w := range res.Warnings {
					fmt.Fprintf(a.streams.Err, "warning: %s\n", clitext.Cell(w))
				}
				render.Updated(a.streams.Out, id, *before, res.Server, req)
				return nil
			})(cmd, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&url, "url", "", "new server URL")
	fl.StringVar(&name, "name", "", "new display name")
	fl.BoolVar(&lazy, "lazy", false, "connect on first use")
	fl.BoolVar(&startup, "startup", false, "connect at startup")
	fl.StringVar(&toolTimeout, "tool-timeout", "", `time limit of each tool call, e.g. 5m or 90s; "default": 60s (a call always has one: "never" and 0 are refused)`)
	fl.StringVar(&idleTimeout, "idle-timeout", "", `close the session after this long unused, keeping the catalog (state idle; the next use reconnects), e.g. 30m; "never" (or 0): never; "default": 10m`)
	fl.StringArrayVar(&limits, "limit", nil, "set a limit, NAME=VALUE (repeatable; VALUE \"default\" resets it)")
	fl.StringArrayVar(&disableT, "disable-tool", nil, "switch a tool off (repeatable)")
	fl.StringArrayVar(&enableT, "enable-tool", nil, "switch a tool back on (repeatable)")
	fl.StringArrayVar(&pinT, "pin-tool", nil, `offer a tool to MCP hosts even in tool-search mode ("remotemcp mcp --tools search"; repeatable)`)
	fl.StringArrayVar(&unpinT, "unpin-tool", nil, "stop pinning a tool (repeatable)")
	auth.Set = true
	auth.Register(cmd)
	headers.Register(cmd, true)
	fl.StringVar(&protocol, "protocol-version", "", "pin the MCP protocol revision: "+strings.Join(config.ProtocolVersions, ", ")+` ("default": negotiate)`)
	fl.StringVar(&logLvl, "log-level", "", "level of the server's log messages: "+strings.Join(config.LogLevels, ", ")+` ("default": warning)`)
	fl.StringVar(&approval, "approval", "", `who approves calls made through "remotemcp mcp": host (the MCP host) or ask (remotemcp asks you first); "default": host`)
	fl.BoolVar(&trusted, "trusted", false, "trust the server: pass its tool annotations (readOnlyHint …) to MCP hosts")
	fl.BoolVar(&untrusted, "untrusted", false, "stop trusting the server: drop its tool annotations")
	return cmd
}

// maxImportSize bounds an imported document; real configs are a few KiB.
const maxImportSize = 16 << 20

func newServersImportCmd(a *app) *cobra.Command {
	var update bool
	cmd := &cobra.Command{
		Use:   "import FILE|-",
		Short: "Import servers from a Claude Code, Cursor, VS Code or Windsurf config",
		Long: `Import the remote servers of a Claude Code, Claude Desktop, Cursor, Windsurf
or VS Code config, or remotemcp's own list ("-" reads stdin). ${VAR} is
expanded from this environment. Each server's origin is allowed, as adding
does (the settings page's import too), and listed. Every entry is reported:
added, updated, unchanged, conflict (--update replaces it) or skipped, with
the reason. Exit status 1 when a conflict is left or nothing was imported.`,
		Example: `  remotemcp servers import ~/.claude.json
  remotemcp servers import .cursor/mcp.json --update
  pbpaste | remotemcp servers import -`,
		Args: argsExactly(1, "FILE|-"),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(a, args[0])
			if err != nil {
				return err
			}
			req := localapi.ImportRequest{Config: string(data), Env: referencedEnv(a, string(data)), Update: update, By: byCLI}
			return a.do(func(ctx context.Context, e Engine, _ []string) error {
				res, err := e.Import(ctx, req)
				if err != nil {
					return err
				}
				render.Import(a.streams.Out, a.streams.Err, res)
				return importError(res, update)
			})(cmd, args)
		},
	}
	cmd.Flags().BoolVar(&update, "update", false, "replace servers whose id exists with another config")
	return cmd
}

// importError is the failure of an import that left a conflict (without
// --update) or imported nothing.
func importError(res *localapi.ImportResult, update bool) error {
	switch {
	case len(res.Conflicts) > 0 && !update:
		return fmt.Errorf("%s not changed: the id exists with another config; run again with --update to replace them",
			clitext.Plural(len(res.Conflicts), "conflicting entry was", "conflicting entries were"))
	case len(res.Added)+len(res.Updated)+len(res.Unchanged) == 0 && len(res.Skipped) > 0:
		return errors.New("nothing was imported")
	}
	return nil
}

// envRef matches ${VAR}, ${VAR:-default} and ${env:VAR}.
var envRef = regexp.MustCompile(`\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)`)

// referencedEnv is the variables doc refers to (the engine never expands
// from its own environment).
func referencedEnv(a *app, doc string) map[string]string {
	env := map[string]string{}
	for _, m := range envRef.FindAllStringSubmatch(doc, -1) {
		if v, ok := a.env(m[1]); ok {
			env[m[1]] = v
		}
	}
	return env
}

// readInput reads a file, or stdin for "-", up to maxImportSize.
func readInput(a *app, name string) ([]byte, error) {
	var r io.Reader = a.streams.In
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		defer f.Close()
		r = f
	} else {
		name = "stdin"
	}
	data, err := io.ReadAll(io.LimitReader(r, maxImportSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxImportSize {
		return nil, fmt.Errorf("%s is larger than %d MiB; that is not an MCP client config", name, maxImportSize>>20)
	}
	return data, nil
}
