package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// Every Engine method through the socket: the client's answers are the
// engine's, listings are arrays, errors keep their code and status.
func TestAPIRoundTrip(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	c := s.c

	h, err := c.Health(ctx)
	if err != nil || !h.OK || h.PID != os.Getpid() || h.InProcess {
		t.Fatalf("health %+v %v", h, err)
	}
	token := "api-bearer-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secrets.add("bearer token", token)
	added, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL(), Auth: config.AuthBearer, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if added.Server.ID != "fx" || !added.Server.Auth.HasToken || !added.Server.OriginGranted || !slices.Equal(added.Granted, []string{originOf(t, f.URL())}) {
		t.Fatalf("added %+v", added)
	}
	if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL()}); code(err) != localapi.CodeConflict {
		t.Fatalf("duplicate add: %v", err)
	} else if e, _ := localapi.AsError(err); e.Status != http.StatusConflict {
		t.Fatalf("duplicate add status %d", e.Status)
	}
	testkit.WaitFor(t, "fx ready", func() bool {
		v, err := c.Server(ctx, "fx")
		return err == nil && v.State == localapi.StateReady
	})
	if _, err := c.Server(ctx, "nope"); code(err) != localapi.CodeNotFound {
		t.Fatalf("unknown server: %v", err)
	} else if e, _ := localapi.AsError(err); e.Status != http.StatusNotFound {
		t.Fatalf("unknown server status %d", e.Status)
	}
	srvs, err := c.Servers(ctx)
	if err != nil || len(srvs) != 1 || srvs[0].ToolCount != 7 {
		t.Fatalf("servers %+v %v", srvs, err)
	}

	up, err := c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Name: new("Fixture"), DisableTools: []string{"add"}})
	if err != nil || up.Server.Name != "Fixture" || !slices.Contains(up.Server.DisabledTools, "add") {
		t.Fatalf("update %+v %v", up, err)
	}
	v, err := c.SetTool(ctx, "fx", "add", true)
	if err != nil || slices.Contains(v.DisabledTools, "add") {
		t.Fatalf("set tool %+v %v", v, err)
	}
	if v, err := c.SetEnabled(ctx, "fx", false); err != nil || v.Enabled {
		t.Fatalf("disable %+v %v", v, err)
	}
	if v, err := c.SetEnabled(ctx, "fx", true); err != nil || !v.Enabled {
		t.Fatalf("enable %+v %v", v, err)
	}
	if v, err := c.Connect(ctx, "fx"); err != nil || v.State != localapi.StateReady {
		t.Fatalf("connect %+v %v", v, err)
	}
	tl, err := c.Tools(ctx, localapi.ToolsRequest{ServerID: "fx", Connect: true})
	if err != nil || len(tl.Tools) != 7 || tl.Errors == nil {
		t.Fatalf("tools %+v %v", tl, err)
	}
	// The raw inputSchema bytes arrive unchanged (R4.1), HTML included.
	for _, tool := range tl.Tools {
		if tool.ToolName == "schema" && string(tool.InputSchema) != fixture.SchemaToolInputSchema {
			t.Fatalf("schema tool's inputSchema\n got %s\nwant %s", tool.InputSchema, fixture.SchemaToolInputSchema)
		}
	}
	prompts, err := c.Prompts(ctx, "fx")
	if err != nil || len(prompts) == 0 {
		t.Fatalf("prompts %+v %v", prompts, err)
	}
	pr, err := c.GetPrompt(ctx, localapi.GetPromptRequest{Command: "/fx:greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || pr == nil {
		t.Fatalf("get prompt %+v %v", pr, err)
	}
	cr, err := c.Complete(ctx, localapi.CompleteRequest{ServerID: "fx", Ref: localapi.CompleteRef{Type: localapi.RefPrompt, Name: "greet"},
		Argument: localapi.CompleteArg{Name: "style", Value: "fo"}})
	if err != nil || !slices.Equal(cr.Values, []string{"formal"}) {
		t.Fatalf("complete %+v %v", cr, err)
	}
	if _, err := c.Complete(ctx, localapi.CompleteRequest{ServerID: "fx", Ref: localapi.CompleteRef{Type: "ref/tool", Name: "echo"},
		Argument: localapi.CompleteArg{Name: "text"}}); !localapi.HasCode(err, localapi.CodeBadRequest) {
		t.Fatalf("complete of a bad reference: %v, want bad_request", err)
	}
	res, err := c.Resources(ctx, localapi.ResourcesRequest{ServerID: "fx", Query: "readme", Limit: 5})
	if err != nil || len(res) == 0 || res[0].URI != fixture.ReadmeURI {
		t.Fatalf("resources %+v %v", res, err)
	}
	rr, err := c.ReadResource(ctx, localapi.ReadRequest{Mention: "@fx:" + fixture.ReadmeURI})
	if err != nil || rr == nil {
		t.Fatalf("read %+v %v", rr, err)
	}
	log, err := c.Log(ctx, "fx")
	if err != nil || len(log) == 0 {
		t.Fatalf("log %d entries, %v", len(log), err)
	}
	as, err := c.AuthStatus(ctx)
	if err != nil || len(as) != 1 || as[0].ServerID != "fx" {
		t.Fatalf("auth status %+v %v", as, err)
	}
	if _, err := c.AuthStatus(ctx, "fx", "nope"); code(err) != localapi.CodeNotFound {
		t.Fatalf("auth status of an unknown server: %v", err)
	}
	if l, err := c.Cards(ctx); err != nil || l == nil {
		t.Fatalf("cards %v %v", l, err)
	}
	if _, err := c.Card(ctx, "nope"); code(err) != localapi.CodeNotFound {
		t.Fatalf("unknown card: %v", err)
	}

	// Grants: the CLI's grant is the CLI's, and listings are arrays.
	if err := c.Grant(ctx, "https://granted.example", ""); err != nil {
		t.Fatal(err)
	}
	g, err := c.Grants(ctx)
	if err != nil || len(g) != 2 {
		t.Fatalf("grants %+v %v", g, err)
	}
	for _, gr := range g {
		if gr.Origin == "https://granted.example" && gr.By != localapi.ByCLI {
			t.Fatalf("grant by %q", gr.By)
		}
	}
	if err := c.Revoke(ctx, "https://granted.example"); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Pending(ctx); err != nil || p == nil {
		t.Fatalf("pending %v %v", p, err)
	}
	if err := c.DismissPending(ctx, "https://nothing-pending.example"); err != nil && code(err) == localapi.CodeInternal {
		t.Fatalf("dismiss: %v", err)
	}
	rc := newSocketRawClient(t, s.srv.SocketPath())
	for _, path := range []string{"/api/grants", "/api/pending", "/api/cards", "/api/servers", "/api/auth", "/api/prompts?serverId=fx"} {
		r := rc.do(t, http.MethodGet, sock+path, nil, nil)
		if r.status != http.StatusOK || !strings.HasPrefix(r.body, "[") {
			t.Errorf("GET %s: %d %.80s: want an array", path, r.status, r.body)
		}
	}

	// The wire refuses what is not understood.
	for _, c := range []struct {
		method, path string
		body         any
		hdr          map[string]string
		status       int
	}{
		{"POST", "/api/servers", `{"id":"x","url":"https://x.example/mcp","conectOnStartup":false}`, nil, http.StatusBadRequest},
		{"POST", "/api/servers", `{"id":"x"} {}`, nil, http.StatusBadRequest},
		{"POST", "/api/grants", `origin=https://x.example`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"GET", "/api/nope", nil, nil, http.StatusNotFound},
		{"PUT", "/api/servers", nil, nil, http.StatusNotFound},
		{"GET", "/api/resources?limit=many", nil, nil, http.StatusBadRequest},
	} {
		r := rc.do(t, c.method, sock+c.path, c.body, c.hdr)
		if r.status != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.status, r.body, c.status)
		}
	}

	if err := c.RemoveServer(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	if l, err := c.Servers(ctx); err != nil || len(l) != 0 {
		t.Fatalf("after remove %+v %v", l, err)
	}
}

// The call stream delivers the tool's progress notifications in order,
// each on its own line as it happens, then the result.
func TestCallStreamProgressInOrder(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	s.addFixture(t, "fx", f)
	ctx := testkit.Context(t)

	var mu sync.Mutex
	var got []localapi.Progress
	var when []time.Time
	res, err := s.c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":600,"steps":3}`), Approved: true},
		localapi.CallHandler{Progress: func(p localapi.Progress) {
			mu.Lock()
			got = append(got, p)
			when = append(when, time.Now())
			mu.Unlock()
		}})
	done := time.Now()
	if err != nil || res.Outcome != localapi.OutcomeOK {
		t.Fatalf("call %+v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d progress notifications, want 3: %+v", len(got), got)
	}
	for i, p := range got {
		if p.Progress != float64(i+1) || p.Total != 3 || p.OperationID != res.OperationID {
			t.Fatalf("progress %d: %+v", i, p)
		}
	}
	// Streamed, not buffered until the end: the first arrived well
	// before the result.
	if d := done.Sub(when[0]); d < 150*time.Millisecond {
		t.Fatalf("the first progress arrived %v before the result: the stream is buffered", d)
	}

	// On the wire: one JSON object per line, progress then result.
	rc := newSocketRawClient(t, s.srv.SocketPath())
	resp := rc.request(t, ctx, http.MethodPost, sock+"/api/calls",
		localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":300,"steps":2}`), Approved: true}, nil)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != localapi.ContentTypeNDJSON {
		t.Fatalf("call stream: %d %s", resp.StatusCode, ct)
	}
	cl := newCallLines(resp)
	for i := 1; i <= 2; i++ {
		if ev := cl.next(t); ev.Type != localapi.CallEventProgress || ev.Progress.Progress != float64(i) {
			t.Fatalf("line %d: %+v", i, ev)
		}
	}
	if ev := cl.next(t); ev.Type != localapi.CallEventResult || ev.Result.Outcome != localapi.OutcomeOK {
		t.Fatalf("last line: %+v", ev)
	}
	if cl.sc.Scan() {
		t.Fatalf("a line after the result: %s", cl.sc.Bytes())
	}
}

// An approval round trip: the caller is shown the whole call, its
// decision goes back on the approval route, and the call runs once, or
// not at all; the same outcomes as in-process.
func TestCallStreamApproval(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	s.addFixture(t, "fx", f)
	ctx := testkit.Context(t)
	args := json.RawMessage(`{"text":"hi"}`)

	var asked []localapi.ApprovalRequest
	res, err := s.c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: args, OperationID: "op-approve-1"},
		localapi.CallHandler{Approve: func(ar localapi.ApprovalRequest) (localapi.Decision, error) {
			asked = append(asked, ar)
			return localapi.Decision{Approved: true}, nil
		}})
	if err != nil || res.Outcome != localapi.OutcomeOK || len(res.Content) != 1 || res.Content[0].Text != "hi" {
		t.Fatalf("approved call %+v %v", res, err)
	}
	if len(asked) != 1 || asked[0].OperationID != "op-approve-1" || asked[0].ServerID != "fx" || asked[0].ToolName != "echo" ||
		asked[0].Tool != "mcp__fx__echo" || asked[0].Description == "" || string(asked[0].Arguments) != string(args) {
		t.Fatalf("approval requests %+v", asked)
	}
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times", n)
	}

	for _, tc := range []struct {
		name    string
		h       localapi.CallHandler
		outcome localapi.Outcome
		want    string
	}{
		{"denied", localapi.CallHandler{Approve: func(localapi.ApprovalRequest) (localapi.Decision, error) {
			return localapi.Decision{Reason: "not now"}, nil
		}}, localapi.OutcomeDenied, "not now"},
		{"no approver", localapi.CallHandler{}, "", "nobody could be asked"},
		{"approver failed", localapi.CallHandler{Approve: func(localapi.ApprovalRequest) (localapi.Decision, error) {
			return localapi.Decision{}, errors.New("no terminal")
		}}, localapi.OutcomeApprovalFailed, "no terminal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: args}, tc.h)
			if err != nil || res.Outcome == localapi.OutcomeOK || res.MaybeExecuted || !strings.Contains(res.Message, tc.want) ||
				tc.outcome != "" && res.Outcome != tc.outcome {
				t.Fatalf("result %+v %v", res, err)
			}
		})
	}
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times after the refusals", n)
	}
}

// A decision counts only from the caller that made the call: the page's
// session cannot approve a call made on the socket. A caller that goes
// away before deciding has denied the call, and nothing is sent.
func TestApprovalOnlyFromTheCaller(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	s.addFixture(t, "fx", f)
	ctx := testkit.Context(t)
	rc := newSocketRawClient(t, s.srv.SocketPath())
	tcp := newRawClient(t)
	sess := s.login(t, tcp)
	page := map[string]string{"Cookie": CookieName + "=" + sess, "Origin": s.srv.URL()}

	resp := rc.request(t, ctx, http.MethodPost, sock+"/api/calls", localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"once"}`)}, nil)
	cl := newCallLines(resp)
	ev := cl.next(t)
	if ev.Type != localapi.CallEventApproval || ev.Approval == nil || ev.Approval.OperationID == "" {
		t.Fatalf("first event %+v", ev)
	}
	op := url.PathEscape(ev.Approval.OperationID)
	if r := tcp.do(t, http.MethodPost, s.page()+"api/calls/"+op+"/approval", localapi.Decision{Approved: true}, page); r.status != http.StatusNotFound {
		t.Fatalf("the page approved a socket call: %d %s", r.status, r.body)
	}
	if r := rc.do(t, http.MethodPost, sock+"/api/calls/"+op+"/approval", localapi.Decision{Approved: true}, nil); r.status != http.StatusNoContent {
		t.Fatalf("approval: %d %s", r.status, r.body)
	}
	if r := rc.do(t, http.MethodPost, sock+"/api/calls/"+op+"/approval", localapi.Decision{Approved: true}, nil); r.status != http.StatusNotFound && r.status != http.StatusConflict {
		t.Fatalf("second approval: %d %s", r.status, r.body)
	}
	if ev := cl.next(t); ev.Type != localapi.CallEventResult || ev.Result.Outcome != localapi.OutcomeOK {
		t.Fatalf("result %+v", ev)
	}
	resp.Body.Close()

	// The caller hangs up while the approval is pending.
	cctx, cancel := context.WithCancel(ctx)
	resp = rc.request(t, cctx, http.MethodPost, sock+"/api/calls", localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"never"}`)}, nil)
	cl = newCallLines(resp)
	if ev := cl.next(t); ev.Type != localapi.CallEventApproval {
		t.Fatalf("first event %+v", ev)
	}
	cancel()
	resp.Body.Close()
	testkit.WaitFor(t, "the pending approval to go", func() bool {
		s.srv.api.calls.mu.Lock()
		defer s.srv.api.calls.mu.Unlock()
		return len(s.srv.api.calls.waiting) == 0
	})
	time.Sleep(200 * time.Millisecond)
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times, want only the approved call", n)
	}
}

// A server's question during a call reaches the caller on the stream;
// the answer, through the API, lets the call finish.
func TestCallStreamQuestion(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	s.addFixture(t, "fx", f)
	ctx := testkit.Context(t)
	var asked []localapi.Card
	res, err := s.c.Call(ctx, localapi.CallRequest{Tool: "fx/ask", Approved: true}, localapi.CallHandler{
		Question: func(q localapi.Card) {
			asked = append(asked, q)
			err := s.c.Answer(ctx, q.ID, localapi.Answer{Action: "accept", Content: map[string]any{"age": "old"}})
			if e, ok := localapi.AsError(err); !ok || e.Code != localapi.CodeBadRequest || len(e.Problems) == 0 {
				t.Errorf("invalid answer: %v", err)
			}
			if err := s.c.Answer(ctx, q.ID, localapi.Answer{Action: "accept", Content: map[string]any{"name": "Ada"}}); err != nil {
				t.Errorf("answer: %v", err)
			}
		},
	})
	if err != nil || res.Outcome != localapi.OutcomeOK || len(res.Content) == 0 || res.Content[0].Text != "hello Ada (42)" {
		t.Fatalf("call %+v %v", res, err)
	}
	if len(asked) != 1 || asked[0].Message != "What is your name?" || asked[0].Form == nil {
		t.Fatalf("questions %+v", asked)
	}
	card, err := s.c.Card(ctx, asked[0].ID)
	if err != nil || card.Status != localapi.CardAccepted {
		t.Fatalf("card %+v %v", card, err)
	}
}

// CancelCall ends a call in flight by its operation id.
func TestCancelCall(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	s.addFixture(t, "fx", f)
	ctx := testkit.Context(t)
	type out struct {
		res *localapi.ToolResult
		err error
	}
	// The call's context has no deadline: only CancelCall can end it
	// early. The call would take 120 s; ending within 60 s proves the
	// cancel, with room for a loaded machine.
	callCtx, cancelCall := context.WithCancel(context.Background())
	defer cancelCall()
	done := make(chan out, 1)
	go func() {
		res, err := s.c.Call(callCtx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":120000}`), Approved: true, OperationID: "op-cancel-me"}, localapi.CallHandler{})
		done <- out{res, err}
	}()
	testkit.WaitFor(t, "the call to run", func() bool { return f.Executions("slow") == 1 })
	start := time.Now()
	if err := s.c.CancelCall(ctx, "op-cancel-me"); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-done:
		if o.err != nil || o.res.Outcome == localapi.OutcomeOK || o.res.OperationID != "op-cancel-me" {
			t.Fatalf("cancelled call %+v %v", o.res, o.err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the call did not end after CancelCall")
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("cancel took %v (the call takes 120 s)", d)
	}
}

// The event stream starts with the current lists and follows changes.
func TestEvents(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx, cancel := context.WithCancel(testkit.Context(t))
	defer cancel()
	ch, err := s.c.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[localapi.EventType]bool{}
	deadline := time.After(2 * time.Minute) // only a hang: these events must come
	for !seen[localapi.EventServers] || !seen[localapi.EventGrants] || !seen[localapi.EventCards] {
		select {
		case ev := <-ch:
			seen[ev.Type] = true
		case <-deadline:
			t.Fatalf("first events: %v", seen)
		}
	}
	if _, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL()}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.Type != localapi.EventServers {
				continue
			}
			var l []localapi.Server
			if err := json.Unmarshal(ev.Data, &l); err != nil {
				t.Fatal(err)
			}
			if len(l) == 1 && l[0].ID == "fx" {
				cancel()
				for range ch { // closed once ctx ends
				}
				return
			}
		case <-deadline:
			t.Fatal("no servers event with the new server")
		}
	}
}

// Shutdown ends streams and calls, and removes daemon.json and the
// socket; Dial then says no daemon runs.
func TestShutdown(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	s.addFixture(t, "fx", f)
	ctx := testkit.Context(t)
	// The stream and the call have contexts without a deadline: only the
	// shutdown can end them. The call would take 300 s; a shutdown within
	// 60 s proves it ends calls, with room for a loaded machine.
	sctx, cancelStreams := context.WithCancel(context.Background())
	defer cancelStreams()
	ch, err := s.c.Subscribe(sctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.c.Call(sctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":300000}`), Approved: true}, localapi.CallHandler{})
		done <- err
	}()
	testkit.WaitFor(t, "the call to run", func() bool { return f.Executions("slow") == 1 })
	sockPath := s.srv.SocketPath()
	start := time.Now()
	s.close()
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("shutdown took %v (the call takes 300 s)", d)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the call did not end at shutdown")
	}
	hang := time.After(2 * time.Minute)
	for open := true; open; {
		select {
		case _, open = <-ch:
		case <-hang:
			t.Fatal("the event stream did not end at shutdown")
		}
	}
	for _, p := range []string{filepath.Join(s.dir, InfoFileName), sockPath} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after shutdown: %v", p, err)
		}
	}
	if _, err := Dial(ctx, s.dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Dial after shutdown: %v", err)
	}
}

// InProcess serves the same API for one command over in-memory
// connections: no temporary directory, no socket file (issue #21 item 5).
func TestInProcess(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	ctx := testkit.Context(t)
	eng := openEngine(t)
	// A temporary directory of this test's own, empty: whatever InProcess
	// wrote there would show.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	c, stop, err := InProcess(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	defer c.CloseIdleConnections()
	h, err := c.Health(ctx)
	if err != nil || !h.OK || !h.InProcess {
		t.Fatalf("health %+v %v", h, err)
	}
	if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL()}); err != nil {
		t.Fatal(err)
	}
	var progress int
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/slow", Arguments: json.RawMessage(`{"ms":200,"steps":3}`), Approved: true},
		localapi.CallHandler{Progress: func(localapi.Progress) { progress++ }})
	if err != nil || res.Outcome != localapi.OutcomeOK || progress != 3 {
		t.Fatalf("call %+v %v, %d progress", res, err, progress)
	}
	if _, err := c.LoginURL(ctx); code(err) != localapi.CodeNotFound {
		t.Fatalf("login URL in-process: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("InProcess wrote to the temporary directory: %v", left)
	}
	stop()
	if _, err := c.Health(ctx); err == nil {
		t.Fatal("the API answers after stop")
	}
}

// Authorize through the API, with a plain HTTP client playing the
// browser: the authorization server's redirect goes to the daemon's own
// /mcp-oauth, which the engine matches to the flow by its state.
func TestAuthorizeAPI(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	rc := newRawClient(t)
	if err := s.c.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: s.srv.Port()}); err != nil {
		t.Fatal(err)
	}
	fl, err := s.c.Authorize(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseWaiting || !strings.HasPrefix(fl.AuthorizationURL, as.URL()) {
		t.Fatalf("authorize: %+v %v", fl, err)
	}
	// The authorization server approves at once with a redirect.
	r := rc.do(t, http.MethodGet, fl.AuthorizationURL, nil, nil)
	loc := r.header.Get("Location")
	if r.status != http.StatusFound || !strings.HasPrefix(loc, s.srv.URL()+"/mcp-oauth?") {
		t.Fatalf("authorization endpoint: %d %s", r.status, loc)
	}
	lu, _ := url.Parse(loc)
	secrets.add("authorization code", lu.Query().Get("code"))
	// A forged callback with another state is refused and changes nothing.
	q := lu.Query()
	q.Set("state", "forged-"+q.Get("state"))
	forged := *lu
	forged.RawQuery = q.Encode()
	if r := rc.do(t, http.MethodGet, forged.String(), nil, nil); r.status < 400 || r.status > 499 || strings.Contains(r.body, "forged-") {
		t.Fatalf("forged callback: %d %s", r.status, r.body)
	}
	if fl, _ := s.c.Authorization(ctx, "secure"); fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("after a forged callback the flow is %s", fl.Phase)
	}
	// The real one completes the flow; the page says so.
	r = rc.do(t, http.MethodGet, loc, nil, nil)
	if r.status != http.StatusOK || !strings.Contains(r.body, "Authorization complete") {
		t.Fatalf("callback: %d %s", r.status, r.body)
	}
	if r := rc.do(t, http.MethodGet, loc, nil, nil); r.status < 400 || r.status > 499 {
		t.Fatalf("replayed callback: %d", r.status)
	}
	fl, err = s.c.WaitAuthorization(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseDone || fl.Result == nil || !fl.Result.RefreshToken {
		t.Fatalf("flow %+v %v", fl, err)
	}
	testkit.WaitFor(t, "ready after authorization", func() bool {
		v, err := s.c.Server(ctx, "secure")
		return err == nil && v.State == localapi.StateReady
	})
	st, err := s.c.AuthStatus(ctx, "secure")
	if err != nil || len(st) != 1 || !st[0].HasAccessToken || !st[0].HasRefreshToken {
		t.Fatalf("auth status %+v %v", st, err)
	}
	// Logout forgets the tokens and says why the server stopped.
	lo, err := s.c.Logout(ctx, "secure")
	if err != nil || len(lo.Forgotten) == 0 {
		t.Fatalf("logout %+v %v", lo, err)
	}
	if st, err := s.c.AuthStatus(ctx, "secure"); err != nil || st[0].HasAccessToken || st[0].HasRefreshToken {
		t.Fatalf("auth status after logout %+v %v", st, err)
	}
	access, refresh := as.IssuedTokens()
	for _, tok := range append(access, refresh...) {
		secrets.add("OAuth token", tok)
	}
	for _, req := range as.RequestsTo("/token") {
		if v := req.Form.Get("code_verifier"); v != "" {
			secrets.add("PKCE verifier", v)
		}
	}
}

// Resource subscriptions taken over the socket are held by the client's
// hold stream: when it ends (the client process stopped or was killed
// without unsubscribing), the daemon gives them back, and the server is
// no longer kept subscribed, and awake, for nobody. Another client's
// subscription of the same resource stays; a late unsubscribe naming the
// ended stream changes nothing.
func TestSubscriptionsEndWithHoldStream(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	s.addFixture(t, "fx", f)
	sub := localapi.ResourceSubscription{ServerID: "fx", URI: fixture.ReadmeURI}

	// Client a, whose connections the test can cut as a kill would.
	var mu sync.Mutex
	var conns []net.Conn
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		c, err := d.DialContext(ctx, "unix", s.srv.SocketPath())
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	a := localapi.NewClientWithTransport(tr)
	if err := a.SubscribeResource(ctx, sub); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the server subscribed", func() bool { return f.Subscriptions() == 1 })
	endStream := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}

	// Client b subscribes to the same resource.
	if err := s.c.SubscribeResource(ctx, sub); err != nil {
		t.Fatal(err)
	}
	// a's hold stream ends: its subscription goes, b's stays until b
	// gives it back, and then the server hears the last unsubscribe (it
	// would not if a's were still counted).
	endStream()
	if err := s.c.UnsubscribeResource(ctx, sub); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the server unsubscribed once a's stream ended and b gave its back", func() bool { return f.Subscriptions() == 0 })

	// a's late unsubscribe names the ended stream: nothing to give back,
	// so b's new subscription is untouched.
	if err := s.c.SubscribeResource(ctx, sub); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the server subscribed again", func() bool { return f.Subscriptions() == 1 })
	if err := a.UnsubscribeResource(ctx, sub); err != nil {
		t.Fatalf("a late unsubscribe of the ended stream: %v", err)
	}
	if n := f.Subscriptions(); n != 1 {
		t.Fatalf("a's late unsubscribe took b's subscription: the server has %d", n)
	}

	// A subscription naming a stream that is not open is refused.
	rc := newSocketRawClient(t, s.srv.SocketPath())
	resp := rc.request(t, ctx, http.MethodPost, "http://sock/api/subscriptions", sub, map[string]string{localapi.HolderHeader: "0123456789abcdef"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("subscribe for an unknown stream: %s", resp.Status)
	}
}
