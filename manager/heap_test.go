package manager

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/store"
)

// oneToolServer is an MCP server with one tool, on loopback, in
// stateful streamable HTTP: what a hibernated server is measured with.
func oneToolServer(tb testing.TB) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "one", Version: "v0"}, nil)
	s.AddTool(&mcp.Tool{Name: "lookup", Description: "Looks a word up.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"word": map[string]any{"type": "string", "description": "the word"}}, "required": []any{"word"}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	tb.Cleanup(ts.Close)
	return ts.URL
}

// heapNow is the live heap after two collections.
func heapNow() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// hibernateAll connects every server of m, then hibernates them all at
// once (as the idle check would an hour later) and waits until they are
// idle.
func hibernateAll(tb testing.TB, m *Manager, ids []string) {
	ctx := context.Background()
	for _, id := range ids {
		if err := m.Connect(ctx, id); err != nil {
			tb.Fatal(err)
		}
	}
	m.hibernateIdle(time.Now().Add(time.Hour))
	for _, st := range m.Status() {
		if st.State != StateIdle {
			tb.Fatalf("%s: %s after hibernation, want idle", st.ID, st.State)
		}
	}
}

// heapManager opens a manager on n servers of url (idle timeout 1 s;
// catalogs and logs on the store's shelf), as the daemon does.
func heapManager(tb testing.TB, n int, url string) (*Manager, *store.DB, []string, *http.Client) {
	st, err := store.Open(context.Background(), tb.TempDir(), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	idle := config.Duration(time.Second)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%04d", i)
		s := srvCfg(ids[i], fmt.Sprintf("%s/mcp?i=%d", url, i), false)
		s.IdleTimeout = &idle
		if err := st.AddServer(context.Background(), s); err != nil {
			tb.Fatal(err)
		}
	}
	hc := benchClient()
	m := New(Options{Store: st, HTTPClient: hc, NoStartupConnect: true, Catalogs: KVShelf{KV: st}, Logs: KVShelf{KV: st},
		IdleCheck: time.Hour, ClientName: "heap", ClientVersion: "v0"})
	return m, st, ids, hc
}

// BenchmarkLazyServerHeap: the heap a manager holds per lazy (never
// connected) server, 2,000 of them (issue #21: ~1,000 B, goal ≤ 600 B
// for the whole engine).
func BenchmarkLazyServerHeap(b *testing.B) {
	const n = 2000
	for b.Loop() {
		m, st, _, _ := heapManager(b, n, "http://127.0.0.1:1")
		h0 := heapNow()
		if err := m.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		h1 := heapNow()
		if got := len(m.Status()); got != n {
			b.Fatalf("%d servers, want %d", got, n)
		}
		b.ReportMetric(float64(h1-h0)/n, "B/server")
		m.Close()
		st.Close()
	}
}

// BenchmarkHibernatedServerHeap: the heap a manager holds per hibernated
// server with a one-tool catalog (kept in the store), 200 of them, and
// the goroutines each leaves (issue #21: ~4.3 KB, goal ≤ 2 KB and 0).
// B/server counts the lazy part too; beyond-lazy-B/server is what
// connecting and hibernating added.
func BenchmarkHibernatedServerHeap(b *testing.B) {
	const n = 200
	url := oneToolServer(b)
	for b.Loop() {
		m, st, ids, hc := heapManager(b, n, url)
		h0 := heapNow()
		if err := m.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		h1, g1 := heapNow(), runtime.NumGoroutine()
		hibernateAll(b, m, ids)
		hc.CloseIdleConnections()
		g2 := settleGoroutines(g1)
		h2 := heapNow()
		b.ReportMetric(float64(h2-h0)/n, "B/server")
		b.ReportMetric(float64(h2-h1)/n, "beyond-lazy-B/server")
		b.ReportMetric(float64(g2-g1)/n, "goroutines/server")
		m.Close()
		st.Close()
	}
}

// settleGoroutines waits, yielding, until at most want goroutines run
// (the connections' and sessions' goroutines end once they see their
// close), and returns the count then; it gives up after a bounded number
// of yields, leaving the caller to judge the count.
func settleGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 1_000_000 && n > want; i++ {
		runtime.Gosched()
		n = runtime.NumGoroutine()
	}
	return n
}

// Issue #21: a hibernated server leaves no goroutine behind: after N
// servers connect and hibernate, the goroutine count is back where the N
// lazy servers had it (the HTTP connections closed).
func TestHibernationLeavesNoGoroutines(t *testing.T) {
	const n = 20
	url := oneToolServer(t)
	m, st, ids, hc := heapManager(t, n, url)
	t.Cleanup(func() { m.Close(); st.Close() })
	if err := m.Start(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	hibernateAll(t, m, ids)
	hc.CloseIdleConnections()
	after := settleGoroutines(before)
	if after-before >= n/2 {
		t.Fatalf("%d goroutines before %d servers connected and hibernated, %d after: about one per server is left", before, n, after)
	}
	for _, id := range ids {
		e := m.entry(id)
		e.mu.Lock()
		sess, timers, cat := e.sess, e.timers, e.catalog
		e.mu.Unlock()
		if sess != nil || timers != nil || cat != nil {
			t.Fatalf("%s after hibernation: session %v, timers %v, catalog in memory %v", id, sess != nil, timers, cat != nil)
		}
		if x := e.peek(); x != nil && (x.pins.raw != nil || x.pins.view != nil || x.pins.formsOf != nil) {
			t.Fatalf("%s after hibernation: the pins still hold its catalog", id)
		}
	}
}
