package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
)

// A gateway's per-person quotas (issue #22): one server, call or
// question over its quota is refused at once with a clear word, and
// nothing reaches the server.
func TestQuotas(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	asked := make(chan struct{}, 4)
	release := make(chan struct{})
	var questions atomic.Int64
	elicit := func(ctx context.Context, _ manager.ElicitInfo, _ *engine.ElicitRequest) (*engine.ElicitResult, error) {
		questions.Add(1)
		asked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &engine.ElicitResult{Action: "decline"}, nil
	}
	c := openEngine(t, "", engine.Options{NoStartupConnect: true, Elicit: elicit,
		Quotas: engine.Quotas{Servers: 1, Calls: 2, Questions: 1}})
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})

	// Servers: the second is refused, and not stored.
	_, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx2", URL: f.URL()})
	var le *localapi.Error
	if !errors.As(err, &le) || le.Code != localapi.CodeQuota || le.Status != 429 || !strings.Contains(le.Message, "allows 1 per person") {
		t.Fatalf("a server over the quota: %v", err)
	}
	if list, _ := c.Servers(ctx); len(list) != 1 {
		t.Fatalf("servers after the refused add: %+v", list)
	}

	call := func(tool string) *localapi.ToolResult {
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "mcp__fx__" + tool, Arguments: []byte(`{"text":"x"}`), Approved: true}, localapi.CallHandler{})
		if err != nil {
			t.Fatalf("call %s: %v", tool, err)
		}
		return res
	}
	// Questions: the first waits for the person; the second is declined
	// for them at once (the handler never sees it).
	first := make(chan *localapi.ToolResult, 1)
	go func() { first <- call("ask") }()
	<-asked
	if res := call("ask"); !res.IsError && !strings.Contains(strings.ToLower(textOf(res)+res.Message), "decline") {
		t.Fatalf("the second question was not declined: %+v", res)
	}
	if n := questions.Load(); n != 1 {
		t.Fatalf("the person was asked %d questions, want 1", n)
	}
	// Calls: "ask" still runs; with one more in flight, a third is
	// refused unsent.
	second := make(chan *localapi.ToolResult, 1)
	go func() {
		res, _ := c.Call(ctx, localapi.CallRequest{Tool: "mcp__fx__slow", Arguments: []byte(`{"ms":60000}`), Approved: true}, localapi.CallHandler{})
		second <- res
	}()
	testkit.WaitFor(t, "the slow call to reach the server", func() bool { return f.Executions("slow") == 1 })
	before := f.Executions("echo")
	res := call("echo")
	if !res.IsError || !strings.Contains(res.Message, "2 calls running") || !strings.Contains(res.Message, "not sent") {
		t.Fatalf("a call over the quota: %+v", res)
	}
	if f.Executions("echo") != before {
		t.Fatal("the refused call reached the server")
	}
	close(release)
	<-first
	if res := call("echo"); res.IsError {
		t.Fatalf("a call once a place is free: %+v", res)
	}
}
