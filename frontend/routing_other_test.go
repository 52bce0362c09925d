package frontend_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue #20 item 3, review finding 1 (SPEC §9 A10): host A has the
// server's one tool call in flight; host B asks for a prompt, and the
// server puts a question on B's prompts/get response stream. That
// question belongs to B's request, not to A's call: it is declined and no
// host is asked (before, it was given to A's only call as if it came on
// the standalone stream, and host A was asked on B's behalf).
func TestQuestionOnAnotherRequestsStreamDeclined(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "hold", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		// ctx relates the question to this prompts/get: go-sdk sends it
		// on the request's own response stream.
		out := "question error"
		if res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "prompt question", RequestedSchema: nameSchema}); err == nil {
			out = "question " + res.Action
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: out}}}}, nil
	})
	eng := backend(ctx, t, "s", srv)
	url, tok := httpFrontend(t, ctx, eng, eng.Store)
	a := connectHost(t, ctx, url, tok, "A", true)
	b := connectHost(t, ctx, url, tok, "B", true)

	done := make(chan string, 1)
	go func() {
		res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__hold", Arguments: map[string]any{}})
		if err != nil {
			done <- "call error: " + err.Error()
			return
		}
		done <- resultText(res)
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("host A's call never reached the server")
	}
	pr, err := b.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "s__p"})
	close(release)
	if err != nil {
		t.Fatalf("host B's prompts/get: %v", err)
	}
	text := ""
	if len(pr.Messages) == 1 {
		if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if text != "question decline" {
		t.Errorf("the question on B's prompts/get stream: %q, want declined", text)
	}
	if got := <-done; got != "held" {
		t.Errorf("host A's call: %q", got)
	}
	for _, h := range []*routedHost{a, b} {
		if q, s := h.got(); len(q) != 0 || len(s) != 0 {
			t.Errorf("host %s was asked %q (sampled %q); want nothing", h.name, q, s)
		}
	}
}
