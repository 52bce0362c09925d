package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/localapi"
)

// backend serves srv over Streamable HTTP on loopback and adds it to a
// fresh engine as server id; it returns the engine.
func backend(ctx context.Context, t *testing.T, id string, srv *mcp.Server) *engine.Engine {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	eng, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir(), NoStartupConnect: true})
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
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
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

// notifyBackend is a server with a subscribable resource, logging, and a
// tool "touch" that logs at info and debug and then updates the resource.
func notifyBackend(subscribed chan<- string) *mcp.Server {
	var srv *mcp.Server
	srv = mcp.NewServer(&mcp.Implementation{Name: "n", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			subscribed <- "+" + req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			subscribed <- "-" + req.Params.URI
			return nil
		},
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}},
	})
	srv.AddResource(&mcp.Resource{URI: "test://doc", Name: "doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://doc", Text: "v"}}}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "touch", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "touch", Data: "touching"})
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Logger: "touch", Data: "details"})
			_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://doc"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil, nil
		})
	return srv
}

// Issue #13 item 4 (SPEC B3, §9 A7): a host's resources/subscribe reaches
// the server once however many hosts subscribe, the server's update
// reaches the subscribed host under the URI it subscribed with, the last
// unsubscribe reaches the server; the host's logging/setLevel reaches the
// server and its log messages reach the host at that level, marked with
// the server's id in aggregate mode.
func TestNotificationsPassThrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	subscribed := make(chan string, 16)
	eng := backend(ctx, t, "n", notifyBackend(subscribed))
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var hosts []*mcp.ClientSession
	updates := make(chan string, 16)
	logs := make(chan *mcp.LoggingMessageParams, 16)
	var runs []chan error
	for i := range 2 {
		st, ct := mcp.NewInMemoryTransports()
		done := make(chan error, 1)
		runs = append(runs, done)
		go func() { done <- fe.Run(rctx, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				updates <- fmt.Sprintf("host%d %s", i, req.Params.URI)
			},
			LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params },
		}).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, cs)
	}
	t.Cleanup(func() {
		stop()
		for _, done := range runs {
			<-done
		}
	})
	if caps := hosts[0].InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe || caps.Logging == nil {
		t.Fatalf("the front end does not offer subscriptions and logging: %+v", caps)
	}
	for _, h := range hosts {
		if err := h.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://doc"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-subscribed; got != "+test://doc" {
		t.Fatalf("server saw %q", got)
	}
	if err := hosts[0].SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if _, err := hosts[0].CallTool(ctx, &mcp.CallToolParams{Name: "n__touch", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case u := <-updates:
			got[u] = true
		case <-ctx.Done():
			t.Fatalf("updates: %v", got)
		}
	}
	if !got["host0 test://doc"] || !got["host1 test://doc"] {
		t.Errorf("updates %v, want one per subscribed host", got)
	}
	select {
	case l := <-logs:
		if l.Level != "info" || l.Logger != "n/touch" || l.Data != "touching" {
			t.Errorf("log message %+v, want info from n/touch: touching", l)
		}
	case <-ctx.Done():
		t.Fatal("no log message reached the host")
	}
	select {
	case l := <-logs:
		t.Errorf("a second log message %+v reached the host (debug is below its level; the other host set none)", l)
	case <-time.After(300 * time.Millisecond):
	}
	if len(updates) > 0 {
		t.Errorf("%d more updates: each host gets each update once", len(updates))
	}
	// The first unsubscribe keeps the server's subscription (the other
	// host holds it); the second ends it.
	if err := hosts[0].Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://doc"}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-subscribed:
		t.Fatalf("server saw %q while a host still holds the subscription", s)
	case <-time.After(200 * time.Millisecond):
	}
	if err := hosts[1].Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://doc"}); err != nil {
		t.Fatal(err)
	}
	if got := <-subscribed; got != "-test://doc" {
		t.Fatalf("server saw %q, want the unsubscribe", got)
	}
	// A URI nothing offers is refused, and reaches no server.
	if err := hosts[0].Subscribe(ctx, &mcp.SubscribeParams{URI: "nope://x"}); err == nil {
		t.Error("subscribe to an unoffered URI: no error")
	}
}

// A host session that ends without unsubscribing (an HTTP host's DELETE,
// a stdio host leaving) gives back what it held: the server is not kept
// subscribed, nor awake, for a host that is gone. Another host's
// subscription and session are untouched.
func TestSubscriptionEndsWithHostSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	subscribed := make(chan string, 16)
	eng := backend(ctx, t, "n", notifyBackend(subscribed))
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var hosts []*mcp.ClientSession
	var runs []chan error
	for range 3 {
		st, ct := mcp.NewInMemoryTransports()
		done := make(chan error, 1)
		runs = append(runs, done)
		go func() { done <- fe.Run(rctx, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, cs)
	}
	t.Cleanup(func() {
		stop()
		for _, done := range runs {
			<-done
		}
	})
	for _, h := range hosts[:2] {
		if err := h.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://doc"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-subscribed; got != "+test://doc" {
		t.Fatalf("server saw %q", got)
	}
	hosts[0].Close()
	select {
	case s := <-subscribed:
		t.Fatalf("server saw %q while another host still holds the subscription", s)
	case <-time.After(300 * time.Millisecond):
	}
	hosts[1].Close()
	select {
	case got := <-subscribed:
		if got != "-test://doc" {
			t.Fatalf("server saw %q, want the unsubscribe", got)
		}
	case <-ctx.Done():
		t.Fatal("the last subscribed host left, and the server stays subscribed")
	}
	if got := eng.Manager.Subscriptions("n"); len(got) != 0 {
		t.Errorf("the engine still holds %v", got)
	}
	// The third host, which never subscribed, is still served.
	if _, err := hosts[2].ListTools(ctx, nil); err != nil {
		t.Fatalf("the remaining host: %v", err)
	}
}

// A server that is slow to answer resources/subscribe holds up neither the
// updates of the other servers on their way to the hosts nor the rest of
// the front end (hostile servers stay contained).
func TestSlowSubscribeDoesNotHoldUpdates(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	subscribed := make(chan string, 16)
	release := make(chan struct{})
	slowAsked := make(chan struct{}, 1)
	slow := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(ctx context.Context, _ *mcp.SubscribeRequest) error {
			slowAsked <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	slow.AddResource(&mcp.Resource{URI: "slow://doc", Name: "doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "slow://doc", Text: "v"}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return slow }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) })
	// backend's engine closes before the slow server does (cleanups run
	// last first), so that its streams to that server are gone by then.
	eng := backend(ctx, t, "n", notifyBackend(subscribed))
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "slow", URL: hs.URL, By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	updates := make(chan string, 16)
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- fe.Run(rctx, st) }()
	t.Cleanup(func() { stop(); <-done })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://doc"}); err != nil {
		t.Fatal(err)
	}
	<-subscribed
	slowDone := make(chan error, 1)
	go func() { slowDone <- cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "slow://doc"}) }()
	select {
	case <-slowAsked:
	case <-ctx.Done():
		t.Fatal("the slow server was never asked")
	}
	// While the slow server sits on its subscribe, n's update arrives.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "n__touch", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-updates:
		if u != "test://doc" {
			t.Fatalf("update of %q", u)
		}
	case <-time.After(2 * time.Minute): // the slow server holds its subscribe until the test ends
		t.Fatal("n's update is held up by the slow server's subscribe")
	}
	select {
	case err := <-slowDone:
		t.Fatalf("the slow subscribe ended early: %v", err)
	default:
	}
}

// Issue #13 (Decided): a server's sampling/createMessage during a call
// reaches the host of that call when it declared sampling, directly and
// through the local API (the daemon's call stream); the host's answer
// reaches the server. A host without sampling gets the server refused.
func TestSamplingPassesThrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "think", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "2+2?"}}}})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no sampling: " + err.Error()}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "model said " + res.Content.(*mcp.TextContent).Text}}}, nil, nil
		})
	eng := backend(ctx, t, "s", srv)
	api, stop, err := daemon.InProcess(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	for name, e := range map[string]localapi.Engine{"engine": eng, "local API": api} {
		fe, err := frontend.New(ctx, frontend.Options{Engine: e})
		if err != nil {
			t.Fatal(err)
		}
		for _, canSample := range []bool{true, false} {
			st, ct := mcp.NewInMemoryTransports()
			rctx, stopRun := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- fe.Run(rctx, st) }()
			var asked []string
			opts := &mcp.ClientOptions{}
			if canSample {
				opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					asked = append(asked, req.Params.Messages[0].Content.(*mcp.TextContent).Text)
					return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "4"}}, nil
				}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, opts).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__think", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if canSample && (text != "model said 4" || len(asked) != 1 || asked[0] != "2+2?") {
				t.Errorf("%s: result %q, host asked %q; want the host's model's answer", name, text, asked)
			}
			if !canSample && (!res.IsError || !strings.Contains(text, "refused")) {
				t.Errorf("%s, host without sampling: result %q, want the server's sampling refused", name, text)
			}
			cs.Close()
			stopRun()
			<-done
		}
	}
}
