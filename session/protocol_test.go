package session

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// oldServer is a go-sdk server that speaks only 2025-03-26: a middleware
// rewrites the revision the client offers in initialize, so go-sdk answers
// with 2025-03-26, as a server of that revision would.
func oldServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "old", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"initialize"`)) {
				var m map[string]any
				if json.Unmarshal(body, &m) == nil {
					if p, ok := m["params"].(map[string]any); ok {
						p["protocolVersion"] = "2025-03-26"
					}
					body, _ = json.Marshal(m)
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// SPEC §9 A6: by default a 2025-03-26 server is accepted and works (tools,
// calls); a server pinned to another revision is refused with the pin
// named; a pin to 2026-07-28 negotiates it where the server offers it.
func TestProtocolRevisions(t *testing.T) {
	old := oldServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := config.Server{ID: "old", URL: old, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true}
	s, err := Connect(ctx, Options{Server: srv})
	if err != nil {
		t.Fatalf("a 2025-03-26 server was refused: %v", err)
	}
	defer s.Close()
	if v := s.ProtocolVersion(); v != "2025-03-26" {
		t.Fatalf("negotiated %q", v)
	}
	res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"old"}`), CallOptions{})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "old" {
		t.Fatalf("call on a 2025-03-26 server: %v", err)
	}

	pinned := srv
	pinned.ProtocolVersion = "2025-11-25"
	if _, err := Connect(ctx, Options{Server: pinned}); err == nil || !strings.Contains(err.Error(), "protocolVersion pin") {
		t.Fatalf("a pin to 2025-11-25 accepted a 2025-03-26 server: %v", err)
	}

	// go-sdk serves 2026-07-28 (server/discover) only when stateless.
	f := testkit.StartFixture(t, fixture.Options{Stateless: true})
	draft := config.Server{ID: "draft", URL: f.URL(), Auth: config.Auth{Kind: config.AuthNone}, Enabled: true, ProtocolVersion: "2026-07-28"}
	ds, err := Connect(ctx, Options{Server: draft})
	if err != nil {
		t.Fatalf("pin 2026-07-28: %v", err)
	}
	defer ds.Close()
	if v := ds.ProtocolVersion(); v != "2026-07-28" {
		t.Fatalf("pinned to 2026-07-28, negotiated %q", v)
	}
	def := connect(t, f, Options{})
	if v := def.ProtocolVersion(); v != "2025-11-25" {
		t.Fatalf("default negotiated %q; want 2025-11-25 (2026-07-28 is opt-in)", v)
	}
}

// SPEC §9 A2: a server's custom headers reach its MCP endpoint on every
// request.
func TestCustomHeadersSent(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Connect(ctx, Options{Server: config.Server{ID: "h", URL: f.URL(), Auth: config.Auth{Kind: config.AuthNone},
		Enabled: true, Headers: map[string]string{"X-Api-Key": "k-123"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"x"}`), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := f.Requests()
	if len(reqs) == 0 {
		t.Fatal("no requests recorded")
	}
	for _, r := range reqs {
		if got := r.Header.Get("X-Api-Key"); got != "k-123" {
			t.Fatalf("%s %s: X-Api-Key = %q", r.Method, r.RPCMethod, got)
		}
	}
}

// SEP-2243 (draft 2026-07-28): a tool whose input schema marks a
// parameter with x-mcp-header gets it mirrored as Mcp-Param-* on its
// call. go-sdk reads the decoded schema from its own list cache, so the
// catalog's trimming of its copy must leave go-sdk's alone (the official
// conformance scenario http-custom-headers caught it).
func TestDraftParamHeadersSent(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "draft", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "where", InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"region": map[string]any{"type": "string", "x-mcp-header": "Region"},
		},
	}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	got := make(chan string, 8)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			got <- r.Header.Get("Mcp-Param-Region")
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	ctx := testkit.Context(t)
	s, err := Connect(ctx, Options{Server: config.Server{ID: "d", URL: hs.URL + "/mcp", Auth: config.Auth{Kind: config.AuthNone},
		Enabled: true, ProtocolVersion: "2026-07-28"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if tools := s.Catalog().Tools; len(tools) != 1 || len(tools[0].RawInputSchema) == 0 || tools[0].InputSchema != nil {
		t.Fatalf("catalog keeps the raw schema only: %+v", tools)
	}
	if _, err := s.CallTool(ctx, "where", json.RawMessage(`{"region":"us-west1"}`), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if v != "us-west1" {
			t.Fatalf("Mcp-Param-Region = %q; want us-west1", v)
		}
	default:
		t.Fatal("the server saw no tools/call with an Mcp-Method header")
	}
}
