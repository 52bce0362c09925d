package frontend_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// BenchmarkCallThroughFrontEnd: a host's tool call through the front end
// over an in-process engine (in-memory host transport), beside the same
// call made directly, to profile the front end's own cost:
//
//	go test -run XXX -bench CallThroughFrontEnd -cpuprofile cpu.out ./frontend/
//
// gosdk-proxy is the floor of any front end built on go-sdk: the same two
// MCP hops (an in-memory go-sdk server whose tool handler calls the
// server with a go-sdk client) and nothing between them.
//
// Long: one benchmark whose setup (fixture, engine, the two front ends, the
// proxy and their host sessions) is the point, read top to bottom, and
// whose sub-benchmarks share it.
func BenchmarkCallThroughFrontEnd(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fx, err := fixture.Start(fixture.Options{NoRecord: true})
	if err != nil {
		b.Fatal(err)
	}
	defer fx.Close()
	eng, err := engine.Open(ctx, engine.Options{DataDir: b.TempDir(), NoStartupConnect: true})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: fx.URL(), By: localapi.ByServersAdd}); err != nil {
		b.Fatal(err)
	}
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng, ServerID: "fx"})
	if err != nil {
		b.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fe.Run(rctx, st) }()
	defer func() { stop(); <-done }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: fx.URL()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	// The same front end over the in-process local API (daemon.InProcess),
	// as one-shot commands reach an engine of their own: the cost of that
	// hop beside the engine called directly.
	api, stopAPI, err := daemon.InProcess(ctx, eng)
	if err != nil {
		b.Fatal(err)
	}
	defer stopAPI()
	feAPI, err := frontend.New(ctx, frontend.Options{Engine: api, ServerID: "fx"})
	if err != nil {
		b.Fatal(err)
	}
	sAPI, cAPI := mcp.NewInMemoryTransports()
	doneAPI := make(chan error, 1)
	go func() { doneAPI <- feAPI.Run(rctx, sAPI) }()
	defer func() { stop(); <-doneAPI }()
	csAPI, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, cAPI, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer csAPI.Close()
	csProxy := inMemoryProxy(ctx, b, fx.URL())
	// Params of each call's own: a session may add its _meta to them.
	params := func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	}
	for _, c := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"direct", direct}, {"gosdk-proxy", csProxy}, {"frontend", cs}, {"frontend-inprocess-api", csAPI}} {
		b.Run(c.name, func(b *testing.B) {
			for range 20 {
				if _, err := c.cs.CallTool(ctx, params()); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if res, err := c.cs.CallTool(ctx, params()); err != nil || res.IsError {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// inMemoryProxy is a host session of a go-sdk server that passes the
// tools of the server at url through with a go-sdk client and nothing
// else, offering the protocol revisions the front end offers. Its
// handlers call on ctx, not on the host's request context, which ends
// before go-sdk has read the response stream's end (net/http would drop
// the connection after every call; the engine's sessions keep it).
func inMemoryProxy(ctx context.Context, b *testing.B, url string) *mcp.ClientSession {
	b.Helper()
	up, err := mcp.NewClient(&mcp.Implementation{Name: "proxy"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { up.Close() })
	var versions []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v <= frontend.MaxProtocolVersion {
			versions = append(versions, v)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "proxy"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	for t, err := range up.Tools(ctx, nil) {
		if err != nil {
			b.Fatal(err)
		}
		srv.AddTool(t, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}
