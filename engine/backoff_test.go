package engine_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/clocktest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// Issue #20 item 1 through the engine (what the CLI, the page and the
// front ends use): after a failed connect, a call, a listing with
// Connect and a prompt listing start no attempt inside the backoff
// window; the call's result says it was not sent, with the advice to run
// "remotemcp connect"; the server view gives retryAt. Connect (the
// person's request) tries at once.
func TestEngineBackoffCallsWaitConnectTriesNow(t *testing.T) {
	var down atomic.Bool
	var refused atomic.Int64
	down.Store(true)
	f := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() {
			refused.Add(1)
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return false
		}
		return true
	}})
	clock := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	c := openEngine(t, "", engine.Options{NoStartupConnect: true, Clock: clock})
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})

	if _, err := c.Connect(ctx, "fx"); err == nil {
		t.Fatal("connect to a server answering 503 worked")
	}
	n := refused.Load()
	if n == 0 {
		t.Fatal("the connect sent nothing")
	}
	v, err := c.Server(ctx, "fx")
	if err != nil || v.RetryAt == nil || v.State != localapi.StateError {
		t.Fatalf("server view after the failure: %+v %v; want error with retryAt", v, err)
	}

	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.Outcome == localapi.OutcomeOK || res.MaybeExecuted || !strings.Contains(res.Message, `remotemcp connect fx`) {
		t.Fatalf("call inside the window: %+v %v; want unsent with the connect advice", res, err)
	}
	if _, err := c.Tools(ctx, localapi.ToolsRequest{ServerID: "fx", Connect: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prompts(ctx, "fx"); err == nil {
		t.Fatal("prompts of a server inside its window worked")
	}
	if got := refused.Load(); got != n {
		t.Fatalf("%d requests inside the window; want none", got-n)
	}

	// The person's connect tries now, and works once the server is back.
	down.Store(false)
	if v, err := c.Connect(ctx, "fx"); err != nil || v.State != localapi.StateReady || v.RetryAt != nil {
		t.Fatalf("connect inside the window: %+v %v; want ready at once", v, err)
	}
	res, err = c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.Outcome != localapi.OutcomeOK {
		t.Fatalf("call once ready: %+v %v", res, err)
	}
}
