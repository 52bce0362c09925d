package frontend_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/localapi"
)

// backend serves srv over Streamable HTTP on loopback and adds it to a
// fresh engine as server id; it returns the engine.
func backend(ctx context.Context, t *testing.T, id string, srv *mcp.Server) *remotemcp.Client {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	eng, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: id, URL: hs.URL, By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	return eng
}

// Issue #13: a prompt's messages reach the host as the server sent them
// (SPEC §9 A8): an embedded resource stays an embedded resource, an
// image an image.
func TestPromptPassesThrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "doc"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Description: "a doc", Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://doc", MIMEType: "text/plain", Text: "the doc"}}},
			{Role: "assistant", Content: &mcp.ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/png"}},
		}}, nil
	})
	eng := backend(ctx, t, "p", srv)
	for _, o := range []frontend.Options{{Engine: eng}, {Engine: eng, ServerID: "p"}} {
		cs := hostOf(ctx, t, o)
		name := "doc"
		if o.ServerID == "" {
			name = "p__doc"
		}
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 2 {
			t.Fatalf("%s: %d messages, want 2", name, len(res.Messages))
		}
		er, ok := res.Messages[0].Content.(*mcp.EmbeddedResource)
		if !ok || er.Resource == nil || er.Resource.URI != "test://doc" || er.Resource.Text != "the doc" {
			t.Errorf("%s: first message %#v, want the embedded resource test://doc", name, res.Messages[0].Content)
		}
		if img, ok := res.Messages[1].Content.(*mcp.ImageContent); !ok || string(img.Data) != "\x01\x02\x03" || res.Messages[1].Role != "assistant" {
			t.Errorf("%s: second message %#v, want the image", name, res.Messages[1])
		}
		if res.Description != "a doc" {
			t.Errorf("%s: description %q", name, res.Description)
		}
	}
}
