package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func srvCfg(id, url string) config.Server {
	return config.Server{ID: id, Name: id, URL: url, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true, ConnectOnStartup: true}
}

// approver records every request and answers with decide (allow when nil).
type approver struct {
	mu     sync.Mutex
	reqs   []ApprovalRequest
	decide func(ApprovalRequest) (Decision, error)
}

func (a *approver) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	decide := a.decide
	a.mu.Unlock()
	if decide == nil {
		return Allow(), nil
	}
	return decide(req)
}

func (a *approver) requests() []ApprovalRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ApprovalRequest(nil), a.reqs...)
}

func (a *approver) set(f func(ApprovalRequest) (Decision, error)) {
	a.mu.Lock()
	a.decide = f
	a.mu.Unlock()
}

// env is one "process": a real SQLite store in a temp dir, elicitation
// cards over it, a real manager and the registry, against real MCP servers
// on loopback.
type env struct {
	t *testing.T
	// ctx is the process's root context, cancelled first on close as a
	// daemon's signal context would be: calls in flight end with it.
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	st     *store.SQLite
	cards  *elicit.Cards
	m      *manager.Manager
	reg    *Registry
	ap     *approver
	once   sync.Once
}

type envOpts struct {
	dir     string // reuse a data directory (a restart); "" makes one
	servers []config.Server
	budget  int
	// noOwnerLock opens the cards over the bare KV, without an owner
	// lock: the process looks dead to the next one, as after a crash.
	noOwnerLock bool
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	ctx := testkit.Context(t)
	e := &env{t: t, dir: o.dir, ap: &approver{}}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	if e.dir == "" {
		e.dir = t.TempDir()
	}
	st, err := store.Open(ctx, e.dir, store.Options{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	e.st = st
	for _, s := range o.servers {
		if err := st.AddServer(ctx, s); err != nil {
			t.Fatalf("add server %s: %v", s.ID, err)
		}
	}
	var kv elicit.KV = st
	if o.noOwnerLock {
		kv = struct{ elicit.KV }{st}
	}
	e.cards, err = elicit.Open(ctx, kv, elicit.Options{Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatalf("open cards: %v", err)
	}
	e.m = manager.New(manager.Options{Store: st, Elicit: e.cards.Handle, Logger: testkit.Logger(t),
		BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, HandshakeTimeout: 10 * time.Second})
	if err := e.m.Start(ctx); err != nil {
		t.Fatalf("start manager: %v", err)
	}
	e.cards.Watch(e.m)
	e.reg, err = New(Options{Backend: e.m, Approver: e.ap, Cards: e.cards, ResultBudget: o.budget, Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.reg.Start(ctx); err != nil {
		t.Fatalf("start registry: %v", err)
	}
	// Start connects nothing (issue #12); the tests list every server
	// first, as an agent asking for its tools does.
	if err := e.reg.Refresh(ctx); err != nil {
		t.Fatalf("refresh registry: %v", err)
	}
	t.Cleanup(e.close)
	return e
}

// close shuts the process down in the daemon's order: calls in flight are
// cancelled (go-sdk's ClientSession.Close waits for outgoing calls, so a
// call left running would hold the manager's Close), then the cards go
// before the manager, so a question still open is answered (as
// interrupted) while its connection can still carry the answer.
func (e *env) close() {
	e.once.Do(func() {
		e.cancel()
		e.reg.Close()
		e.cards.Close()
		e.m.Close()
		e.st.Close()
	})
}

func (e *env) call(t *testing.T, name, args string, o CallOptions) (*ToolResult, error) {
	t.Helper()
	return e.reg.Call(testkit.Context(t), name, json.RawMessage(args), o)
}

// text joins the text of a result's blocks.
func text(r *ToolResult) string {
	var parts []string
	for _, b := range r.Content {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// waitPending waits until n cards are pending and returns them.
func (e *env) waitPending(t *testing.T, n int) []elicit.Card {
	t.Helper()
	var cards []elicit.Card
	testkit.WaitFor(t, "pending elicitation card", func() bool {
		cards = e.cards.Pending()
		return len(cards) >= n
	})
	return cards
}

type callOut struct {
	res *ToolResult
	err error
}

// goCall runs a call in the background, as part of the process (it ends
// when the process closes); the channel gets its outcome.
func (e *env) goCall(t *testing.T, ctx context.Context, name, args string, o CallOptions) <-chan callOut {
	ch := make(chan callOut, 1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.ctx, cancel)
	go func() {
		defer cancel()
		defer stop()
		res, err := e.reg.Call(ctx, name, json.RawMessage(args), o)
		ch <- callOut{res, err}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan callOut) callOut {
	t.Helper()
	select {
	case out := <-ch:
		return out
	case <-time.After(2 * time.Minute): // only a hang: the call must return
		t.Fatal("call did not return")
		return callOut{}
	}
}

// annotatedServer is a real go-sdk MCP server on loopback with one tool
// that claims to be read-only, counting its executions.
type annotatedServer struct {
	url   string
	execs atomic.Int64
}

func startAnnotated(t *testing.T) *annotatedServer {
	t.Helper()
	a := &annotatedServer{}
	s := mcp.NewServer(&mcp.Implementation{Name: "annotated", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{
		Name: "peek", Description: "Claims to only read.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a.execs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "peeked"}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	a.url = hs.URL + "/mcp"
	return a
}

func jsonString(s string) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// opensFenceTag reports whether s, the text right after a '<' or a
// look-alike of it, continues as a fence tag (fenceTagScan).
func opensFenceTag(s string) bool {
	opens, _ := fenceTagScan(s)
	return opens
}
