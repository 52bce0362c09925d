package frontend_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// hostOf serves a front end over the engine with the given options and
// connects a host to it.
func hostOf(ctx context.Context, t *testing.T, o frontend.Options) *mcp.ClientSession {
	t.Helper()
	fe, err := frontend.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- fe.Run(rctx, st) }()
	t.Cleanup(func() { stop(); <-done })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// completes counts the completion/complete requests a fixture received.
func completes(f *fixture.Server) int {
	n := 0
	for _, r := range f.Requests() {
		if r.RPCMethod == "completion/complete" {
			n++
		}
	}
	return n
}

// TestCompletion: the front end offers completions, and a host's
// completion/complete of a prompt argument or a template variable is
// mapped back to the server that offers it (its own prompt name and URI)
// and the server's values come back; an unknown reference is invalid
// params and reaches no server.
func TestCompletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	fa, fb := testkit.StartFixture(t, fixture.Options{}), testkit.StartFixture(t, fixture.Options{})
	for id, f := range map[string]*fixture.Server{"a": fa, "b": fb} {
		if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: id, URL: f.URL(), By: localapi.ByServersAdd}); err != nil {
			t.Fatal(err)
		}
	}
	cs := hostOf(ctx, t, frontend.Options{Engine: eng})
	if cs.InitializeResult().Capabilities.Completions == nil {
		t.Fatal("the front end offers no completions capability")
	}

	res, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "a__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "style", Value: "f"},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"name": "Ada"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"formal", "friendly", "funny"}; !slices.Equal(res.Completion.Values, want) || res.Completion.Total != 3 {
		t.Errorf("completion of a__greet style = %+v, want %v (total 3)", res.Completion, want)
	}
	if completes(fa) != 1 || completes(fb) != 0 {
		t.Errorf("completion requests: a %d, b %d; want 1, 0", completes(fa), completes(fb))
	}

	res, err = cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: frontend.ExposedURI("b", fixture.ItemsURITemplate, false)},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1", "2", "3"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("completion of b's items id = %v, want %v", res.Completion.Values, want)
	}
	if completes(fa) != 1 || completes(fb) != 1 {
		t.Errorf("completion requests: a %d, b %d; want 1, 1", completes(fa), completes(fb))
	}

	for _, ref := range []*mcp.CompleteReference{
		{Type: "ref/prompt", Name: "greet"},
		{Type: "ref/resource", URI: fixture.ItemsURITemplate},
	} {
		if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "x"}}); err == nil {
			t.Errorf("completion of the unoffered %+v: no error", ref)
		}
	}
	// The server's own refusal comes back as an error too.
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "a__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "A"},
	}); err == nil {
		t.Error("completion the server refuses: no error")
	}
	if completes(fa) != 2 || completes(fb) != 1 {
		t.Errorf("completion requests: a %d, b %d; want 2, 1", completes(fa), completes(fb))
	}
}

// TestCompletionSingleServer: with --server the names are the server's
// own, and they reach it unchanged.
func TestCompletionSingleServer(t *testing.T) {
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
	cs := hostOf(ctx, t, frontend.Options{Engine: eng, ServerID: "fx"})
	res, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "style", Value: "FU"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"funny"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("completion of greet style = %v, want %v", res.Completion.Values, want)
	}
	res, err = cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: fixture.ItemsURITemplate},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("completion of items id = %v, want %v", res.Completion.Values, want)
	}
}
