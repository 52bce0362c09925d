package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// The call pipeline's tests through the engine's API (they tested the
// agent registry's Call before the engine owned the pipeline, issue #21
// item 2).

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// fixtureEngine is a lazy engine with the fixture added as each of ids
// (the first as "fx" when none are given).
func fixtureEngine(t *testing.T, f *fixture.Server, ids ...string) *engine.Engine {
	t.Helper()
	if len(ids) == 0 {
		ids = []string{"fx"}
	}
	c := lazyEngine(t)
	for _, id := range ids {
		addServer(t, c, localapi.AddServerRequest{ID: id, URL: f.URL()})
	}
	return c
}

// approvedCall is a call the caller approved, with args as they come.
func approvedCall(t *testing.T, c *engine.Engine, tool, args string) *localapi.ToolResult {
	t.Helper()
	res, err := c.Call(testkit.Context(t), localapi.CallRequest{Tool: tool, Arguments: json.RawMessage(args), Approved: true}, localapi.CallHandler{})
	if err != nil || res == nil {
		t.Fatalf("call %s: %+v, %v", tool, res, err)
	}
	return res
}

// textOf joins the text of a result's blocks.
func textOf(r *localapi.ToolResult) string {
	var parts []string
	for _, b := range r.Content {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// goCall runs a call in the background; the channel gets its result.
func goCall(ctx context.Context, c *engine.Engine, req localapi.CallRequest, h localapi.CallHandler) <-chan *localapi.ToolResult {
	ch := make(chan *localapi.ToolResult, 1)
	go func() {
		res, err := c.Call(ctx, req, h)
		if err != nil {
			res = &localapi.ToolResult{Outcome: "error", Message: err.Error()}
		}
		ch <- res
	}()
	return ch
}

// recvResult waits for a background call's result.
func recvResult(t *testing.T, ch <-chan *localapi.ToolResult) *localapi.ToolResult {
	t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(2 * time.Minute): // only a hang: the call must return
		t.Fatal("call did not return")
		return nil
	}
}

// pendingCards waits until n of the engine's cards are pending.
func pendingCards(t *testing.T, c *engine.Engine, n int) []elicit.Card {
	t.Helper()
	var cards []elicit.Card
	testkit.WaitFor(t, "pending question cards", func() bool {
		cards = c.Elicit.Pending()
		return len(cards) >= n
	})
	return cards
}

// R4.1: the exact bytes the server sent as inputSchema ($ref, $defs,
// prefixItems, x-custom, key order, '<' '>' '&') reach the tool list, and
// the arguments reach the server byte for byte.
func TestR4_1_InputSchemaBytesUnchanged(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	tl, err := c.Tools(testkit.Context(t), localapi.ToolsRequest{ServerID: "fx", Connect: true})
	if err != nil {
		t.Fatal(err)
	}
	var tool *localapi.Tool
	for i := range tl.Tools {
		if tl.Tools[i].Name == "mcp__fx__schema" {
			tool = &tl.Tools[i]
		}
	}
	if tool == nil {
		t.Fatalf("no mcp__fx__schema in %+v", tl.Tools)
	}
	if !bytes.Equal(tool.InputSchema, []byte(fixture.SchemaToolInputSchema)) {
		t.Fatalf("input schema changed:\n got %s\nwant %s", tool.InputSchema, fixture.SchemaToolInputSchema)
	}
	if tool.Effects != localapi.EffectsWrite || tool.Retry != localapi.RetryNever || tool.ServerID != "fx" || tool.ToolName != "schema" {
		t.Fatalf("tool = %+v, want effects write, retry never, server fx, tool schema", tool)
	}
	args := `{"origin":{"y":1,"x":2},"pair":["a",3]}`
	if res := approvedCall(t, c, "mcp__fx__schema", args); res.Outcome != localapi.OutcomeOK || textOf(res) != args {
		t.Fatalf("schema call = %+v (%q); want the arguments back byte for byte", res, textOf(res))
	}
}

// Names: a collision between two servers and a 200-character tool name
// both give unique, valid names of at most 64 characters, stable across
// listings, and calls reach the right tool.
func TestToolNamesCollisionAndLength(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	long := strings.Repeat("t", 200)
	f.AddTool("y__echo") // server "x" → mcp__x__y__echo, like "echo" on server "x__y"
	f.AddTool(long)
	c := fixtureEngine(t, f, "x", "x__y")
	list := func() map[[2]string]string {
		tl, err := c.Tools(testkit.Context(t), localapi.ToolsRequest{Connect: true})
		if err != nil {
			t.Fatal(err)
		}
		names := map[[2]string]string{}
		seen := map[string]bool{}
		for _, tool := range tl.Tools {
			if !validName.MatchString(tool.Name) || seen[tool.Name] {
				t.Errorf("invalid or duplicate name %q", tool.Name)
			}
			seen[tool.Name] = true
			names[[2]string{tool.ServerID, tool.ToolName}] = tool.Name
		}
		return names
	}
	names := list()
	a, b := names[[2]string{"x", "y__echo"}], names[[2]string{"x__y", "echo"}]
	if a != "mcp__x__y__echo" {
		t.Errorf("the unmangled name lost the collision: %q", a)
	}
	if b == a || !strings.HasPrefix(b, "mcp__x__y__echo_") || len(b) != len("mcp__x__y__echo")+9 {
		t.Errorf("colliding tool got %q, want mcp__x__y__echo_<hash>", b)
	}
	l1, l2 := names[[2]string{"x", long}], names[[2]string{"x__y", long}]
	if len(l1) != 64 || len(l2) != 64 || l1 == l2 {
		t.Errorf("long names %q, %q: want two different 64-character names", l1, l2)
	}
	if again := list()[[2]string{"x__y", "echo"}]; again != b {
		t.Errorf("name changed across listings: %q → %q", b, again)
	}
	for _, tc := range []struct{ name, args, want string }{
		{b, `{"text":"via x__y"}`, "via x__y"},
		{l2, `{"text":"long"}`, "long"},
		{a, `{}`, "y__echo"},
	} {
		if res := approvedCall(t, c, tc.name, tc.args); textOf(res) != tc.want {
			t.Errorf("call %s = %q; want %q", tc.name, textOf(res), tc.want)
		}
	}
}

// R4.1: readOnlyHint never lowers approval: the call still asks, a denial
// is a readable result (not an error) and nothing is sent; an approver
// that fails is no approval.
func TestR4_1_ReadOnlyHintStillAsks(t *testing.T) {
	var runs atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "annotated", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "peek", Description: "Claims to only read.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "peeked"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: ts.URL + "/mcp"})
	var asked []localapi.ApprovalRequest
	decide := func(d localapi.Decision, err error) localapi.CallHandler {
		return localapi.CallHandler{Approve: func(r localapi.ApprovalRequest) (localapi.Decision, error) {
			asked = append(asked, r)
			return d, err
		}}
	}
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/peek", OperationID: "peek-1"}, decide(localapi.Decision{Reason: "not now"}, nil))
	if err != nil || res.Outcome != localapi.OutcomeDenied || !res.IsError || res.MaybeExecuted ||
		!strings.Contains(res.Message, "denied") || !strings.Contains(res.Message, "not now") {
		t.Fatalf("denied result = %+v, %v", res, err)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("a denied call ran %d times", n)
	}
	if len(asked) != 1 || !strings.Contains(string(asked[0].Annotations), `"readOnlyHint":true`) || asked[0].OperationID != "peek-1" || asked[0].ServerID != "fx" {
		t.Fatalf("approval requests = %+v", asked)
	}
	res, err = c.Call(ctx, localapi.CallRequest{Tool: "fx/peek"}, decide(localapi.Decision{Approved: true}, nil))
	if err != nil || res.Outcome != localapi.OutcomeOK || runs.Load() != 1 || len(asked) != 2 {
		t.Fatalf("approved call = %+v, %v (approvals %d)", res, err, len(asked))
	}
	res, _ = c.Call(ctx, localapi.CallRequest{Tool: "fx/peek"}, decide(localapi.Decision{}, fmt.Errorf("ui gone")))
	if res.Outcome != localapi.OutcomeApprovalFailed || !strings.Contains(res.Message, "ui gone") || runs.Load() != 1 {
		t.Fatalf("approver error: %+v, execs %d", res, runs.Load())
	}
}

// R4.6: a 5 MB result is cut to the default budget with a marker giving
// the original size.
func TestR4_6_BigResultTruncated(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	const size, budget = 5 << 20, 100_000
	res := approvedCall(t, c, "mcp__fx__big", fmt.Sprintf(`{"bytes":%d}`, size))
	if res.Outcome != localapi.OutcomeOK || !res.Truncated || res.OriginalChars != size || res.ShownChars != budget {
		t.Fatalf("big: outcome %s, truncated %v, original %d, shown %d; want ok, true, %d, %d", res.Outcome, res.Truncated, res.OriginalChars, res.ShownChars, size, budget)
	}
	if len(res.Content) != 1 || len(res.Content[0].Text) != budget || res.Content[0].Truncated == nil ||
		*res.Content[0].Truncated != (localapi.Truncation{ShownChars: budget, OriginalChars: size}) {
		t.Fatalf("kept %d blocks: %+v", len(res.Content), res.Content[0].Truncated)
	}
}

// R4.1: arguments are parsed leniently; invalid JSON is a result the model
// can read, and nothing is sent. Unknown tools, tool errors and
// structured content read as the model needs them.
func TestR4_1_LenientArguments(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	for _, tc := range []struct {
		name, args string
		outcome    localapi.Outcome
		want       string
	}{
		{"object", `{"text":"a"}`, localapi.OutcomeOK, "a"},
		{"code fence", "```json\n{\"text\":\"b\"}\n```", localapi.OutcomeOK, "b"},
		{"double encoded", `"{\"text\":\"c\"}"`, localapi.OutcomeOK, "c"},
		{"invalid", `{"text":`, localapi.OutcomeInvalidArguments, "not valid JSON"},
		{"array", `["x"]`, localapi.OutcomeInvalidArguments, "must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.Executions("echo")
			res := approvedCall(t, c, "fx/echo", tc.args)
			got := textOf(res)
			if tc.outcome != localapi.OutcomeOK {
				got = res.Message
				if f.Executions("echo") != before || res.MaybeExecuted {
					t.Fatal("invalid arguments were sent")
				}
			}
			if res.Outcome != tc.outcome || !strings.Contains(got, tc.want) {
				t.Fatalf("%s: %+v; want %s containing %q", tc.args, res, tc.outcome, tc.want)
			}
		})
	}
	if res := approvedCall(t, c, "fx/nope", `{}`); res.Outcome != localapi.OutcomeUnavailable || !strings.Contains(res.Message, "no tool named") {
		t.Fatalf("unknown tool: %+v", res)
	}
	if res := approvedCall(t, c, "fx/fail", `{}`); res.Outcome != localapi.OutcomeOK || !res.IsError || !strings.Contains(res.Message, "reported an error") {
		t.Fatalf("isError result: %+v", res)
	}
	if res := approvedCall(t, c, "fx/add", `{"a":1,"b":2}`); string(res.StructuredContent) != `{"sum":3}` || textOf(res) != "3" {
		t.Fatalf("structured: %s, text %q", res.StructuredContent, textOf(res))
	}
}

// R4.4: the tool list follows the server's catalog as it commits, and
// disabledTools removes a tool and refuses its calls before sending.
func TestR4_4_RebuildOnCommitAndDisabledTools(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	ctx := testkit.Context(t)
	has := func(name string) bool {
		tl, err := c.Tools(ctx, localapi.ToolsRequest{ServerID: "fx"})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tl.Tools {
			if tool.Name == name {
				return true
			}
		}
		return false
	}
	if !has("mcp__fx__echo") && approvedCall(t, c, "fx/echo", `{"text":"x"}`).Outcome != localapi.OutcomeOK {
		t.Fatal("echo did not run")
	}
	testkit.WaitFor(t, "standalone stream", func() bool { return f.StandaloneStreams() > 0 })
	f.AddTool("fresh")
	testkit.WaitFor(t, "mcp__fx__fresh", func() bool { return has("mcp__fx__fresh") })
	f.RemoveTool("fresh")
	testkit.WaitFor(t, "mcp__fx__fresh gone", func() bool { return !has("mcp__fx__fresh") })

	if _, err := c.SetTool(ctx, "fx", "echo", false); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "echo disabled", func() bool { return !has("mcp__fx__echo") })
	execs := f.Executions("echo")
	res := approvedCall(t, c, "mcp__fx__echo", `{"text":"x"}`)
	if res.Outcome != localapi.OutcomeUnavailable || res.MaybeExecuted || !strings.Contains(res.Message, "disabled") || res.ServerID != "fx" {
		t.Fatalf("disabled tool call: %+v", res)
	}
	if f.Executions("echo") != execs {
		t.Fatal("a disabled tool ran")
	}
	if !has("mcp__fx__add") {
		t.Fatal("disabling echo removed other tools")
	}
}

// R4.5: a cancel before the call begins (it is never sent, and its record
// is used up), and during it by CancelCall and by the context: the server
// is told once, and the call is never re-sent.
func TestR4_5_Cancel(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	ctx := testkit.Context(t)

	t.Run("before it begins", func(t *testing.T) {
		if err := c.CancelCall(ctx, "early"); err != nil {
			t.Fatal(err)
		}
		asked := 0
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":50}`), OperationID: "early"},
			localapi.CallHandler{Approve: func(localapi.ApprovalRequest) (localapi.Decision, error) {
				asked++
				return localapi.Decision{Approved: true}, nil
			}})
		if err != nil || res.Outcome != localapi.OutcomeCancelled || res.MaybeExecuted || !strings.Contains(res.Message, "before it was sent") {
			t.Fatalf("cancelled-first call: %+v, %v", res, err)
		}
		if n := f.Executions("slow"); n != 0 || asked != 0 {
			t.Fatalf("an early-cancelled call ran %d times, was asked about %d times", n, asked)
		}
		res, err = c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":10}`), OperationID: "early", Approved: true}, localapi.CallHandler{})
		if err != nil || res.Outcome != localapi.OutcomeOK || f.Executions("slow") != 1 {
			t.Fatalf("reused id: %+v, %v", res, err)
		}
	})

	for i, how := range []string{"CancelCall", "context"} {
		t.Run("during/"+how, func(t *testing.T) {
			execs, cancelled := f.Executions("slow"), f.Cancelled("slow")
			op := fmt.Sprintf("during-%d", i)
			// No deadline: only the cancel ends the call early.
			cctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			progress := make(chan struct{}, 100)
			ch := goCall(cctx, c, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":120000}`), OperationID: op, Approved: true},
				localapi.CallHandler{Progress: func(localapi.Progress) {
					select {
					case progress <- struct{}{}:
					default:
					}
				}})
			select {
			case <-progress: // the call runs on the server, and progress reaches us
			case <-time.After(2 * time.Minute): // only a hang
				t.Fatal("no progress")
			}
			if how == "CancelCall" {
				if err := c.CancelCall(ctx, op); err != nil {
					t.Fatal(err)
				}
			} else {
				cancel()
			}
			res := recvResult(t, ch)
			if res.Outcome != localapi.OutcomeCancelled || !res.MaybeExecuted || res.OperationID != op || !strings.Contains(res.Message, "while it ran") {
				t.Fatalf("cancelled call: %+v", res)
			}
			testkit.WaitFor(t, "server-side cancellation", func() bool { return f.Cancelled("slow") == cancelled+1 })
			if f.Executions("slow") != execs+1 {
				t.Fatalf("executions %d, want %d", f.Executions("slow"), execs+1)
			}
		})
	}
}

// R4.5: a tool slower than its server's timeout fails cleanly; a faster
// one inside a longer timeout succeeds; the per-call timeout works too.
// Neither is re-sent.
func TestR4_5_Timeouts(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	addServer(t, c, localapi.AddServerRequest{ID: "short", URL: f.URL(), ToolTimeout: "300ms"})
	addServer(t, c, localapi.AddServerRequest{ID: "long", URL: f.URL(), ToolTimeout: "5s"})

	res := approvedCall(t, c, "short/slow", `{"ms":3000,"quiet":true}`)
	if res.Outcome != localapi.OutcomeTimeout || !res.MaybeExecuted || !strings.Contains(res.Message, "server's tool timeout") {
		t.Fatalf("slow past the server timeout: %+v", res)
	}
	testkit.WaitFor(t, "the server to see the cancel", func() bool { return f.Cancelled("slow") == 1 })

	if res := approvedCall(t, c, "long/slow", `{"ms":500}`); res.Outcome != localapi.OutcomeOK || textOf(res) != "slept 500ms" {
		t.Fatalf("fast call inside a long timeout: %+v", res)
	}

	res, err := c.Call(testkit.Context(t), localapi.CallRequest{Tool: "long/slow", Arguments: json.RawMessage(`{"ms":3000}`), Approved: true, Timeout: "200ms"}, localapi.CallHandler{})
	if err != nil || res.Outcome != localapi.OutcomeTimeout || !res.MaybeExecuted || !strings.Contains(res.Message, "timed out after 200ms") {
		t.Fatalf("per-call timeout: %+v, %v", res, err)
	}
	testkit.WaitFor(t, "the server to see the second cancel", func() bool { return f.Cancelled("slow") == 2 })
	if n := f.Executions("slow"); n != 3 {
		t.Fatalf("slow ran %d times, want 3 (never retried)", n)
	}
}

// R2.10: a malformed result is refused, reported as a call that may have
// run (the error text as content: it can carry server text), and not
// re-sent.
func TestR2_10_InvalidResultDropped(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	if _, err := c.Connect(testkit.Context(t), "fx"); err != nil {
		t.Fatal(err)
	}
	f.MalformedNext("tools/call")
	res := approvedCall(t, c, "fx/echo", `{"text":"x"}`)
	if res.Outcome != localapi.OutcomeFailed || !res.MaybeExecuted || !strings.Contains(res.Message, "not re-sent") ||
		len(res.Content) != 1 || res.Content[0].Provenance != (localapi.Provenance{Server: "fx", Kind: localapi.BlockTool, Name: "echo"}) {
		t.Fatalf("malformed result: %+v", res)
	}
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times, want 1 (never re-sent)", n)
	}
}

// A server that is down fails each listing the same way: only the first
// failure is news. Publishing the same failure again woke every
// subscriber, and the MCP front ends' re-sync on each snapshot listed
// again: a reconnect loop while any host was connected (issue #19
// acceptance; issue #20 item 1).
func TestRefreshSameFailureIsNoNews(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String() + "/mcp"
	ln.Close() // nothing listens there now: connection refused
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "down", URL: down})
	first, err := c.Tools(ctx, localapi.ToolsRequest{Connect: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Errors) != 1 || first.Errors[0].ServerID != "down" {
		t.Fatalf("the down server has no error in the list: %+v", first.Errors)
	}
	for range 3 {
		c.Manager.ResetBackoff("down") // each listing tries again
		if _, err := c.Tools(ctx, localapi.ToolsRequest{Connect: true}); err != nil {
			t.Fatal(err)
		}
	}
	if tl, _ := c.Tools(ctx, localapi.ToolsRequest{}); tl.Generation != first.Generation {
		t.Fatalf("the same failure published %d new snapshots: first %+v, now %+v", tl.Generation-first.Generation, first.Errors, tl.Errors)
	}
}

// R4.2, R4.3: a prompt's missing required argument is refused naming it
// before anything is sent; @ search ranks; reads give blocks with their
// provenance and MIME type, binary summarised; a bad mention is a bad
// request.
func TestPromptsResourcesThroughPipeline(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	f.AddResource("test://readme-extra")
	c := fixtureEngine(t, f)
	ctx := testkit.Context(t)
	_, err := c.GetPrompt(ctx, localapi.GetPromptRequest{Command: "/fx:greet", Arguments: map[string]string{"style": "formal"}})
	if e, ok := localapi.AsError(err); !ok || e.Code != localapi.CodeBadRequest || e.Field != "name" {
		t.Fatalf("missing required argument: %v", err)
	}
	pr, err := c.GetPrompt(ctx, localapi.GetPromptRequest{Command: "fx:greet", Arguments: map[string]string{"name": "Ada", "style": "formal"}})
	if err != nil || pr.Command != "/fx:greet" || len(pr.Blocks) != 1 || pr.Blocks[0].Text != "Please greet Ada in a formal style." ||
		pr.Blocks[0].Provenance != (localapi.Provenance{Server: "fx", Kind: localapi.BlockPrompt, Name: "greet"}) || pr.Blocks[0].Role != "user" {
		t.Fatalf("prompt: %+v, %v", pr, err)
	}
	got, err := c.Resources(ctx, localapi.ResourcesRequest{Query: "@readme"})
	if err != nil || len(got) < 2 || got[0].URI != fixture.ReadmeURI || got[1].URI != "test://readme-extra" {
		t.Fatalf("search readme = %+v, %v", got, err)
	}
	rr, err := c.ReadResource(ctx, localapi.ReadRequest{Mention: "@fx:" + fixture.ReadmeURI})
	if err != nil || len(rr.Blocks) != 1 || rr.Blocks[0].Text != fixture.ReadmeMarkdown || rr.Blocks[0].MIMEType != "text/markdown" ||
		rr.Blocks[0].Provenance != (localapi.Provenance{Server: "fx", Kind: localapi.BlockResource, URI: fixture.ReadmeURI}) {
		t.Fatalf("read readme = %+v, %v", rr, err)
	}
	rr, err = c.ReadResource(ctx, localapi.ReadRequest{Mention: "@fx:" + fixture.LogoURI})
	want := fmt.Sprintf("[binary image/png, %d bytes]", len(fixture.LogoPNG()))
	if err != nil || len(rr.Blocks) != 1 || rr.Blocks[0].Text != want || !bytes.Equal(rr.Blocks[0].Data, fixture.LogoPNG()) {
		t.Fatalf("read logo = %+v, %v", rr, err)
	}
	for _, bad := range []string{"@fx", "@:x", "readme"} {
		if _, err := c.ReadResource(ctx, localapi.ReadRequest{Mention: bad}); code(err) != localapi.CodeBadRequest {
			t.Errorf("ReadResource(%q) = %v, want a bad request", bad, err)
		}
	}
}

// R6.1: a server question during a tool call becomes a stored card,
// attributed to the call; a bad answer is refused naming the field and
// leaves the card open; the answer's defaults apply and the call goes on.
func TestR6_1_ElicitationCards(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	ctx := testkit.Context(t)
	for _, tc := range []struct {
		name    string
		bad     map[string]any // a refused answer, and the fields it must name
		badWant []string
		answer  localapi.Answer
		want    string
		status  localapi.CardStatus
	}{
		{name: "accept with default age", answer: localapi.Answer{Action: "accept", Content: map[string]any{"name": "Ada"}},
			want: "hello Ada (42)", status: localapi.CardAccepted},
		{name: "accept a number typed as text", answer: localapi.Answer{Action: "accept", Content: map[string]any{"name": "Ada", "age": "7"}},
			want: "hello Ada (7)", status: localapi.CardAccepted},
		{name: "decline", answer: localapi.Answer{Action: "decline"}, want: "declined", status: localapi.CardDeclined},
		{name: "bad content refused, then accepted", bad: map[string]any{"age": "abc"}, badWant: []string{"age", "name"},
			answer: localapi.Answer{Action: "accept", Content: map[string]any{"name": "Ada", "age": 30}},
			want:   "hello Ada (30)", status: localapi.CardAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := "ask-" + strings.ReplaceAll(tc.name, " ", "-")
			ch := goCall(ctx, c, localapi.CallRequest{Tool: "fx/ask", Arguments: json.RawMessage(`{}`), OperationID: op, Approved: true}, localapi.CallHandler{})
			card := pendingCards(t, c, 1)[0]
			if card.Tool != "ask" || card.OperationID != op || card.ServerID != "fx" || card.Message != "What is your name?" {
				t.Fatalf("card = %+v", card)
			}
			raw, err := c.Store.GetKV(ctx, elicit.Namespace, card.ID)
			if err != nil || !strings.Contains(string(raw), `"status":"pending"`) {
				t.Fatalf("stored card %s, %v", raw, err)
			}
			if tc.bad != nil {
				err := c.Answer(ctx, card.ID, localapi.Answer{Action: "accept", Content: tc.bad})
				e, ok := localapi.AsError(err)
				if !ok || e.Code != localapi.CodeBadRequest {
					t.Fatalf("bad answer %v: %v", tc.bad, err)
				}
				for _, w := range tc.badWant {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("bad answer %v: %q does not name %q", tc.bad, err, w)
					}
				}
				if len(c.Elicit.Pending()) != 1 {
					t.Fatal("a refused answer closed the card")
				}
			}
			if err := c.Answer(ctx, card.ID, tc.answer); err != nil {
				t.Fatalf("answer: %v", err)
			}
			if res := recvResult(t, ch); res.Outcome != localapi.OutcomeOK || textOf(res) != tc.want {
				t.Fatalf("call = %+v (%q); want %q", res, textOf(res), tc.want)
			}
			testkit.WaitFor(t, "settled card", func() bool {
				got, err := c.Card(ctx, card.ID)
				return err == nil && got.Status == tc.status
			})
			if err := c.Answer(ctx, card.ID, tc.answer); code(err) != localapi.CodeConflict {
				t.Fatalf("second answer: %v, want a conflict", err)
			}
		})
	}
}

// R4.5: calls to a server wait while one of its questions is open (after
// their approval); a waiting call cancelled first is never dispatched,
// another one goes once the question is answered.
func TestR4_5_QueuedBehindElicitation(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	ctx := testkit.Context(t)
	ask := goCall(ctx, c, localapi.CallRequest{Tool: "fx/ask", Arguments: json.RawMessage(`{}`), OperationID: "A", Approved: true}, localapi.CallHandler{})
	card := pendingCards(t, c, 1)[0]

	approved := make(chan string, 3)
	h := localapi.CallHandler{Approve: func(r localapi.ApprovalRequest) (localapi.Decision, error) {
		approved <- r.OperationID
		return localapi.Decision{Approved: true}, nil
	}}
	ctxC, cancelC := context.WithCancel(ctx)
	defer cancelC()
	queued := map[string]<-chan *localapi.ToolResult{
		"B": goCall(ctx, c, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"b"}`), OperationID: "B"}, h),
		"C": goCall(ctxC, c, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"c"}`), OperationID: "C"}, h),
		"D": goCall(ctx, c, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"d"}`), OperationID: "D"}, h),
	}
	for range 3 {
		<-approved
	}
	if n := f.Executions("echo"); n != 0 {
		t.Fatalf("echo ran %d times while a question was open", n)
	}
	if err := c.CancelCall(ctx, "B"); err != nil {
		t.Fatal(err)
	}
	cancelC()
	for _, op := range []string{"B", "C"} {
		if res := recvResult(t, queued[op]); res.Outcome != localapi.OutcomeCancelled || res.MaybeExecuted {
			t.Fatalf("queued call %s cancelled: %+v", op, res)
		}
	}
	if err := c.Answer(ctx, card.ID, localapi.Answer{Action: "accept", Content: map[string]any{"name": "Q"}}); err != nil {
		t.Fatal(err)
	}
	if res := recvResult(t, ask); textOf(res) != "hello Q (42)" {
		t.Fatalf("ask = %+v", res)
	}
	if res := recvResult(t, queued["D"]); textOf(res) != "d" {
		t.Fatalf("queued call D = %+v", res)
	}
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times, want 1 (only D; B and C were cancelled while queued)", n)
	}
}

// A disconnect while a question is open closes the card at once, instead
// of leaving it to wait for the person, and the call fails.
func TestDisconnectClosesOpenCard(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL(), ToolTimeout: "1s"})
	ch := goCall(ctx, c, localapi.CallRequest{Tool: "fx/ask", Arguments: json.RawMessage(`{}`), OperationID: "dc", Approved: true}, localapi.CallHandler{})
	card := pendingCards(t, c, 1)[0]
	if _, err := c.Disconnect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	got, err := c.Card(ctx, card.ID)
	if err != nil || got.Status != localapi.CardCancelled ||
		!(strings.Contains(got.Reason, "connection") || strings.Contains(got.Reason, "tool call ended")) {
		t.Fatalf("card after disconnect = %+v, %v", got, err)
	}
	if res := recvResult(t, ch); res.Outcome == localapi.OutcomeOK && !res.IsError {
		t.Fatalf("the call succeeded without an answer: %+v", res)
	}
}

// R6.2: a shutdown while a question is open fails the waiting call with
// an explicit "never reached the server", and the card stays interrupted
// for the next process; there the call is re-sent only after the
// person's confirmation, once, through the pipeline.
func TestR6_2_ShutdownInterruptsCallThenRetry(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	dir := t.TempDir()
	ctx := testkit.Context(t)
	c1 := openEngine(t, dir, engine.Options{NoStartupConnect: true})
	addServer(t, c1, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	ch := goCall(ctx, c1, localapi.CallRequest{Tool: "fx/ask", Arguments: json.RawMessage(`{}`), OperationID: "sd", Approved: true}, localapi.CallHandler{})
	card := pendingCards(t, c1, 1)[0]
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	res := recvResult(t, ch)
	if res.Outcome != localapi.OutcomeInterrupted || !res.MaybeExecuted || !strings.Contains(res.Message, "never reached the server") {
		t.Fatalf("call at shutdown = %+v", res)
	}

	c2 := openEngine(t, dir, engine.Options{NoStartupConnect: true})
	got, err := c2.Card(ctx, card.ID)
	if err != nil || got.Status != localapi.CardInterrupted || !strings.Contains(got.Reason, "shut down") {
		t.Fatalf("card in the next process = %+v, %v", got, err)
	}
	if err := c2.Answer(ctx, card.ID, localapi.Answer{Action: "accept", Content: map[string]any{"name": "X"}}); code(err) != localapi.CodeConflict {
		t.Fatalf("answering an interrupted card: %v", err)
	}
	if _, err := c2.Retry(ctx, card.ID, false); code(err) != localapi.CodeBadRequest {
		t.Fatalf("Retry without confirmation: %v", err)
	}
	if n := f.Executions("ask"); n != 1 {
		t.Fatalf("ask was re-sent without confirmation (%d runs)", n)
	}
	answered := make(chan error, 1)
	go func() {
		k := pendingCards(t, c2, 1)[0]
		if k.Tool != "ask" || k.OperationID == "sd" {
			answered <- fmt.Errorf("re-sent call's card = %+v", k)
			return
		}
		answered <- c2.Answer(ctx, k.ID, localapi.Answer{Action: "accept", Content: map[string]any{"name": "Bob"}})
	}()
	res, err = c2.Retry(ctx, card.ID, true)
	if err != nil || res.Outcome != localapi.OutcomeOK || textOf(res) != "hello Bob (42)" || res.Tool != "mcp__fx__ask" {
		t.Fatalf("re-sent call = %+v, %v", res, err)
	}
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Retry(ctx, card.ID, true); code(err) != localapi.CodeConflict {
		t.Fatalf("second Retry: %v, want a conflict (already re-sent)", err)
	}
	if n := f.Executions("ask"); n != 2 {
		t.Fatalf("ask ran %d times, want 2", n)
	}
}

// A session that closes under a call in flight (the server disconnected)
// ends the call's one context too, with its own cause: the call failed,
// and may have run; it was not cancelled by anyone.
func TestDisconnectDuringCallIsNoCancel(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := fixtureEngine(t, f)
	ctx := testkit.Context(t)
	ch := goCall(ctx, c, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":120000}`), Approved: true}, localapi.CallHandler{})
	testkit.WaitFor(t, "the slow call to run", func() bool { return f.Executions("slow") == 1 })
	if _, err := c.Disconnect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	res := recvResult(t, ch)
	if res.Outcome != localapi.OutcomeFailed || !res.MaybeExecuted || !strings.Contains(res.Message, "may or may not have run") {
		t.Fatalf("call when its session closed: %+v", res)
	}
}
