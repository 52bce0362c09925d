package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/clitext"
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

// authFlags are the authentication flags of servers add and set.
type authFlags struct {
	kind        string
	oauth       bool // add's shorthand for --auth oauth
	bearerEnv   string
	bearerStdin bool
	clientID    string
	secretEnv   string
	scopes      []string
	port        portFlag
	cimd        string
	set         bool // servers set: --auth replaces a stored section
}

// portFlag is --port, the OAuth redirect port: 1-65535, or 0 or
// "default" for the default. given tells servers set's "--port 0" (reset)
// from no --port at all.
type portFlag struct {
	port  int
	given bool
}

func (p *portFlag) String() string { return strconv.Itoa(p.port) }
func (p *portFlag) Type() string   { return "port" }

// Set reads a number or "default"; change checks the number's range.
func (p *portFlag) Set(v string) error {
	v = strings.TrimSpace(v)
	n, err := strconv.Atoi(v)
	switch {
	case strings.EqualFold(v, "default"):
		n = 0
	case err != nil:
		return errors.New("want a TCP port, 1 to 65535, or default")
	}
	p.port, p.given = n, true
	return nil
}

func (f *authFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.kind, "auth", "", "authentication: none, bearer, oauth or auto (no auth until the server asks for OAuth)")
	fl.StringVar(&f.bearerEnv, "bearer-env", "", "read the bearer token from this environment variable (implies --auth bearer)")
	fl.BoolVar(&f.bearerStdin, "bearer-stdin", false, "read the bearer token from the first line of stdin (implies --auth bearer)")
	fl.StringVar(&f.clientID, "client-id", "", "pre-registered OAuth client id (default: dynamic client registration)")
	fl.StringVar(&f.secretEnv, "client-secret-env", "", "read the OAuth client secret from this environment variable")
	fl.StringArrayVar(&f.scopes, "scope", nil, "OAuth scope, used when the server names none (repeatable)")
	fl.Var(&f.port, "port", "OAuth redirect `PORT`: http://127.0.0.1:PORT/mcp-oauth (default: the daemon's settings page port, else 7717 when free; \"default\" or 0 goes back to that)")
	fl.StringVar(&f.cimd, "client-metadata-url", "", "https URL of a client ID metadata document, used as the client id where the authorization server supports it (CIMD)")
}

// change is the auth section the flags ask for (nil: none). Secrets never
// come from argv, where other users and shell history would see them.
func (f *authFlags) change(a *app, id string) (*localapi.AuthChange, error) {
	kind := f.kind
	if f.oauth {
		if kind != "" && kind != "oauth" {
			return nil, usageErrorf("--oauth and --auth %s exclude each other", kind)
		}
		kind = "oauth"
	}
	bearer := f.bearerEnv != "" || f.bearerStdin
	oauthFlags := f.clientID != "" || f.secretEnv != "" || len(f.scopes) > 0 || f.port.given || f.cimd != ""
	switch {
	case f.port.port < 0 || f.port.port > 65535:
		return nil, usageErrorf("--port %d: give a TCP port, 1 to 65535, or default", f.port.port)
	case f.bearerEnv != "" && f.bearerStdin:
		return nil, usageErrorf("give the bearer token with --bearer-env or --bearer-stdin, not both")
	case bearer && kind == "":
		kind = "bearer"
	case bearer && kind != "bearer":
		return nil, usageErrorf("--bearer-env and --bearer-stdin give a bearer token; they exclude --auth %s", kind)
	case f.set && f.portOnly():
		// servers set ID --port P: the port alone (portOnly), the rest of
		// the stored auth section stays.
		return nil, nil
	case oauthFlags && kind != "oauth" && kind != "auto" && f.set:
		return nil, usageErrorf("--client-id, --client-secret-env, --scope and --client-metadata-url are OAuth settings; add --auth oauth, which replaces the server's whole auth section: give again each of them that should stay (--port alone changes only the redirect port)")
	case oauthFlags && kind != "oauth" && kind != "auto":
		return nil, usageErrorf("--client-id, --client-secret-env, --scope, --port and --client-metadata-url are OAuth settings; add --auth oauth")
	}
	c := &localapi.AuthChange{Kind: config.AuthKind(kind), ClientID: f.clientID, Scopes: f.scopes, RedirectPort: f.port.port, ClientMetadataURL: f.cimd}
	switch kind {
	case "":
		return nil, nil
	case "none", "oauth", "auto":
	case "bearer":
		if !bearer {
			return nil, usageErrorf("--auth bearer needs the token: --bearer-env VAR or --bearer-stdin")
		}
	default:
		return nil, usageErrorf("--auth %q: want none, bearer, oauth or auto", kind)
	}
	var err error
	if bearer {
		c.Token, err = f.token(a, id)
	}
	if err == nil && f.secretEnv != "" {
		c.ClientSecret, err = envSecret(a, "--client-secret-env", f.secretEnv, "the client secret")
	}
	return c, err
}

// portOnly reports whether --port is the only auth flag given: servers
// set then changes the redirect port alone (UpdateServerRequest.
// RedirectPort) and keeps the client id, client secret, scopes and client
// metadata URL.
func (f *authFlags) portOnly() bool {
	return f.port.given && f.kind == "" && !f.oauth && f.bearerEnv == "" && !f.bearerStdin &&
		f.clientID == "" && f.secretEnv == "" && len(f.scopes) == 0 && f.cimd == ""
}

// token reads the bearer token from where the flags say.
func (f *authFlags) token(a *app, id string) (string, error) {
	if f.bearerEnv != "" {
		return envSecret(a, "--bearer-env", f.bearerEnv, "the bearer token")
	}
	if a.term.Interactive() {
		fmt.Fprintf(a.streams.Err, "bearer token for %s (one line; it is echoed): ", id)
	}
	line, err := a.term.Line()
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("--bearer-stdin: read the token: %w", err)
	}
	if line == "" {
		return "", errors.New("--bearer-stdin: stdin gave no token; pipe the token in, e.g. `printenv MY_TOKEN | remotemcp servers add ... --bearer-stdin`")
	}
	return line, nil
}

// envSecret reads a secret from the environment variable name.
func envSecret(a *app, flag, name, what string) (string, error) {
	v, ok := a.env(name)
	switch {
	case !ok:
		return "", fmt.Errorf("%s: environment variable %s is not set; export it with %s", flag, name, what)
	case strings.TrimSpace(v) == "":
		return "", fmt.Errorf("%s: environment variable %s is empty; it must hold %s", flag, name, what)
	}
	return strings.TrimSpace(v), nil
}

// headerFlags are the custom header flags of servers add and set (SPEC §9
// A2). Every header value is a secret to the store; --header takes one on
// the command line for values that are not (a tenant name), and warns,
// since argv is visible to other users of the machine and kept in shell
// history. --header-env and --header-stdin keep values off argv.
type headerFlags struct {
	plain []string // "Name: value"
	env   []string // "Name=VAR"
	stdin []string // "Name"
	unset []string // "Name" (set only)
}

func (f *headerFlags) register(cmd *cobra.Command, set bool) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.plain, "header", nil, "custom header 'Name: value' sent to the MCP endpoint (repeatable); the value is visible on the command line: use --header-env or --header-stdin for secrets")
	fl.StringArrayVar(&f.env, "header-env", nil, "custom header Name=VAR: the value is read from the environment variable VAR (repeatable)")
	fl.StringArrayVar(&f.stdin, "header-stdin", nil, "custom header Name: the value is read from one line of stdin (repeatable; after --bearer-stdin's line, in the order given)")
	if set {
		fl.StringArrayVar(&f.unset, "unset-header", nil, "remove a custom header by name (repeatable)")
	}
}

// values reads the headers the flags give, name → value. Call it after
// the bearer token was read, so that --bearer-stdin reads the first line
// of stdin. No error shows a value: a malformed --header is not echoed,
// since without its ':' it may be all secret.
func (f *headerFlags) values(a *app, id string) (map[string]string, error) {
	if len(f.plain)+len(f.env)+len(f.stdin) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	add := func(flag, name, value string) error {
		if name == "" {
			return usageErrorf("%s: the header name is empty", flag)
		}
		if !headerToken(name) {
			// Not echoed: a name that is none may hold a pasted value.
			return usageErrorf("%s: a header name is made of letters, digits and !#$%%&'*+-.^_`|~ only, with no spaces; give the name, then the value as the flag says", flag)
		}
		for k := range out {
			if strings.EqualFold(k, name) {
				return usageErrorf("header %s is given twice (names ignore case); give it once", name)
			}
		}
		if slices.ContainsFunc(f.unset, func(u string) bool { return strings.EqualFold(strings.TrimSpace(u), name) }) {
			return usageErrorf("header %s is both set and removed (--unset-header); give one", name)
		}
		out[name] = value
		return nil
	}
	for _, h := range f.plain {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return nil, usageErrorf("--header wants 'Name: value', with a ':' after the name (for a secret use --header-env Name=VAR or --header-stdin Name)")
		}
		name = strings.TrimSpace(name)
		if err := add("--header", name, strings.TrimSpace(value)); err != nil {
			return nil, err
		}
		fmt.Fprintf(a.streams.Err, "warning: --header %s puts the value on the command line, where other users of this machine can see it (ps) and shell history keeps it; for a secret use --header-env %s=VAR or --header-stdin %s\n", name, name, name)
	}
	for _, h := range f.env {
		name, v, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(v) == "" {
			return nil, usageErrorf("--header-env wants Name=VAR, the header's name and the environment variable holding its value")
		}
		name = strings.TrimSpace(name)
		if !headerToken(name) {
			return nil, add("--header-env", name, "") // the error, without the name
		}
		value, err := envSecret(a, "--header-env "+name, strings.TrimSpace(v), "the value of header "+name)
		if err != nil {
			return nil, err
		}
		if err := add("--header-env", name, value); err != nil {
			return nil, err
		}
	}
	for _, name := range f.stdin {
		name = strings.TrimSpace(name)
		if !headerToken(name) {
			return nil, usageErrorf("--header-stdin wants only the header's name (letters, digits and !#$%%&'*+-.^_`|~); its value is read from stdin")
		}
		if a.term.Interactive() {
			fmt.Fprintf(a.streams.Err, "value of header %s for %s (one line; it is echoed): ", clitext.Cell(name), id)
		}
		line, err := a.term.Line()
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("--header-stdin %s: read the value: %w", name, err)
		}
		if line == "" {
			return nil, fmt.Errorf("--header-stdin %s: stdin gave no value; pipe it in, e.g. `printenv MY_KEY | remotemcp servers ... --header-stdin %s`", name, name)
		}
		if err := add("--header-stdin", name, line); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// headerToken reports whether name is a header name (an RFC 9110 token);
// the config's validation says the same, but the flags check first so
// that what is not a name is never echoed.
func headerToken(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return name != ""
}

// checkServerURL checks a URL given on the command line for server id.
func checkServerURL(id, url string) error {
	err := config.ValidateURL(url)
	var fe *config.FieldError
	if errors.As(err, &fe) {
		return &config.FieldError{ServerID: id, Field: fe.Field, Problem: fe.Problem}
	}
	return err
}

// newServersAddCmd is "servers add ID URL".
//
// Long: one cobra command: its help, its flags, their checks in order
// (id, URL, auth, headers, approval), the one request built from them
// and the lines printed for its answer, read top to bottom.
func newServersAddCmd(a *app) *cobra.Command {
	var (
		name             string
		auth             authFlags
		headers          headerFlags
		lazy, disabledF  bool
		protocol, logLvl string
		approval         string
		trusted          bool
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
			if err := checkServerURL(id, url); err != nil {
				return err
			}
			ac, err := auth.change(a, id)
			if err != nil {
				return err
			}
			hv, err := headers.values(a, id)
			if err != nil {
				return err
			}
			ap, err := approvalFlag(approval, false)
			if err != nil {
				return err
			}
			req := localapi.AddServerRequest{ID: id, Name: name, URL: url, Enabled: new(!disabledF), ConnectOnStartup: new(!lazy), By: byCLI,
				Headers: hv, ProtocolVersion: protocol, LogLevel: logLvl, Approval: ap, Trusted: trusted}
			if ac != nil {
				req.Auth, req.Token, req.ClientID, req.ClientSecret, req.Scopes, req.RedirectPort = ac.Kind, ac.Token, ac.ClientID, ac.ClientSecret, ac.Scopes, ac.RedirectPort
				req.ClientMetadataURL = ac.ClientMetadataURL
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
	auth.register(cmd)
	f.BoolVar(&auth.oauth, "oauth", false, "authenticate with OAuth 2.1 (the same as --auth oauth)")
	f.BoolVar(&lazy, "lazy", false, "connect on first use instead of at startup")
	f.BoolVar(&disabledF, "disabled", false, "add the server switched off")
	headers.register(cmd, false)
	f.StringVar(&protocol, "protocol-version", "", "pin the MCP protocol revision: "+strings.Join(config.ProtocolVersions, ", ")+` (default: negotiate)`)
	f.StringVar(&logLvl, "log-level", "", "level of the server's log messages: "+strings.Join(config.LogLevels, ", ")+" (default warning)")
	f.StringVar(&approval, "approval", "", `who approves calls made through "remotemcp mcp": host (the MCP host, the default) or ask (remotemcp asks you first)`)
	f.BoolVar(&trusted, "trusted", false, "trust the server: pass its tool annotations (readOnlyHint …) to MCP hosts")
	return cmd
}

// approvalFlag reads --approval: host or ask, and with reset also
// "default" (host).
func approvalFlag(v string, reset bool) (config.Approval, error) {
	switch a := config.Approval(strings.ToLower(strings.TrimSpace(v))); {
	case a == "":
		if reset {
			return "", usageErrorf("--approval is empty; give host or ask")
		}
		return "", nil
	case slices.Contains(config.Approvals, a):
		return a, nil
	case reset && a == "default":
		return config.ApprovalHost, nil
	}
	return "", usageErrorf("--approval %q: give host (the MCP host approves, the default) or ask (remotemcp asks you before every call)", clitext.Cell(v))
}

func newServersListCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
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
	}, "print a JSON array")
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
	return &cobra.Command{
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
		auth               authFlags
		headers            headerFlags
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
				return usageErrorf("--lazy and --startup exclude each other")
			}
			if trusted && untrusted {
				return usageErrorf("--trusted and --untrusted exclude each other")
			}
			for _, t := range disableT {
				if slices.Contains(enableT, t) {
					return usageErrorf("tool %q is given to both --disable-tool and --enable-tool", t)
				}
			}
			for _, t := range pinT {
				if slices.Contains(unpinT, t) {
					return usageErrorf("tool %q is given to both --pin-tool and --unpin-tool", t)
				}
			}
			names := []string{"url", "name", "lazy", "startup", "tool-timeout", "limit", "disable-tool", "enable-tool", "pin-tool", "unpin-tool", "idle-timeout", "auth", "bearer-env", "bearer-stdin", "client-id", "client-secret-env", "scope", "port",
				"header", "header-env", "header-stdin", "unset-header", "protocol-version", "log-level", "approval", "trusted", "untrusted"}
			if !slices.ContainsFunc(names, f.Changed) {
				return usageErrorf("nothing to change; give at least one of --%s", strings.Join(names, ", --"))
			}
			req := localapi.UpdateServerRequest{DisableTools: disableT, EnableTools: enableT, PinTools: pinT, UnpinTools: unpinT}
			if f.Changed("url") {
				if err := checkServerURL(id, url); err != nil {
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
				v, err := toolTimeoutFlag(toolTimeout)
				if err != nil {
					return err
				}
				req.ToolTimeout = &v
			}
			if f.Changed("idle-timeout") {
				v, err := idleTimeoutFlag(idleTimeout)
				if err != nil {
					return err
				}
				req.IdleTimeout = &v
			}
			var probe config.Limits
			for _, kv := range limits {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || strings.TrimSpace(k) == "" {
					return usageErrorf("--limit %q: write NAME=VALUE, e.g. --limit maxMessageBytes=32MiB; the limits are %s", kv, strings.Join(config.LimitNames(), ", "))
				}
				// A bad value is a mistake on the command line (exit 2),
				// caught here rather than as the engine's bad request.
				if err := probe.Set(strings.TrimSpace(k), v); err != nil {
					return usageErrorf("--limit %s: %v", clitext.Cell(kv), err)
				}
				if req.Limits == nil {
					req.Limits = map[string]string{}
				}
				req.Limits[strings.TrimSpace(k)] = v
			}
			ac, err := auth.change(a, id)
			if err != nil {
				return err
			}
			req.Auth, req.RebindBearer = ac, ac != nil && ac.Token != ""
			if auth.portOnly() {
				req.RedirectPort = &auth.port.port
			}
			if req.Headers, err = headers.values(a, id); err != nil {
				return err
			}
			for _, n := range headers.unset {
				req.UnsetHeaders = append(req.UnsetHeaders, strings.TrimSpace(n))
			}
			if f.Changed("protocol-version") {
				req.ProtocolVersion = &protocol
			}
			if f.Changed("log-level") {
				req.LogLevel = &logLvl
			}
			if f.Changed("approval") {
				ap, err := approvalFlag(approval, true)
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
					return usageErrorf("--port is an OAuth setting and server %s uses %s auth; switch it to OAuth with \"remotemcp servers set %s --auth oauth --port %s\"", id, before.Auth.Kind, id, auth.port.String())
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
	auth.set = true
	auth.register(cmd)
	headers.register(cmd, true)
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

// The words the timeout flags take besides a duration. In both flags 0
// means what "never" means; "default" resets to the built-in value.
const (
	flagDefault = "default"
	flagNever   = "never"
)

// toolTimeoutFlag checks --tool-timeout and returns the engine's
// toolTimeout: a Go duration string, or "" for the default (60s). A call
// always has a time limit, so never (and 0, which means never in
// --idle-timeout) is a usage error rather than a silent default.
func toolTimeoutFlag(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == flagDefault {
		return "", nil
	}
	d, err := parseFlagDuration(v)
	switch {
	case v == flagNever || err == nil && d == 0:
		return "", usageErrorf("--tool-timeout %s: a tool call always has a time limit; give a duration such as 5m or 90s, or default (60s)", clitext.Cell(v))
	case err != nil || d < 0 || d > config.MaxToolTimeout:
		return "", usageErrorf("--tool-timeout %q: give a duration such as 5m or 90s (at most %s), or default (60s)", clitext.Cell(v), config.MaxToolTimeout)
	}
	return d.String(), nil
}

// idleTimeoutFlag checks --idle-timeout and returns the engine's
// idleTimeout: a Go duration string ("0s" is never) or "default".
func idleTimeoutFlag(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch v {
	case flagDefault:
		return flagDefault, nil
	case flagNever:
		return "0s", nil
	}
	d, err := parseFlagDuration(v)
	if err != nil || d < 0 || d > config.MaxIdleTimeout {
		return "", usageErrorf("--idle-timeout %q: give a duration such as 30m (at most %s), never (or 0), or default (10m)", clitext.Cell(v), config.MaxIdleTimeout)
	}
	return d.String(), nil
}

// parseFlagDuration is time.ParseDuration that also takes a bare 0.
func parseFlagDuration(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	return time.ParseDuration(v)
}
