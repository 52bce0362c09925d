package session

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
)

// throughStream reads body, arriving in reads of chunk bytes, through the
// standalone stream's framer with maxMsg as maxMessageBytes, recording
// what cp wants; it returns what go-sdk reads.
func throughStream(t testing.TB, body string, chunk int, maxMsg int64, cp capture) string {
	t.Helper()
	l := newLimiter("t", config.Limits{MaxMessageBytes: maxMsg, EventsPerSecond: 1e6, BytesPerSecond: 1 << 30}, nil)
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/mcp", nil)
	b := &sseBody{l: l, rc: io.NopCloser(&chunkReader{data: []byte(body), n: chunk}), req: req, capture: cp}
	out, err := io.ReadAll(b)
	b.Close()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(out)
}

// throughJSON reads a tools/list answer's JSON body, arriving in reads of
// chunk bytes, of Content-Length size (-1: chunked), through the limiter,
// recording its tools in sink; it returns what go-sdk reads.
func throughJSON(t testing.TB, body string, chunk int, size int64, sink *rawToolSink) string {
	t.Helper()
	l := newLimiter("t", config.Limits{}, nil)
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	b := &jsonBody{l: l, rc: io.NopCloser(&chunkReader{data: []byte(body), n: chunk}), req: req, size: size, sink: sink}
	out, err := io.ReadAll(b)
	b.Close()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if l.mem.used != 0 {
		t.Fatalf("%d bytes of the memory budget still held after Close", l.mem.used)
	}
	return string(out)
}

// eventsWithin is the reference reading of body's events that are at
// most maxMsg bytes: what the standalone stream's framer hands on.
func eventsWithin(body string, maxMsg int64) []string {
	var want []string
	for _, ev := range sseEvents([]byte(body)) {
		if int64(len(ev)) <= maxMsg {
			want = append(want, ev)
		}
	}
	return want
}

// recorded is what a loopback server saw of one request.
type recorded struct {
	method, auth, apiKey string
}

// layerServer is a loopback MCP endpoint for the layer tests: handle
// answers each request, after it is recorded.
func layerServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) (url string, seen func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, recorded{r.Method, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")})
		mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// post sends a JSON-RPC request with method through rt, as go-sdk does.
func post(t *testing.T, rt http.RoundTripper, ctx context.Context, url, method string, header http.Header) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"`+method+`","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	maps.Copy(req.Header, header)
	return rt.RoundTrip(req)
}

// Each layer of the stack does its one job, over a real loopback server.

// headerTransport: the configured headers reach the server; the caller's
// request is not changed.
func TestHeaderTransport(t *testing.T) {
	url, seen := layerServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	rt := &headerTransport{Base: http.DefaultTransport, Headers: map[string]string{"X-Api-Key": "k-1"}}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := seen(); len(got) != 1 || got[0].apiKey != "k-1" {
		t.Fatalf("server saw %+v", got)
	}
	if req.Header.Get("X-Api-Key") != "" {
		t.Fatal("the caller's request was changed")
	}
}

// The bearer layer sends the token, after the configured headers.
func TestStackSendsBearer(t *testing.T) {
	url, seen := layerServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	rt := stack{bearer: "tok", headers: map[string]string{"X-Api-Key": "k"}, lim: newLimiter("t", config.Limits{}, nil),
		onTrouble: func(error) {}, onOpen: func(bool) {}}.build(http.DefaultTransport)
	resp, err := post(t, rt, context.Background(), url, "ping", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := seen(); len(got) != 1 || got[0].auth != "Bearer tok" || got[0].apiKey != "k" {
		t.Fatalf("server saw %+v", got)
	}
}

// deleteLimit: a DELETE the server holds up ends at the limit; other
// requests get no deadline of ours.
func TestDeleteLimit(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	url, _ := layerServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			select { // holds the DELETE until the client gives up
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	var deadlines []bool
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		_, ok := req.Context().Deadline()
		deadlines = append(deadlines, ok)
		return http.DefaultTransport.RoundTrip(req)
	})
	rt := &deleteLimit{Base: base, Timeout: time.Millisecond}
	get, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err := rt.RoundTrip(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	del, _ := http.NewRequest(http.MethodDelete, url, nil)
	if _, err := rt.RoundTrip(del); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("DELETE: err = %v; want the limit's deadline", err)
	}
	if !slices.Equal(deadlines, []bool{false, true}) {
		t.Fatalf("deadlines (GET, DELETE) = %v; want only the DELETE's", deadlines)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// statusTransport: which statuses of a POST become a typed error, and
// which go-sdk gets.
func TestStatusTransport(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		header   map[string]string // of the response
		session  bool              // the request carries a session id
		passAuth bool
		get      bool
		wantErr  bool // a *HTTPStatusError naming tools/call
		missing  bool // the request's slot is marked sessionMissing
	}{
		{name: "200 passes", status: 200},
		{name: "429 typed with Retry-After", status: 429, header: map[string]string{"Retry-After": "7"}, wantErr: true},
		{name: "401 typed", status: 401, header: map[string]string{"WWW-Authenticate": `Bearer error="invalid_token"`}, wantErr: true},
		{name: "401 passes to OAuth", status: 401, passAuth: true},
		{name: "404 without session typed", status: 404, wantErr: true},
		{name: "404 with session marks the request", status: 404, session: true, missing: true},
		{name: "400 JSON-RPC error passes", status: 400, header: map[string]string{"Content-Type": "application/json"}},
		{name: "GET 404 is go-sdk's", status: 404, get: true},
		{name: "redirect typed", status: 307, header: map[string]string{"Location": "/elsewhere"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := layerServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"no"}}`)
			})
			rt := &statusTransport{Base: http.DefaultTransport, PassAuth: tc.passAuth}
			ctx, slot := withRequestSlot(context.Background())
			var h http.Header
			if tc.session {
				h = http.Header{"Mcp-Session-Id": {"s-1"}}
			}
			var resp *http.Response
			var err error
			if tc.get {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				resp, err = rt.RoundTrip(req)
			} else {
				resp, err = post(t, rt, ctx, url, "tools/call", h)
			}
			var hs *HTTPStatusError
			switch {
			case tc.wantErr:
				challenge := tc.header["WWW-Authenticate"]
				if !errors.As(err, &hs) || hs.StatusCode != tc.status || hs.RPCMethod != "tools/call" ||
					hs.RetryAfter != tc.header["Retry-After"] || challenge != "" && !slices.Equal(hs.WWWAuthenticate, []string{challenge}) {
					t.Fatalf("err = %#v; want a typed %d for tools/call", err, tc.status)
				}
			case err != nil:
				t.Fatalf("err = %v; want the response", err)
			default:
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d", resp.StatusCode)
				}
			}
			if slot.sessionMissing.Load() != tc.missing {
				t.Fatalf("sessionMissing = %t", !tc.missing)
			}
		})
	}
}

// streamWatch: the standalone stream's answers and troubles are heard; a
// GET resuming a call's stream, and POSTs, are not the watch's business.
func TestStreamWatch(t *testing.T) {
	cases := []struct {
		name        string
		status      int
		resume      bool
		wantOpen    []bool
		wantTrouble bool
	}{
		{name: "200 open", status: 200, wantOpen: []bool{true}},
		{name: "405 none offered", status: 405, wantOpen: []bool{false}},
		{name: "401 trouble", status: 401, wantTrouble: true},
		{name: "404 is go-sdk's", status: 404},
		{name: "resumption is not the stream", status: 405, resume: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := layerServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(tc.status) })
			var open []bool
			var trouble error
			rt := &streamWatch{Base: http.DefaultTransport, onOpen: func(ok bool) { open = append(open, ok) },
				onTrouble: func(err error) { trouble = err }}
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if tc.resume {
				req.Header.Set("Last-Event-ID", "1_0")
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if !slices.Equal(open, tc.wantOpen) || (trouble != nil) != tc.wantTrouble {
				t.Fatalf("open %v, trouble %v", open, trouble)
			}
		})
	}
	// A network failure of the stream is trouble too.
	url, _ := layerServer(t, func(w http.ResponseWriter, r *http.Request) {})
	var trouble error
	rt := &streamWatch{Base: http.DefaultTransport, onOpen: func(bool) {}, onTrouble: func(err error) { trouble = err }}
	req, _ := http.NewRequest(http.MethodGet, strings.Replace(url, "http://", "http://nonexistent.invalid.", 1), nil)
	if _, err := rt.RoundTrip(req); err == nil || trouble == nil {
		t.Fatalf("err %v, trouble %v", err, trouble)
	}
}

// exchangeLog: one Exchange per request, with the POST's method and the
// status, or the redacted error.
func TestExchangeLog(t *testing.T) {
	url, _ := layerServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	var got []Exchange
	rt := &exchangeLog{Base: http.DefaultTransport, connID: "c-1", onExchange: func(x Exchange) { got = append(got, x) }}
	resp, err := post(t, rt, context.Background(), url, "tools/call", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	get, _ := http.NewRequest(http.MethodGet, url, nil)
	resp, err = rt.RoundTrip(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	bad, _ := http.NewRequest(http.MethodGet, "http://nonexistent.invalid/mcp?access_token=secret123", nil)
	if _, err := rt.RoundTrip(bad); err == nil {
		t.Fatal("no error from an unknown host")
	}
	if len(got) != 3 {
		t.Fatalf("%d exchanges; want 3", len(got))
	}
	if x := got[0]; x.ConnectionID != "c-1" || x.HTTPMethod != "POST" || x.RPCMethod != "tools/call" || x.Status != 202 || x.Error != "" {
		t.Errorf("POST logged as %+v", x)
	}
	if x := got[1]; x.HTTPMethod != "GET" || x.RPCMethod != "" || x.Status != 202 {
		t.Errorf("GET logged as %+v", x)
	}
	if x := got[2]; x.Status != 0 || x.Error == "" || strings.Contains(x.Error, "secret123") {
		t.Errorf("failure logged as %+v; want its error, redacted", x)
	}
}

// purposeTransport: every request is labelled as the server's MCP traffic
// (told to a guard directly, in the context otherwise), unless its
// context names a purpose of its own.
func TestPurposeTransport(t *testing.T) {
	url, _ := layerServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	var seen []purposeLabel
	plain := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		p, id := hostperm.PurposeFrom(req.Context())
		seen = append(seen, purposeLabel{p, id})
		return http.DefaultTransport.RoundTrip(req)
	})
	guard := &recordingGuard{base: http.DefaultTransport}
	for _, base := range []http.RoundTripper{plain, guard} {
		g, _ := base.(hostperm.PurposeRoundTripper)
		rt := &purposeTransport{Base: base, guard: g, serverID: "srv"}
		for _, ctx := range []context.Context{context.Background(), hostperm.WithPurpose(context.Background(), hostperm.PurposeToken, "other")} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	want := []purposeLabel{{hostperm.PurposeMCP, "srv"}, {hostperm.PurposeToken, "other"}}
	if !slices.Equal(seen, want) {
		t.Errorf("plain base saw %v; want %v", seen, want)
	}
	if !slices.Equal(guard.told, want) {
		t.Errorf("guard was told %v; want %v", guard.told, want)
	}
}

// recordingGuard is a hostperm.PurposeRoundTripper that records what it
// is told and lets every request through, as a granted guard does.
type recordingGuard struct {
	base http.RoundTripper
	told []purposeLabel
}

// purposeLabel is the purpose and server a request is labelled with.
type purposeLabel struct {
	purpose hostperm.Purpose
	server  string
}

func (g *recordingGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	p, id := hostperm.PurposeFrom(req.Context())
	return g.RoundTripPurpose(req, p, id)
}

func (g *recordingGuard) RoundTripPurpose(req *http.Request, p hostperm.Purpose, id string) (*http.Response, error) {
	if rp, rid := hostperm.PurposeFrom(req.Context()); rp != "" {
		p, id = rp, rid // the request's own purpose wins, as with hostperm's guard
	}
	g.told = append(g.told, purposeLabel{p, id})
	return g.base.RoundTrip(req)
}

// limitTransport: an oversized JSON body (declared or chunked) and an
// oversized SSE event become the limit's error response, read once, with
// no second parser behind them; a tools/list answer's tools are recorded
// from JSON and SSE bodies in that same read, and only a listing's.
func TestLimitTransport(t *testing.T) {
	const maxMsg = 4 << 10
	tools := `{"tools":[{"name":"x","inputSchema":{"b":1,"a":2}}]}`
	big := strings.Repeat("A", 2*maxMsg)
	cases := []struct {
		name      string
		method    string // the listing's, in the request's meter; "" for none
		sse       bool
		declared  bool // Content-Length set
		result    string
		wantLimit string // "" for an answer that passes
		wantTools bool
	}{
		{name: "oversized JSON, chunked", result: `"` + big + `"`, wantLimit: "maxMessageBytes"},
		{name: "oversized JSON, declared", declared: true, result: `"` + big + `"`, wantLimit: "maxMessageBytes"},
		{name: "oversized SSE event", sse: true, result: `"` + big + `"`, wantLimit: "maxMessageBytes"},
		{name: "tools/list JSON, chunked", method: "tools/list", result: tools, wantTools: true},
		{name: "tools/list JSON, declared", method: "tools/list", declared: true, result: tools, wantTools: true},
		{name: "tools/list SSE", method: "tools/list", sse: true, result: tools, wantTools: true},
		{name: "another listing", method: "prompts/list", result: tools},
		{name: "not a listing", result: tools},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := layerServer(t, func(w http.ResponseWriter, r *http.Request) {
				msg := `{"jsonrpc":"2.0","id":3,"result":` + tc.result + `}`
				if tc.sse {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "event: message\ndata: "+msg+"\n\n")
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if tc.declared {
					w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
				} else {
					w.(http.Flusher).Flush() // chunked: no length known
				}
				io.WriteString(w, msg)
			})
			lim := newLimiter("t", config.Limits{MaxMessageBytes: maxMsg}, nil)
			sink := newRawToolSink()
			rt := &limitTransport{Base: http.DefaultTransport, lim: lim, raw: sink}
			ctx := context.Background()
			if tc.method != "" {
				ctx = withListMeter(ctx, &listMeter{max: 1 << 20, method: tc.method})
			}
			resp, err := post(t, rt, ctx, url, "tools/call", nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if tc.sse {
				body = []byte(strings.TrimPrefix(strings.Join(sseEvents(body), ""), "event: message\ndata: "))
			}
			err = limitFromWire(decodeResponse(t, body))
			var le *LimitError
			switch {
			case tc.wantLimit != "" && (!errors.As(err, &le) || le.Limit != tc.wantLimit):
				t.Fatalf("err = %v; want the %s limit's", err, tc.wantLimit)
			case tc.wantLimit == "" && err != nil:
				t.Fatalf("err = %v", err)
			}
			if r, ok := sink.tool("x"); ok != tc.wantTools || ok && string(r.input) != `{"b":1,"a":2}` {
				t.Fatalf("recorded %t %s; want %t", ok, r.input, tc.wantTools)
			}
			if lim.mem.used != 0 {
				t.Fatalf("%d bytes of the memory budget still held", lim.mem.used)
			}
		})
	}
}

// decodeResponse reads a JSON-RPC response as go-sdk would, returning its
// error (a *jsonrpc.Error), if any.
func decodeResponse(t *testing.T, body []byte) error {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(body))
	if err != nil {
		t.Fatalf("go-sdk cannot read %.200q: %v", body, err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("not a response: %.200q", body)
	}
	return resp.Error
}
