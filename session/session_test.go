package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

func connect(t *testing.T, f *fixture.Server, o Options) *Session {
	t.Helper()
	o.Server = config.Server{ID: "t", URL: f.URL(), Auth: config.Auth{Kind: config.AuthNone}, Enabled: true}
	if o.Server.Auth.Kind == "" {
		o.Server.Auth.Kind = config.AuthNone
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Connect(ctx, o)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// R4.1: the input schema reaches us byte for byte, although go-sdk decodes
// it into a map.
func TestRawInputSchemaBytesPreserved(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := connect(t, f, Options{})
	for _, tool := range s.Catalog().Tools {
		if tool.Name == "schema" {
			if !bytes.Equal(tool.RawInputSchema, []byte(fixture.SchemaToolInputSchema)) {
				t.Fatalf("schema bytes changed:\n got %s\nwant %s", tool.RawInputSchema, fixture.SchemaToolInputSchema)
			}
			return
		}
	}
	t.Fatal("schema tool not listed")
}

// R4.4: only the newest generation of a category commits, even when an
// older refresh finishes last; a failed refresh keeps the last good list.
func TestR4_4_OnlyNewestGenerationCommits(t *testing.T) {
	// Stateless: no standalone stream, so no list_changed refresh races
	// the generations this test sets by hand.
	f := testkit.StartFixture(t, fixture.Options{Stateless: true})
	s := connect(t, f, Options{})
	ctx := context.Background()
	before := len(s.Catalog().Tools)

	f.AddTool("late")
	s.mu.Lock()
	s.gens[KindTools] += 2 // a newer refresh has started meanwhile
	stale := s.gens[KindTools] - 1
	s.mu.Unlock()
	s.refresh(ctx, KindTools, stale)
	if n := len(s.Catalog().Tools); n != before {
		t.Fatalf("a stale generation committed: %d tools, want %d", n, before)
	}
	if err := s.RefreshNow(ctx, KindTools); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Catalog().Tools); n != before+1 {
		t.Fatalf("newest generation did not commit: %d tools", n)
	}
	gen := s.Catalog().Generations[KindTools]

	f.MalformedNext("tools/list")
	if err := s.RefreshNow(ctx, KindTools); err == nil {
		t.Fatal("malformed tools/list refresh succeeded")
	}
	c := s.Catalog()
	if len(c.Tools) != before+1 || c.Generations[KindTools] != gen || c.Errors[KindTools] == nil {
		t.Fatalf("failed refresh did not keep the last good list: %d tools, gen %d, err %v", len(c.Tools), c.Generations[KindTools], c.Errors[KindTools])
	}
	// Other categories are untouched by the tools failure.
	if c.Errors[KindPrompts] != nil || len(c.Prompts) == 0 {
		t.Fatalf("prompts affected by a tools failure: %v", c.Errors[KindPrompts])
	}
}

// list_changed from the server triggers a background refresh that commits
// and reports through OnCatalog with the session's connection id.
func TestListChangedNotifiesOwner(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	got := make(chan string, 10)
	s := connect(t, f, Options{ConnectionID: "c-test", OnCatalog: func(id string, c *Catalog) { got <- id }})
	testkit.WaitFor(t, "the standalone stream", func() bool { return f.StandaloneStreams() > 0 })
	f.AddPrompt("extra")
	select {
	case id := <-got:
		if id != "c-test" {
			t.Fatalf("OnCatalog with %q", id)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no catalog commit after prompts list_changed")
	}
	found := false
	for _, p := range s.Catalog().Prompts {
		found = found || p.Name == "extra"
	}
	if !found {
		t.Fatal("new prompt not in the catalog")
	}
}

// HTTP statuses become typed errors (go-sdk gives strings only).
func TestHTTPStatusTyped(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := connect(t, f, Options{})
	f.FailNextHTTP(503, 1)
	_, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), CallOptions{})
	var hs *HTTPStatusError
	if !errors.As(err, &hs) || hs.StatusCode != 503 || hs.RPCMethod != "tools/call" {
		t.Fatalf("err = %v, want HTTPStatusError 503 for tools/call", err)
	}
	if f.Executions("echo") != 0 {
		t.Fatal("a refused request executed")
	}
	// The session survives a 5xx.
	if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), CallOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestBearerHeaderAndRefusal(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(401)
			return false
		}
		return true
	}})
	srv := config.Server{ID: "t", URL: f.URL(), Auth: config.Auth{Kind: config.AuthBearer, Token: "bad"}, Enabled: true}
	_, err := Connect(context.Background(), Options{Server: srv})
	var hs *HTTPStatusError
	if !errors.As(err, &hs) || hs.StatusCode != 401 || len(hs.WWWAuthenticate) != 1 {
		t.Fatalf("err = %v, want a typed 401 with its challenge", err)
	}
	srv.Auth.Token = "good"
	s, err := Connect(context.Background(), Options{Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// A call whose context ended before it was sent is never sent; the
// session keeps no cancel records of its own (the manager's Op is the
// call's one record, issue #21 item 2), so the id works again at once.
func TestCancelledBeforeSend(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := connect(t, f, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"x"}`), CallOptions{OperationID: "op-1"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if f.Executions("echo") != 0 {
		t.Fatal("a call cancelled before it was sent was sent")
	}
	if _, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), CallOptions{OperationID: "op-1"}); err != nil {
		t.Fatal(err)
	}
}

func TestProgressRoutedByOperation(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := connect(t, f, Options{})
	updates := make(chan Progress, 100)
	_, err := s.CallTool(context.Background(), "slow", json.RawMessage(`{"ms":450}`), CallOptions{OperationID: "op-p", Progress: func(p Progress) {
		select {
		case updates <- p:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	// go-sdk delivers notifications asynchronously: one may arrive after
	// the result.
	testkit.Recv(t, "progress delivered to the call", updates)
}

func TestValidationRejects(t *testing.T) {
	obj := map[string]any{"type": "object"}
	cases := []struct {
		name string
		err  error
	}{
		{"empty tool name", validateTools([]*mcp.Tool{{Name: "", InputSchema: obj}})},
		{"duplicate tool", validateTools([]*mcp.Tool{{Name: "a", InputSchema: obj}, {Name: "a", InputSchema: obj}})},
		{"control char", validateTools([]*mcp.Tool{{Name: "a\x01", InputSchema: obj}})},
		{"schema not object", validateTools([]*mcp.Tool{{Name: "a", InputSchema: "x"}})},
		{"null tool", validateTools([]*mcp.Tool{nil})},
		{"null prompt", validatePrompts([]*mcp.Prompt{nil})},
		{"empty resource uri", validateResources([]*mcp.Resource{{URI: ""}})},
		{"null content", ValidateCallResult(&mcp.CallToolResult{Content: []mcp.Content{nil}})},
		{"nil result", ValidateCallResult(nil)},
		{"prompt role", ValidatePromptResult(&mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "system", Content: &mcp.TextContent{Text: "x"}}}})},
		{"read nil contents", ValidateReadResult(&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{nil}})},
	}
	for _, c := range cases {
		if !errors.Is(c.err, ErrValidation) {
			t.Errorf("%s: err = %v, want ErrValidation", c.name, c.err)
		}
	}
	if err := validateTools([]*mcp.Tool{{Name: "ok", InputSchema: obj}}); err != nil {
		t.Fatal(err)
	}
}

// The raw tools of a tools/list answer are recorded from JSON and SSE
// bodies, split at any point, of known or unknown length.
func TestCaptureToolsSplitReads(t *testing.T) {
	tool := `{"name":"x","inputSchema":{"b":1,"a":{"$ref":"#/$defs/q"}}}`
	json := `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tool + `]}}`
	sse := map[string]string{
		"sse":  "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[" + tool + "]}}\r\n\r\n",
		"sse2": "id: 1\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{\"tools\":[" + tool + "]}}\n\n",
	}
	check := func(name string, chunk int, sink *rawToolSink) {
		t.Helper()
		r, ok := sink.tool("x")
		if !ok || string(r.input) != `{"b":1,"a":{"$ref":"#/$defs/q"}}` {
			t.Fatalf("%s chunk %d: got %q", name, chunk, r.input)
		}
	}
	for chunk := 1; chunk < 8; chunk++ {
		for _, size := range []int64{-1, int64(len(json))} {
			sink := newRawToolSink()
			if out := throughJSON(t, json, chunk, size, sink); out != json {
				t.Fatalf("json size %d chunk %d: go-sdk reads %q", size, chunk, out)
			}
			check(fmt.Sprintf("json size %d", size), chunk, sink)
		}
		for name, body := range sse {
			sink := newRawToolSink()
			throughStream(t, body, chunk, 1<<20, capture{sink: sink})
			check(name, chunk, sink)
		}
	}
}

type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzCapture: recording raw tools and question schemas never panics,
// never changes what go-sdk reads of a JSON body, and keeps a bounded
// number of schemas (the framer's events: FuzzSSEFramer).
func FuzzCapture(f *testing.F) {
	f.Add([]byte(`{"result":{"tools":[{"name":"a","inputSchema":{}}]}}`))
	f.Add([]byte("data: {\"result\":{\"tools\":[1,2]}}\n\n"))
	f.Add([]byte("data: \n\n\r\n\r\n{"))
	f.Add([]byte(`{"result":{"tools":"x"}}`))
	f.Add([]byte("data: " + elicitMsg(`{"properties":{"b":{},"a":{}}}`) + "\r\n\r\n"))
	f.Add([]byte("data: [" + elicitMsg(`{}`) + ",1]\n\ndata: " + elicitMsg(`1e999`) + "\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		sink := newRawToolSink()
		if out := throughJSON(t, string(body), 7, -1, sink); out != string(body) {
			t.Fatal("the capture changed the bytes go-sdk reads")
		}
		sink.tool("a")
		es := newRawElicitSink()
		throughStream(t, string(body), 5, 1<<20, capture{sink: sink, elicit: es})
		if len(es.entries) > maxRawElicit {
			t.Fatalf("%d elicitation schemas kept", len(es.entries))
		}
		es.take(map[string]any{})
	})
}

func TestConnectRefusesClientTimeout(t *testing.T) {
	_, err := Connect(context.Background(), Options{HTTPClient: &http.Client{Timeout: time.Second}})
	if err == nil || !strings.Contains(err.Error(), "Timeout") {
		t.Fatalf("err = %v", err)
	}
}
