package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/localapi"
)

// subscribableServer counts resources/subscribe and unsubscribe per URI,
// and sends an update and log messages when its tool "touch" runs.
type subscribableServer struct {
	mu     sync.Mutex
	subs   map[string]int
	levels []string
	srv    *mcp.Server
}

func newSubscribableServer(t *testing.T) (*subscribableServer, string) {
	s := &subscribableServer{subs: map[string]int{}}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "sub", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			s.mu.Lock()
			s.subs[req.Params.URI]++
			s.mu.Unlock()
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			s.mu.Lock()
			s.subs[req.Params.URI]--
			s.mu.Unlock()
			return nil
		},
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}},
	})
	s.srv.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://doc", Text: "v"}}}, nil
	})
	mcp.AddTool(s.srv, &mcp.Tool{Name: "touch", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "notice", Logger: "touch", Data: map[string]any{"n": 1}})
			_ = s.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://doc"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, nil))
	t.Cleanup(hs.Close)
	return s, hs.URL
}

func (s *subscribableServer) count(uri string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs[uri]
}

// SPEC B3, §9 A7: subscriptions are counted (one reaches the server),
// renewed on a new session of the server, and the updates and log
// messages reach the engine's subscribers as notices, each once.
func TestResourceSubscriptionsAndNotices(t *testing.T) {
	ctx := testkit.Context(t)
	// The server first: cleanups run last-in first-out, and the engine
	// must close its streams before the server waits for them.
	srv, url := newSubscribableServer(t)
	c := lazyEngine(t)
	addServer(t, c, localapi.AddServerRequest{ID: "sub", URL: url, By: localapi.ByServersAdd})
	events, err := c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub := localapi.ResourceSubscription{ServerID: "sub", URI: "test://doc"}
	for range 2 {
		if err := c.SubscribeResource(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.count("test://doc"); n != 1 {
		t.Fatalf("server subscriptions after two: %d, want 1", n)
	}
	if err := c.SetLogLevel(ctx, localapi.LogLevelRequest{Level: "notice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, localapi.CallRequest{Tool: "sub/touch", Approved: true}, localapi.CallHandler{}); err != nil {
		t.Fatal(err)
	}
	var got []localapi.Notice
	deadline := time.After(2 * time.Minute) // only a hang: both notices must come
	for len(got) < 2 {
		select {
		case ev := <-events:
			if ev.Type != localapi.EventNotices {
				continue
			}
			var ns []localapi.Notice
			if err := json.Unmarshal(ev.Data, &ns); err != nil {
				t.Fatal(err)
			}
			got = append(got, ns...)
		case <-deadline:
			t.Fatalf("notices: %+v", got)
		}
	}
	var log, upd int
	for _, n := range got {
		switch {
		case n.Type == localapi.NoticeLog && n.ServerID == "sub" && n.Level == "notice" && n.Logger == "touch" && n.Text == `{"n":1}`:
			log++
		case n.Type == localapi.NoticeResourceUpdated && n.ServerID == "sub" && n.URI == "test://doc":
			upd++
		default:
			t.Errorf("unexpected notice %+v", n)
		}
	}
	if log != 1 || upd != 1 {
		t.Errorf("notices %+v: want one log message and one update", got)
	}

	// A new session (disconnect, connect) renews the subscription.
	if _, err := c.Disconnect(ctx, "sub"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connect(ctx, "sub"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the renewed subscription", func() bool { return srv.count("test://doc") == 2 })

	// Two unsubscribes give it back (the first keeps it); a third is not found.
	for range 2 {
		if err := c.UnsubscribeResource(ctx, sub); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.count("test://doc"); n != 1 {
		t.Errorf("server subscriptions after giving both back: %d, want 1 (2 subscribes on two sessions, 1 unsubscribe)", n)
	}
	if err := c.UnsubscribeResource(ctx, sub); code(err) != localapi.CodeNotFound {
		t.Errorf("unsubscribe once more: %v, want not found", err)
	}
	for _, bad := range []localapi.ResourceSubscription{{URI: "test://doc"}, {ServerID: "sub"}, {ServerID: "nope", URI: "x"}} {
		if err := c.SubscribeResource(ctx, bad); err == nil {
			t.Errorf("subscribe %+v: no error", bad)
		}
	}
	if err := c.SetLogLevel(ctx, localapi.LogLevelRequest{Level: "loud"}); code(err) != localapi.CodeBadRequest {
		t.Errorf("log level loud: %v, want bad request", err)
	}
}
