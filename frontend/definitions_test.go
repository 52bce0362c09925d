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

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// serve serves srv over Streamable HTTP on loopback; closing the returned
// server makes it unreachable.
func serve(t *testing.T, srv *mcp.Server) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs
}

// listAll lists everything cs is offered (see fixture.List).
func listAll(ctx context.Context, t *testing.T, cs *mcp.ClientSession, prefix string) fixture.Listed {
	t.Helper()
	l, err := fixture.List(ctx, cs, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// compare checks that the front end offered every definition of direct
// unchanged but for the name.
func compare(t *testing.T, mode string, got, direct fixture.Listed) {
	t.Helper()
	for _, d := range fixture.Diff(got, direct) {
		t.Errorf("%s: %s", mode, d)
	}
}

// equalJSON reports whether two JSON texts are the same value.
func equalJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
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
func engines(ctx context.Context, t *testing.T, eng *engine.Engine) map[string]localapi.Engine {
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
	hs := serve(t, fixture.Definitions())
	direct := listAll(ctx, t, connectDirect(ctx, t, hs.URL), "")
	if tool := direct.Tools["full"]; tool == nil || tool.OutputSchema == nil || tool.Meta == nil || len(tool.Icons) != 2 || tool.Annotations == nil {
		t.Fatalf("the direct listing lacks fields: %+v", tool)
	}

	dir := t.TempDir()
	first, err := engine.Open(ctx, engine.Options{DataDir: dir, NoStartupConnect: true})
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
		second, err := engine.Open(ctx, engine.Options{DataDir: dir, NoStartupConnect: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { second.Close() })
		run(t, engines(ctx, t, second))
	})
}

// Issue #19 item 4: the local API carries a tool's output schema as the
// server's bytes (members in its order), in-process and over the socket.
func TestOutputSchemaBytesKept(t *testing.T) {
	ctx := t.Context()
	eng := openEngine(t, ctx)
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "full", URL: serve(t, fixture.Definitions()).URL, By: localapi.ByServersAdd}); err != nil {
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
				if string(tool.OutputSchema) != fixture.FullOutputSchema {
					t.Errorf("%s: outputSchema %s, want the server's bytes %s", how, tool.OutputSchema, fixture.FullOutputSchema)
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
		got := listAll(ctx, t, cs, "").Tools
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
