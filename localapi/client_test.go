package localapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// inProcess opens the real engine on a temporary data directory and
// serves its API to a Client, as a command without a daemon does.
func inProcess(t *testing.T) (*localapi.Client, *fixture.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	f, err := fixture.Start(fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	eng, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	c, stop, err := daemon.InProcess(ctx, eng)
	if err != nil {
		eng.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		eng.Close()
	})
	if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL()}); err != nil {
		t.Fatal(err)
	}
	return c, f
}

// The Client is an Engine: the engine's answers, its errors with their
// codes and statuses, over HTTP.
func TestClientIsTheEngine(t *testing.T) {
	c, _ := inProcess(t)
	ctx := context.Background()
	var eng localapi.Engine = c
	srvs, err := eng.Servers(ctx)
	if err != nil || len(srvs) != 1 || srvs[0].ID != "fx" || !srvs[0].OriginGranted {
		t.Fatalf("servers %+v %v", srvs, err)
	}
	tl, err := eng.Tools(ctx, localapi.ToolsRequest{ServerID: "fx", Connect: true})
	if err != nil || len(tl.Tools) != 7 {
		t.Fatalf("tools %+v %v", tl, err)
	}
	_, err = eng.Server(ctx, "nope")
	if e, ok := localapi.AsError(err); !ok || e.Code != localapi.CodeNotFound || e.Status != http.StatusNotFound {
		t.Fatalf("unknown server: %#v", err)
	}
	_, err = eng.Call(ctx, localapi.CallRequest{}, localapi.CallHandler{})
	if e, ok := localapi.AsError(err); !ok || e.Code != localapi.CodeBadRequest || e.Field != "tool" {
		t.Fatalf("call without a tool: %#v", err)
	}
}

// Call carries progress, the approval round trip and the result.
func TestClientCall(t *testing.T) {
	c, f := inProcess(t)
	ctx := context.Background()
	var progress []float64
	var asked localapi.ApprovalRequest
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":300,"steps":3}`)}, localapi.CallHandler{
		Approve: func(ar localapi.ApprovalRequest) (localapi.Decision, error) {
			asked = ar
			return localapi.Decision{Approved: true}, nil
		},
		Progress: func(p localapi.Progress) { progress = append(progress, p.Progress) },
	})
	if err != nil || res.Outcome != localapi.OutcomeOK {
		t.Fatalf("call %+v %v", res, err)
	}
	if asked.ToolName != "slow" || asked.ServerID != "fx" || string(asked.Arguments) != `{"ms":300,"steps":3}` {
		t.Fatalf("approval request %+v", asked)
	}
	if len(progress) != 3 || progress[0] != 1 || progress[2] != 3 {
		t.Fatalf("progress %v", progress)
	}
	if n := f.Executions("slow"); n != 1 {
		t.Fatalf("slow ran %d times", n)
	}
}

// Subscribe starts with every list and closes when ctx ends.
func TestClientSubscribe(t *testing.T) {
	c, _ := inProcess(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[localapi.EventType]bool{}
	timeout := time.After(2 * time.Minute)
	for len(seen) < 3 {
		select {
		case ev := <-ch:
			seen[ev.Type] = true
			if ev.Type == localapi.EventServers {
				var l []localapi.Server
				if err := json.Unmarshal(ev.Data, &l); err != nil || len(l) != 1 {
					t.Fatalf("servers event %s: %v", ev.Data, err)
				}
			}
		case <-timeout:
			t.Fatalf("events seen: %v", seen)
		}
	}
	cancel()
	for range ch {
	}
}
