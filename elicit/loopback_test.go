package elicit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/manager"
)

// loopback is a real MCP server (go-sdk, streamable HTTP on 127.0.0.1)
// and a go-sdk client whose elicitation handler is Cards.Handle, as the
// manager wires it. The server has two tools:
//
//   - "ask" asks, during the call, the question given in its arguments
//     ({"message", "schema"}) and reports what it got back: "accept
//     <content>", "decline", "cancel", or "error: ..." when the client's
//     answer failed.
//   - "stray" returns at once; the server then asks its {"n"} questions
//     outside any call, one after another, once the test calls release.
type loopback struct {
	cs      *mcp.ClientSession
	release chan struct{}
	strays  chan strayResult
}

type strayResult struct {
	res *mcp.ElicitResult
	err error
}

func startLoopback(t *testing.T, c *Cards, server string) *loopback {
	t.Helper()
	lb := &loopback{release: make(chan struct{}), strays: make(chan strayResult, 1000)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "loopback", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Message string          `json:"message"`
				Schema  json.RawMessage `json:"schema"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: args.Message, RequestedSchema: args.Schema})
			switch {
			case err != nil:
				return textOf("error: " + err.Error()), nil
			case res.Action == "accept":
				content, _ := json.Marshal(res.Content)
				return textOf("accept " + string(content)), nil
			default:
				return textOf(res.Action), nil
			}
		})
	srv.AddTool(&mcp.Tool{Name: "stray", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct{ N int }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			ss := req.Session
			go func() {
				select {
				case <-lb.release:
				case <-time.After(2 * time.Minute):
					return
				}
				// Not the call's context: the call is over by now.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				for i := range args.N {
					res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: fmt.Sprintf("Stray question %d", i), RequestedSchema: json.RawMessage(askSchema)})
					lb.strays <- strayResult{res, err}
				}
			}()
			return textOf("returned"), nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	client := mcp.NewClient(&mcp.Implementation{Name: "elicit-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			// A bare go-sdk client cannot tell which call's stream
			// carried the question (the session can): the one admitted
			// call stands in for it.
			return c.Handle(ctx, manager.ElicitInfo{ServerID: server, ConnectionID: "conn-1", OperationID: onlyCall(c, server)}, req)
		},
	})
	cs, err := client.Connect(testkit.Context(t), &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	// Runs before cs.Close (cleanups run last first): go-sdk's Close waits
	// for running handlers, so a card left open by a failing test must be
	// closed first.
	t.Cleanup(func() { c.Close() })
	lb.cs = cs
	return lb
}

func textOf(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// call makes an admitted tool call, as the agent does, in the background;
// the admission is finished when the call returns.
func (lb *loopback) call(t *testing.T, c *Cards, server, op, tool string, args any) <-chan string {
	t.Helper()
	adm, err := c.Admit(testkit.Context(t), CallInfo{ServerID: server, Tool: tool, OperationID: op})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		res, err := lb.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		// Finished before the result is handed over: a test that goes on
		// once it has the result must find no call in flight (a deferred
		// Finish raced with the stray questions, which then met a call
		// still admitted and ended as cancelled cards, not declines).
		adm.Finish()
		switch {
		case err != nil:
			out <- "call failed: " + err.Error()
		case len(res.Content) != 1:
			out <- fmt.Sprintf("call result: %d contents", len(res.Content))
		default:
			tc, _ := res.Content[0].(*mcp.TextContent)
			out <- tc.Text
		}
	}()
	return out
}

func recvS(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(2 * time.Minute):
		t.Fatal("the tool call did not return")
		return ""
	}
}

// countCards counts the stored card records.
func countCards(t *testing.T, kv KV) int {
	t.Helper()
	all, err := kv.ListKV(testkit.Context(t), Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLog() (*logBuffer, *slog.Logger) {
	lb := &logBuffer{}
	return lb, slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// R6.1, issue #10 item 3, end to end: a server that asks 200 questions
// after its tool call returned gets 200 declines, and nothing is stored;
// a question during an admitted call still becomes a card, and its answer
// reaches the server.
func TestQuestionsOutsideACallDeclinedLoopback(t *testing.T) {
	st := openStore(t)
	logs, log := newLog()
	c := openCards(t, st, Options{Logger: log})
	lb := startLoopback(t, c, "s")

	if got := recvS(t, lb.call(t, c, "s", "op-stray", "stray", map[string]any{"n": 200})); got != "returned" {
		t.Fatalf("stray call = %q", got)
	}
	close(lb.release) // the call is over and finished: no call is in flight
	for i := range 200 {
		select {
		case r := <-lb.strays:
			if r.err != nil || r.res.Action != "decline" {
				t.Fatalf("stray question %d: %+v, %v; want a decline", i, r.res, r.err)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("only %d of 200 stray questions were answered", i)
		}
	}
	if n := countCards(t, st); n != 0 {
		t.Fatalf("%d cards stored for questions outside a call", n)
	}
	if p := c.Pending(); len(p) != 0 {
		t.Fatalf("pending cards: %+v", p)
	}
	if n := strings.Count(logs.String(), "outside the response stream of a tool call"); n != 200 {
		t.Fatalf("%d declines logged, want 200:\n%.500s", n, logs.String())
	}

	ch := lb.call(t, c, "s", "op-ask", "ask", map[string]any{"message": "What is your name?", "schema": json.RawMessage(askSchema)})
	card := waitPending(t, c, 1)[0]
	if card.OperationID != "op-ask" || card.Tool != "ask" || card.ConnectionID != "conn-1" {
		t.Fatalf("card = %+v", card)
	}
	if err := c.Answer(testkit.Context(t), card.ID, Response{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}); err != nil {
		t.Fatal(err)
	}
	if got := recvS(t, ch); got != `accept {"age":42,"name":"Ada"}` {
		t.Fatalf("the server got %q", got)
	}
	if n := countCards(t, st); n != 1 {
		t.Fatalf("%d cards stored, want the one of the call", n)
	}
}

// Issue #10 item 4, end to end: a schema the form cannot check exactly is
// declined, and the server learns it at once. Before the fix, a `required`
// naming an undefined property made a card; accepting it said "accepted"
// while go-sdk's validation failed the answer, so the server got an error.
func TestInconsistentSchemaDeclinedLoopback(t *testing.T) {
	st := openStore(t)
	logs, log := newLog()
	c := openCards(t, st, Options{Logger: log})
	lb := startLoopback(t, c, "s")
	for i, tc := range []struct {
		name, schema, reason string
		answer               map[string]any
	}{
		{"required names an undefined property",
			`{"type":"object","properties":{"name":{"type":"string"}},"required":["name","nickname"]}`,
			`required: \"nickname\" is not a defined property`, map[string]any{"name": "Ada"}},
		{"a rule the form does not check",
			`{"type":"object","properties":{"code":{"type":"string","pattern":"^[0-9]+$"}}}`,
			`keyword \"pattern\" is not supported`, map[string]any{"code": "abc"}},
		{"a keyword in another case",
			`{"type":"object","properties":{"name":{"type":"string","MaxLength":2}}}`,
			`spelled in another case`, map[string]any{"name": "Ada"}},
		{"an empty enum",
			`{"type":"object","properties":{"color":{"type":"string","enum":[]}}}`,
			`enum has no choices`, map[string]any{"color": "red"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := lb.call(t, c, "s", fmt.Sprintf("op-%d", i), "ask", map[string]any{"message": "Hello?", "schema": json.RawMessage(tc.schema)})
			deadline := time.After(2 * time.Minute)
			for {
				select {
				case got := <-ch:
					if got != "decline" {
						t.Fatalf("the server got %q, want a decline", got)
					}
					if n := countCards(t, st); n != 0 {
						t.Fatalf("%d cards stored", n)
					}
					if !strings.Contains(logs.String(), tc.reason) {
						t.Fatalf("the log does not give the reason %q:\n%s", tc.reason, logs.String())
					}
					return
				case <-deadline:
					t.Fatal("the call did not return")
				case <-time.After(5 * time.Millisecond):
				}
				if p := c.Pending(); len(p) > 0 {
					// The failure this test reproduces: the question got a
					// card, which accepts an answer the server never gets.
					err := c.Answer(testkit.Context(t), p[0].ID, Response{Action: ActionAccept, Content: tc.answer})
					got := recvS(t, ch)
					card, _ := c.Get(testkit.Context(t), p[0].ID)
					t.Fatalf("a card was made; accepting %v: Answer = %v, card %s, while the server got %q", tc.answer, err, card.Status, got)
				}
			}
		})
	}
}
