package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// srv is a server as Import produces it: enabled, connecting on startup.
func srv(id, name, url string, auth Auth) Server {
	return Server{ID: id, Name: name, URL: url, Auth: auth, Enabled: true, ConnectOnStartup: true}
}

var autoAuth = Auth{Kind: AuthAuto}

func withHeaders(s Server, h map[string]string) Server {
	s.Headers = h
	return s
}

func TestImport(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		env         map[string]string
		wantServers []Server
		wantSkipped []Skipped // Reason: a substring of the reason
	}{
		{
			name: "claude code .mcp.json",
			in: `{
  "mcpServers": {
    "linear":   { "type": "http", "url": "https://mcp.linear.app/mcp" },
    "api":      { "type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp",
                  "headers": { "Authorization": "Bearer ${API_KEY}" } },
    "legacy":   { "type": "sse",  "url": "https://mcp.example.com/sse", "headers": { "X-API-Key": "${KEY}" } },
    "slack":    { "type": "http", "url": "https://mcp.slack.com/mcp",
                  "oauth": { "clientId": "1234.5678", "callbackPort": 8080, "scopes": "channels:read chat:write" } },
    "okta":     { "type": "http", "url": "https://okta.example.com/mcp",
                  "oauth": { "clientId": "x", "authServerMetadataUrl": "https://auth.example.com/.well-known/openid-configuration" } },
    "kerberos": { "type": "http", "url": "https://internal.example/mcp", "headersHelper": "/opt/bin/mcp-headers.sh" },
    "local":    { "command": "npx", "args": ["-y", "pkg"], "env": { "TOKEN": "${TOKEN}" } }
  }
}`,
			env: map[string]string{"API_KEY": "sk-123"},
			wantServers: []Server{
				srv("linear", "linear", "https://mcp.linear.app/mcp", autoAuth),
				srv("api", "api", "https://api.example.com/mcp", Auth{Kind: AuthBearer, Token: "sk-123"}),
				srv("slack", "slack", "https://mcp.slack.com/mcp", Auth{Kind: AuthOAuth, ClientID: "1234.5678", RedirectPort: 8080, Scopes: []string{"channels:read", "chat:write"}}),
			},
			wantSkipped: []Skipped{
				{"legacy", "legacy SSE transport is not supported: remotemcp speaks Streamable HTTP only"},
				{"okta", "oauth.authServerMetadataUrl is not supported"},
				{"kerberos", "headersHelper"},
				{"local", "local stdio servers are out of scope: remotemcp is for remote servers"},
			},
		},
		{
			name: "claude desktop with mcp-remote",
			in: `{
  "mcpServers": {
    "remote-example": { "command": "npx", "args": ["mcp-remote", "https://remote.mcp.server/mcp"] },
    "with-auth": {
      "command": "npx",
      "args": ["-y", "mcp-remote@0.1.29", "https://remote.mcp.server/mcp", "--header", "Authorization:${AUTH_HEADER}"],
      "env": { "AUTH_HEADER": "Bearer tok-from-entry-env" }
    },
    "spaced": { "command": "npx", "args": ["-y", "mcp-remote@latest", "https://spaced.example/mcp", "9696", "--header", "Authorization: Bearer ${TOKEN}", "--debug"] },
    "windows": { "command": "C:\\Program Files\\nodejs\\npx.cmd", "args": ["-y", "mcp-remote", "https://win.example/mcp"] },
    "cmd": { "command": "cmd", "args": ["/c", "npx", "-y", "mcp-remote", "https://cmd.example/mcp"] },
    "static": { "command": "npx", "args": ["mcp-remote", "https://static.example/mcp", "--static-oauth-client-info", "{\"client_id\":\"cid\",\"client_secret\":\"csec\"}"] },
    "sse-path": { "command": "npx", "args": ["mcp-remote", "https://remote.mcp.server/sse"] },
    "sse-only": { "command": "npx", "args": ["mcp-remote", "https://x.example/mcp", "--transport", "sse-only"] },
    "http-only-sse-path": { "command": "npx", "args": ["mcp-remote", "https://y.example/sse", "--transport", "http-only"] },
    "custom": { "command": "npx", "args": ["mcp-remote", "https://z.example/mcp", "--header", "X-Tenant: acme"] },
    "no-url": { "command": "npx", "args": ["-y", "mcp-remote", "--debug"] },
    "no-colon": { "command": "npx", "args": ["mcp-remote", "https://z.example/mcp", "--header", "Bearer raw-secret-token"] },
    "filesystem": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me"] },
    "lookalike": { "command": "npx", "args": ["-y", "not-mcp-remote", "https://q.example/mcp"] },
    "installed": { "command": "/usr/local/bin/mcp-remote", "args": ["https://installed.example/mcp"] },
    "pnpm": { "command": "pnpm", "args": ["dlx", "mcp-remote", "https://pnpm.example/mcp", "--header=Authorization: Bearer eq-tok"] },
    "bunx-p": { "command": "bunx", "args": ["-p", "mcp-remote@0.1", "mcp-remote", "https://bunx.example/mcp"] }
  }
}`,
			env: map[string]string{"TOKEN": "tok-from-env"},
			wantServers: []Server{
				srv("remote-example", "remote-example", "https://remote.mcp.server/mcp", autoAuth),
				srv("with-auth", "with-auth", "https://remote.mcp.server/mcp", Auth{Kind: AuthBearer, Token: "tok-from-entry-env"}),
				srv("spaced", "spaced", "https://spaced.example/mcp", Auth{Kind: AuthBearer, Token: "tok-from-env"}),
				srv("windows", "windows", "https://win.example/mcp", autoAuth),
				srv("cmd", "cmd", "https://cmd.example/mcp", autoAuth),
				srv("static", "static", "https://static.example/mcp", Auth{Kind: AuthOAuth, ClientID: "cid", ClientSecret: "csec"}),
				srv("http-only-sse-path", "http-only-sse-path", "https://y.example/sse", autoAuth),
				withHeaders(srv("custom", "custom", "https://z.example/mcp", autoAuth), map[string]string{"X-Tenant": "acme"}),
				srv("installed", "installed", "https://installed.example/mcp", autoAuth),
				srv("pnpm", "pnpm", "https://pnpm.example/mcp", Auth{Kind: AuthBearer, Token: "eq-tok"}),
				srv("bunx-p", "bunx-p", "https://bunx.example/mcp", autoAuth),
			},
			wantSkipped: []Skipped{
				{"sse-path", "legacy SSE transport is not supported: remotemcp speaks Streamable HTTP only: the URL ends in /sse"},
				{"sse-only", "legacy SSE transport is not supported: remotemcp speaks Streamable HTTP only"},
				{"no-url", "mcp-remote is given no server URL"},
				{"no-colon", "an mcp-remote --header value is not of the form Name:value"},
				{"filesystem", "local stdio servers are out of scope: remotemcp is for remote servers"},
				{"lookalike", "local stdio servers are out of scope: remotemcp is for remote servers"},
			},
		},
		{
			name: "cursor mcp.json",
			in: `{
  "mcpServers": {
    "remote-oauth":  { "url": "https://mcp.example.com/mcp" },
    "remote-bearer": { "url": "https://api.example.com/mcp",
                       "headers": { "Authorization": "Bearer ${env:EXAMPLE_TOKEN}" } },
    "static-oauth":  { "url": "https://mcp.mittwald.de/mcp",
                       "auth": { "CLIENT_ID": "${env:MW_CLIENT_ID}", "CLIENT_SECRET": "${env:MW_CLIENT_SECRET}",
                                 "scopes": ["mcp", "offline_access"] } },
    "local":         { "type": "stdio", "command": "npx", "args": ["-y", "mcp-server"],
                       "env": { "API_KEY": "value" }, "envFile": "${workspaceFolder}/.env" }
  }
}`,
			env: map[string]string{"EXAMPLE_TOKEN": "ex-tok", "MW_CLIENT_ID": "mw-id", "MW_CLIENT_SECRET": "mw-secret"},
			wantServers: []Server{
				srv("remote-oauth", "remote-oauth", "https://mcp.example.com/mcp", autoAuth),
				srv("remote-bearer", "remote-bearer", "https://api.example.com/mcp", Auth{Kind: AuthBearer, Token: "ex-tok"}),
				srv("static-oauth", "static-oauth", "https://mcp.mittwald.de/mcp", Auth{Kind: AuthOAuth, ClientID: "mw-id", ClientSecret: "mw-secret", Scopes: []string{"mcp", "offline_access"}}),
			},
			wantSkipped: []Skipped{{"local", "local stdio servers are out of scope: remotemcp is for remote servers"}},
		},
		{
			name: "vs code mcp.json with comments",
			in: `{
  // Prompted once, stored in VS Code's secret storage.
  "inputs": [ { "type": "promptString", "id": "api-token", "description": "API token", "password": true } ],
  "servers": {
    "github":  { "type": "http", "url": "https://api.githubcopilot.com/mcp/" },
    "api":     { "type": "http", "url": "https://api.example.com/mcp",
                 "headers": { "Authorization": "Bearer ${input:api-token}" } },
    /* pre-registered client */
    "slack":   { "type": "http", "url": "https://mcp.slack.com/mcp", "oauth": { "clientId": "12348411142.11062036567072" } },
    "sock":    { "type": "http", "url": "unix:///tmp/server.sock#/mcp" },
    "local":   { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },
  },
}`,
			wantServers: []Server{
				srv("github", "github", "https://api.githubcopilot.com/mcp/", autoAuth),
				srv("slack", "slack", "https://mcp.slack.com/mcp", Auth{Kind: AuthOAuth, ClientID: "12348411142.11062036567072"}),
			},
			wantSkipped: []Skipped{
				{"api", "${input:api-token} is a VS Code input"},
				{"sock", `server sock: url: scheme "unix" is not supported`},
				{"local", "local stdio servers are out of scope: remotemcp is for remote servers"},
			},
		},
		{
			name: "vs code settings.json",
			in: `{
  "editor.fontSize": 14,
  "mcp": { "servers": { "Remote Docs": { "type": "http", "url": "https://docs.example.com/mcp" } } }
}`,
			wantServers: []Server{srv("remote-docs", "Remote Docs", "https://docs.example.com/mcp", autoAuth)},
		},
		{
			name: "windsurf",
			in: `{ "mcpServers": { "figma": { "serverUrl": "https://figma.example.com/mcp",
  "headers": { "Authorization": "Bearer ${env:FIGMA_TOKEN}" } } } }`,
			env:         map[string]string{"FIGMA_TOKEN": "fig"},
			wantServers: []Server{srv("figma", "figma", "https://figma.example.com/mcp", Auth{Kind: AuthBearer, Token: "fig"})},
		},
		{
			name: "cline",
			in: `{ "mcpServers": {
  "a": { "type": "streamableHttp", "url": "https://a.example/mcp", "disabled": true, "autoApprove": ["x"], "timeout": 60 },
  "b": { "type": "streamable-http", "url": "https://b.example/mcp", "disabled": false },
  "c": { "transport": { "type": "streamableHttp", "url": "https://c.example/mcp" } },
  "d": { "type": "sse", "url": "https://d.example/events" }
} }`,
			wantServers: []Server{
				{ID: "a", Name: "a", URL: "https://a.example/mcp", Auth: autoAuth, Enabled: false, ConnectOnStartup: true},
				srv("b", "b", "https://b.example/mcp", autoAuth),
				srv("c", "c", "https://c.example/mcp", autoAuth),
			},
			wantSkipped: []Skipped{{"d", "legacy SSE transport is not supported: remotemcp speaks Streamable HTTP only"}},
		},
		{
			name: "gemini httpUrl and zed",
			in: `{ "mcpServers": { "g": { "httpUrl": "https://g.example/sse" } },
  "context_servers": { "z": { "url": "https://z.example/mcp" }, "zl": { "command": { "path": "server", "args": [] } } } }`,
			wantServers: []Server{
				srv("g", "g", "https://g.example/sse", autoAuth), // httpUrl says Streamable HTTP, whatever the path
				srv("z", "z", "https://z.example/mcp", autoAuth),
			},
			wantSkipped: []Skipped{{"zl", "local stdio servers are out of scope: remotemcp is for remote servers"}},
		},
		{
			name: "bare map pasted from a larger file",
			in:   `{ "linear": { "url": "https://mcp.linear.app/mcp" }, "fs": { "command": "npx" } }`,
			wantServers: []Server{
				srv("linear", "linear", "https://mcp.linear.app/mcp", autoAuth),
			},
			wantSkipped: []Skipped{{"fs", "local stdio servers are out of scope: remotemcp is for remote servers"}},
		},
		{
			name: "continue array",
			in:   `{ "mcpServers": [ { "name": "Docs", "type": "streamable-http", "url": "https://docs.example/mcp" }, { "type": "http" } ] }`,
			wantServers: []Server{
				srv("docs", "Docs", "https://docs.example/mcp", autoAuth),
			},
			wantSkipped: []Skipped{{"mcpServers[1]", `the entry has no "name"`}},
		},
		{
			name: "id collisions and odd names",
			in: `{ "mcpServers": {
  "GitHub": { "url": "https://a.example/mcp" },
  "github": { "url": "https://b.example/mcp" },
  "git hub!!": { "url": "https://c.example/mcp" },
  "--GitHub--": { "url": "https://d.example/mcp" },
  "日本語": { "url": "https://e.example/mcp" },
  "` + strings.Repeat("x", 70) + `": { "url": "https://f.example/mcp" },
  "` + strings.Repeat("x", 65) + `": { "url": "https://g.example/mcp" }
} }`,
			wantServers: []Server{
				srv("github", "GitHub", "https://a.example/mcp", autoAuth),
				srv("github-2", "github", "https://b.example/mcp", autoAuth),
				srv("git-hub", "git hub!!", "https://c.example/mcp", autoAuth),
				srv("github-3", "--GitHub--", "https://d.example/mcp", autoAuth),
				srv("server", "日本語", "https://e.example/mcp", autoAuth),
				srv(strings.Repeat("x", 63), strings.Repeat("x", 70), "https://f.example/mcp", autoAuth),
				srv(strings.Repeat("x", 61)+"-2", strings.Repeat("x", 65), "https://g.example/mcp", autoAuth),
			},
		},
		{
			name: "problems that skip an entry",
			in: `{ "mcpServers": {
  "unset":    { "url": "https://${HOST}/mcp" },
  "default":  { "url": "https://${HOST:-fallback.example}/mcp" },
  "empty-default": { "url": "https://${EMPTY:-fallback.example}/mcp" },
  "remote-http": { "url": "http://mcp.example.com/mcp" },
  "loopback-http": { "url": "http://localhost:3000/mcp" },
  "userinfo": { "url": "https://me:pw@mcp.example.com/mcp" },
  "basic":    { "url": "https://b.example/mcp", "headers": { "Authorization": "Basic dXNlcjpwdw==" } },
  "bare":     { "url": "https://b.example/mcp", "headers": { "Authorization": "raw-secret-token" } },
  "both":     { "url": "https://b.example/mcp", "headers": { "Authorization": "Bearer x" }, "oauth": { "clientId": "c" } },
  "empty-token": { "url": "https://b.example/mcp", "headers": { "Authorization": "Bearer ${EMPTY}" } },
  "ws":       { "type": "ws", "url": "wss://w.example/mcp" },
  "weird":    { "type": "grpc", "url": "https://w.example/mcp" },
  "nothing":  { "type": "http" },
  "neither":  { "name": "x" },
  "url-type": { "url": 42 },
  "disabled-type": { "url": "https://x.example/mcp", "disabled": "yes" },
  "not-object": "https://x.example/mcp",
  "two-urls": { "url": "https://a.example/mcp", "serverUrl": "https://b.example/mcp" },
  "unterminated": { "url": "https://${HOST/mcp" },
  "editor-var": { "url": "https://x.example/${workspaceFolder}" },
  "hyphen-var": { "url": "https://x.example/${MY-VAR}" },
  "header-type": { "url": "https://x.example/mcp", "headers": { "Authorization": 5 } },
  "control-name\u0007": { "url": "https://x.example/mcp" }
} }`,
			env: map[string]string{"EMPTY": ""},
			wantServers: []Server{
				srv("default", "default", "https://fallback.example/mcp", autoAuth),
				srv("empty-default", "empty-default", "https://fallback.example/mcp", autoAuth),
				srv("loopback-http", "loopback-http", "http://localhost:3000/mcp", autoAuth),
			},
			wantSkipped: []Skipped{
				{"unset", "url: environment variable HOST is not set; set it, or write ${HOST:-default}"},
				{"remote-http", "server remote-http: url: http:// is only allowed for loopback hosts"},
				{"userinfo", "url: must not contain user information"},
				{"basic", `the Authorization header uses the Basic scheme; only "Bearer <token>" is supported`},
				{"bare", `the Authorization header is not of the form "Bearer <token>"`},
				{"both", "has both an Authorization header and oauth settings; keep one"},
				{"empty-token", "auth.token: is empty"},
				{"ws", "WebSocket transport is not supported"},
				{"weird", `transport type "grpc" is not supported`},
				{"nothing", "has neither a url nor a command"},
				{"neither", "has neither a url nor a command"},
				{"url-type", "url must be a string, not a number"},
				{"disabled-type", "disabled must be true or false, not a string"},
				{"not-object", "the entry is not a JSON object"},
				{"two-urls", "has both url and serverUrl with different values"},
				{"unterminated", "unterminated ${"},
				{"editor-var", "${workspaceFolder} is an editor variable"},
				{"hyphen-var", "${MY-VAR} is not a valid variable reference"},
				{"header-type", "header Authorization must be a string, not a number"},
				{"control-name\a", "name: contains the control character U+0007"},
			},
		},
		{
			name: "duplicate names: the later entry wins",
			in:   `{ "mcpServers": { "a": { "url": "https://old.example/mcp" }, "a": { "url": "https://new.example/mcp" } } }`,
			wantServers: []Server{
				srv("a", "a", "https://new.example/mcp", autoAuth),
			},
			wantSkipped: []Skipped{{"a", "the later entry is used"}},
		},
		{
			name: "empty lists",
			in:   `{ "mcpServers": {}, "servers": {} }`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Import([]byte(tt.in), envOf(tt.env))
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if !reflect.DeepEqual(res.Servers, tt.wantServers) {
				t.Errorf("servers:\n%s\nwant\n%s", dump(res.Servers), dump(tt.wantServers))
			}
			if len(res.Skipped) != len(tt.wantSkipped) {
				t.Fatalf("skipped:\n%s\nwant\n%s", dumpSkipped(res.Skipped), dumpSkipped(tt.wantSkipped))
			}
			for i, w := range tt.wantSkipped {
				g := res.Skipped[i]
				if g.Name != w.Name || !strings.Contains(g.Reason, w.Reason) {
					t.Errorf("skipped[%d] = %q: %q\nwant %q containing %q", i, g.Name, g.Reason, w.Name, w.Reason)
				}
			}
			for _, sk := range res.Skipped {
				for _, secret := range []string{"raw-secret-token", "dXNlcjpwdw==", "pw@"} {
					if strings.Contains(sk.Reason, secret) {
						t.Errorf("reason %q reveals a secret", sk.Reason)
					}
				}
			}
			if err := ValidateAll(res.Servers); err != nil {
				t.Errorf("imported servers do not validate: %v", err)
			}
		})
	}
}

func dump(ss []Server) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "  %+v\n", s)
	}
	return b.String()
}

func dumpSkipped(ss []Skipped) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "  %q: %q\n", s.Name, s.Reason)
	}
	return b.String()
}

func TestImportErrors(t *testing.T) {
	tests := []struct {
		name, in, errHas string
	}{
		{"empty", "", "the document is empty"},
		{"truncated", "{\n  \"mcpServers\": {\n    \"a\": { \"url\": \"https://a/\"", "line 3, column 31: the document ends in the middle"},
		{"syntax", "{\n  \"mcpServers\": {\n    \"a\" { }\n  }\n}", "line 3, column 9: invalid JSON: invalid character '{' after object key"},
		{"unterminated comment", "{ /* x ", "line 1, column 3: invalid JSON"},
		{"array", `[{"id":"a"}]`, "not an array; a list of remotemcp servers is read with ParseServers"},
		{"string", `"x"`, "not a string"},
		{"unknown shape", `{"foo": 1}`, "no MCP servers found"},
		{"empty object", `{}`, "no MCP servers found"},
		{"mcpServers string", `{"mcpServers": "x"}`, `line 1, column 16: "mcpServers" must be an object of name → server, not a string`},
		{"our own format", `{"servers": [{"id":"a","url":"https://a/"}]}`, "remotemcp's own format"},
		{"trailing data", `{"mcpServers": {}} x`, "unexpected data after the JSON value"},
	}
	// A nil env means no variable is set.
	res, err := Import([]byte(`{"mcpServers":{"a":{"url":"https://${H}/"}}}`), nil)
	if err != nil || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "H is not set") {
		t.Errorf("Import with nil env = %+v, %v", res, err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Import([]byte(tt.in), nil)
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("Import(%q) = %+v, %v; want a *ParseError containing %q", tt.in, res, err, tt.errHas)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := envOf(map[string]string{"A": "1", "EMPTY": "", "REF": "${A}", "B_2": "two"})
	tests := []struct{ in, want, errHas string }{
		{in: "plain", want: "plain"},
		{in: "$A and $ alone", want: "$A and $ alone"},
		{in: "${A}", want: "1"},
		{in: "x${A}y${B_2}z", want: "x1ytwoz"},
		{in: "${env:A}", want: "1"},
		{in: "${A:-d}", want: "1"},
		{in: "${UNSET:-d}", want: "d"},
		{in: "${EMPTY:-d}", want: "d"},
		{in: "${EMPTY}", want: ""},
		{in: "${UNSET:-}", want: ""},
		{in: "${UNSET:-a:-b}", want: "a:-b"},
		{in: "${REF}", want: "${A}"}, // values are not expanded again
		{in: "${UNSET}", errHas: "environment variable UNSET is not set"},
		{in: "${env:UNSET}", errHas: "environment variable UNSET is not set"},
		{in: "${env:A:-x}", errHas: "not a valid variable reference"},
		{in: "${}", errHas: "not a valid variable reference"},
		{in: "${1A}", errHas: "not a valid variable reference"},
		{in: "${A", errHas: "unterminated"},
		{in: "${input:tok}", errHas: "VS Code input"},
		{in: "${userHome}/x", errHas: "editor variable"},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, env)
		if tt.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("expand(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.errHas)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestIDFromName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"github", "github"},
		{"GitHub", "github"},
		{"My Server (prod)", "my-server-prod"},
		{"a__b", "a__b"},
		{"_private_", "private"},
		{"-x-", "x"},
		{"", "server"},
		{"!!!", "server"},
		{"日本語", "server"},
		{"Ünïcode", "n-code"},
		{"a.b.c", "a-b-c"},
		{strings.Repeat("ab-", 30), strings.TrimRight(strings.Repeat("ab-", 21), "-")},
	}
	for _, tt := range tests {
		got := idFromName(tt.in)
		if got != tt.want {
			t.Errorf("idFromName(%q) = %q; want %q", tt.in, got, tt.want)
		}
		if err := ValidateID(got); err != nil {
			t.Errorf("idFromName(%q) = %q, which is invalid: %v", tt.in, got, err)
		}
	}
}

func TestStripJSONC(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"{\"a\": 1, // c\n}", "{\"a\": 1      \n}"},
		{`{"a": /* c */ 1,}`, `{"a":         1 }`},
		{`["//not a comment", "/* nor this */",]`, `["//not a comment", "/* nor this */" ]`},
		{`["a\"//b", 1]`, `["a\"//b", 1]`},
		{"/* multi\nline */{}", "        \n       {}"},
		{`[1,,]`, `[1, ]`},
		{`{"a": 1, /* x`, `{"a": 1, /* x`},
	}
	for _, tt := range tests {
		if got := string(stripJSONC([]byte(tt.in))); got != tt.want {
			t.Errorf("stripJSONC(%q) = %q; want %q", tt.in, got, tt.want)
		}
		if len(stripJSONC([]byte(tt.in))) != len(tt.in) {
			t.Errorf("stripJSONC(%q) changed the length", tt.in)
		}
	}
}

// Issue #8 item 6, SPEC §9 A2: an entry with only a URL becomes auth kind
// "auto" (OAuth only when the server asks); a header or OAuth settings
// still decide the kind.
func TestImportURLOnlyIsAuto(t *testing.T) {
	res, err := Import([]byte(`{"mcpServers": {
		"plain":  {"url": "https://plain.example/mcp"},
		"typed":  {"type": "http", "url": "https://typed.example/mcp", "headers": {}},
		"proxy":  {"command": "npx", "args": ["-y", "mcp-remote", "https://proxy.example/mcp"]},
		"bearer": {"url": "https://bearer.example/mcp", "headers": {"Authorization": "Bearer tok"}},
		"oauth":  {"url": "https://oauth.example/mcp", "oauth": {}},
		"client": {"url": "https://client.example/mcp", "oauth": {"clientId": "c"}}
	}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]AuthKind{"plain": AuthAuto, "typed": AuthAuto, "proxy": AuthAuto, "bearer": AuthBearer, "oauth": AuthOAuth, "client": AuthOAuth}
	if len(res.Servers) != len(want) || len(res.Skipped) != 0 {
		t.Fatalf("import = %+v", res)
	}
	for _, s := range res.Servers {
		if s.Auth.Kind != want[s.ID] {
			t.Errorf("%s: kind %q, want %q", s.ID, s.Auth.Kind, want[s.ID])
		}
		if s.Auth.Kind == AuthAuto && (s.Auth.ClientID != "" || s.Auth.Binding != nil || len(s.Auth.Scopes) > 0 || s.UsesOAuth()) {
			t.Errorf("%s: an imported auto server carries OAuth state: %+v", s.ID, s.Auth)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.ID, err)
		}
	}
}

func FuzzImport(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers":{"linear":{"type":"http","url":"https://mcp.linear.app/mcp"}}}`,
		`{"mcpServers":{"api":{"url":"${BASE:-https://api.example.com}/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}}}`,
		`{"mcpServers":{"r":{"command":"npx","args":["-y","mcp-remote@1","https://r.example/mcp","--header","Authorization:${AUTH}"],"env":{"AUTH":"Bearer t"}}}}`,
		`{"servers":{"gh":{"type":"http","url":"https://api.githubcopilot.com/mcp/"}},"inputs":[]}`,
		`{"mcp":{"servers":{"a":{"type":"http","url":"https://a.example/mcp","oauth":{"clientId":"c","scopes":["x"]}}}}}`,
		`{"mcpServers":{"w":{"serverUrl":"https://w.example/mcp"},"s":{"type":"sse","url":"https://s/sse"}}}`,
		"{ // c\n \"mcpServers\": { \"a\": { \"url\": \"https://a/\" }, } }",
		`{"mcpServers":[{"name":"a","url":"https://a/"}]}`,
		`{"a":{"url":"https://a/"},"a":{"url":"https://b/"}}`,
		`{"mcpServers":{"auto":{"url":"https://auto.example/mcp"},"h":{"url":"https://h.example/mcp","headers":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	env := envOf(map[string]string{"TOKEN": "tok", "AUTH": "Bearer x", "BASE": "https://base.example"})
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Import(data, env)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if len(res.Servers) != 0 || len(res.Skipped) != 0 {
				t.Fatalf("an error with a result: %+v", res)
			}
			return
		}
		if err := ValidateAll(res.Servers); err != nil {
			t.Fatalf("Import returned servers that do not validate: %v", err)
		}
		for _, s := range res.Servers {
			if !s.ConnectOnStartup || s.Auth.Kind == "" {
				t.Fatalf("server without import defaults: %+v", s)
			}
		}
		for _, sk := range res.Skipped {
			if sk.Reason == "" {
				t.Fatalf("skipped %q without a reason", sk.Name)
			}
		}
	})
}
