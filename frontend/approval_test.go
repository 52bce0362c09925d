package frontend_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// host is an in-process go-sdk client (the MCP host) connected to a
// front end over the engine.
type host struct {
	cs    *mcp.ClientSession
	asked atomic.Int32 // elicitations the host received
	last  atomic.Value // the last elicitation's message
}

// startHost runs a front end over eng and connects a host to it. answer,
// when set, makes the host declare elicitation and answer with it.
func startHost(t *testing.T, ctx context.Context, eng localapi.Engine, answer string) *host {
	t.Helper()
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- fe.Run(rctx, st) }()
	t.Cleanup(func() { stop(); <-done })
	h := &host{}
	var opts *mcp.ClientOptions
	if answer != "" {
		opts = &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			h.asked.Add(1)
			h.last.Store(req.Params.Message)
			return &mcp.ElicitResult{Action: answer}, nil
		}}
	}
	h.cs, err = mcp.NewClient(&mcp.Implementation{Name: "host"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.cs.Close() })
	return h
}

// waitTool waits until the host is offered the tool: the catalog of a
// server just added may reach the front end after New (list_changed).
func (h *host) waitTool(t *testing.T, ctx context.Context, name string) *mcp.Tool {
	t.Helper()
	for {
		tl, err := h.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tl.Tools {
			if tool.Name == name {
				return tool
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the host was never offered %s", name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func openEngine(t *testing.T, ctx context.Context) *engine.Engine {
	t.Helper()
	eng, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// pendingCard says whether a card waits for the person.
func pendingCard(t *testing.T, ctx context.Context, eng localapi.Engine) bool {
	t.Helper()
	cards, err := eng.Cards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cards {
		if c.Status == "pending" {
			return true
		}
	}
	return false
}

// answerCard waits for the pending card of a call and answers it as the
// person would on the settings page.
func answerCard(t *testing.T, ctx context.Context, eng localapi.Engine, action localapi.Action) localapi.Card {
	t.Helper()
	for {
		cards, err := eng.Cards(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cards {
			if c.Status == "pending" {
				if err := eng.Answer(ctx, c.ID, localapi.Answer{Action: action}); err != nil {
					t.Fatalf("answer the card: %v", err)
				}
				return c
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no card asked the person")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestApproval: a server set to approval "ask" runs a host's call only
// after the person accepted remotemcp's question, once: as a question to
// the host, or, when the host cannot be asked, as a card on the settings
// page (and "remotemcp elicitations") that the call waits for. A decline
// sends nothing, and never retries. Approval "host" (the default) runs
// the call without a question.
func TestApproval(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approval config.Approval
		answer   string          // the host's answer; "" = no elicitation capability
		card     localapi.Action // the person's answer on the page; "" = no card
		runs     int64
		asked    int32
		errHas   string // "" = the call succeeds
	}{
		{"ask, host accepts", config.ApprovalAsk, "accept", "", 1, 1, ""},
		{"ask, host declines", config.ApprovalAsk, "decline", "", 0, 1, "Nothing was sent"},
		{"ask, host cancels", config.ApprovalAsk, "cancel", "", 0, 1, "Nothing was sent"},
		{"ask, host cannot be asked, card accepted", config.ApprovalAsk, "", "accept", 1, 0, ""},
		{"ask, host cannot be asked, card declined", config.ApprovalAsk, "", "decline", 0, 0, "did not approve"},
		{"host, no question", config.ApprovalHost, "accept", "", 1, 0, ""},
		{"default, host without questions", "", "", "", 1, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			eng := openEngine(t, ctx)
			fx := testkit.StartFixture(t, fixture.Options{})
			if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: fx.URL(), By: localapi.ByServersAdd, Approval: tc.approval}); err != nil {
				t.Fatal(err)
			}
			h := startHost(t, ctx, eng, tc.answer)
			h.waitTool(t, ctx, "fx__echo")
			type called struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan called, 1)
			go func() {
				res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "hi"}})
				done <- called{res, err}
			}()
			if tc.card != "" {
				c := answerCard(t, ctx, eng, tc.card)
				for _, want := range []string{"remotemcp asks", "fx", `"echo"`, `{"text":"hi"}`} {
					if !strings.Contains(c.Message, want) {
						t.Errorf("the card %q lacks %s", c.Message, want)
					}
				}
			}
			cd := <-done
			res, err := cd.res, cd.err
			if err != nil {
				t.Fatal(err)
			}
			text := resultText(res)
			if tc.errHas == "" {
				if res.IsError || text != "hi" {
					t.Errorf("result %v %q, want hi", res.IsError, text)
				}
			} else {
				if !res.IsError || !strings.Contains(text, tc.errHas) {
					t.Errorf("result %v %q, want an error saying %q", res.IsError, text, tc.errHas)
				}
				if !strings.Contains(text, "not sent") && !strings.Contains(text, "Nothing was sent") {
					t.Errorf("the refusal %q does not say nothing was sent", text)
				}
			}
			if got := fx.Executions("echo"); got != tc.runs {
				t.Errorf("echo ran %d times, want %d", got, tc.runs)
			}
			if got := h.asked.Load(); got != tc.asked {
				t.Errorf("the host was asked %d times, want %d", got, tc.asked)
			}
			if tc.asked > 0 {
				msg, _ := h.last.Load().(string)
				for _, want := range []string{"fx", `"echo"`, `{"text":"hi"}`} {
					if !strings.Contains(msg, want) {
						t.Errorf("the question %q lacks %s", msg, want)
					}
				}
			}
		})
	}
}

// TestApprovalChange: switching a server to "ask" while a host is
// connected takes effect for the host's next call (this host cannot be
// asked, so the call waits for a card; declined, nothing runs).
func TestApprovalChange(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	eng := openEngine(t, ctx)
	fx := testkit.StartFixture(t, fixture.Options{})
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: fx.URL(), By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, ctx, eng, "")
	h.waitTool(t, ctx, "fx__echo")
	if _, err := eng.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Approval: new(config.ApprovalAsk)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute) // only a hang: the new approval must apply
	for {
		before := fx.Executions("echo")
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		// The call either runs (still the old approval) or asks the
		// person: whichever happens, however long a loaded machine takes.
		var res *mcp.CallToolResult
	wait:
		for {
			select {
			case res = <-done: // still the old approval: ran at once
				break wait
			case <-ctx.Done():
				t.Fatal("the call neither ran nor asked")
			case <-time.After(20 * time.Millisecond):
			}
			if pendingCard(t, ctx, eng) {
				answerCard(t, ctx, eng, "decline")
				res = <-done
				if res == nil || !res.IsError || fx.Executions("echo") != before {
					t.Fatalf("a declined call: %+v, ran %d", res, fx.Executions("echo")-before)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("calls still run without a question after approval was set to ask")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// annotatedServer is a loopback MCP server with one tool that claims
// readOnlyHint.
func annotatedServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "annotated"}, nil)
	s.AddTool(&mcp.Tool{Name: "look", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Look"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "seen"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs.URL
}

// TestAnnotations: a trusted server's readOnlyHint reaches the host; an
// untrusted one's is dropped (its title stays), and marking it trusted
// later offers it.
func TestAnnotations(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	eng := openEngine(t, ctx)
	for id, trusted := range map[string]bool{"trusted": true, "untrusted": false} {
		if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: id, URL: annotatedServer(t), By: localapi.ByServersAdd, Trusted: trusted}); err != nil {
			t.Fatal(err)
		}
	}
	h := startHost(t, ctx, eng, "")
	h.waitTool(t, ctx, "trusted__look")
	h.waitTool(t, ctx, "untrusted__look")
	annotations := func() map[string]*mcp.ToolAnnotations {
		tl, err := h.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*mcp.ToolAnnotations{}
		for _, tool := range tl.Tools {
			out[tool.Name] = tool.Annotations
		}
		return out
	}
	got := annotations()
	if a := got["trusted__look"]; a == nil || !a.ReadOnlyHint {
		t.Errorf("the trusted server's annotations %+v lack readOnlyHint", a)
	}
	// Of an untrusted server's annotations only the title (display text,
	// no claim) reaches the host (issue #19 item 4).
	if a, ok := got["untrusted__look"]; !ok || a == nil || *a != (mcp.ToolAnnotations{Title: "Look"}) {
		t.Errorf("the untrusted server's tool (offered %t) has annotations %+v, want only its title", ok, a)
	}
	if _, err := eng.UpdateServer(ctx, "untrusted", localapi.UpdateServerRequest{Trusted: new(true)}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the trusted server's annotations to be offered", func() bool {
		a := annotations()["untrusted__look"]
		return a != nil && a.ReadOnlyHint
	})
}

// A host that lists tools right after connecting is offered every enabled
// server's tools at once, without waiting for a list_changed (not every
// host follows one). Run several times: the registry catches up with the
// connects a moment after the first listing.
func TestToolsOfferedAtOnce(t *testing.T) {
	for i := range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		eng := openEngine(t, ctx)
		fx := testkit.StartFixture(t, fixture.Options{})
		if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: fx.URL(), By: localapi.ByServersAdd}); err != nil {
			t.Fatal(err)
		}
		h := startHost(t, ctx, eng, "")
		tl, err := h.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tool := range tl.Tools {
			found = found || tool.Name == "fx__echo"
		}
		if !found {
			srvs, _ := eng.Servers(ctx)
			t.Fatalf("round %d: the first listing offers %d tools, without fx__echo (server state %s)", i, len(tl.Tools), srvs[0].State)
		}
		cancel()
	}
}

// The card fallback of approval "ask" works through the local API too
// (the front end as a client of the daemon): the card is the daemon's,
// answered from any client.
func TestApprovalCardThroughAPI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	eng := openEngine(t, ctx)
	fx := testkit.StartFixture(t, fixture.Options{})
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: fx.URL(), By: localapi.ByServersAdd, Approval: config.ApprovalAsk}); err != nil {
		t.Fatal(err)
	}
	api, stop, err := daemon.InProcess(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	h := startHost(t, ctx, api, "")
	h.waitTool(t, ctx, "fx__echo")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	answerCard(t, ctx, api, "accept")
	if res := <-done; res == nil || res.IsError || resultText(res) != "hi" || fx.Executions("echo") != 1 {
		t.Fatalf("after the card was accepted: %+v, ran %d", res, fx.Executions("echo"))
	}
}
