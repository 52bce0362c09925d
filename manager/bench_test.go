package manager

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// bareSession is the baseline: go-sdk's client alone, on the same server.
func bareSession(b *testing.B, url string, hc *http.Client) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "bare", Version: "v0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: session.ProtocolVersion})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func benchClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 128
	return &http.Client{Transport: tr}
}

// BenchmarkToolCallVsBare calls the echo tool through the manager and
// through a bare go-sdk ClientSession on the same loopback server in the
// same run, interleaved so both see the same machine, and reports:
// median latency ratio at concurrency 1 (goal ≤ 1.10) and throughput
// ratio at concurrency 64 (goal ≥ 0.90).
func BenchmarkToolCallVsBare(b *testing.B) {
	f, err := fixture.Start(fixture.Options{NoRecord: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	hc := benchClient()
	bare := bareSession(b, f.URL(), hc)
	st, err := store.Open(context.Background(), b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	st.AddServer(context.Background(), config.Server{ID: "a", URL: f.URL(), Auth: config.Auth{Kind: config.AuthNone}, Enabled: true})
	m := New(Options{Store: st, HTTPClient: hc})
	b.Cleanup(func() { m.Close() })
	if err := m.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Connect(ctx, "a"); err != nil {
		b.Fatal(err)
	}
	callBare := func() error {
		_, err := bare.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		return err
	}
	callMgr := func() error {
		_, err := m.CallTool(ctx, "a", "echo", argsEcho, session.CallOptions{})
		return err
	}
	for range 50 { // warm up both paths
		callBare()
		callMgr()
	}

	b.Run("latency-c1", func(b *testing.B) {
		var tb, tm []time.Duration
		timed := func(call func() error) time.Duration {
			t0 := time.Now()
			if err := call(); err != nil {
				b.Fatal(err)
			}
			return time.Since(t0)
		}
		for i := 0; b.Loop(); i++ {
			if i%2 == 0 {
				tb = append(tb, timed(callBare))
				tm = append(tm, timed(callMgr))
			} else {
				tm = append(tm, timed(callMgr))
				tb = append(tb, timed(callBare))
			}
		}
		mb, mm := median(tb), median(tm)
		b.ReportMetric(float64(mb.Microseconds()), "bare-median-µs")
		b.ReportMetric(float64(mm.Microseconds()), "manager-median-µs")
		b.ReportMetric(float64(mm)/float64(mb), "median-ratio")
		b.Logf("median latency: bare %v, manager %v, ratio %.3f (goal ≤ 1.10)", mb, mm, float64(mm)/float64(mb))
	})

	b.Run("throughput-c64", func(b *testing.B) {
		const conc = 64
		window := 500 * time.Millisecond
		var rb, rm float64
		for i := 0; b.Loop(); i++ {
			// Alternate the order so neither side always runs second.
			if i%2 == 0 {
				rb += throughput(conc, window, callBare)
				rm += throughput(conc, window, callMgr)
			} else {
				rm += throughput(conc, window, callMgr)
				rb += throughput(conc, window, callBare)
			}
		}
		b.ReportMetric(rb/float64(b.N), "bare-calls/s")
		b.ReportMetric(rm/float64(b.N), "manager-calls/s")
		b.ReportMetric(rm/rb, "throughput-ratio")
		b.Logf("throughput at concurrency %d: bare %.0f/s, manager %.0f/s, ratio %.3f (goal ≥ 0.90)", conc, rb/float64(b.N), rm/float64(b.N), rm/rb)
	})
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func throughput(conc int, window time.Duration, call func() error) float64 {
	var n atomic.Int64
	stop := time.Now().Add(window)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				if call() == nil {
					n.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / window.Seconds()
}

// BenchmarkIdleSessionHeap measures the heap held per idle ready session,
// with 100 sessions, against bare go-sdk sessions (goal ≤ 64 KiB).
func BenchmarkIdleSessionHeap(b *testing.B) {
	const n = 100
	f, err := fixture.Start(fixture.Options{NoRecord: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for b.Loop() {
		st, err := store.Open(context.Background(), b.TempDir(), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			st.AddServer(context.Background(), config.Server{ID: fmt.Sprintf("s%d", i), URL: f.URL(), Auth: config.Auth{Kind: config.AuthNone}, Enabled: true})
		}
		m := New(Options{Store: st, HTTPClient: benchClient()})
		m.Start(context.Background())
		h0 := heap()
		for i := range n {
			if err := m.Connect(context.Background(), fmt.Sprintf("s%d", i)); err != nil {
				b.Fatal(err)
			}
		}
		h1 := heap()
		m.Close()
		st.Close()

		hc := benchClient()
		h2 := heap()
		var bares []*mcp.ClientSession
		for range n {
			bares = append(bares, bareSession(b, f.URL(), hc))
		}
		h3 := heap()
		for _, cs := range bares {
			cs.Close()
		}
		per := float64(h1-h0) / n
		bper := float64(h3-h2) / n
		b.ReportMetric(per/1024, "KiB/session")
		b.ReportMetric(bper/1024, "bare-KiB/session")
		b.Logf("heap per idle ready session: manager %.1f KiB, bare go-sdk %.1f KiB (goal ≤ 64 KiB)", per/1024, bper/1024)
	}
}

// BenchmarkStartupLazy measures Start with 0, 200 and 2,000 lazy servers:
// no network, time linear in the count.
func BenchmarkStartupLazy(b *testing.B) {
	for _, count := range []int{0, 200, 2000} {
		b.Run(fmt.Sprintf("servers=%d", count), func(b *testing.B) {
			st, err := store.Open(context.Background(), b.TempDir(), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			for i := range count {
				// Unroutable on purpose: any network attempt would show up
				// as an error state below.
				st.AddServer(context.Background(), config.Server{ID: fmt.Sprintf("s%d", i), URL: "https://lazy.invalid/mcp", Auth: config.Auth{Kind: config.AuthNone}, Enabled: true})
			}
			for b.Loop() {
				m := New(Options{Store: st})
				if err := m.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				for _, s := range m.Status() {
					if s.State != StateDisconnected {
						b.Fatalf("%s: %s at startup; lazy servers must not connect", s.ID, s.State)
					}
				}
				m.Close()
			}
			if count > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(count), "ns/server")
			}
		})
	}
}
