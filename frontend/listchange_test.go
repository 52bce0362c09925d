package frontend_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// Issue #21 (guard, for any cache of the host's tool list): a server
// that adds or removes a tool reaches the host's next listing, and the
// same catalog lists the same tools again.
func TestToolListFollowsCatalog(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	eng, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	fx := testkit.StartFixture(t, fixture.Options{})
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: fx.URL(), By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng, Tools: frontend.ToolsAll})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fe.Run(rctx, st) }()
	t.Cleanup(func() { stop(); <-done })
	changed := make(chan struct{}, 64)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	// waitList waits, list_changed by list_changed, until the host's
	// listing has (or, with !want, lacks) name.
	waitList := func(name string, want bool) {
		t.Helper()
		for slices.Contains(toolNames(ctx, t, cs), name) != want {
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("the host's listing never had %s = %t: %v", name, want, toolNames(ctx, t, cs))
			}
		}
	}

	first := toolNames(ctx, t, cs)
	if !slices.Contains(first, "fx__echo") || slices.Contains(first, "fx__dyn_a") {
		t.Fatalf("first listing %v", first)
	}
	if again := toolNames(ctx, t, cs); !slices.Equal(again, first) {
		t.Fatalf("the same catalog listed %v, then %v", first, again)
	}

	fx.AddTool("dyn_a")
	waitList("fx__dyn_a", true)

	fx.RemoveTool("dyn_a")
	waitList("fx__dyn_a", false)
	if got := toolNames(ctx, t, cs); !slices.Equal(got, first) {
		t.Fatalf("after the tool went away the host lists %v, want %v", got, first)
	}
}
