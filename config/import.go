package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ImportResult is what Import found: servers ready to add, and the entries
// left out with the reason for each, in document order.
type ImportResult struct {
	Servers []Server  // valid, with unique ids, ready to add
	Skipped []Skipped // entries not imported
}

// Skipped is an entry of an imported document that was not imported.
type Skipped struct {
	Name   string // the entry's name in the source document
	Reason string // why, and what to do instead where that helps
}

// Reasons shared by several paths, kept verbatim so the UI and tests can
// recognise them.
const (
	reasonSSE   = "legacy SSE transport is not supported: remotemcp speaks Streamable HTTP only" // R1.2
	reasonStdio = "local stdio servers are out of scope: remotemcp is for remote servers"        // R1.1
)

// Import reads the MCP server configuration of another client (R2.1) and
// converts what remotemcp can use:
//
//   - Claude Code, Claude Desktop, Cursor, Windsurf, Cline:
//     {"mcpServers": {name: {...}}}; Windsurf's "serverUrl" and Gemini CLI's
//     "httpUrl" are read like "url";
//   - VS Code: {"servers": {name: {...}}} and settings.json's
//     {"mcp": {"servers": {...}}}; Zed's {"context_servers": {...}};
//   - a bare {name: {...}} map, as pasted from one of the above.
//
// Comments and trailing commas (JSONC, as VS Code writes) are accepted.
//
// An entry with type "http" / "streamable-http" / "streamableHttp", or with a
// url and no command, becomes a server. Type "sse", an untyped URL ending in
// /sse, "command" entries and anything else that remotemcp cannot represent
// faithfully are reported in Skipped rather than imported half-right. The one
// command that is converted is mcp-remote (`npx [-y] mcp-remote[@v] URL
// [--header "Name: ${VALUE}"]...`), a local proxy for exactly the kind of
// remote server remotemcp talks to directly.
//
// ${VAR}, ${VAR:-default} and ${env:VAR} in URLs, headers and OAuth settings
// are expanded with env (nil: no variables are set); for mcp-remote entries
// the entry's own "env" is consulted first, as the proxy process would see
// it. An unset variable without a default skips the entry, naming it.
//
// An "Authorization: Bearer X" header becomes bearer auth; any other
// header (an API key, say) is kept in Server.Headers, where the store
// seals its value (SPEC §9 A2) and names the transport owns are refused;
// "oauth" (Claude Code, VS Code) or "auth" (Cursor) objects become oauth
// auth with their client id, secret, scopes and callback port. An entry with only a URL
// becomes auth kind "auto" (SPEC §9 A2): no credentials until the server
// answers 401 with a challenge, then OAuth, as the source clients all do on
// such a 401; a server that never asks is used without authentication.
//
// Server ids derive from the names (lower-cased, other characters replaced by
// '-', at most 63), with "-2", "-3" appended on a clash within the import;
// clashes with servers already configured are the caller's to resolve. Every
// server returned passes Validate. The error is a *ParseError for malformed
// JSON or a document with no recognisable server list.
//
// Long: the two passes over the document that the list above describes:
// find the server lists under the keys each client uses (or a bare map),
// then convert, name and validate each entry; the ids' clash set and the
// skipped list span both.
func Import(data []byte, env func(string) (string, bool)) (ImportResult, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	doc := stripJSONC(blankBOM(data))
	if err := checkJSON(doc); err != nil {
		return ImportResult{}, err
	}
	start := skipSpace(doc, 0)
	top, ok := objectMembers(doc[start:])
	if !ok {
		if doc[start] == '[' {
			return ImportResult{}, posError(doc, start, `expected a client config object such as {"mcpServers": {...}}, not an array; a list of remotemcp servers is read with ParseServers`)
		}
		return ImportResult{}, posError(doc, start, `expected a client config object such as {"mcpServers": {...}}, not `+jsonKind(doc[start:]))
	}

	var res ImportResult
	var entries []importEntry
	found := false
	for _, m := range top {
		off := start + m.off
		switch m.key {
		case "mcpServers", "servers", "context_servers":
		case "mcp":
			// VS Code settings.json nests the list; other "mcp" keys
			// (opencode's own format) are not ours to guess at.
			inner, ok := objectMembers(m.raw)
			if !ok {
				continue
			}
			m.key, m.raw = "", nil
			for _, im := range inner {
				if im.key == "servers" {
					m.key, m.raw, off = "mcp.servers", im.raw, off+im.off
				}
			}
			if m.key == "" {
				continue
			}
		default:
			continue
		}
		found = true
		es, skipped, err := entriesOf(doc, off, m.key, m.raw)
		if err != nil {
			return ImportResult{}, err
		}
		entries = append(entries, es...)
		res.Skipped = append(res.Skipped, skipped...)
	}
	if !found && len(top) > 0 && looksLikeEntryMap(top) {
		found = true
		es, _, _ := entriesOf(doc, start, "", doc[start:])
		entries = es
	}
	if !found {
		return ImportResult{}, posError(doc, start, `no MCP servers found: expected {"mcpServers": {...}} (Claude Code, Claude Desktop, Cursor, Windsurf, Cline), {"servers": {...}} or {"mcp": {"servers": {...}}} (VS Code)`)
	}

	used := make(map[string]bool)
	for _, e := range entries {
		if e.skip != "" {
			res.Skipped = append(res.Skipped, Skipped{Name: e.name, Reason: e.skip})
			continue
		}
		s, reason := convertEntry(e.name, e.raw, env)
		if reason != "" {
			res.Skipped = append(res.Skipped, Skipped{Name: e.name, Reason: reason})
			continue
		}
		s.ID = uniqueID(idFromName(e.name), used)
		if err := s.Validate(); err != nil {
			res.Skipped = append(res.Skipped, Skipped{Name: e.name, Reason: err.Error()})
			continue
		}
		used[s.ID] = true
		res.Servers = append(res.Servers, s)
	}
	return res, nil
}

type importEntry struct {
	name string
	raw  json.RawMessage
	skip string // set when the entry is known to be skipped already
}

// entriesOf lists the entries of one server list: an object of name → entry,
// or (Continue) an array of entries carrying a "name". A later entry with the
// same name replaces an earlier one, as it does in the source clients, and
// the earlier one is reported.
func entriesOf(doc []byte, off int, key string, raw []byte) ([]importEntry, []Skipped, error) {
	var out []importEntry
	var skipped []Skipped
	switch raw[0] {
	case '{':
		members, _ := objectMembers(raw)
		last := make(map[string]int, len(members))
		for i, m := range members {
			last[m.key] = i
		}
		for i, m := range members {
			e := importEntry{name: m.key, raw: m.raw}
			if last[m.key] != i {
				e.skip = "the name appears again later in the document; the later entry is used, as in the source client"
			}
			out = append(out, e)
		}
	case '[':
		if key == "servers" {
			return nil, nil, posError(doc, off, `"servers" is an array: this looks like remotemcp's own format, which is read with ParseServers, not imported`)
		}
		elems, _ := arrayElements(raw)
		for i, el := range elems {
			var named struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(el.raw, &named) != nil || named.Name == "" {
				skipped = append(skipped, Skipped{Name: fmt.Sprintf("%s[%d]", key, i), Reason: `the entry has no "name"`})
				continue
			}
			out = append(out, importEntry{name: named.Name, raw: el.raw})
		}
	default:
		return nil, nil, posError(doc, off, fmt.Sprintf("%q must be an object of name → server, not %s", key, jsonKind(raw)))
	}
	return out, skipped, nil
}

// looksLikeEntryMap reports whether a document without a known list key is
// itself a name → entry map, as users paste it from a larger config.
func looksLikeEntryMap(top []jsonMember) bool {
	for _, m := range top {
		var f map[string]json.RawMessage
		if json.Unmarshal(m.raw, &f) != nil || f == nil {
			return false
		}
		hit := false
		for _, k := range []string{"url", "serverUrl", "httpUrl", "command", "type"} {
			_, has := f[k]
			hit = hit || has
		}
		if !hit {
			return false
		}
	}
	return true
}

// entryFields are the members of one entry. Lookups are exact: the source
// clients' keys are case-sensitive.
type entryFields map[string]json.RawMessage

func (f entryFields) has(key string) bool {
	v, ok := f[key]
	return ok && string(v) != "null"
}

// str returns a string member; problem is set when it is not a string.
func (f entryFields) str(key string) (v string, problem string) {
	if !f.has(key) {
		return "", ""
	}
	if json.Unmarshal(f[key], &v) != nil {
		return "", fmt.Sprintf("%s must be a string, not %s", key, jsonKind(f[key]))
	}
	return v, ""
}

func (f entryFields) boolean(key string) (v, present bool, problem string) {
	if !f.has(key) {
		return false, false, ""
	}
	if json.Unmarshal(f[key], &v) != nil {
		return false, false, fmt.Sprintf("%s must be true or false, not %s", key, jsonKind(f[key]))
	}
	return v, true, ""
}

type header struct{ name, value string }

// remoteSpec is an entry reduced to what a remote server needs; values are
// not yet expanded.
type remoteSpec struct {
	url     string
	headers []header
	oauth   *oauthSpec
	// typed is true when the entry names its transport explicitly; an
	// untyped URL ending in /sse is then taken for the legacy transport.
	typed bool
}

type oauthSpec struct {
	field        string // "oauth", "auth" or the mcp-remote flag, for messages
	clientID     string
	clientSecret string
	scopes       []string
	scopeString  string // Claude Code writes scopes space-separated
	port         int
}

// convertEntry turns one entry into a server without an id, or says why not.
//
// Long: one entry's fields read in the order they decide its fate (nested
// transport, type, enabled, then the transport kind's switch: refused,
// mcp-remote command with its own env, or remote URL) before finish; the
// env the command case wraps is the one finish uses.
func convertEntry(name string, raw json.RawMessage, env func(string) (string, bool)) (Server, string) {
	var f entryFields
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return Server{}, "the entry is not a JSON object"
	}
	// Some users (and the Cline CLI) nest the transport as
	// "transport": {type, url, headers}; Claude Code ignores that form, but
	// the intent is plain, so accept it where the entry lacks the fields.
	if tr := f["transport"]; len(tr) > 0 && tr[0] == '{' {
		var inner entryFields
		if json.Unmarshal(tr, &inner) == nil {
			delete(f, "transport")
			for _, k := range []string{"type", "url", "headers"} {
				if !f.has(k) && inner.has(k) {
					f[k] = inner[k]
				}
			}
		}
	}

	typ, p := f.str("type")
	if p != "" {
		return Server{}, p
	}
	if typ == "" {
		if typ, p = f.str("transport"); p != "" {
			return Server{}, p
		}
	}
	enabled := true
	if v, ok, p := f.boolean("disabled"); p != "" {
		return Server{}, p
	} else if ok && v {
		enabled = false
	}
	if v, ok, p := f.boolean("enabled"); p != "" {
		return Server{}, p
	} else if ok && !v {
		enabled = false
	}

	var spec remoteSpec
	kind := transportKind(typ)
	switch {
	case typ != "" && kind == "":
		return Server{}, fmt.Sprintf(`transport type %q is not supported; only Streamable HTTP ("http") servers can be imported`, typ)
	case kind == "sse":
		return Server{}, reasonSSE
	case kind == "ws":
		return Server{}, "WebSocket transport is not supported; only Streamable HTTP"
	case kind == "stdio" || kind == "" && f.has("command") && !f.has("url") && !f.has("serverUrl") && !f.has("httpUrl"):
		var reason string
		if spec, reason = fromCommand(f); reason != "" {
			return Server{}, reason
		}
		// The proxy process gets the entry's env, so its ${VAR}s see it.
		entryEnv := map[string]string{}
		var envVals map[string]string
		if f.has("env") && json.Unmarshal(f["env"], &envVals) == nil {
			for k, v := range envVals {
				if x, err := expand(v, env); err == nil {
					entryEnv[k] = x
				}
			}
		}
		outer := env
		env = func(k string) (string, bool) {
			if v, ok := entryEnv[k]; ok {
				return v, true
			}
			return outer(k)
		}
	default:
		var reason string
		if spec, reason = fromRemote(f); reason != "" {
			return Server{}, reason
		}
		spec.typed = kind == "http" || f.has("httpUrl")
	}

	s, reason := finish(spec, env)
	if reason != "" {
		return Server{}, reason
	}
	s.Name = name
	s.Enabled = enabled
	s.ConnectOnStartup = true
	return s, ""
}

// transportKind normalises the type names of the clients we read:
// "http", "sse", "stdio", "ws", or "" for unknown.
func transportKind(t string) string {
	switch strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(t)) {
	case "http", "streamablehttp", "remote":
		return "http"
	case "sse":
		return "sse"
	case "stdio", "local":
		return "stdio"
	case "ws", "websocket":
		return "ws"
	}
	return ""
}

// fromRemote reads a url/serverUrl/httpUrl entry with optional headers and
// oauth/auth settings.
func fromRemote(f entryFields) (remoteSpec, string) {
	var spec remoteSpec
	var from string
	for _, k := range []string{"url", "serverUrl", "httpUrl"} {
		v, p := f.str(k)
		if p != "" {
			return spec, p
		}
		if v == "" {
			continue
		}
		if spec.url != "" && v != spec.url {
			return spec, fmt.Sprintf("has both %s and %s with different values; keep one", from, k)
		}
		spec.url, from = v, k
	}
	if spec.url == "" {
		if f.has("command") {
			return spec, "has a transport type of http but a command instead of a url"
		}
		return spec, "has neither a url nor a command; nothing to import"
	}

	if f.has("headers") {
		members, ok := objectMembers(f["headers"])
		if !ok {
			return spec, "headers must be an object of name → value"
		}
		for _, m := range members {
			var v string
			if json.Unmarshal(m.raw, &v) != nil {
				return spec, fmt.Sprintf("header %s must be a string, not %s", headerLabel(m.key), jsonKind(m.raw))
			}
			spec.headers = append(spec.headers, header{m.key, v})
		}
	}
	if f.has("headersHelper") {
		return spec, "headersHelper (a command printing headers) is not supported; only static headers (values may use ${VAR})"
	}

	if f.has("oauth") && f.has("auth") {
		return spec, `has both "oauth" and "auth" settings; keep one`
	}
	for _, k := range []string{"oauth", "auth"} {
		if !f.has(k) {
			continue
		}
		o, reason := readOAuth(k, f[k])
		if reason != "" {
			return spec, reason
		}
		spec.oauth = o
	}
	return spec, ""
}

// readOAuth reads Claude Code / VS Code "oauth": {clientId, clientSecret,
// scopes, callbackPort} and Cursor "auth": {CLIENT_ID, CLIENT_SECRET, scopes}.
func readOAuth(field string, raw json.RawMessage) (*oauthSpec, string) {
	var f entryFields
	if json.Unmarshal(raw, &f) != nil || f == nil {
		return nil, field + " must be an object"
	}
	o := &oauthSpec{field: field}
	for _, k := range []struct {
		dst  *string
		keys []string
	}{
		{&o.clientID, []string{"clientId", "client_id", "CLIENT_ID"}},
		{&o.clientSecret, []string{"clientSecret", "client_secret", "CLIENT_SECRET"}},
	} {
		for _, key := range k.keys {
			v, p := f.str(key)
			if p != "" {
				return nil, field + "." + p
			}
			if v != "" {
				*k.dst = v
			}
		}
	}
	for _, key := range []string{"scopes", "scope"} {
		if !f.has(key) {
			continue
		}
		if err := json.Unmarshal(f[key], &o.scopes); err != nil {
			if json.Unmarshal(f[key], &o.scopeString) != nil {
				return nil, fmt.Sprintf("%s.%s must be an array of strings or a space-separated string", field, key)
			}
		}
	}
	for _, key := range []string{"callbackPort", "redirectPort"} {
		if !f.has(key) {
			continue
		}
		if json.Unmarshal(f[key], &o.port) != nil || o.port < 1 || o.port > 65535 {
			return nil, fmt.Sprintf("%s.%s must be a port number 1-65535", field, key)
		}
	}
	if f.has("authServerMetadataUrl") {
		// Dropping it would send discovery elsewhere than the user chose.
		return nil, field + ".authServerMetadataUrl is not supported: remotemcp finds the authorization server through the server's protected resource metadata (RFC 9728)"
	}
	return o, ""
}

// fromCommand unwraps an mcp-remote proxy command into the remote server it
// proxies; any other command is a local stdio server.
func fromCommand(f entryFields) (remoteSpec, string) {
	var spec remoteSpec
	command, p := f.str("command")
	if p != "" || command == "" {
		return spec, reasonStdio // e.g. Zed's {"command": {"path": ...}}
	}
	var args []string
	if f.has("args") && json.Unmarshal(f["args"], &args) != nil {
		return spec, reasonStdio
	}
	rest, ok := mcpRemoteArgs(command, args)
	if !ok {
		return spec, reasonStdio
	}
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		return spec, "mcp-remote is given no server URL; its first argument must be the URL"
	}
	// mcp-remote's own command line: URL [callback-port] [flags]. Flags that
	// only shape the local proxy (--debug, --host, --allow-http, ...) have
	// no meaning for a direct connection and are ignored.
	spec.url = rest[0]
	transport := ""
	for i := 1; i < len(rest); i++ {
		flag, val, hasVal := strings.Cut(rest[i], "=")
		next := func() (string, bool) {
			if hasVal {
				return val, true
			}
			if i+1 < len(rest) {
				i++
				return rest[i], true
			}
			return "", false
		}
		switch flag {
		case "--header":
			h, ok := next()
			if !ok {
				return spec, "mcp-remote --header has no value"
			}
			name, value, ok := strings.Cut(h, ":")
			if !ok {
				// Not echoed: without its ':' the value may be all secret.
				return spec, "an mcp-remote --header value is not of the form Name:value"
			}
			spec.headers = append(spec.headers, header{strings.TrimSpace(name), strings.TrimSpace(value)})
		case "--transport":
			if transport, ok = next(); !ok {
				return spec, "mcp-remote --transport has no value"
			}
		case "--static-oauth-client-info":
			v, ok := next()
			if !ok {
				return spec, "mcp-remote --static-oauth-client-info has no value"
			}
			if strings.HasPrefix(v, "@") {
				return spec, "mcp-remote --static-oauth-client-info reads a file, which cannot be imported; add the server by hand with its client id"
			}
			var info struct {
				ClientID     string `json:"client_id"`
				ClientSecret string `json:"client_secret"`
			}
			if json.Unmarshal([]byte(v), &info) != nil || info.ClientID == "" {
				return spec, `mcp-remote --static-oauth-client-info must be JSON such as {"client_id": "..."}`
			}
			spec.oauth = &oauthSpec{field: "--static-oauth-client-info", clientID: info.ClientID, clientSecret: info.ClientSecret}
		}
	}
	switch transport {
	case "sse-only":
		return spec, reasonSSE
	case "http-only":
		spec.typed = true
	}
	return spec, ""
}

// mcpRemoteArgs recognises a command that runs mcp-remote and returns the
// arguments given to mcp-remote itself: `npx [-y] mcp-remote[@v] ...`,
// `bunx`/`pnpx`, `pnpm dlx`/`yarn dlx`, an installed `mcp-remote`, and
// Windows' `cmd /c npx ...`.
func mcpRemoteArgs(command string, args []string) ([]string, bool) {
	base := strings.ToLower(path.Base(strings.ReplaceAll(command, `\`, "/")))
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".cmd"), ".exe")
	switch base {
	case "mcp-remote":
		return args, true
	case "cmd":
		if len(args) >= 2 && strings.EqualFold(args[0], "/c") {
			return mcpRemoteArgs(args[1], args[2:])
		}
	case "pnpm", "yarn":
		if len(args) >= 1 && args[0] == "dlx" {
			return mcpRemoteArgs("npx", args[1:])
		}
	case "npx", "bunx", "pnpx":
		for i := 0; i < len(args); i++ {
			a := args[i]
			if a == "-p" || a == "--package" {
				i++ // npx -p mcp-remote@1 mcp-remote URL: the package, then the binary
				continue
			}
			if strings.HasPrefix(a, "-") {
				continue // -y, --yes, --quiet
			}
			if a == "mcp-remote" || strings.HasPrefix(a, "mcp-remote@") {
				return args[i+1:], true
			}
			return nil, false
		}
	}
	return nil, false
}

// finish expands variables and turns headers and oauth settings into auth.
func finish(spec remoteSpec, env func(string) (string, bool)) (Server, string) {
	var s Server
	u, err := expand(spec.url, env)
	if err != nil {
		return s, "url: " + err.Error()
	}
	s.URL = u
	if !spec.typed && endsInSSE(u) {
		return s, reasonSSE + ": the URL ends in /sse; if the server also offers Streamable HTTP (often at /mcp), add that URL instead"
	}

	s.Auth = Auth{Kind: AuthAuto}
	bearer := false
	for _, h := range spec.headers {
		if !strings.EqualFold(h.name, "Authorization") {
			// A custom header (an API key, a tenant): kept, its value
			// sealed by the store like a bearer token (SPEC §9 A2). Names
			// the transport owns are refused by Validate.
			v, err := expand(h.value, env)
			if err != nil {
				return s, fmt.Sprintf("header %s: %s", headerLabel(h.name), err)
			}
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			if _, dup := s.Headers[h.name]; dup {
				return s, fmt.Sprintf("header %s is given twice; keep one", headerLabel(h.name))
			}
			s.Headers[h.name] = v
			continue
		}
		v, err := expand(h.value, env)
		if err != nil {
			return s, "Authorization header: " + err.Error()
		}
		scheme, token, _ := strings.Cut(strings.TrimSpace(v), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			// Name the scheme only when it looks like one: the value may be
			// a bare secret.
			if len(scheme) <= 16 && strings.Trim(strings.ToLower(scheme), "abcdefghijklmnopqrstuvwxyz-") == "" && token != "" {
				return s, fmt.Sprintf(`the Authorization header uses the %s scheme; only "Bearer <token>" is supported`, scheme)
			}
			return s, `the Authorization header is not of the form "Bearer <token>"`
		}
		s.Auth = Auth{Kind: AuthBearer, Token: strings.TrimSpace(token)}
		bearer = true
	}
	if o := spec.oauth; o != nil {
		if bearer {
			return s, fmt.Sprintf("has both an Authorization header and %s settings; keep one", o.field)
		}
		a := Auth{Kind: AuthOAuth, RedirectPort: o.port}
		for _, x := range []struct {
			dst  *string
			src  string
			name string
		}{
			{&a.ClientID, o.clientID, "client id"},
			{&a.ClientSecret, o.clientSecret, "client secret"},
		} {
			if *x.dst, err = expand(x.src, env); err != nil {
				return s, fmt.Sprintf("%s %s: %s", o.field, x.name, err)
			}
		}
		scopes := o.scopes
		if o.scopeString != "" {
			scopes = strings.Fields(o.scopeString)
		}
		for _, sc := range scopes {
			x, err := expand(sc, env)
			if err != nil {
				return s, fmt.Sprintf("%s scopes: %s", o.field, err)
			}
			a.Scopes = append(a.Scopes, x)
		}
		s.Auth = a
	}
	return s, ""
}

// headerLabel is a header name fit for a message: the name itself when it
// is one, else a note that it is not, since a malformed name may be a
// pasted "Name: value" line.
func headerLabel(name string) string {
	if validHeaderName(name) {
		return name
	}
	return "(a name that is not a valid header name)"
}

// endsInSSE reports a URL whose path ends in /sse, the legacy transport's
// conventional endpoint.
func endsInSSE(u string) bool {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	u = strings.TrimSuffix(strings.ToLower(u), "/")
	return strings.HasSuffix(u, "/sse")
}

// expand replaces ${VAR}, ${VAR:-default} and ${env:VAR} in s. Expanded
// values are not expanded again, so a variable's value cannot inject another
// reference. ":-" takes the default when the variable is unset or empty, as
// in the shell and Claude Code. A '$' not followed by '{' is literal.
func expand(s string, env func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("has an unterminated ${ (no closing })")
		}
		inner := s[i+2 : i+2+end]
		s = s[i+2+end+1:]

		name, def, hasDef := strings.Cut(inner, ":-")
		if n, ok := strings.CutPrefix(inner, "env:"); ok {
			name, def, hasDef = n, "", false
		}
		switch {
		case strings.HasPrefix(inner, "input:"):
			return "", fmt.Errorf("${%s} is a VS Code input, which is only known inside VS Code; import the server without it and enter the value in remotemcp", inner)
		case name == "userHome" || strings.HasPrefix(name, "workspaceFolder"):
			return "", fmt.Errorf("${%s} is an editor variable, not an environment variable; replace it with a value", name)
		case !validEnvName(name):
			return "", fmt.Errorf("${%s} is not a valid variable reference; use ${NAME}, ${NAME:-default} or ${env:NAME}", inner)
		}
		v, ok := env(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set; set it, or write ${%s:-default}", name, name)
		}
		b.WriteString(v)
	}
}

func validEnvName(n string) bool {
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return n != ""
}

// idFromName derives a server id from an entry name: lower-cased, every
// character outside [a-z0-9_-] replaced with '-', runs of '-' collapsed,
// '-' and '_' trimmed from the ends, cut to MaxIDLength. A name with nothing
// usable ("日本語") gives "server".
func idFromName(name string) string {
	var b []byte
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_':
			b = append(b, byte(r))
		case len(b) > 0 && b[len(b)-1] == '-':
		default:
			b = append(b, '-')
		}
	}
	id := strings.Trim(string(b), "-_")
	if len(id) > MaxIDLength {
		id = strings.TrimRight(id[:MaxIDLength], "-_")
	}
	if id == "" {
		return "server"
	}
	return id
}

// uniqueID returns base, or base-2, base-3, ... whichever is not used yet,
// still at most MaxIDLength long.
func uniqueID(base string, used map[string]bool) string {
	if !used[base] {
		return base
	}
	for n := 2; ; n++ {
		suffix := "-" + strconv.Itoa(n)
		b := base
		if len(b)+len(suffix) > MaxIDLength {
			b = strings.TrimRight(b[:MaxIDLength-len(suffix)], "-_")
		}
		if id := b + suffix; !used[id] {
			return id
		}
	}
}

// stripJSONC blanks out // and /* */ comments and trailing commas, which
// VS Code's mcp.json and settings.json allow, with spaces (newlines kept), so
// that offsets and line numbers in errors still match the user's file.
// An unterminated block comment is left alone for the JSON reader to report.
func stripJSONC(data []byte) []byte {
	if !bytes.ContainsAny(data, "/,") {
		return data
	}
	out := bytes.Clone(data)
	inString := false
	comma := -1 // a ',' not yet followed by a value
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString, comma = true, -1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			stop := i + 2 + end + 2
			for ; i < stop; i++ {
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
			}
			i--
		case c == ',':
			comma = i
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			comma = -1
		}
	}
	return out
}
