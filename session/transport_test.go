package session

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/config"
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
