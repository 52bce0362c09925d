package session

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
)

// Issue #20 item 3, review finding 1: through the real transport, a
// server's question is marked by the stream that carried it. On the
// call's stream it names the call (and not the standalone stream); on the
// standalone GET stream it names no call and says standalone; on another
// request's stream (a prompts/get's) it says neither. Before, the last two
// were the same, so elicit gave a prompt's question to a call in flight.
func TestRelatedMarkPerStream(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "h", Version: "1"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}}
	ask := func(ctx context.Context, ss *mcp.ServerSession) {
		_, _ = ss.Elicit(ctx, &mcp.ElicitParams{Message: "q", RequestedSchema: schema})
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "own"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		ask(ctx, req.Session)
		return &mcp.CallToolResult{}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "stray"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		// No related request: go-sdk sends it on the standalone stream.
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ask(sctx, req.Session)
		return &mcp.CallToolResult{}, nil, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		ask(ctx, req.Session)
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "x"}}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	type seen struct {
		call       string
		standalone bool
	}
	got := make(chan seen, 4)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s, err := Connect(ctx, Options{
		Server: config.Server{ID: "h", URL: hs.URL, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true},
		Elicit: func(ctx context.Context, _ string, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			got <- seen{RelatedCall(ctx), FromStandaloneStream(ctx)}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	next := func(what string) seen {
		select {
		case v := <-got:
			return v
		case <-ctx.Done():
			t.Fatalf("%s: no question reached the handler", what)
			return seen{}
		}
	}
	if _, err := s.CallTool(ctx, "own", nil, CallOptions{OperationID: "op-own"}); err != nil {
		t.Fatal(err)
	}
	if v := next("call's stream"); v != (seen{call: "op-own"}) {
		t.Errorf("question on the call's stream: %+v, want the call op-own", v)
	}
	if _, err := s.CallTool(ctx, "stray", nil, CallOptions{OperationID: "op-stray"}); err != nil {
		t.Fatal(err)
	}
	if v := next("standalone stream"); v != (seen{standalone: true}) {
		t.Errorf("question on the standalone stream: %+v, want standalone and no call", v)
	}
	if _, err := s.GetPrompt(ctx, "p", nil); err != nil {
		t.Fatal(err)
	}
	if v := next("prompt's stream"); v != (seen{}) {
		t.Errorf("question on a prompts/get's stream: %+v, want neither a call nor the standalone stream", v)
	}
}

// Issue #20 item 3, review finding 1: go-sdk reopens a broken standalone
// stream with Last-Event-ID; a question on the reopened stream is still
// the standalone stream's (marked standalone, no call), not taken for a
// request's resumed stream.
func TestRelatedMarkResumedStandaloneStream(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "h", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	resumed := make(chan string, 4)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		// The standalone stream, played by hand: the first GET gets one
		// event with an id and ends; the GET that resumes it asks.
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		last := r.Header.Get("Last-Event-ID")
		if last == "" {
			io.WriteString(w, "id: s-1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
			return
		}
		resumed <- last
		io.WriteString(w, "id: s-2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"q-1\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"q\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })

	type seen struct {
		call       string
		standalone bool
	}
	got := make(chan seen, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // bounds only a hang
	defer cancel()
	s, err := Connect(ctx, Options{
		Server: config.Server{ID: "h", URL: hs.URL, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true},
		Elicit: func(ctx context.Context, _ string, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			got <- seen{RelatedCall(ctx), FromStandaloneStream(ctx)}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	select {
	case v := <-got:
		if v != (seen{standalone: true}) {
			t.Errorf("question on the resumed standalone stream: %+v, want standalone and no call", v)
		}
	case <-ctx.Done():
		t.Fatal("no question reached the handler")
	}
	if last := <-resumed; last != "s-1" {
		t.Errorf("resumed with Last-Event-ID %q", last)
	}
}
