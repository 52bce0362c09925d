package config

import (
	"reflect"
	"strings"
	"testing"
)

// Imports keep custom headers (issue #11 item 6, SPEC §9 A2), with
// ${VAR} and ${env:VAR} expanded from the environment at import time. No
// reason ever shows a header value.
func TestImportHeaders(t *testing.T) {
	const secret = "sk-live-SECRET-7731"
	env := map[string]string{"KEY": secret, "TENANT": "acme", "TOKEN": "tok-1"}
	tests := []struct {
		name       string
		in         string
		want       *Server // nil: skipped
		skipReason string  // substring of the skip reason
	}{
		{"claude code http", `{"mcpServers": {"api": {"type": "http", "url": "https://api.example.com/mcp",
			"headers": {"X-API-Key": "${KEY}", "X-Tenant": "${TENANT}"}}}}`,
			&Server{ID: "api", Name: "api", URL: "https://api.example.com/mcp", Auth: autoAuth, Enabled: true, ConnectOnStartup: true,
				Headers: map[string]string{"X-API-Key": secret, "X-Tenant": "acme"}}, ""},
		{"cursor env: syntax", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Api-Key": "${env:KEY}"}}}}`,
			&Server{ID: "api", Name: "api", URL: "https://api.example.com/mcp", Auth: autoAuth, Enabled: true, ConnectOnStartup: true,
				Headers: map[string]string{"X-Api-Key": secret}}, ""},
		{"vs code", `{"servers": {"api": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"X-Api-Key": "Key ${env:KEY}"}}}}`,
			&Server{ID: "api", Name: "api", URL: "https://api.example.com/mcp", Auth: autoAuth, Enabled: true, ConnectOnStartup: true,
				Headers: map[string]string{"X-Api-Key": "Key " + secret}}, ""},
		{"default value", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Region": "${REGION:-eu}"}}}}`,
			&Server{ID: "api", Name: "api", URL: "https://api.example.com/mcp", Auth: autoAuth, Enabled: true, ConnectOnStartup: true,
				Headers: map[string]string{"X-Region": "eu"}}, ""},
		{"with bearer", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp",
			"headers": {"Authorization": "Bearer ${TOKEN}", "X-Api-Key": "${KEY}"}}}}`,
			&Server{ID: "api", Name: "api", URL: "https://api.example.com/mcp", Auth: Auth{Kind: AuthBearer, Token: "tok-1"}, Enabled: true, ConnectOnStartup: true,
				Headers: map[string]string{"X-Api-Key": secret}}, ""},
		{"with oauth", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Tenant": "acme"}, "oauth": {"clientId": "cid"}}}}`,
			&Server{ID: "api", Name: "api", URL: "https://api.example.com/mcp", Auth: Auth{Kind: AuthOAuth, ClientID: "cid"}, Enabled: true, ConnectOnStartup: true,
				Headers: map[string]string{"X-Tenant": "acme"}}, ""},
		{"mcp-remote --header", `{"mcpServers": {"api": {"command": "npx", "args": ["-y", "mcp-remote", "https://api.example.com/mcp", "--header", "X-Api-Key:${KEY}"]}}}`,
			&Server{ID: "api", Name: "api", URL: "https://api.example.com/mcp", Auth: autoAuth, Enabled: true, ConnectOnStartup: true,
				Headers: map[string]string{"X-Api-Key": secret}}, ""},
		{"missing variable", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Api-Key": "${NOT_SET}", "X-Other": "${KEY}"}}}}`,
			nil, "header X-Api-Key: environment variable NOT_SET is not set"},
		{"env: missing variable", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Api-Key": "${env:NOT_SET}"}}}}`,
			nil, "environment variable NOT_SET is not set"},
		{"reserved Host", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"Host": "${KEY}"}}}}`,
			nil, "headers.Host: cannot be set: the MCP transport owns this header"},
		{"reserved Mcp-Session-Id", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"mcp-session-id": "${KEY}"}}}}`,
			nil, "headers.mcp-session-id: cannot be set"},
		{"reserved Mcp-Protocol-Version", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"Mcp-Protocol-Version": "2025-06-18"}}}}`,
			nil, "cannot be set"},
		{"name with the value pasted in", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Api-Key: ` + secret + `": ""}}}}`,
			nil, `the name "X-Api-Key" followed by ':' is not a valid header name`},
		{"value with a line break", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Api-Key": "${KEY}\r\nX-Injected: 1"}}}}`,
			nil, "value contains a control character"},
		{"names differing in case", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Key": "${KEY}", "x-key": "${KEY}"}}}}`,
			nil, "names ignore case"},
		{"value not a string", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Key": 5}}}}`,
			nil, "header X-Key must be a string, not a number"},
		{"bad name not a string", `{"mcpServers": {"api": {"url": "https://api.example.com/mcp", "headers": {"X-Key: ` + secret + `": 5}}}}`,
			nil, "must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Import([]byte(tt.in), envOf(env))
			if err != nil {
				t.Fatalf("Import: %v", err)
			}
			if tt.want != nil {
				if len(res.Servers) != 1 || !reflect.DeepEqual(res.Servers[0], *tt.want) {
					t.Fatalf("servers:\n%s\nwant\n  %+v\nskipped: %s", dump(res.Servers), *tt.want, dumpSkipped(res.Skipped))
				}
				return
			}
			if len(res.Servers) != 0 || len(res.Skipped) != 1 {
				t.Fatalf("want one skipped entry, got servers:\n%s\nskipped:\n%s", dump(res.Servers), dumpSkipped(res.Skipped))
			}
			reason := res.Skipped[0].Reason
			if !strings.Contains(reason, tt.skipReason) {
				t.Errorf("reason %q lacks %q", reason, tt.skipReason)
			}
			if strings.Contains(reason, secret) || strings.Contains(reason, "SECRET") {
				t.Errorf("reason %q shows a header value", reason)
			}
		})
	}
}

// A validation error names the header and the rule, never the value,
// and never more of a malformed name than its valid beginning.
func TestHeaderValidationNeverShowsValue(t *testing.T) {
	const secret = "sk-live-SECRET-7731"
	base := Server{ID: "s", URL: "https://mcp.example.com/mcp", Auth: Auth{Kind: AuthNone}}
	tests := []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"authorization", map[string]string{"Authorization": "Bearer " + secret}, "headers.Authorization: cannot be set: remotemcp sends Authorization itself"},
		{"authorization any case", map[string]string{"authorization": secret}, "cannot be set"},
		{"host", map[string]string{"Host": secret}, "headers.Host: cannot be set"},
		{"content-length", map[string]string{"Content-Length": secret}, "cannot be set"},
		{"mcp-session-id", map[string]string{"Mcp-Session-Id": secret}, "cannot be set"},
		{"mcp-protocol-version", map[string]string{"MCP-PROTOCOL-VERSION": secret}, "cannot be set"},
		{"control character", map[string]string{"X-Key": secret + "\n"}, "headers.X-Key: value contains a control character"},
		{"too long", map[string]string{"X-Key": secret + strings.Repeat("x", MaxHeaderValue)}, "the limit is 8192"},
		{"pasted line as name", map[string]string{"X-Key: " + secret: ""}, `server s: headers: the name "X-Key" followed by ':' is not a valid header name`},
		{"name starting with a space", map[string]string{" " + secret: ""}, "a name starting with ' ' is not a valid header name"},
		{"empty name", map[string]string{"": secret}, "has an empty name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base.Clone()
			s.Headers = tt.headers
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the value: %v", err)
			}
		})
	}
	// Too many headers.
	s := base.Clone()
	s.Headers = map[string]string{}
	for i := range MaxHeaders + 1 {
		s.Headers["X-H"+strings.Repeat("a", i)] = secret
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "the limit is 32") || strings.Contains(err.Error(), secret) {
		t.Fatalf("too many headers: %v", err)
	}
}
