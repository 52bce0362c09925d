package frontend_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/clocktest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// hang bounds only a hang: nothing here depends on it being short.
const hang = 2 * time.Minute

// endpoint is a front end served over Streamable HTTP on 127.0.0.1 with
// the limits of o, and its tokens.
type endpoint struct {
	url    string
	tokens *frontend.Tokens
}

// Test durations: the revocation check and the idle time, told apart by
// the fake clock.
const (
	testRecheck = time.Hour
	testIdle    = 10 * time.Minute
)

func startEndpoint(t *testing.T, o frontend.HTTPOptions) *endpoint {
	t.Helper()
	return startEndpointWith(t, o, nil)
}

// startEndpointWith is startEndpoint with the server f added as "fx"
// (nil: none).
func startEndpointWith(t *testing.T, o frontend.HTTPOptions, f *fixture.Server) *endpoint {
	t.Helper()
	return startEndpointAuth(t, o, f, nil)
}

// startEndpointAuth is startEndpointWith whose bearer tokens other than
// remotemcp's are verified by auth (HTTPHandlerAuth; nil: none).
func startEndpointAuth(t *testing.T, o frontend.HTTPOptions, f *fixture.Server, auth frontend.Authenticator) *endpoint {
	t.Helper()
	ctx := t.Context()
	eng, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if f != nil {
		if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL(), By: localapi.ByServersAdd, ToolTimeout: "1h"}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tk := frontend.NewTokens(st)
	// Long on the wall clock: only the fake clock's check ends a
	// session of a revoked token here, not the stream's own check.
	tk.Recheck = testRecheck
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fe.RunHTTPWith(rctx, ln, fe.HTTPHandlerAuth(tk, auth, o), o) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return &endpoint{url: "http://" + ln.Addr().String() + "/mcp", tokens: tk}
}

func (e *endpoint) token(t *testing.T, name string) string {
	t.Helper()
	tok, err := e.tokens.Create(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// post sends one JSON-RPC message of session sid ("" for a new one) and
// returns the answer's status, session id and body.
func (e *endpoint) post(t *testing.T, tok, sid, msg string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url, strings.NewReader(msg))
	req.Header.Set("Authorization", "Bearer "+tok)
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
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

const (
	initMsg        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`
	initializedMsg = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	pingMsg        = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

// session starts a host session with tok and returns its id.
func (e *endpoint) session(t *testing.T, tok string) string {
	t.Helper()
	code, sid, body := e.post(t, tok, "", initMsg)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", code, sid, body)
	}
	if code, _, body := e.post(t, tok, sid, initializedMsg); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	return sid
}

// ping is the status of a ping in session sid with tok.
func (e *endpoint) ping(t *testing.T, tok, sid string) (int, string) {
	t.Helper()
	code, _, body := e.post(t, tok, sid, pingMsg)
	return code, body
}

// stream opens the session's GET stream; ended gets its end, and cancel
// closes it.
func (e *endpoint) stream(t *testing.T, tok, sid string) (ended <-chan error, cancel func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("GET stream: %d %s", resp.StatusCode, b)
	}
	ch, done := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(done)
		_, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ch <- err
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch, cancel
}

// Issue #20 item 2: a host session with no stream and no request for
// --session-idle ends, and its id answers 404 (before, sessions never
// expired and old ids answered forever). A request in time keeps it.
func TestHTTPSessionIdleEnds(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	e := startEndpoint(t, frontend.HTTPOptions{SessionIdle: testIdle, AfterFunc: clk.AfterFunc})
	tok := e.token(t, "host")
	sid := e.session(t, tok)
	testkit.WaitFor(t, "the idle timer", func() bool { return clk.Pending(testIdle) == 1 })
	clk.Advance(testIdle - time.Second)
	if code, body := e.ping(t, tok, sid); code != http.StatusOK {
		t.Fatalf("ping before the idle time: %d %s", code, body)
	}
	testkit.WaitFor(t, "the idle timer again", func() bool { return clk.Pending(testIdle) == 1 })
	clk.Advance(testIdle - time.Second) // the ping started the count again
	if code, body := e.ping(t, tok, sid); code != http.StatusOK {
		t.Fatalf("ping after a request reset the idle time: %d %s", code, body)
	}
	testkit.WaitFor(t, "the idle timer again", func() bool { return clk.Pending(testIdle) == 1 })
	clk.Advance(testIdle)
	testkit.WaitFor(t, "the idle session to end", func() bool {
		code, _ := e.ping(t, tok, sid)
		return code == http.StatusNotFound
	})
}

// Issue #20 item 2: a session whose host listens on an open GET stream
// is alive however long it sends nothing; once the stream closes, the
// idle time runs.
func TestHTTPSessionStreamKeepsAlive(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	e := startEndpoint(t, frontend.HTTPOptions{SessionIdle: testIdle, AfterFunc: clk.AfterFunc})
	tok := e.token(t, "host")
	sid := e.session(t, tok)
	testkit.WaitFor(t, "the idle timer", func() bool { return clk.Pending(testIdle) == 1 })
	ended, closeStream := e.stream(t, tok, sid)
	if n := clk.Pending(testIdle); n != 0 {
		t.Fatalf("%d idle timers run while a stream is open", n)
	}
	clk.Advance(24 * time.Hour)
	select {
	case err := <-ended:
		t.Fatalf("the stream ended: %v", err)
	default:
	}
	if code, body := e.ping(t, tok, sid); code != http.StatusOK {
		t.Fatalf("a session with an open stream: ping %d %s", code, body)
	}
	closeStream()
	testkit.WaitFor(t, "the idle timer after the stream", func() bool { return clk.Pending(testIdle) == 1 })
	clk.Advance(testIdle)
	testkit.WaitFor(t, "the idle session to end", func() bool {
		code, _ := e.ping(t, tok, sid)
		return code == http.StatusNotFound
	})
}

// Issue #20 item 2: at most MaxSessionsPerToken sessions per token and
// MaxSessions in all; a new session over either is refused with 429
// naming the limit, and a session ended frees its place.
func TestHTTPSessionCaps(t *testing.T) {
	e := startEndpoint(t, frontend.HTTPOptions{MaxSessionsPerToken: 2, MaxSessions: 3})
	a, b := e.token(t, "a"), e.token(t, "b")
	first := e.session(t, a)
	e.session(t, a)
	code, _, body := e.post(t, a, "", initMsg)
	if code != http.StatusTooManyRequests || !strings.Contains(body, `the token "a" already has 2 sessions open, the limit per token`) {
		t.Fatalf("a's third session: %d %s", code, body)
	}
	e.session(t, b)
	code, _, body = e.post(t, b, "", initMsg)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "the endpoint already has 3 sessions open, its limit in all") || !strings.Contains(body, "--session-idle") {
		t.Fatalf("the fourth session: %d %s", code, body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, e.url, nil)
	req.Header.Set("Authorization", "Bearer "+a)
	req.Header.Set("Mcp-Session-Id", first)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	testkit.WaitFor(t, "the ended session's place", func() bool {
		code, _, _ := e.post(t, b, "", initMsg)
		return code == http.StatusOK
	})
}

// Issue #20 item 2, with the real limits: the 65th session of a token
// and the 1,025th in all are refused.
func TestHTTPSessionCapsDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("1,025 sessions")
	}
	e := startEndpoint(t, frontend.HTTPOptions{})
	n := 0
	for i := range frontend.DefaultMaxSessions / frontend.DefaultMaxSessionsPerToken {
		tok := e.token(t, fmt.Sprintf("t%d", i))
		for range frontend.DefaultMaxSessionsPerToken {
			if code, _, body := e.post(t, tok, "", initMsg); code != http.StatusOK {
				t.Fatalf("session %d: %d %s", n+1, code, body)
			}
			n++
		}
		if code, _, body := e.post(t, tok, "", initMsg); code != http.StatusTooManyRequests || !strings.Contains(body, "already has 64 sessions open, the limit per token") {
			t.Fatalf("the 65th session of token %d: %d %s", i, code, body)
		}
	}
	tok := e.token(t, "last")
	if code, _, body := e.post(t, tok, "", initMsg); code != http.StatusTooManyRequests || !strings.Contains(body, "already has 1024 sessions open, its limit in all") {
		t.Fatalf("the 1,025th session: %d %s", code, body)
	}
}

// Issue #20 item 2: a session belongs to the token that started it;
// another valid token is refused on its id (before, it answered).
func TestHTTPSessionOtherToken(t *testing.T) {
	e := startEndpoint(t, frontend.HTTPOptions{})
	a, b := e.token(t, "a"), e.token(t, "b")
	sid := e.session(t, a)
	code, body := e.ping(t, b, sid)
	if code != http.StatusForbidden || !strings.Contains(body, "started with another bearer token") {
		t.Fatalf("a's session with b's token: %d %s", code, body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url, nil)
	req.Header.Set("Authorization", "Bearer "+b)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a's stream with b's token: %s", resp.Status)
	}
	if code, body := e.ping(t, a, sid); code != http.StatusOK {
		t.Fatalf("a's session with a's token: %d %s", code, body)
	}
}

// Issue #20 item 2: revoking a token ends its sessions: the open stream
// closes and the id answers 404 even to another valid token (before, the
// session outlived its token and answered any other); the other token's
// sessions stay.
func TestHTTPRevokeEndsSessions(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	// Sessions never idle out here: only the revocation ends one.
	e := startEndpoint(t, frontend.HTTPOptions{SessionIdle: -1, AfterFunc: clk.AfterFunc})
	a, b := e.token(t, "a"), e.token(t, "b")
	sa, sb := e.session(t, a), e.session(t, b)
	ended, _ := e.stream(t, a, sa)
	if err := e.tokens.Revoke(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the revocation check", func() bool { return clk.Pending(testRecheck) == 1 })
	clk.Advance(testRecheck)
	select {
	case <-ended:
	case <-time.After(hang):
		t.Fatal("the stream of a revoked token's session is still open")
	}
	if code, body := e.ping(t, b, sa); code != http.StatusNotFound {
		t.Fatalf("the revoked token's session with another token: %d %s", code, body)
	}
	if code, body := e.ping(t, b, sb); code != http.StatusOK {
		t.Fatalf("the other token's session: %d %s", code, body)
	}
	testkit.WaitFor(t, "the next revocation check", func() bool { return clk.Pending(testRecheck) == 1 })
}

// Issue #20 item 2: the endpoint's listener closes an idle keep-alive
// connection after IdleTimeout, and refuses a connection over MaxConns
// at once with a 503 naming the limit (before, any local user could hold
// thousands, without a token).
func TestHTTPEndpointConnLimits(t *testing.T) {
	// The held connections send nothing: only the cap may end them here.
	e := startEndpoint(t, frontend.HTTPOptions{MaxConns: 2, IdleTimeout: 20 * time.Millisecond, ReadHeaderTimeout: time.Hour})
	addr := strings.TrimSuffix(strings.TrimPrefix(e.url, "http://"), "/mcp")
	// An idle keep-alive connection, after one request, is closed.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(hang))
	b, err := io.ReadAll(c) // the 401, then the server's close
	if err != nil || !strings.Contains(string(b), "401 Unauthorized") {
		t.Fatalf("an idle keep-alive connection: %v after %q", err, b)
	}
	// Two connections held (sending nothing) take the two places…
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	// …and the next is refused; one may be answered before the held
	// ones are accepted, so a few tries.
	testkit.WaitFor(t, "a refusal", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(hang))
		io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(c)
		return strings.Contains(string(b), "503 Service Unavailable") && strings.Contains(string(b), "the MCP endpoint already has 2 connections open, its limit")
	})
}

// Issue #20 item 2: a session that idles out gives back its resource
// subscriptions: the server is unsubscribed (and may hibernate).
func TestHTTPSessionIdleReleasesSubscriptions(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	clk := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	e := startEndpointWith(t, frontend.HTTPOptions{SessionIdle: testIdle, AfterFunc: clk.AfterFunc}, f)
	tok := e.token(t, "host")
	sid := e.session(t, tok)
	sub := `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"` + fixture.ReadmeURI + `"}}`
	testkit.WaitFor(t, "the subscription", func() bool {
		code, _, body := e.post(t, tok, sid, sub)
		return code == http.StatusOK && strings.Contains(body, `"result"`)
	})
	if n := f.Subscriptions(); n != 1 {
		t.Fatalf("the server holds %d subscriptions, want 1", n)
	}
	testkit.WaitFor(t, "the idle timer", func() bool { return clk.Pending(testIdle) == 1 })
	clk.Advance(testIdle)
	testkit.WaitFor(t, "the idle session's subscription to be given back", func() bool { return f.Subscriptions() == 0 })
}

// Issue #20 item 2 (review): ending a revoked token's sessions never waits
// behind a call still in flight on one of them: a long call (one waiting
// on a person's card, say) must not hold up the token's other sessions or
// later revocation checks. A guard: go-sdk v1.8.0's Close did not block
// here before the sessions were closed on their own goroutines either,
// but a go-sdk whose Close waits for requests in flight would.
func TestHTTPRevokeDoesNotWaitForCalls(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	clk := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	e := startEndpointWith(t, frontend.HTTPOptions{SessionIdle: -1, AfterFunc: clk.AfterFunc}, f)
	a := e.token(t, "a")
	busy, idle := e.session(t, a), e.session(t, a)
	// A call that runs for an hour, on the busy session.
	called := make(chan struct{})
	go func() {
		defer close(called)
		// Longer than any wait below: only the test's end cancels it.
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url, strings.NewReader(
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fx__slow","arguments":{"ms":3600000,"quiet":true}}}`))
		req.Header.Set("Authorization", "Bearer "+a)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", busy)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	testkit.WaitFor(t, "the call to reach the server", func() bool { return f.Executions("slow") > 0 })
	if err := e.tokens.Revoke(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the revocation check", func() bool { return clk.Pending(testRecheck) == 1 })
	clk.Advance(testRecheck)
	b := e.token(t, "b")
	testkit.WaitFor(t, "the idle session of the revoked token to end", func() bool {
		code, _ := e.ping(t, b, idle)
		return code == http.StatusNotFound
	})
	// The check went on: the next one is scheduled while the call runs.
	sb := e.session(t, b)
	testkit.WaitFor(t, "the next revocation check", func() bool { return clk.Pending(testRecheck) == 1 })
	if code, body := e.ping(t, b, sb); code != http.StatusOK {
		t.Fatalf("another token's session: %d %s", code, body)
	}
}
