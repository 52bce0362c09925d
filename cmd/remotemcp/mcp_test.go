package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// TestMcpStdio runs "mcp" in-process on pipes, as a host would launch it,
// in both modes: the host lists and calls tools, then leaves, and the
// command ends cleanly.
func TestMcpStdio(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		tool string
	}{
		{"aggregate", []string{"--no-daemon", "mcp"}, "fx__echo"},
		{"server", []string{"--no-daemon", "mcp", "--server", "fx"}, "echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startFixture(t, fixture.Options{})
			c := newCLI(t)
			c.ok("servers", "add", "fx", f.URL())
			hostIn, cmdOut := io.Pipe()
			cmdIn, hostOut := io.Pipe()
			var errb bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- run(t.Context(), append([]string{"--data-dir", c.dir}, tc.args...),
					Streams{In: cmdIn, Out: cmdOut, Err: &errb}, nil)
				cmdOut.Close()
			}()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, &mcp.IOTransport{Reader: hostIn, Writer: hostOut}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("call %s: %v %+v", tc.tool, err, res)
			}
			cs.Close()
			select {
			case code := <-done:
				if code != exitOK {
					t.Fatalf("mcp exited %d: %s", code, errb.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("mcp did not end when the host left")
			}
		})
	}
}

// TestMcpUnknownServer: --server names a server that does not exist.
func TestMcpUnknownServer(t *testing.T) {
	c := newCLI(t)
	r := c.run("", "--no-daemon", "mcp", "--server", "nope")
	if r.code == exitOK || !strings.Contains(r.err, "nope") {
		t.Fatalf("want a failure naming the server:\n%s", r)
	}
}
