package engine_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// TestServerHeadersAPI: custom headers through the engine (SPEC §9 A2).
// Values are write-only: the view has names only, an error never shows a
// value, and the header reaches the MCP endpoint.
func TestServerHeadersAPI(t *testing.T) {
	const key, key2 = "api-SECRET-key-71d3", "api-SECRET-key2-c40a"
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	noSecret := func(what string, v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), key) || strings.Contains(string(b), key2) {
			t.Fatalf("%s carries a header value: %s", what, b)
		}
	}

	res, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL(),
		Headers: map[string]string{"X-Api-Key": key, "X-Tenant": "acme"}, ProtocolVersion: "default", LogLevel: "debug"})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Server
	noSecret("the added server", res)
	if !slices.Equal(v.HeaderNames, []string{"X-Api-Key", "X-Tenant"}) || v.ProtocolVersion != "" || v.LogLevel != "debug" {
		t.Fatalf("view: %+v", v)
	}
	// The daemon scrubs what KnownSecrets names from everything it sends.
	known, err := c.KnownSecrets(ctx)
	if err != nil || !slices.Contains(known, key) || !slices.Contains(known, "acme") {
		t.Fatalf("KnownSecrets = %v, %v; want the header values", known, err)
	}

	if _, err := c.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Requests() {
		if r.Header.Get("X-Api-Key") != key || r.Header.Get("X-Tenant") != "acme" {
			t.Fatalf("%s %s without the headers: %v", r.Method, r.RPCMethod, r.Header)
		}
	}

	// Refused names: bad request naming the header, never the value.
	for _, name := range []string{"Authorization", "Host", "Mcp-Session-Id", "Mcp-Protocol-Version"} {
		_, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Headers: map[string]string{name: key2}})
		e, ok := localapi.AsError(err)
		if !ok || e.Code != localapi.CodeBadRequest || e.Field != "headers."+name || !strings.Contains(e.Message, "cannot be set") {
			t.Fatalf("%s: %v", name, err)
		}
		noSecret("the error", e)
	}
	if _, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Headers: map[string]string{"X-A": "1"}, UnsetHeaders: []string{"x-a"}}); code(err) != localapi.CodeBadRequest {
		t.Fatalf("set and unset: %v", err)
	}

	// Another resource: the values do not follow unless given again.
	moved := strings.Replace(f.URL(), "/mcp", "/v2/mcp", 1)
	_, err = c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{URL: &moved})
	e, ok := localapi.AsError(err)
	if !ok || e.Code != localapi.CodeConflict || e.Field != "headers" || !strings.Contains(e.Message, "X-Api-Key, X-Tenant") {
		t.Fatalf("move with the old values: %v", err)
	}
	noSecret("the rebind error", e)
	up, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{URL: &moved,
		Headers: map[string]string{"X-Api-Key": key2}, UnsetHeaders: []string{"X-TENANT", "X-Gone"}})
	if err != nil {
		t.Fatal(err)
	}
	noSecret("the update result", up)
	if !slices.Equal(up.Server.HeaderNames, []string{"X-Api-Key"}) || len(up.Warnings) != 1 || !strings.Contains(up.Warnings[0], `no header "X-Gone"`) {
		t.Fatalf("update: %+v", up)
	}
	pin := "2025-03-26"
	if up, err = c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{ProtocolVersion: &pin}); err != nil || up.Server.ProtocolVersion != pin {
		t.Fatalf("pin: %+v %v", up, err)
	}
	list, err := c.Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	noSecret("the server list", list)
}

// TestImportHeadersAPI: an import keeps headers with their ${VAR}s
// expanded from the request's Env only, reports the names, and finds the
// same document unchanged the second time.
func TestImportHeadersAPI(t *testing.T) {
	const key = "import-api-SECRET-5e09"
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	doc := `{"mcpServers": {"search": {"url": "https://search.example.com/mcp", "headers": {"X-Api-Key": "${KEY}"}}}}`
	res, err := c.Import(ctx, localapi.ImportRequest{Config: doc, Env: map[string]string{"KEY": key}})
	if err != nil || len(res.Added) != 1 || !slices.Equal(res.Added[0].HeaderNames, []string{"X-Api-Key"}) {
		t.Fatalf("import: %+v %v", res, err)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), key) {
		t.Fatalf("the import result carries the value: %s", b)
	}
	res, err = c.Import(ctx, localapi.ImportRequest{Config: doc, Env: map[string]string{"KEY": key}})
	if err != nil || len(res.Unchanged) != 1 {
		t.Fatalf("second import: %+v %v", res, err)
	}
	// Without the variable the entry is skipped, naming it.
	res, err = c.Import(ctx, localapi.ImportRequest{Config: strings.Replace(doc, "search", "other", 1)})
	if err != nil || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0].Reason, "environment variable KEY is not set") {
		t.Fatalf("import without the variable: %+v %v", res, err)
	}
}
