package remotemcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
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
	srv, err := fixture.Start(fixture.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
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
	if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: srv.URL()}); err != nil {
		log.Fatal(err)
	}
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "mcp__fx__echo", Arguments: json.RawMessage(`{"text":"hello"}`), Approved: true}, localapi.CallHandler{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Outcome, res.Content[0].Text)
	// Output:
	// ok hello
}
