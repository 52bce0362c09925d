package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// hostile is a loopback MCP server (the fixture) whose chosen requests are
// answered by a hostile handler instead: bodies are generated while they
// are written, so the test process holds none of them and the heap it
// measures is the client's.
type hostile struct {
	*fixture.Server
	// answer, when it returns true, has written a hostile response.
	answer func(w http.ResponseWriter, method, tool string, id json.RawMessage) bool
}

func startHostile(t *testing.T, answer func(w http.ResponseWriter, method, tool string, id json.RawMessage) bool) *hostile {
	t.Helper()
	h := &hostile{answer: answer}
	f := testkit.StartFixture(t, fixture.Options{NoRecord: true, Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet {
			return !h.answer(w, "GET", "", nil)
		}
		if r.Method != http.MethodPost {
			return true
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) != nil || m.ID == nil {
			return true
		}
		return !h.answer(w, m.Method, m.Params.Name, m.ID)
	}})
	h.Server = f
	return h
}

// writeFlood writes prefix, then n bytes of 'A' in chunks, then suffix,
// stopping early when the client goes away.
func writeFlood(w http.ResponseWriter, prefix string, n int64, suffix string) {
	io.WriteString(w, prefix)
	chunk := bytes.Repeat([]byte("A"), 64<<10)
	for n > 0 {
		c := chunk[:min(int64(len(chunk)), n)]
		if _, err := w.Write(c); err != nil {
			return
		}
		n -= int64(len(c))
	}
	io.WriteString(w, suffix)
}

func resultPrefix(id json.RawMessage) string {
	return `{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"content":[{"type":"text","text":"`
}

const resultSuffix = `"}]}}`

// heapPeak samples the heap until stop is called and returns the growth
// of the peak live heap (as of each GC; garbage the collector has not yet
// reached is not memory the client holds) and of the peak total heap over
// their values at the start.
func heapPeak(t *testing.T) (stop func() (live, total uint64)) {
	t.Helper()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	baseLive, baseTotal := sample[0].Value.Uint64(), sample[1].Value.Uint64()
	var peakLive, peakTotal uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peakLive = max(peakLive, sample[0].Value.Uint64())
			peakTotal = max(peakTotal, sample[1].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	growth := func(peak, base uint64) uint64 {
		if peak > base {
			return peak - base
		}
		return 0
	}
	return func() (uint64, uint64) {
		close(done)
		<-finished
		// The last GC may predate the flood's end: one more makes the
		// live figure include whatever is still held.
		runtime.GC()
		metrics.Read(sample)
		peakLive = max(peakLive, sample[0].Value.Uint64())
		return growth(peakLive, baseLive), growth(peakTotal, baseTotal)
	}
}

// keepAnswering calls echo on a well-behaved server until stop, and
// returns how many calls succeeded; any failure fails the test.
func keepAnswering(t *testing.T, s *Session) (stop func() int) {
	var n atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			_, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`), CallOptions{})
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("the well-behaved server failed meanwhile: %v", err)
				}
				return
			}
			n.Add(1)
		}
	}()
	return func() int {
		// An answer that fails at once leaves no "meanwhile": give the
		// other server the time of one call before stopping.
		testkit.WaitFor(t, "a call to the well-behaved server", func() bool { return n.Load() > 0 })
		cancel()
		wg.Wait()
		return int(n.Load())
	}
}

func connectTo(t *testing.T, url string, lim config.Limits) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Connect(ctx, Options{Server: config.Server{ID: "hostile", URL: url, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true, Limits: lim}})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

const heapBound = 64 << 20

// Issue #10: a hostile server's oversized answers cost a bounded heap, fail
// with an error naming the limit, leave the session usable, and never stop
// another server from answering.
func TestHostileOversizedAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("streams hundreds of megabytes")
	}
	cases := []struct {
		name      string
		tool      string
		write     func(w http.ResponseWriter, id json.RawMessage)
		wantLimit string
	}{
		{"300 MB JSON body, chunked", "flood", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			writeFlood(w, resultPrefix(id), 300<<20, resultSuffix)
		}, "maxMessageBytes"},
		{"300 MB JSON body, declared length", "flood", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			p := resultPrefix(id)
			w.Header().Set("Content-Length", fmt.Sprint(int64(len(p))+300<<20+int64(len(resultSuffix))))
			writeFlood(w, p, 300<<20, resultSuffix)
		}, "maxMessageBytes"},
		{"100 MB SSE event", "flood", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeFlood(w, "event: message\ndata: "+resultPrefix(id), 100<<20, resultSuffix+"\n\n")
		}, "maxMessageBytes"},
		{"100 MB SSE event without line breaks in field name", "flood", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			writeFlood(w, "", 100<<20, "\n\n")
		}, "maxMessageBytes"},
		{"a stream of 100,000 progress events", "flood", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			ev := []byte("event: message\ndata: " + `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + strings.Repeat("x", 900) + `"}}` + "\n\n")
			for range 200_000 {
				if _, err := w.Write(ev); err != nil {
					return
				}
			}
		}, "maxStreamBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostile(t, func(w http.ResponseWriter, method, tool string, id json.RawMessage) bool {
				if method != "tools/call" || tool != tc.tool {
					return false
				}
				tc.write(w, id)
				return true
			})
			good := connect(t, testkit.StartFixture(t, fixture.Options{NoRecord: true}), Options{})
			s := connectTo(t, h.URL(), config.Limits{})

			stopHeap := heapPeak(t)
			stopGood := keepAnswering(t, good)
			// Only a hang-catcher: under -race on a loaded machine the
			// 64 MiB of progress events take minutes to parse.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			_, err := s.CallTool(ctx, tc.tool, nil, CallOptions{})
			answered := stopGood()
			grew, total := stopHeap()

			var le *LimitError
			if !errors.As(err, &le) || le.Limit != tc.wantLimit {
				t.Fatalf("err = %v; want a *LimitError for %s", err, tc.wantLimit)
			}
			if !strings.Contains(err.Error(), "limits."+tc.wantLimit) || !strings.Contains(err.Error(), `"hostile"`) {
				t.Errorf("the error does not name the server and the limit: %v", err)
			}
			if grew > heapBound {
				t.Errorf("live heap grew by %d MB while the server flooded; bound %d MB", grew>>20, heapBound>>20)
			}
			t.Logf("live heap growth %.1f MB (total heap %.1f MB); the other server answered %d calls meanwhile", float64(grew)/(1<<20), float64(total)/(1<<20), answered)
			if answered == 0 {
				t.Error("the well-behaved server answered no call meanwhile")
			}
			// The session stays usable: only the one request failed.
			if _, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"after"}`), CallOptions{}); err != nil {
				t.Fatalf("the session is unusable after the limit: %v", err)
			}
		})
	}
}

// Issue #10: three concurrent 100 MB results to one server share its
// memory budget; the heap stays bounded and every call ends with a limit.
func TestHostileConcurrentResultsShareBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("streams hundreds of megabytes")
	}
	h := startHostile(t, func(w http.ResponseWriter, method, tool string, id json.RawMessage) bool {
		if method != "tools/call" || tool != "flood" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		writeFlood(w, resultPrefix(id), 100<<20, resultSuffix)
		return true
	})
	s := connectTo(t, h.URL(), config.Limits{})
	stopHeap := heapPeak(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CallTool(context.Background(), "flood", nil, CallOptions{})
		}()
	}
	wg.Wait()
	grew, total := stopHeap()
	for i, err := range errs {
		var le *LimitError
		if !errors.As(err, &le) {
			t.Errorf("call %d: err = %v; want a *LimitError", i, err)
		}
	}
	if grew > heapBound {
		t.Errorf("live heap grew by %d MB; bound %d MB", grew>>20, heapBound>>20)
	}
	t.Logf("live heap growth %.1f MB (total heap %.1f MB) for three concurrent 100 MB results", float64(grew)/(1<<20), float64(total)/(1<<20))
}

// Issue #10: a server that never stops paging is cut off by the page, item
// and byte limits, each named in the error; the handshake fails cleanly.
func TestHostileEndlessPagination(t *testing.T) {
	cases := []struct {
		name      string
		perPage   int
		descLen   int
		lim       config.Limits
		wantLimit string
	}{
		{"pages", 1, 10, config.Limits{}, "maxListPages"},
		{"items", 500, 10, config.Limits{}, "maxListItems"},
		{"bytes", 50, 20_000, config.Limits{}, "maxListBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pages atomic.Int64
			h := startHostile(t, func(w http.ResponseWriter, method, tool string, id json.RawMessage) bool {
				if method != "tools/list" {
					return false
				}
				n := pages.Add(1)
				var tools []string
				for i := range tc.perPage {
					tools = append(tools, fmt.Sprintf(`{"name":"t%d_%d","description":%q,"inputSchema":{"type":"object"}}`, n, i, strings.Repeat("d", tc.descLen)))
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[%s],"nextCursor":"c%d"}}`, id, strings.Join(tools, ","), n)
				return true
			})
			// The listing must end at the count it tests, not at the clock:
			// with the default listTimeout (60 s) a machine slow enough
			// (-race on a loaded one takes 10-15 s for the 17 MB of the
			// bytes case) saw the timeout instead.
			lim := tc.lim
			lim.ListTimeout = config.Duration(time.Hour)
			stopHeap := heapPeak(t)
			_, err := Connect(testkit.Context(t), Options{Server: config.Server{ID: "hostile", URL: h.URL(), Auth: config.Auth{Kind: config.AuthNone}, Enabled: true, Limits: lim}})
			grew, total := stopHeap()
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != tc.wantLimit {
				t.Fatalf("err = %v; want a *LimitError for %s", err, tc.wantLimit)
			}
			if grew > heapBound {
				t.Errorf("live heap grew by %d MB; bound %d MB", grew>>20, heapBound>>20)
			}
			t.Logf("%d pages listed before the limit; live heap growth %.1f MB (total heap %.1f MB)", pages.Load(), float64(grew)/(1<<20), float64(total)/(1<<20))
		})
	}
}

// Limits are per server: a server trusted with more gets it.
func TestRaisedLimitAdmitsLargeResult(t *testing.T) {
	h := startHostile(t, func(w http.ResponseWriter, method, tool string, id json.RawMessage) bool {
		if method != "tools/call" || tool != "flood" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		writeFlood(w, resultPrefix(id), 2<<20, resultSuffix)
		return true
	})
	small := connectTo(t, h.URL(), config.Limits{MaxMessageBytes: 1 << 20})
	if _, err := small.CallTool(context.Background(), "flood", nil, CallOptions{}); !errors.As(err, new(*LimitError)) {
		t.Fatalf("with a 1 MiB limit: err = %v; want a *LimitError", err)
	}
	large := connectTo(t, h.URL(), config.Limits{MaxMessageBytes: 4 << 20})
	res, err := large.CallTool(context.Background(), "flood", nil, CallOptions{})
	if err != nil {
		t.Fatalf("with a 4 MiB limit: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || len(tc.Text) != 2<<20 {
		t.Fatalf("result not whole")
	}
}

// callResponse is a typical tools/call answer stream of a go-sdk server.
const callResponse = "event: message\nid: 1_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"the quick brown fox jumps over the lazy dog\"}]}}\n\n"

// BenchmarkSSEBodyCall reads one call's answer stream through the framer
// as go-sdk does (a bufio.Reader of 4 KiB over the body).
func BenchmarkSSEBodyCall(b *testing.B) {
	l := newLimiter("b", config.Limits{}, nil)
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`))
	var src strings.Reader
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(callResponse)
		body := &sseBody{l: l, rc: io.NopCloser(&src), req: req, call: true}
		r := bufio.NewReaderSize(body, 4096)
		for {
			if _, err := r.ReadSlice('\n'); err != nil {
				break
			}
		}
		body.Close()
	}
}
