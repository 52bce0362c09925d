package frontend_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

func toolNames(ctx context.Context, t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// Issue #14: in search mode the host sees the search tool and the pinned
// tools; a search returns names, descriptions and schemas and adds the
// found tools to the host's list (list_changed), where they are called by
// their own names. auto searches only above its threshold.
func TestSearchMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	f := testkit.StartFixture(t, fixture.Options{})
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL(), By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	res, err := eng.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{PinTools: []string{"echo", "no_such_tool"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Server.PinnedTools, []string{"echo", "no_such_tool"}) {
		t.Fatalf("pinned %v", res.Server.PinnedTools)
	}

	if _, err := frontend.New(ctx, frontend.Options{Engine: eng, Tools: "some"}); err == nil {
		t.Error("tools mode \"some\": no error")
	}
	all := toolNames(ctx, t, hostOf(ctx, t, frontend.Options{Engine: eng, Tools: frontend.ToolsAuto}))
	if len(all) < 5 || slices.Contains(all, frontend.SearchToolName) {
		t.Fatalf("auto below the threshold offers %v, want every tool and no search", all)
	}

	changed := make(chan struct{}, 8)
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng, Tools: frontend.ToolsAuto, SearchThreshold: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fe.Run(rctx, st) }()
	t.Cleanup(func() { stop(); <-done })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := toolNames(ctx, t, cs); !slices.Equal(got, []string{"fx__echo", frontend.SearchToolName}) {
		t.Fatalf("search mode offers %v, want the pinned fx__echo and %s", got, frontend.SearchToolName)
	}
	// A name not offered cannot be called: no generic "call any tool".
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__add", Arguments: map[string]any{"a": 1, "b": 2}}); err == nil && !r.IsError {
		t.Fatal("fx__add was callable before a search found it")
	}
	sr, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: frontend.SearchToolName, Arguments: map[string]any{"query": "add two numbers together", "limit": 3}})
	if err != nil || sr.IsError {
		t.Fatalf("search: %v %+v", err, sr)
	}
	found, _ := sr.StructuredContent.(map[string]any)["tools"].([]any)
	if len(found) == 0 || found[0].(map[string]any)["name"] != "fx__add" || found[0].(map[string]any)["inputSchema"] == nil {
		t.Fatalf("search found %v, want fx__add first with its schema", found)
	}
	if text := sr.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "fx__add") {
		t.Errorf("search text %q does not name fx__add", text)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after the search")
	}
	if got := toolNames(ctx, t, cs); !slices.Contains(got, "fx__add") || !slices.Contains(got, "fx__echo") {
		t.Fatalf("after the search the host has %v", got)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil || r.IsError || r.Content[0].(*mcp.TextContent).Text != "3" {
		t.Fatalf("fx__add after the search: %v %+v", err, r)
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: frontend.SearchToolName, Arguments: map[string]any{}}); err != nil || !r.IsError {
		t.Errorf("a search without a query: %v %+v, want a tool error", err, r)
	}
}
