package engine_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/clocktest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// toolCalls returns the bodies of the tools/call requests the fixture got
// and how many notifications/cancelled.
func toolCalls(f *fixture.Server) (calls []string, cancels int) {
	for _, r := range f.Requests() {
		switch r.RPCMethod {
		case "tools/call":
			calls = append(calls, string(r.Body))
		case "notifications/cancelled":
			cancels++
		}
	}
	return calls, cancels
}

// Issue #21 item 2: one call has one operation id from the engine down to
// the wire. The caller's id is the result's, the session's progress token
// (sent only because someone listens), the id the manager cancels by
// (CancelCall), and the card of the server's question names it (the
// session's stream mark, attributed by elicit).
func TestCallOneOperationIDEverywhere(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})

	// A question of the call: its card names the call's id.
	var card localapi.Card
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/ask", Arguments: json.RawMessage(`{}`), Approved: true, OperationID: "op-one-ask"},
		localapi.CallHandler{Question: func(k localapi.Card) {
			card = k
			go c.Answer(ctx, k.ID, localapi.Answer{Action: "accept", Content: map[string]any{"name": "Ada", "age": 42}})
		}})
	if err != nil || res.Outcome != localapi.OutcomeOK || res.OperationID != "op-one-ask" {
		t.Fatalf("ask: %+v %v", res, err)
	}
	if card.OperationID != "op-one-ask" {
		t.Fatalf("the question's card names operation %q, want op-one-ask", card.OperationID)
	}

	// A listening call: the progress token on the wire is the call's id,
	// and CancelCall by that id stops it.
	f.ResetRequests()
	done := make(chan *localapi.ToolResult, 1)
	go func() {
		res, _ := c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":60000}`), Approved: true, OperationID: "op-one-slow"},
			localapi.CallHandler{Progress: func(localapi.Progress) {}})
		done <- res
	}()
	testkit.WaitFor(t, "the slow call to run", func() bool { return f.Executions("slow") == 1 })
	if err := c.CancelCall(ctx, "op-one-slow"); err != nil {
		t.Fatal(err)
	}
	res = <-done
	if res == nil || res.Outcome != localapi.OutcomeCancelled || res.OperationID != "op-one-slow" || !res.MaybeExecuted {
		t.Fatalf("cancelled call: %+v", res)
	}
	calls, _ := toolCalls(f)
	if len(calls) != 1 || !strings.Contains(calls[0], `"progressToken":"op-one-slow"`) {
		t.Fatalf("tools/call requests %q, want one with progressToken op-one-slow", calls)
	}
}

// R4.5: a cancel through CancelCall reaches the server as one
// notifications/cancelled, however the layers below see the cancel.
func TestCancelCallSendsOneCancelledNotification(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	if _, err := c.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"op-c1", "op-c2", "op-c3"} {
		f.ResetRequests()
		done := make(chan *localapi.ToolResult, 1)
		go func() {
			res, _ := c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":60000}`), Approved: true, OperationID: id}, localapi.CallHandler{})
			done <- res
		}()
		testkit.WaitFor(t, "the slow call to run", func() bool { return f.Executions("slow") == int64(i+1) })
		if err := c.CancelCall(ctx, id); err != nil {
			t.Fatal(err)
		}
		if res := <-done; res == nil || res.Outcome != localapi.OutcomeCancelled {
			t.Fatalf("%s: %+v", id, res)
		}
		testkit.WaitFor(t, "the server to see the cancel", func() bool { return f.Cancelled("slow") == int64(i+1) })
		// A second cancel of an ended call sends nothing more.
		if err := c.CancelCall(ctx, id); err != nil {
			t.Fatal(err)
		}
		// The notification reaches the server before the tool's context
		// ends there, so it is recorded by now.
		if _, n := toolCalls(f); n != 1 {
			t.Fatalf("%s: %d notifications/cancelled, want 1", id, n)
		}
	}
}

// Issue #21, decided: a call asks for progress (sends a progressToken)
// only when someone listens; only then does progress extend its time.
func TestProgressTokenOnlyWhenListened(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := lazyEngine(t)
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	for _, tc := range []struct {
		name      string
		h         localapi.CallHandler
		wantToken bool
	}{
		{"nobody listens", localapi.CallHandler{}, false},
		{"a progress callback", localapi.CallHandler{Progress: func(localapi.Progress) {}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.ResetRequests()
			res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true, OperationID: "op-" + strings.ReplaceAll(tc.name, " ", "-")}, tc.h)
			if err != nil || res.Outcome != localapi.OutcomeOK {
				t.Fatalf("call: %+v %v", res, err)
			}
			calls, _ := toolCalls(f)
			if len(calls) != 1 {
				t.Fatalf("%d tools/call requests", len(calls))
			}
			if got := strings.Contains(calls[0], `"progressToken"`); got != tc.wantToken {
				t.Fatalf("progressToken sent: %v, want %v (%s)", got, tc.wantToken, calls[0])
			}
		})
	}
}

// A call refused before anything was sent says "not sent" in the same
// words as before the one pipeline (issue #21 item 2): a server inside
// its backoff window, a disabled server, a disabled tool, a server that
// needs a sign-in again. The words are the engine's of f154196. Guard.
func TestCallRefusedBeforeSendingSameWords(t *testing.T) {
	t.Run("backoff", func(t *testing.T) {
		f := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return false
		}})
		clock := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
		c := openEngine(t, "", engine.Options{NoStartupConnect: true, Clock: clock})
		ctx := testkit.Context(t)
		addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
		if _, err := c.Connect(ctx, "fx"); err == nil {
			t.Fatal("connect to a server answering 503 worked")
		}
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true, OperationID: "op-b"}, localapi.CallHandler{})
		want := wantNotSent["backoff"]
		if err != nil || res.Outcome != localapi.OutcomeUnavailable || res.MaybeExecuted || someTime.ReplaceAllString(strings.ReplaceAll(res.Message, f.URL(), "URL"), "T") != want {
			t.Fatalf("call: %+v %v\nwant %q", res, err, want)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		f := testkit.StartFixture(t, fixture.Options{})
		c := lazyEngine(t)
		ctx := testkit.Context(t)
		addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
		if _, err := c.SetTool(ctx, "fx", "echo", false); err != nil {
			t.Fatal(err)
		}
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true, OperationID: "op-t"}, localapi.CallHandler{})
		if err != nil || res.Outcome != localapi.OutcomeUnavailable || res.MaybeExecuted || res.Message != wantNotSent["tool"] {
			t.Fatalf("disabled tool: %+v %v\nwant %q", res, err, wantNotSent["tool"])
		}
		if _, err := c.SetEnabled(ctx, "fx", false); err != nil {
			t.Fatal(err)
		}
		_, err = c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
		if err == nil || err.Error() != wantNotSent["server"] {
			t.Fatalf("disabled server: %v\nwant %q", err, wantNotSent["server"])
		}
		if n := f.Executions("echo"); n != 0 {
			t.Fatalf("echo ran %d times", n)
		}
	})
	t.Run("sign-in", func(t *testing.T) {
		as, err := authserver.Start(authserver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(as.Close)
		f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
		ctx := testkit.Context(t)
		c := openEngine(t, "", engine.Options{NoStartupConnect: true})
		if err := c.Grant(ctx, as.URL(), ""); err != nil {
			t.Fatal(err)
		}
		port := freePort(t)
		addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: port})
		signIn(t, c, "secure", port)
		if _, err := c.Connect(ctx, "secure"); err != nil {
			t.Fatal(err)
		}
		// The tokens die while the session lives: the next call is
		// answered 401 and no refresh helps.
		as.ExpireAccessTokens()
		as.RevokeRefreshTokens()
		res, err := c.Call(ctx, localapi.CallRequest{Tool: "secure/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true, OperationID: "op-s"}, localapi.CallHandler{})
		if err != nil || res.Outcome != localapi.OutcomeUnavailable || res.MaybeExecuted || res.Message != wantNotSent["sign-in"] {
			t.Fatalf("call: %+v %v\nwant %q", res, err, wantNotSent["sign-in"])
		}
		if n := f.Executions("echo"); n != 0 {
			t.Fatalf("echo ran %d times", n)
		}
	})
}

// someTime is the time of day a backoff message names (it has jitter).
var someTime = regexp.MustCompile(`\d\d:\d\d:\d\d`)

// wantNotSent are the messages of f154196 (before issue #21 item 2).
var wantNotSent = map[string]string{
	"backoff": `The call of tool "mcp__fx__echo" was not sent: MCP server "fx" could not be connected (server "fx": connect: initialize: calling "initialize": sending "initialize": rejected by transport: Post "URL": HTTP 503 Service Unavailable for initialize (not tried again before T, after 1 failed attempt in a row; run "remotemcp connect fx" to try now)). Nothing reached the server, so the tool did not run.`,
	"tool":    `Tool "mcp__fx__echo" is disabled by the user for MCP server "fx"; the call was not sent.`,
	"server":  `server fx is disabled; enable it first (servers enable fx)`,
	"sign-in": `The call of tool "mcp__secure__echo" was not sent: MCP server "secure" needs a sign-in (step authorization): sign in (remotemcp auth login secure), then call again. Nothing reached the server, so the tool did not run.`,
}
