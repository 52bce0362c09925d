package frontend_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/localapi"
)

// fullServer is an MCP server whose tools, prompt, resource and template
// have every field of their definitions set: the tool "full" also has an
// output schema whose members are out of order and $defs, and the tool
// "long" a description past the agent's 2048-character bound and its
// title only in its annotations.
func fullServer() *mcp.Server {
	yes, no := true, false
	icons := []mcp.Icon{
		{Source: "https://example.com/icon.png", MIMEType: "image/png", Sizes: []string{"48x48", "96x96"}, Theme: "light"},
		{Source: "data:image/svg+xml;base64,PHN2Zy8+", MIMEType: "image/svg+xml", Sizes: []string{"any"}, Theme: "dark"},
	}
	meta := func(kind string) mcp.Meta {
		return mcp.Meta{"com.example/kind": kind, "com.example/nested": map[string]any{"z": 1.5, "a": []any{"x", true, nil}}}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "full", Version: "1"}, nil)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	srv.AddTool(&mcp.Tool{
		Name: "full", Title: "The Full Tool", Description: "Has every field.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"q":{"$ref":"#/$defs/q"}},"$defs":{"q":{"type":"string","minLength":1}},"required":["q"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["hits"],"properties":{"hits":{"type":"array","items":{"$ref":"#/$defs/hit"}}},"$defs":{"hit":{"type":"string"}}}`),
		Annotations:  &mcp.ToolAnnotations{Title: "Full (annotated)", ReadOnlyHint: true, DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &yes},
		Icons:        icons,
		Meta:         meta("tool"),
	}, handler)
	srv.AddTool(&mcp.Tool{
		Name: "long", Description: strings.Repeat("A long description. ", 200),
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{Title: "Only in the annotations"},
	}, handler)
	srv.AddPrompt(&mcp.Prompt{
		Name: "brief", Title: "A Brief", Description: "Writes a brief.",
		Arguments: []*mcp.PromptArgument{
			{Name: "topic", Title: "Topic", Description: "what about", Required: true},
			{Name: "tone", Title: "Tone", Description: "how it sounds"},
		},
		Icons: icons, Meta: meta("prompt"),
	}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "brief"}}}}, nil
	})
	ann := &mcp.Annotations{Audience: []mcp.Role{"user", "assistant"}, Priority: 0.25, LastModified: "2025-01-12T15:00:58Z"}
	srv.AddResource(&mcp.Resource{
		URI: "full://doc", Name: "doc", Title: "The Doc", Description: "A document.", MIMEType: "text/markdown", Size: 1234,
		Annotations: ann, Icons: icons, Meta: meta("resource"),
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "full://doc", Text: "doc"}}}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "full://items/{id}", Name: "item", Title: "An Item", Description: "One item.", MIMEType: "application/json",
		Annotations: ann, Icons: icons, Meta: meta("template"),
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	return srv
}

// serve serves srv over Streamable HTTP on loopback; closing the returned
// server makes it unreachable.
func serve(t *testing.T, srv *mcp.Server) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs
}

// catalog is what one client is offered, keyed by the server's own names
// and URIs.
type catalog struct {
	tools     map[string]*mcp.Tool
	prompts   map[string]*mcp.Prompt
	resources map[string]*mcp.Resource
	templates map[string]*mcp.ResourceTemplate
}

// listAll lists everything cs is offered. prefix is what the front end
// put before the server's names ("" in --server mode); the items are
// keyed by the server's own names with their names set back to them.
func listAll(ctx context.Context, t *testing.T, cs *mcp.ClientSession, prefix string) catalog {
	t.Helper()
	c := catalog{tools: map[string]*mcp.Tool{}, prompts: map[string]*mcp.Prompt{},
		resources: map[string]*mcp.Resource{}, templates: map[string]*mcp.ResourceTemplate{}}
	own := func(name string) string {
		n, ok := strings.CutPrefix(name, prefix)
		if !ok {
			t.Errorf("offered name %q lacks the prefix %q", name, prefix)
		}
		return n
	}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tool.Name = own(tool.Name)
		c.tools[tool.Name] = tool
	}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		p.Name = own(p.Name)
		c.prompts[p.Name] = p
	}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		c.resources[r.URI] = r
	}
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		c.templates[r.URITemplate] = r
	}
	return c
}

// sameJSON compares two definitions field by field (each encoded as JSON)
// and reports every field that differs.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	fields := func(v any) map[string]json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return m
	}
	g, w := fields(got), fields(want)
	for k, wv := range w {
		if gv, ok := g[k]; !ok || !equalJSON(gv, wv) {
			t.Errorf("%s: field %s is %s, want %s", what, k, clip(gv), clip(wv))
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("%s: field %s is %s, the server sent none", what, k, clip(gv))
		}
	}
}

// clip shortens a value for a message.
func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func equalJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// compare checks that the front end offered every definition of direct
// unchanged but for the name.
func compare(t *testing.T, mode string, got, direct catalog) {
	t.Helper()
	check := func(kind string, n, want int) {
		if n != want {
			t.Errorf("%s: %d %s offered, the server lists %d", mode, n, kind, want)
		}
	}
	check("tools", len(got.tools), len(direct.tools))
	check("prompts", len(got.prompts), len(direct.prompts))
	check("resources", len(got.resources), len(direct.resources))
	check("templates", len(got.templates), len(direct.templates))
	for name, want := range direct.tools {
		sameJSON(t, mode+": tool "+name, got.tools[name], want)
	}
	for name, want := range direct.prompts {
		sameJSON(t, mode+": prompt "+name, got.prompts[name], want)
	}
	for uri, want := range direct.resources {
		sameJSON(t, mode+": resource "+uri, got.resources[uri], want)
	}
	for uri, want := range direct.templates {
		sameJSON(t, mode+": template "+uri, got.templates[uri], want)
	}
}

// connectDirect connects a go-sdk client straight to the server.
func connectDirect(ctx context.Context, t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// engines are the ways a front end reaches the engine: in-process, and
// through the daemon's local API on a Unix socket.
func engines(ctx context.Context, t *testing.T, eng *remotemcp.Client) map[string]localapi.Engine {
	t.Helper()
	api, stop, err := daemon.InProcess(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return map[string]localapi.Engine{"in-process": eng, "daemon socket": api}
}

// Issue #19 item 4: a host of the front end is offered every field of
// every tool, prompt, resource and template definition as the server
// sent it (title, description, input and output schema, annotations,
// icons, _meta; arguments with their titles; mimeType, size), in
// --server mode and in aggregate mode (only the names differ), through
// the engine in-process and through the daemon's socket, from a live
// session and from the stored catalog of a server that is not
// connected.
func TestWholeDefinitionsPassThrough(t *testing.T) {
	ctx := t.Context()
	hs := serve(t, fullServer())
	direct := listAll(ctx, t, connectDirect(ctx, t, hs.URL), "")
	if tool := direct.tools["full"]; tool == nil || tool.OutputSchema == nil || tool.Meta == nil || len(tool.Icons) != 2 || tool.Annotations == nil {
		t.Fatalf("the direct listing lacks fields: %+v", tool)
	}

	dir := t.TempDir()
	first, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	var closeFirst sync.Once
	t.Cleanup(func() { closeFirst.Do(func() { first.Close() }) })
	// Trusted, so that the annotations pass whole (SPEC §9 A8).
	if _, err := first.AddServer(ctx, localapi.AddServerRequest{ID: "full", URL: hs.URL, By: localapi.ByServersAdd, Trusted: true}); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, engs map[string]localapi.Engine) {
		for how, eng := range engs {
			for _, mode := range []struct {
				name   string
				o      frontend.Options
				prefix string
			}{
				{"--server", frontend.Options{Engine: eng, ServerID: "full"}, ""},
				{"aggregate", frontend.Options{Engine: eng}, "full__"},
			} {
				cs := hostOf(ctx, t, mode.o)
				compare(t, how+", "+mode.name, listAll(ctx, t, cs, mode.prefix), direct)
			}
		}
	}
	t.Run("live", func(t *testing.T) { run(t, engines(ctx, t, first)) })

	// Another engine on the data directory, the server unreachable: what
	// the host is offered can only come from the stored catalog.
	t.Run("stored", func(t *testing.T) {
		closeFirst.Do(func() {
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
		})
		hs.CloseClientConnections()
		hs.Close()
		second, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, NoStartupConnect: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { second.Close() })
		run(t, engines(ctx, t, second))
	})
}

// fullOutputSchema is the output schema of fullServer's tool "full", as
// its server sends it.
const fullOutputSchema = `{"type":"object","required":["hits"],"properties":{"hits":{"type":"array","items":{"$ref":"#/$defs/hit"}}},"$defs":{"hit":{"type":"string"}}}`

// Issue #19 item 4: the local API carries a tool's output schema as the
// server's bytes (members in its order), in-process and over the socket.
func TestOutputSchemaBytesKept(t *testing.T) {
	ctx := t.Context()
	eng := openEngine(t, ctx)
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "full", URL: serve(t, fullServer()).URL, By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	for how, e := range engines(ctx, t, eng) {
		tl, err := e.Tools(ctx, localapi.ToolsRequest{ServerID: "full", Connect: true})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tool := range tl.Tools {
			if tool.ToolName == "full" {
				found = true
				if string(tool.OutputSchema) != fullOutputSchema {
					t.Errorf("%s: outputSchema %s, want the server's bytes %s", how, tool.OutputSchema, fullOutputSchema)
				}
			}
		}
		if !found {
			t.Errorf("%s: tool full not listed: %+v", how, tl)
		}
	}
}

// logBuffer collects a front end's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Issue #19 item 4: an output schema that cannot be offered costs the
// host that schema, not the tool nor the listing. Not a JSON object: left
// out when listed. An object schema without "type": offered with "type":
// "object" (hosts on the TypeScript SDK refuse a listing without it). Of
// another type: left out by the front end, with a log line.
func TestMalformedOutputSchemas(t *testing.T) {
	ctx := t.Context()
	srv := mcp.NewServer(&mcp.Implementation{Name: "bad", Version: "1"}, nil)
	handler := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	for name, schema := range map[string]string{
		"text":    `"x"`,
		"list":    `[{"type":"object"}]`,
		"array":   `{"type":"array","items":{"type":"string"}}`,
		"untyped": `{"properties":{"n":{"type":"number"}},"required":["n"]}`,
		"good":    `{"type":"object","properties":{"n":{"type":"number"}}}`,
	} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(schema)}, handler)
	}
	eng := openEngine(t, ctx)
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "bad", URL: serve(t, srv).URL, By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"text":    "",
		"list":    "",
		"array":   "",
		"untyped": `{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`,
		"good":    `{"type":"object","properties":{"n":{"type":"number"}}}`,
	}
	for how, e := range engines(ctx, t, eng) {
		var logs logBuffer
		cs := hostOf(ctx, t, frontend.Options{Engine: e, ServerID: "bad", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		got := listAll(ctx, t, cs, "").tools
		for name, w := range want {
			tool := got[name]
			if tool == nil {
				t.Errorf("%s: tool %s not offered", how, name)
				continue
			}
			var g []byte
			if tool.OutputSchema != nil {
				g, _ = json.Marshal(tool.OutputSchema)
			}
			if !(w == "" && g == nil || w != "" && equalJSON(g, json.RawMessage(w))) {
				t.Errorf("%s: tool %s offered with outputSchema %s, want %s", how, name, g, w)
			}
		}
		if l := logs.String(); !strings.Contains(l, "tool=array") || !strings.Contains(l, "outputSchema") {
			t.Errorf("%s: no log line for the array schema left out:\n%s", how, l)
		}
	}
}
