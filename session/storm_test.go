package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
)

// stormServer answers the standalone stream with n tools/list_changed
// notifications within one second, and tools/list with one tool named for
// how many notifications had been sent when the listing was answered, so
// the final catalog is "v<n>". listDelay makes every listing slow.
type stormServer struct {
	*hostile
	sent, listings, inFlight, maxInFlight atomic.Int64
	streamed                              chan struct{}
	burst                                 time.Duration // set before streamed closes
}

func startStorm(t *testing.T, n int, listDelay time.Duration) *stormServer {
	t.Helper()
	st := &stormServer{streamed: make(chan struct{})}
	stop := make(chan struct{})
	var armed atomic.Bool
	st.hostile = startHostile(t, func(w http.ResponseWriter, method, tool string, id json.RawMessage) bool {
		switch method {
		case "GET":
			if !armed.CompareAndSwap(false, true) {
				return false // a re-opened stream gets the real one
			}
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			rc := http.NewResponseController(w)
			rc.Flush()
			ev := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
			// n events spread evenly over one second, in 100 steps
			// paced from the start (not by sleeps, which a loaded
			// machine stretches), so the burst really lasts a second.
			start := time.Now()
			for step := range 100 {
				time.Sleep(time.Until(start.Add(time.Duration(step) * 10 * time.Millisecond)))
				k := n*(step+1)/100 - n*step/100
				if _, err := w.Write(bytes.Repeat(ev, k)); err != nil {
					return true
				}
				rc.Flush()
				st.sent.Add(int64(k))
			}
			st.burst = time.Since(start)
			close(st.streamed)
			<-stop // hold the stream open
			return true
		case "tools/list":
			st.listings.Add(1)
			cur := st.inFlight.Add(1)
			for {
				m := st.maxInFlight.Load()
				if cur <= m || st.maxInFlight.CompareAndSwap(m, cur) {
					break
				}
			}
			time.Sleep(listDelay)
			st.inFlight.Add(-1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"v%d","inputSchema":{"type":"object"}}]}}`, id, st.sent.Load())
			return true
		}
		return false
	})
	t.Cleanup(func() { close(stop) }) // runs before the server's Close
	return st
}

func (st *stormServer) toolName(s *Session) string {
	c := s.Catalog()
	if len(c.Tools) != 1 {
		return fmt.Sprintf("%d tools", len(c.Tools))
	}
	return c.Tools[0].Name
}

// Issue #10 / R4.4: a burst of 1,000 list_changed notifications within a
// second costs at most 10 listings, and the catalog ends on the final one.
func TestListChangedStormCoalesces(t *testing.T) {
	st := startStorm(t, 1000, 0)
	began := time.Now()
	s := connectTo(t, st.URL(), config.Limits{})
	before := st.listings.Load() // the handshake's listing
	select {
	case <-st.streamed:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the storm was not delivered: %d sent", st.sent.Load())
	}
	testkit.WaitFor(t, "the catalog to end on the final v1000", func() bool { return st.toolName(s) == "v1000" })
	time.Sleep(2 * MinRefreshInterval) // no listing may still be owed
	n := st.listings.Load() - before
	t.Logf("1,000 notifications in %s: %d listings", st.burst.Round(time.Millisecond), n)
	// At most one listing per MinRefreshInterval while the storm lasted
	// (plus the last one owed): about 5 for the one-second burst; a loaded
	// machine stretches the burst and its delivery, so the bound follows
	// the time it really took, and stays far below one per notification.
	limit := max(10, int64(time.Since(began)/MinRefreshInterval)+2)
	if n > limit {
		t.Fatalf("%d listings for one storm of %s; want at most %d", n, time.Since(began).Round(time.Millisecond), limit)
	}
	if n == 0 {
		t.Fatal("no listing after the storm")
	}
}

// Issue #10: against a slow server, a storm never stacks listings or
// connections: one listing in flight at a time, and the open connections
// stay at a small constant.
func TestListChangedStormSlowServerBoundsConnections(t *testing.T) {
	st := startStorm(t, 1000, 400*time.Millisecond)
	s := connectTo(t, st.URL(), config.Limits{})
	maxConns := 0
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		maxConns = max(maxConns, st.OpenConnections())
		time.Sleep(5 * time.Millisecond)
	}
	testkit.WaitFor(t, "the catalog to end on v1000", func() bool { return st.toolName(s) == "v1000" })
	t.Logf("slow server: %d listings, at most %d in flight, at most %d open connections", st.listings.Load(), st.maxInFlight.Load(), maxConns)
	if st.maxInFlight.Load() > 1 {
		t.Errorf("%d listings in flight at once; want 1", st.maxInFlight.Load())
	}
	// The standalone stream, one listing, and the pool's spare.
	if maxConns > 4 {
		t.Errorf("%d connections open at once; want at most 4", maxConns)
	}
}
