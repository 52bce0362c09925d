// Package credflags holds the credential flags of "servers add" and
// "servers set": authentication (--auth, --bearer-env, --bearer-stdin,
// the OAuth client settings, --port) and custom headers (--header,
// --header-env, --header-stdin, --unset-header), and turns them into the
// local API's requests. Secrets never come from argv, where other users
// and shell history would see them, but from the environment or a line of
// stdin; a mistake is a usage error (exit.Usagef) that never echoes a
// value.
package credflags

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/ask"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/localapi"
)

// Input is where secrets come from: the environment, and lines of stdin
// read through the terminal, which is also where prompts and warnings go.
type Input struct {
	Env  func(key string) (string, bool)
	Term *ask.Terminal
}

// Auth is the authentication flags of servers add and set.
type Auth struct {
	kind        string
	oauth       bool // add's shorthand for --auth oauth
	bearerEnv   string
	bearerStdin bool
	clientID    string
	secretEnv   string
	scopes      []string
	port        portFlag
	cimd        string
	// Set marks servers set's flags: --auth replaces a stored section,
	// and --port alone changes only the redirect port.
	Set bool
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

// Register adds the flags to cmd.
func (f *Auth) Register(cmd *cobra.Command) {
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

// Change is the auth section the flags ask for server id (nil: none),
// its secrets read from in.
func (f *Auth) Change(in Input, id string) (*localapi.AuthChange, error) {
	kind := f.kind
	if f.oauth {
		if kind != "" && kind != "oauth" {
			return nil, exit.Usagef("--oauth and --auth %s: give one of them (they exclude each other)", kind)
		}
		kind = "oauth"
	}
	bearer := f.bearerEnv != "" || f.bearerStdin
	oauthFlags := f.clientID != "" || f.secretEnv != "" || len(f.scopes) > 0 || f.port.given || f.cimd != ""
	switch {
	case f.port.port < 0 || f.port.port > 65535:
		return nil, exit.Usagef("--port %d: give a TCP port, 1 to 65535, or default", f.port.port)
	case f.bearerEnv != "" && f.bearerStdin:
		return nil, exit.Usagef("give the bearer token with --bearer-env or --bearer-stdin, not both")
	case bearer && kind == "":
		kind = "bearer"
	case bearer && kind != "bearer":
		return nil, exit.Usagef("--bearer-env and --bearer-stdin give a bearer token; they exclude --auth %s", kind)
	case f.Set && f.PortOnly():
		// servers set ID --port P: the port alone (portOnly), the rest of
		// the stored auth section stays.
		return nil, nil
	case oauthFlags && kind != "oauth" && kind != "auto" && f.Set:
		return nil, exit.Usagef("--client-id, --client-secret-env, --scope and --client-metadata-url are OAuth settings; add --auth oauth, which replaces the server's whole auth section: give again each of them that should stay (--port alone changes only the redirect port)")
	case oauthFlags && kind != "oauth" && kind != "auto":
		return nil, exit.Usagef("--client-id, --client-secret-env, --scope, --port and --client-metadata-url are OAuth settings; add --auth oauth")
	}
	c := &localapi.AuthChange{Kind: config.AuthKind(kind), ClientID: f.clientID, Scopes: f.scopes, RedirectPort: f.port.port, ClientMetadataURL: f.cimd}
	switch kind {
	case "":
		return nil, nil
	case "none", "oauth", "auto":
	case "bearer":
		if !bearer {
			return nil, exit.Usagef("--auth bearer needs the token: --bearer-env VAR or --bearer-stdin")
		}
	default:
		return nil, exit.Usagef("--auth %q: want none, bearer, oauth or auto", kind)
	}
	var err error
	if bearer {
		c.Token, err = f.token(in, id)
	}
	if err == nil && f.secretEnv != "" {
		c.ClientSecret, err = in.envSecret("--client-secret-env", f.secretEnv, "the client secret")
	}
	return c, err
}

// PortOnly reports whether --port is the only auth flag given: servers
// set then changes the redirect port alone (UpdateServerRequest.
// RedirectPort) and keeps the client id, client secret, scopes and client
// metadata URL.
func (f *Auth) PortOnly() bool {
	return f.port.given && f.kind == "" && !f.oauth && f.bearerEnv == "" && !f.bearerStdin &&
		f.clientID == "" && f.secretEnv == "" && len(f.scopes) == 0 && f.cimd == ""
}

// token reads the bearer token from where the flags say.
func (f *Auth) token(in Input, id string) (string, error) {
	if f.bearerEnv != "" {
		return in.envSecret("--bearer-env", f.bearerEnv, "the bearer token")
	}
	if in.Term.Interactive() {
		fmt.Fprintf(in.Term.Err, "bearer token for %s (one line; it is echoed): ", id)
	}
	line, err := in.Term.Line()
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("--bearer-stdin: read the token: %w", err)
	}
	if line == "" {
		return "", errors.New("--bearer-stdin: stdin gave no token; pipe the token in, e.g. `printenv MY_TOKEN | remotemcp servers add ... --bearer-stdin`")
	}
	return line, nil
}

// envSecret reads a secret from the environment variable name.
func (in Input) envSecret(flag, name, what string) (string, error) {
	v, ok := in.Env(name)
	switch {
	case !ok:
		return "", fmt.Errorf("%s: environment variable %s is not set; export it with %s", flag, name, what)
	case strings.TrimSpace(v) == "":
		return "", fmt.Errorf("%s: environment variable %s is empty; it must hold %s", flag, name, what)
	}
	return strings.TrimSpace(v), nil
}

// Headers are the custom header flags of servers add and set (SPEC §9
// A2). Every header value is a secret to the store; --header takes one on
// the command line for values that are not (a tenant name), and warns,
// since argv is visible to other users of the machine and kept in shell
// history. --header-env and --header-stdin keep values off argv.
type Headers struct {
	plain []string // "Name: value"
	env   []string // "Name=VAR"
	stdin []string // "Name"
	unset []string // "Name" (set only)
}

// Register adds the flags to cmd; set adds servers set's --unset-header.
func (f *Headers) Register(cmd *cobra.Command, set bool) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.plain, "header", nil, "custom header 'Name: value' sent to the MCP endpoint (repeatable); the value is visible on the command line: use --header-env or --header-stdin for secrets")
	fl.StringArrayVar(&f.env, "header-env", nil, "custom header Name=VAR: the value is read from the environment variable VAR (repeatable)")
	fl.StringArrayVar(&f.stdin, "header-stdin", nil, "custom header Name: the value is read from one line of stdin (repeatable; after --bearer-stdin's line, in the order given)")
	if set {
		fl.StringArrayVar(&f.unset, "unset-header", nil, "remove a custom header by name (repeatable)")
	}
}

// Values reads the headers the flags give for server id, name → value,
// from in. Call it after the bearer token was read, so that --bearer-stdin reads the first line
// of stdin. No error shows a value: a malformed --header is not echoed,
// since without its ':' it may be all secret.
func (f *Headers) Values(in Input, id string) (map[string]string, error) {
	if len(f.plain)+len(f.env)+len(f.stdin) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	add := func(flag, name, value string) error {
		if name == "" {
			return exit.Usagef("%s: the header name is empty", flag)
		}
		if !headerToken(name) {
			// Not echoed: a name that is none may hold a pasted value.
			return exit.Usagef("%s: a header name is made of letters, digits and !#$%%&'*+-.^_`|~ only, with no spaces; give the name, then the value as the flag says", flag)
		}
		for k := range out {
			if strings.EqualFold(k, name) {
				return exit.Usagef("header %s is given twice (names ignore case); give it once", name)
			}
		}
		if slices.ContainsFunc(f.unset, func(u string) bool { return strings.EqualFold(strings.TrimSpace(u), name) }) {
			return exit.Usagef("header %s is both set and removed (--unset-header); give one", name)
		}
		out[name] = value
		return nil
	}
	for _, h := range f.plain {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return nil, exit.Usagef("--header wants 'Name: value', with a ':' after the name (for a secret use --header-env Name=VAR or --header-stdin Name)")
		}
		name = strings.TrimSpace(name)
		if err := add("--header", name, strings.TrimSpace(value)); err != nil {
			return nil, err
		}
		fmt.Fprintf(in.Term.Err, "warning: --header %s puts the value on the command line, where other users of this machine can see it (ps) and shell history keeps it; for a secret use --header-env %s=VAR or --header-stdin %s\n", name, name, name)
	}
	for _, h := range f.env {
		name, v, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(v) == "" {
			return nil, exit.Usagef("--header-env wants Name=VAR, the header's name and the environment variable holding its value")
		}
		name = strings.TrimSpace(name)
		if !headerToken(name) {
			return nil, add("--header-env", name, "") // the error, without the name
		}
		value, err := in.envSecret("--header-env "+name, strings.TrimSpace(v), "the value of header "+name)
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
			return nil, exit.Usagef("--header-stdin wants only the header's name (letters, digits and !#$%%&'*+-.^_`|~); its value is read from stdin")
		}
		if in.Term.Interactive() {
			fmt.Fprintf(in.Term.Err, "value of header %s for %s (one line; it is echoed): ", clitext.Cell(name), id)
		}
		line, err := in.Term.Line()
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

// Unset is the header names --unset-header gives, trimmed.
func (f *Headers) Unset() []string {
	var out []string
	for _, n := range f.unset {
		out = append(out, strings.TrimSpace(n))
	}
	return out
}

// RegisterOAuth adds servers add's --oauth, the same as --auth oauth.
func (f *Auth) RegisterOAuth(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.oauth, "oauth", false, "authenticate with OAuth 2.1 (the same as --auth oauth)")
}

// Port is the redirect port --port gives (0: the default).
func (f *Auth) Port() int { return f.port.port }
