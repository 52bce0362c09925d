package remotemcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/localapi"
)

// Talk to a running daemon from another process. daemon.Dial finds the
// daemon of a data directory, checks that its Unix socket is private to
// this user, and returns a localapi.Client: the same Engine API, served
// by the daemon's engine, so the calls share its sessions and its
// in-memory access tokens. Here the "daemon" runs in this process for the
// example's sake; `remotemcp serve` is the real one.
func Example_daemon() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A remote MCP server (go-sdk) with one tool, on loopback.
	type echoArgs struct {
		Text string `json:"text"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "v1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	remote := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer remote.Close()

	dir, err := os.MkdirTemp("", "rm-ex")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The daemon's side: an engine and the daemon in front of it.
	eng, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	d, err := daemon.New(daemon.Options{Engine: eng, DataDir: dir, Addr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	if err := d.Listen(ctx); err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx) }()
	defer func() { cancel(); <-served }()

	// Another process's side.
	c, err := daemon.Dial(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "echo", URL: remote.URL}); err != nil {
		log.Fatal(err)
	}
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "mcp__echo__echo", Arguments: json.RawMessage(`{"text":"hello"}`), Approved: true}, localapi.CallHandler{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Outcome, res.Content[0].Text)
	// Output:
	// ok hello
}
