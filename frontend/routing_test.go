package frontend_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/localapi"
)

// barrier lets n tool calls of the hostile server wait for each other,
// so that several are in flight when the first question goes out.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
	// then is the round's second barrier: calls that asked their
	// question wait there, so none ends (and leaves the others alone in
	// flight) before every question was handled.
	then *barrier
}

func newBarrier(n int) *barrier {
	return &barrier{n: n, all: make(chan struct{}), then: &barrier{n: n, all: make(chan struct{})}}
}

func (b *barrier) wait(ctx context.Context) error {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// routingServer is the red team's hostile server (issue #20 item 3): its
// tools ask a question ("ask") or ask for sampling ("think") on their own
// call's stream once every call of the round is in flight, or on the
// standalone stream ("stray"), which belongs to no call.
func routingServer(round *atomic.Pointer[barrier]) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	who := func(req *mcp.CallToolRequest) string {
		var a struct{ Who string }
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return a.Who
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	schema := json.RawMessage(`{"type":"object"}`)
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if err := round.Load().wait(ctx); err != nil {
			return nil, nil, err
		}
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "question for " + who(req),
			RequestedSchema: nameSchema})
		if err != nil {
			return text("no answer: " + err.Error()), nil, nil
		}
		return text(res.Action + " " + stringOf(res.Content["name"])), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "think", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if err := round.Load().wait(ctx); err != nil {
			return nil, nil, err
		}
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "for " + who(req)}}}})
		if err != nil {
			return text("no sampling: " + err.Error()), nil, nil
		}
		return text("model said " + res.Content.(*mcp.TextContent).Text), nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "stray", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		b := round.Load()
		if err := b.wait(ctx); err != nil {
			return nil, nil, err
		}
		// A context without the call's request id: go-sdk sends the
		// request on the standalone GET stream.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out []string
		if res, err := req.Session.Elicit(sctx, &mcp.ElicitParams{Message: "stray question", RequestedSchema: nameSchema}); err != nil {
			out = append(out, "question error: "+err.Error())
		} else {
			out = append(out, "question "+res.Action)
		}
		if err := b.then.wait(ctx); err != nil {
			return nil, nil, err
		}
		if res, err := req.Session.CreateMessage(sctx, &mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "stray"}}}}); err != nil {
			out = append(out, "sampling refused: "+err.Error())
		} else {
			out = append(out, "sampling answered: "+res.Content.(*mcp.TextContent).Text)
		}
		return text(strings.Join(out, "; ")), nil, nil
	})
	return srv
}

// nameSchema is the form of the hostile server's questions.
var nameSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// routedHost is one MCP host on the front end's HTTP endpoint: it records
// the questions and sampling requests it gets.
type routedHost struct {
	name string
	cs   *mcp.ClientSession

	mu        sync.Mutex
	questions []string
	samples   []string
}

func (h *routedHost) got() (q, s []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.questions...), append([]string(nil), h.samples...)
}

// bearerTransport adds the front end's token to every request.
type bearerTransport struct{ tok string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// httpFrontend serves a front end over eng on a loopback port, as
// "remotemcp mcp --http" does, and returns its URL and a token.
func httpFrontend(t *testing.T, ctx context.Context, eng localapi.Engine, kv frontend.KV) (string, string) {
	t.Helper()
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	tokens := frontend.NewTokens(kv)
	tok, err := tokens.Create(ctx, "hosts")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- fe.RunHTTPWith(rctx, ln, fe.HTTPHandlerWith(tokens, frontend.HTTPOptions{}), frontend.HTTPOptions{})
	}()
	t.Cleanup(func() { stop(); <-done })
	return "http://" + ln.Addr().String(), tok
}

// connectHost connects one host; sampling says whether it declares
// sampling. It answers every question with its own name.
func connectHost(t *testing.T, ctx context.Context, url, tok, name string, sampling bool) *routedHost {
	t.Helper()
	h := &routedHost{name: name}
	opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		h.mu.Lock()
		h.questions = append(h.questions, req.Params.Message)
		h.mu.Unlock()
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "answer of " + name}}, nil
	}}
	if sampling {
		opts.CreateMessageHandler = func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			h.mu.Lock()
			h.samples = append(h.samples, req.Params.Messages[0].Content.(*mcp.TextContent).Text)
			h.mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "model of " + name}}, nil
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{tok}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	h.cs = cs
	return h
}

// callAll calls tool once from each host at the same time, each with its
// own name as "who", and returns the results' texts by host.
func callAll(t *testing.T, ctx context.Context, tool string, hosts ...*routedHost) map[string]string {
	t.Helper()
	var mu sync.Mutex
	out := map[string]string{}
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(func() {
			res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__" + tool, Arguments: map[string]any{"who": h.name}})
			text := ""
			if err != nil {
				text = "call error: " + err.Error()
			} else {
				text = resultText(res)
			}
			mu.Lock()
			out[h.name] = text
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// Issue #20 item 3 (routing; SPEC §9 A10): two hosts on one "mcp --http" front end call
// tools of the same server at the same time. Each server question goes to
// the host whose call it belongs to, only; each sampling request to the
// model of its own call's host, and is refused for the host that did not
// declare sampling (before: both questions went to both hosts, and host
// B's sampling request ran host A's model).
func TestServerRequestsGoToTheirOwnHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var round atomic.Pointer[barrier]
	round.Store(newBarrier(2))
	eng := backend(ctx, t, "s", routingServer(&round))
	url, tok := httpFrontend(t, ctx, eng, eng.Store)
	a := connectHost(t, ctx, url, tok, "A", true)
	b := connectHost(t, ctx, url, tok, "B", false)

	res := callAll(t, ctx, "ask", a, b)
	for _, h := range []*routedHost{a, b} {
		if want := "accept answer of " + h.name; res[h.name] != want {
			t.Errorf("host %s's call: %q, want %q", h.name, res[h.name], want)
		}
		q, _ := h.got()
		if len(q) != 1 || !strings.Contains(q[0], "> question for "+h.name) {
			t.Errorf("host %s was asked %q; want only the question of its own call", h.name, q)
		}
		if len(q) == 1 && !strings.HasPrefix(q[0], `Question from MCP server "s" (its own words below, not remotemcp's):`) {
			t.Errorf("host %s's question is not labelled with the server: %q", h.name, q[0])
		}
	}

	round.Store(newBarrier(2))
	res = callAll(t, ctx, "think", a, b)
	if res["A"] != "model said model of A" {
		t.Errorf("host A's sampling: %q, want its own model's answer", res["A"])
	}
	if !strings.Contains(res["B"], "no sampling") || !strings.Contains(res["B"], "did not declare sampling") {
		t.Errorf("host B's sampling: %q, want it refused (B declared no sampling)", res["B"])
	}
	if _, s := a.got(); len(s) != 1 || s[0] != "for A" {
		t.Errorf("host A's model was asked %q; want only its own call's request", s)
	}
}

// Issue #20 item 3 (routing; SPEC §9 A10): a server request on the
// standalone stream names no call. A question there belongs to the
// server's call in flight when there is exactly one (TypeScript servers
// send server.elicitInput so, and so does the official conformance
// suite's elicitation scenario): that host is asked, under the server's
// label. With two calls in flight the call cannot be known: the question
// is declined and neither host is asked (before: both were). Sampling
// there is always refused: it would spend a host's model on a request no
// call may have made.
func TestStandaloneServerRequestsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var round atomic.Pointer[barrier]
	round.Store(newBarrier(1))
	eng := backend(ctx, t, "s", routingServer(&round))
	url, tok := httpFrontend(t, ctx, eng, eng.Store)
	a := connectHost(t, ctx, url, tok, "A", true)
	b := connectHost(t, ctx, url, tok, "B", false)

	res := callAll(t, ctx, "stray", a)["A"]
	if !strings.Contains(res, "question accept") {
		t.Errorf("stray question with one call in flight: %q, want it put to that call's host", res)
	}
	if !strings.Contains(res, "sampling refused") || !strings.Contains(res, "did not come on the response stream of a tool call") {
		t.Errorf("stray sampling: %q, want refused with the reason", res)
	}
	if q, s := a.got(); len(q) != 1 || !strings.HasPrefix(q[0], `Question from MCP server "s"`) || len(s) != 0 {
		t.Errorf("the host of the only call was asked %q and sampled %q; want the labelled question only", q, s)
	}

	round.Store(newBarrier(2))
	both := callAll(t, ctx, "stray", a, b)
	for _, h := range []*routedHost{a, b} {
		if !strings.Contains(both[h.name], "question decline") {
			t.Errorf("stray question with two calls in flight, host %s's call: %q, want declined", h.name, both[h.name])
		}
	}
	if q, _ := a.got(); len(q) != 1 {
		t.Errorf("host A was asked %q; want no question while two calls were in flight", q)
	}
	if q, _ := b.got(); len(q) != 0 {
		t.Errorf("host B was asked %q; want nothing", q)
	}
}
