// Bob's host against the gateway's MCP endpoint, and Alice's removal
// (see isolation_test.go).

package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// host is an MCP host on the gateway's endpoint, recording every request
// and answer of its session.
type host struct {
	cs  *mcp.ClientSession
	rec *recorder
}

// recorder is an http.RoundTripper that sends the bearer token and keeps
// each request body with its answer.
type recorder struct {
	tok string

	mu    sync.Mutex
	pairs [][2]string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.tok)
	var sent []byte
	if req.Body != nil {
		sent, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(sent))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &teeBody{rc: resp.Body, r: r, sent: string(sent)}
	return resp, nil
}

// teeBody records an answer as it is read (an event stream too).
type teeBody struct {
	rc   io.ReadCloser
	r    *recorder
	sent string
	got  bytes.Buffer
	once sync.Once
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.got.Write(p[:n])
	if err != nil {
		b.flush()
	}
	return n, err
}

func (b *teeBody) Close() error {
	b.flush()
	return b.rc.Close()
}

func (b *teeBody) flush() {
	b.once.Do(func() {
		b.r.mu.Lock()
		b.r.pairs = append(b.r.pairs, [2]string{b.sent, b.got.String()})
		b.r.mu.Unlock()
	})
}

func (w *world) connectHost(t *testing.T, tok string) *host {
	t.Helper()
	rec := &recorder{tok: tok}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(w.ctx,
		&mcp.StreamableClientTransport{Endpoint: w.mcpURL, HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect a host: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return &host{cs: cs, rec: rec}
}

// hostRequest sends one request (a JSON-RPC message, or none) to the
// endpoint with tok and session sid; the body is the caller's to read.
func (w *world) hostRequest(t *testing.T, ctx context.Context, method, tok, sid, msg string) *http.Response {
	t.Helper()
	var body io.Reader
	if msg != "" {
		body = strings.NewReader(msg)
	}
	req, err := http.NewRequestWithContext(ctx, method, w.mcpURL, body)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// hostPost is hostRequest, read whole.
func (w *world) hostPost(t *testing.T, method, tok, sid, msg string) (int, string) {
	t.Helper()
	resp := w.hostRequest(t, w.ctx, method, tok, sid, msg)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// hosts: each person's host sees and calls only that person's tools.
func (w *world) hosts(t *testing.T) {
	ctx := w.ctx
	alice := w.connectHost(t, w.a.token)
	at, err := alice.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var aliceTool string
	for _, tl := range at.Tools {
		if strings.HasSuffix(tl.Name, w.a.tool) {
			aliceTool = tl.Name
		}
	}
	if aliceTool == "" {
		t.Fatalf("Alice's host does not see her tool %s: %v", w.a.tool, toolNames(at.Tools))
	}
	res, err := alice.cs.CallTool(ctx, &mcp.CallToolParams{Name: aliceTool, Arguments: map[string]any{"text": "hers"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hers" {
		t.Fatalf("Alice's host calls %s: %+v %v", aliceTool, res, err)
	}
	ar, err := alice.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var aliceURI string
	for _, r := range ar.Resources {
		if strings.Contains(r.URI, "alice-secret-resource") {
			aliceURI = r.URI
		}
	}
	if aliceURI == "" {
		t.Fatalf("Alice's host does not see her resource: %+v", ar.Resources)
	}

	bob := w.connectHost(t, w.bobToken)
	bt, err := bob.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(bt.Tools); !slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, "bob_own_tool") }) {
		t.Errorf("Bob's host does not see his own tool: %v", names)
	}
	// Alice's tool, and one nobody has: the same refusal.
	execs := w.aliceFx.TotalExecutions()
	ghostTool := strings.NewReplacer(w.a.server, w.ghost.server, w.a.tool, w.ghost.tool).Replace(aliceTool)
	if got, ghost := callError(ctx, bob.cs, aliceTool), callError(ctx, bob.cs, ghostTool); got == "" || !strings.Contains(got, "unknown") {
		t.Errorf("Bob's host calls Alice's tool %s: %q, want an unknown tool", aliceTool, got)
	} else if w.unghost(ghost) != got {
		t.Errorf("Bob's host calls Alice's tool: %q, but a tool nobody has: %q", got, ghost)
	}
	if n := w.aliceFx.TotalExecutions(); n != execs {
		t.Errorf("Alice's server ran %d tools for Bob", n-execs)
	}
	if _, err := bob.cs.ListPrompts(ctx, nil); err != nil {
		t.Error(err)
	}
	if _, err := bob.cs.ListResources(ctx, nil); err != nil {
		t.Error(err)
	}
	if _, err := bob.cs.ListResourceTemplates(ctx, nil); err != nil {
		t.Error(err)
	}
	subs := w.aliceFx.Subscriptions()
	ghostURI := strings.ReplaceAll(aliceURI, w.a.resource, w.ghost.resource)
	if err := bob.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: aliceURI}); err == nil {
		t.Errorf("Bob's host subscribed to Alice's %s", aliceURI)
	} else if gerr := bob.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: ghostURI}); gerr == nil || w.unghost(gerr.Error()) != err.Error() {
		t.Errorf("Bob's host subscribes to Alice's resource: %v, but to one nobody has: %v", err, gerr)
	}
	if n := w.aliceFx.Subscriptions(); n != subs {
		t.Errorf("Alice's server got %d subscriptions from Bob", n-subs)
	}
	bob.rec.mu.Lock()
	for _, p := range bob.rec.pairs {
		if l := w.leaks(p[1], p[0]); len(l) > 0 {
			t.Errorf("Bob's host got Alice's %q: sent %s, got %s", l, p[0], p[1])
		}
	}
	bob.rec.mu.Unlock()

	// Alice's session with Bob's token, or with none of the gateway's.
	sid := alice.cs.ID()
	for _, m := range []string{"POST", "GET", "DELETE"} {
		msg := ""
		if m == "POST" {
			msg = `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
		}
		code, body := w.hostPost(t, m, w.bobToken, sid, msg)
		if code != http.StatusNotFound && code != http.StatusForbidden {
			t.Errorf("%s with Bob's token and Alice's session: %d %s, want 404", m, code, body)
		}
		ghost := shift(sid)
		if gcode, gbody := w.hostPost(t, m, w.bobToken, ghost, msg); gcode != code || strings.ReplaceAll(gbody, ghost, sid) != body {
			t.Errorf("%s with Bob's token: Alice's session gets %d %q, a session nobody has %d %q", m, code, body, gcode, gbody)
		}
		if l := w.leaks(body, sid+msg); len(l) > 0 {
			t.Errorf("%s with Bob's token and Alice's session: the answer holds Alice's %q: %s", m, l, body)
		}
	}
	for _, tok := range []string{"", "rmcp-not-a-token", shift(w.a.token)} {
		if code, body := w.hostPost(t, "POST", tok, sid, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`); code != http.StatusUnauthorized {
			t.Errorf("token %q on Alice's session: %d %s, want 401", tok, code, body)
		}
	}
	// Alice's session lives on.
	if _, err := alice.cs.ListTools(ctx, nil); err != nil {
		t.Errorf("Alice's host after Bob's tries: %v", err)
	}
}

// callError is how the front end refuses a call of tool: its error, or
// the text of its error result; "" when the call succeeded.
func callError(ctx context.Context, cs *mcp.ClientSession, tool string) string {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	switch {
	case err != nil:
		return err.Error()
	case res.IsError && len(res.Content) > 0:
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			return tc.Text
		}
		return "an error result"
	}
	return ""
}

func toolNames(tools []*mcp.Tool) []string {
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	sort.Strings(out)
	return out
}

// remove: removing Alice ends her engine, her calls, her event stream and
// her host's session, and leaves no row of hers; Bob's are untouched.
func (w *world) remove(t *testing.T) {
	ctx := w.ctx
	alice := w.connectHost(t, w.a.token)
	sid := alice.cs.ID()
	// Not bounded by ctx: these streams must end by Alice's removal, and
	// a stream that does not then fails on testkit.Recv's hang bound.
	evctx, evcancel := context.WithCancel(context.Background())
	defer evcancel()
	events := socketRequest(t, evctx, w.sock, aliceEmail, probe{method: "GET", path: "/api/events"})
	defer events.Body.Close()
	readEvents(t, events.Body, eventTypes...)
	// Her host listens on its session's stream.
	hostStream := w.hostRequest(t, evctx, http.MethodGet, w.a.token, sid, "")
	defer hostStream.Body.Close()
	if hostStream.StatusCode != http.StatusOK {
		t.Fatalf("Alice's host stream: %d", hostStream.StatusCode)
	}
	slow := make(chan callResult, 1)
	go func() {
		res, err := w.alice.Call(ctx, localapi.CallRequest{Tool: w.a.server + "/slow", Arguments: json.RawMessage(`{"ms":600000}`), Approved: true}, localapi.CallHandler{})
		slow <- callResult{res, err}
	}()
	testkit.WaitFor(t, "Alice's slow call", func() bool { return w.aliceFx.Executions("slow") == 1 })
	if !slices.Contains(w.gw.OpenUsers(), w.aliceID) {
		t.Fatalf("Alice's engine is not open: %v", w.gw.OpenUsers())
	}

	// The session of her engine with her server, the one the slow call
	// runs in.
	var live string
	for _, r := range w.aliceFx.Requests() {
		if r.RPCMethod == "tools/call" {
			live = r.Header.Get("Mcp-Session-Id")
		}
	}
	if live == "" {
		t.Fatal("no tools/call of Alice's reached her server with a session id")
	}

	if err := w.admin.RemoveUser(ctx, aliceEmail); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(w.gw.OpenUsers(), w.aliceID) {
		t.Errorf("Alice's engine is still open: %v", w.gw.OpenUsers())
	}
	if r := testkit.Recv(t, "Alice's slow call", slow); r.err == nil && r.res.Outcome == localapi.OutcomeOK {
		t.Errorf("Alice's call went on after she was removed: %+v", r.res)
	}
	for what, body := range map[string]io.Reader{"Alice's event stream": events.Body, "Alice's host's session stream": hostStream.Body} {
		ended := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, body)
			ended <- err
		}()
		testkit.Recv(t, what+" to end", ended)
	}
	// Her engine ended its session with her server.
	testkit.WaitFor(t, "a DELETE of Alice's session with her server", func() bool {
		return slices.ContainsFunc(w.aliceFx.Requests(), func(r fixture.RecordedRequest) bool {
			return r.Method == http.MethodDelete && r.Header.Get("Mcp-Session-Id") == live
		})
	})
	code, body := w.hostPost(t, "POST", w.a.token, sid, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	if code != http.StatusUnauthorized && code != http.StatusNotFound {
		t.Errorf("Alice's host session after her removal: %d %s, want 401 or 404", code, body)
	}
	if _, err := alice.cs.ListTools(ctx, nil); err == nil {
		t.Error("Alice's host session still answers after her removal")
	}
	if _, err := w.alice.Servers(ctx); !isNotFound(err) {
		t.Errorf("Alice's servers after her removal: %v, want 404", err)
	}

	// No row of hers is left in any table with a user id; Bob has his.
	db := w.pg.DB()
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.columns WHERE column_name = 'user_id' AND table_schema = current_schema() ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var tb string
		if err := rows.Scan(&tb); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tb)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(tables) < 4 {
		t.Fatalf("tables with a user_id: %v", tables)
	}
	bobRows := 0
	for _, tb := range tables {
		var hers, his int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE user_id = $1), count(*) FILTER (WHERE user_id = $2) FROM `+tb, w.aliceID, w.bobID).Scan(&hers, &his); err != nil {
			t.Fatal(err)
		}
		if hers != 0 {
			t.Errorf("table %s keeps %d rows of Alice's", tb, hers)
		}
		bobRows += his
	}
	if bobRows == 0 {
		t.Error("no row of Bob's either: the query finds nothing")
	}
	var users int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE id = $1 OR email = $2`, w.aliceID, aliceEmail).Scan(&users); err != nil || users != 0 {
		t.Errorf("Alice in users: %d %v", users, err)
	}

	// Bob goes on.
	if _, err := w.bob.Server(ctx, w.bobServer); err != nil {
		t.Errorf("Bob's server after Alice's removal: %v", err)
	}
	bob := w.connectHost(t, w.bobToken)
	if _, err := bob.cs.ListTools(ctx, nil); err != nil {
		t.Errorf("Bob's host after Alice's removal: %v", err)
	}
	w.logAttributed(t)
	// No token was ever logged.
	all := w.logs.since(0)
	for _, tok := range []string{w.a.token, w.bobToken} {
		if strings.Contains(all, tok) {
			t.Error("the log holds a host token")
		}
	}
}

func isNotFound(err error) bool {
	e, ok := localapi.AsError(err)
	return ok && e.Code == localapi.CodeNotFound
}
