package localapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
)

// serveSocket serves h on a Unix socket in a temporary directory and
// returns a Client of it (NewClient: the plain dialer).
func serveSocket(t *testing.T, h http.Handler) *Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "localapi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, SocketName)
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	c := NewClient(p)
	t.Cleanup(func() {
		c.CloseIdleConnections()
		srv.Close()
	})
	return c
}

// An error answer keeps its code and gets its HTTP status; an answer that
// is not the API's own still becomes an *Error with a code.
func TestErrorsCarryStatusAndCode(t *testing.T) {
	c := serveSocket(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/servers/x":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"not_found","message":"no server x","field":"id"}}`))
		default:
			http.Error(w, "upstream trouble", http.StatusBadGateway)
		}
	}))
	ctx := testkit.Context(t)
	_, err := c.Server(ctx, "x")
	e, ok := AsError(err)
	if !ok || e.Status != http.StatusNotFound || e.Code != CodeNotFound || e.Message != "no server x" || e.Field != "id" {
		t.Fatalf("error %#v", err)
	}
	_, err = c.Servers(ctx)
	if e, ok := AsError(err); !ok || e.Status != http.StatusBadGateway || e.Code != CodeUnavailable {
		t.Fatalf("plain error %#v", err)
	}
}

// The client never follows a redirect: nothing it sends goes anywhere but
// the socket.
func TestClientNeverFollowsRedirects(t *testing.T) {
	var hits atomic.Int32
	c := serveSocket(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			hits.Add(1)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	if _, err := c.Health(testkit.Context(t)); err == nil {
		t.Fatal("a redirect was taken for an answer")
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the redirect was followed %d times", n)
	}
}

// A call stream that ends without a result says the call may have run;
// progress before it was delivered in order.
func TestCallStreamWithoutResult(t *testing.T) {
	c := serveSocket(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("ask") != "0" {
			t.Errorf("a call without Approve did not say ask=0: %s", r.URL.RawQuery)
		}
		w.Header().Set("Content-Type", ContentTypeNDJSON)
		for i := 1; i <= 2; i++ {
			b, _ := json.Marshal(CallEvent{Type: CallEventProgress, Progress: &Progress{OperationID: "op", Progress: float64(i)}})
			w.Write(append(b, '\n'))
		}
	}))
	var got []float64
	_, err := c.Call(testkit.Context(t), CallRequest{Tool: "s/t"}, CallHandler{Progress: func(p Progress) { got = append(got, p.Progress) }})
	if e, ok := AsError(err); !ok || e.Code != CodeUnavailable || !strings.Contains(e.Message, "may have run") {
		t.Fatalf("error %v", err)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("progress %v", got)
	}
}

// An approval event is answered on the approval route with the
// handler's decision, or its failure; an error event ends the call with
// that error and its status.
func TestCallStreamApprovalAndError(t *testing.T) {
	replies := make(chan ApprovalReply, 1)
	c := serveSocket(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/calls":
			w.Header().Set("Content-Type", ContentTypeNDJSON)
			b, _ := json.Marshal(CallEvent{Type: CallEventApproval, Approval: &ApprovalRequest{OperationID: "op/1", Tool: "mcp__s__t"}})
			w.Write(append(b, '\n'))
			w.(http.Flusher).Flush()
			var reply ApprovalReply
			select {
			case reply = <-replies:
			case <-r.Context().Done():
				return
			}
			if reply.Error != "" {
				b, _ = json.Marshal(CallEvent{Type: CallEventError, Error: &Error{Code: CodeBadRequest, Message: reply.Error}})
			} else {
				b, _ = json.Marshal(CallEvent{Type: CallEventResult, Result: &ToolResult{OperationID: "op/1", Outcome: "ok", Message: reply.Reason}})
			}
			w.Write(append(b, '\n'))
		case "/api/calls/op%2F1/approval", "/api/calls/op/1/approval":
			var reply ApprovalReply
			if err := json.NewDecoder(r.Body).Decode(&reply); err != nil {
				t.Error(err)
			}
			replies <- reply
			w.WriteHeader(http.StatusNoContent)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.EscapedPath())
			http.NotFound(w, r)
		}
	}))
	ctx := testkit.Context(t)
	var asked ApprovalRequest
	res, err := c.Call(ctx, CallRequest{Tool: "s/t"}, CallHandler{Approve: func(ar ApprovalRequest) (Decision, error) {
		asked = ar
		return Decision{Approved: true, Reason: "fine"}, nil
	}})
	if err != nil || res.Message != "fine" || asked.OperationID != "op/1" {
		t.Fatalf("approved call %+v %v (asked %+v)", res, err, asked)
	}
	_, err = c.Call(ctx, CallRequest{Tool: "s/t"}, CallHandler{Approve: func(ApprovalRequest) (Decision, error) {
		return Decision{}, context.DeadlineExceeded
	}})
	if e, ok := AsError(err); !ok || e.Code != CodeBadRequest || e.Status != http.StatusBadRequest || !strings.Contains(e.Message, "deadline") {
		t.Fatalf("failed approval: %v", err)
	}
}

func TestReadSSE(t *testing.T) {
	in := ": keep-alive\n\n" +
		"event: servers\ndata: [1]\n\n" +
		"event: grants\ndata: {\"a\":\ndata: 1}\n\n" +
		"event: cards\n\n" + // no data: not an event
		"event: catalog\ndata: {}\n\n"
	var got []Event
	if err := readSSE(strings.NewReader(in), maxStreamLine, func(ev Event) { got = append(got, ev) }); err != nil {
		t.Fatal(err)
	}
	want := []string{`servers [1]`, "grants {\"a\":\n1}", `catalog {}`}
	if len(got) != len(want) {
		t.Fatalf("events %+v", got)
	}
	for i, ev := range got {
		if s := string(ev.Type) + " " + string(ev.Data); s != want[i] {
			t.Errorf("event %d: %q, want %q", i, s, want[i])
		}
	}
}

// A slow reader misses intermediate events, never the newest of each
// type, and gets the types in the order they first came.
func TestEventQueueKeepsTheNewestOfEachType(t *testing.T) {
	q := newEventQueue()
	for i, typ := range []EventType{EventServers, EventGrants, EventServers, EventCards, EventServers} {
		q.put(Event{Type: typ, Data: json.RawMessage(`"` + string(rune('a'+i)) + `"`)})
	}
	q.close()
	out := make(chan Event)
	go q.deliver(context.Background(), out, nopCloser{})
	var got []string
	for ev := range out {
		got = append(got, string(ev.Type)+"="+string(ev.Data))
	}
	want := []string{`servers="e"`, `grants="b"`, `cards="d"`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// NewClient returns a client of the daemon listening on the Unix socket
// at socketPath. It dials that path and nothing else, and never follows a
// redirect. It does not check who owns the socket: package daemon's Dial
// does, before it hands a Client out.
func NewClient(socketPath string) *Client {
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socketPath)
		},
		MaxIdleConnsPerHost: 8,
	}
	return NewClientWithTransport(tr)
}
