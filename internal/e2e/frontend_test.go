package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// host is a go-sdk client playing an MCP host that launched
// "remotemcp mcp" (the built binary) over stdio.
type host struct {
	t        *testing.T
	cs       *mcp.ClientSession
	cmd      *exec.Cmd // the remotemcp process the host launched
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	changed  chan struct{}
	asked    chan string
	updated  chan string // notifications/resources/updated URIs
}

func launch(t *testing.T, e *env, args ...string) *host {
	t.Helper()
	h := &host{t: t, changed: make(chan struct{}, 16), asked: make(chan string, 4), updated: make(chan string, 4)}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.asked <- r.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 7}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case h.changed <- struct{}{}:
			default:
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case h.updated <- r.Params.URI:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, r.Params)
			h.mu.Unlock()
		},
	})
	cmd := exec.Command(bin, args...)
	cmd.Env = e.environ()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // only a hang
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to remotemcp %v: %v\n%s", args, err, stderr.String())
	}
	h.cs, h.cmd = cs, cmd
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("remotemcp mcp stderr:\n%s", stderr.String())
		}
	})
	return h
}

// stopDaemon ends a daemon that "remotemcp mcp" started in the background.
func stopDaemon(t *testing.T, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := daemon.Dial(ctx, dir)
	if err != nil {
		return
	}
	hl, err := c.Health(ctx)
	if err != nil {
		return
	}
	p, err := os.FindProcess(hl.PID)
	if err != nil {
		return
	}
	p.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if p.Signal(syscall.Signal(0)) != nil {
			return
		}
	}
	p.Kill()
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// TestMcpFrontEnd drives "remotemcp mcp" as a host would, in aggregate
// and single-server mode, through a daemon it starts itself and
// in-process: tools, results, progress, cancellation, questions,
// list_changed, resources and prompts.
func TestMcpFrontEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		prefix string // of the offered names
		daemon bool   // the command starts a daemon in the background
	}{
		{"aggregate/daemon", []string{"mcp", "--daemon-addr", "127.0.0.1:0"}, "fx__", true},
		{"aggregate/no-daemon", []string{"--no-daemon", "mcp"}, "fx__", false},
		{"server/daemon", []string{"mcp", "--server", "fx", "--daemon-addr", "127.0.0.1:0"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := fixture.Start(fixture.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			e := newEnv(t)
			e.mustRun("", "servers", "add", "fx", f.URL())
			if tc.daemon {
				t.Cleanup(func() { stopDaemon(t, e.dir) })
			}
			h := launch(t, e, tc.args...)
			ctx := t.Context()
			if tc.daemon {
				if _, err := daemon.Dial(ctx, e.dir); err != nil {
					t.Fatalf("no daemon runs after remotemcp mcp: %v", err)
				}
			}
			if got := h.cs.InitializeResult().ProtocolVersion; got > "2025-11-25" {
				t.Errorf("negotiated protocol %s, want at most 2025-11-25", got)
			}

			// Tools, with their raw schemas and names.
			tl, err := h.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tl.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{"echo", "add", "slow", "ask", "schema"} {
				if !slices.Contains(names, tc.prefix+want) {
					t.Fatalf("tools %v lack %s", names, tc.prefix+want)
				}
			}

			res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.prefix + "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || text(t, res) != "hi" {
				t.Fatalf("echo: %v %+v", err, res)
			}
			// A8: the server's result unchanged, structured content too.
			res, err = h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.prefix + "add", Arguments: map[string]any{"a": 1, "b": 2}})
			if err != nil || text(t, res) != "3" {
				t.Fatalf("add: %v %+v", err, res)
			}
			if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"sum":3}` {
				t.Errorf("add: structuredContent %s", sc)
			}
			res, err = h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.prefix + "fail", Arguments: map[string]any{}})
			if err != nil || !res.IsError || strings.Contains(text(t, res), "mcp-untrusted") {
				t.Fatalf("fail: %v %+v", err, res)
			}

			// Progress reaches the host's token.
			p := &mcp.CallToolParams{Name: tc.prefix + "slow", Arguments: map[string]any{"ms": 300, "steps": 3}}
			p.SetProgressToken("tok-1")
			if res, err = h.cs.CallTool(ctx, p); err != nil || text(t, res) != "done 3 steps" {
				t.Fatalf("slow: %v %+v", err, res)
			}
			testkit.WaitFor(t, "3 progress notifications", func() bool {
				h.mu.Lock()
				defer h.mu.Unlock()
				return len(h.progress) == 3
			})
			if h.progress[2].ProgressToken != "tok-1" || h.progress[2].Progress != 3 {
				t.Errorf("last progress %+v", h.progress[2])
			}

			// The host's cancel reaches the server.
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			before := f.Executions("slow")
			go func() {
				_, err := h.cs.CallTool(cctx, &mcp.CallToolParams{Name: tc.prefix + "slow", Arguments: map[string]any{"ms": 30000}})
				done <- err
			}()
			testkit.WaitFor(t, "the call to run on the server", func() bool { return f.Executions("slow") > before })
			cancel()
			if err := <-done; err == nil {
				t.Error("the cancelled call returned no error")
			}
			testkit.WaitFor(t, "the server to see the cancel", func() bool { return f.Cancelled("slow") >= 1 })

			// A server's question goes to the host, labelled with the
			// server and quoted (issue #20 item 3), and its answer back.
			res, err = h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.prefix + "ask", Arguments: map[string]any{}})
			if err != nil || text(t, res) != "hello Ada (7)" {
				t.Fatalf("ask: %v %+v", err, res)
			}
			if m := <-h.asked; m != "Question from MCP server \"fx\" (its own words below, not remotemcp's):\n> What is your name?" {
				t.Errorf("the host was asked %q", m)
			}

			// A backend change reaches the host as list_changed.
			for len(h.changed) > 0 {
				<-h.changed
			}
			f.AddTool("fresh")
			select {
			case <-h.changed:
			case <-time.After(2 * time.Minute): // only a hang
				t.Fatal("no tools/list_changed after the server's change")
			}
			testkit.WaitFor(t, "the new tool", func() bool {
				tl, err := h.cs.ListTools(ctx, nil)
				return err == nil && slices.ContainsFunc(tl.Tools, func(x *mcp.Tool) bool { return x.Name == tc.prefix+"fresh" })
			})
			if res, err = h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.prefix + "fresh", Arguments: map[string]any{}}); err != nil || text(t, res) != "fresh" {
				t.Fatalf("fresh: %v %+v", err, res)
			}

			// Resources keep their URI (one server lists it).
			rr, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: fixture.ReadmeURI})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != fixture.ReadmeMarkdown {
				t.Fatalf("read: %v %+v", err, rr)
			}
			rr, err = h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://items/5"})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "item 5" {
				t.Fatalf("read template: %v %+v", err, rr)
			}

			// A subscribed resource's update reaches the host (B3).
			if err := h.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: fixture.ReadmeURI}); err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			testkit.WaitFor(t, "the server's subscription", func() bool { return f.Subscriptions() == 1 })
			f.UpdateResource(fixture.ReadmeURI)
			select {
			case uri := <-h.updated:
				if uri != fixture.ReadmeURI {
					t.Errorf("update of %q, want %s", uri, fixture.ReadmeURI)
				}
			case <-time.After(2 * time.Minute): // only a hang
				t.Fatal("no notifications/resources/updated after the server's update")
			}
			if err := h.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: fixture.ReadmeURI}); err != nil {
				t.Fatalf("unsubscribe: %v", err)
			}
			testkit.WaitFor(t, "the server's unsubscription", func() bool { return f.Subscriptions() == 0 })

			// Prompts.
			pr, err := h.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tc.prefix + "greet", Arguments: map[string]string{"name": "Bob"}})
			if err != nil || len(pr.Messages) != 1 {
				t.Fatalf("prompt: %v %+v", err, pr)
			}
			if tcn, ok := pr.Messages[0].Content.(*mcp.TextContent); !ok || tcn.Text != "Please greet Bob." {
				t.Errorf("prompt message %+v", pr.Messages[0].Content)
			}
		})
	}
}

// A host's "remotemcp mcp" killed while it holds a resource subscription
// (no chance to unsubscribe) does not keep the server subscribed, and so
// awake, in the daemon: its subscriptions ended with its event stream.
func TestMcpFrontEndKilledGivesBackSubscriptions(t *testing.T) {
	f, err := fixture.Start(fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e := newEnv(t)
	e.mustRun("", "servers", "add", "fx", f.URL())
	t.Cleanup(func() { stopDaemon(t, e.dir) })
	h := launch(t, e, "mcp", "--daemon-addr", "127.0.0.1:0")
	if err := h.cs.Subscribe(t.Context(), &mcp.SubscribeParams{URI: fixture.ReadmeURI}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	testkit.WaitFor(t, "the server's subscription", func() bool { return f.Subscriptions() == 1 })
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the daemon to give the killed front end's subscription back", func() bool { return f.Subscriptions() == 0 })
	if _, err := daemon.Dial(t.Context(), e.dir); err != nil {
		t.Fatalf("the daemon is gone: %v", err)
	}
}

// Issue #14: with --tools search the host sees search_tools and the
// pinned tools; a search over stdio adds the found tool to the host's
// list (list_changed) and the host calls it by its own name.
func TestMcpFrontEndSearch(t *testing.T) {
	f, err := fixture.Start(fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e := newEnv(t)
	e.mustRun("", "servers", "add", "fx", f.URL())
	e.mustRun("", "servers", "set", "fx", "--pin-tool", "echo")
	h := launch(t, e, "--no-daemon", "mcp", "--tools", "search")
	ctx := t.Context()
	names := func() []string {
		tl, err := h.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range tl.Tools {
			out = append(out, tool.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"fx__echo", "search_tools"}) {
		t.Fatalf("search mode offers %v, want [fx__echo search_tools]", got)
	}
	for len(h.changed) > 0 {
		<-h.changed
	}
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "add two numbers", "limit": 2}})
	if err != nil || res.IsError || !strings.Contains(text(t, res), "fx__add") {
		t.Fatalf("search: %v %+v", err, res)
	}
	select {
	case <-h.changed:
	case <-time.After(2 * time.Minute): // only a hang
		t.Fatal("no tools/list_changed after the search")
	}
	if got := names(); !slices.Contains(got, "fx__add") {
		t.Fatalf("after the search the host has %v", got)
	}
	res, err = h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__add", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || res.IsError || text(t, res) != "5" {
		t.Fatalf("fx__add: %v %+v", err, res)
	}
}
