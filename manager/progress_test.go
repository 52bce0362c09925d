package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/session"
)

// Issue #11 item 2: no progress notification is lost at the end of a call.
// 100 calls with 4 notifications each, the tool answering right after its
// last one: all 400 reach the callers before their calls return.
func TestNoProgressLost(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{NoRecord: true})
	e := newEnv(t, srvCfg("fx", f.URL(), true))
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("fx") == StateReady })
	var total atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range 100 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var n atomic.Int64
			_, err := e.m.CallTool(testkit.Context(t), "fx", "slow", json.RawMessage(`{"ms":20,"steps":4}`),
				session.CallOptions{OperationID: fmt.Sprintf("p-%d", i), Progress: func(session.Progress) { n.Add(1) }})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			if got := n.Load(); got != 4 {
				t.Errorf("call %d: %d of 4 progress notifications before it returned", i, got)
			}
			total.Add(n.Load())
		}()
	}
	wg.Wait()
	if total.Load() != 400 {
		t.Fatalf("%d of 400 progress notifications seen", total.Load())
	}
}

// Issue #11 item 2: progress restarts the tool time. A tool that reports
// progress every 100 ms for 3× its timeout completes; a silent one of the
// same length times out; the hard limit still ends a call whose progress
// never stops.
func TestProgressExtendsTimeout(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{NoRecord: true})
	c := srvCfg("fx", f.URL(), true)
	c.ToolTimeout = config.Duration(300 * time.Millisecond)
	e := newEnv(t, c)
	e.start()
	testkit.WaitFor(t, "ready", func() bool { return e.state("fx") == StateReady })
	// 900 ms, progress every 100 ms (the fixture's slow tool reports
	// progress only when asked, i.e. when a callback is given).
	if _, err := e.m.CallTool(testkit.Context(t), "fx", "slow", json.RawMessage(`{"ms":900}`), session.CallOptions{OperationID: "talkative", Progress: func(session.Progress) {}}); err != nil {
		t.Fatalf("a tool reporting progress for 3× its timeout failed: %v", err)
	}
	// Without a callback nobody listens: no progress is asked for (no
	// progress token), so nothing extends the time and the same tool
	// times out (issue #21, decided).
	if _, err := e.m.CallTool(testkit.Context(t), "fx", "slow", json.RawMessage(`{"ms":900}`), session.CallOptions{OperationID: "quiet-caller"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call nobody listens to was extended: %v", err)
	}
	// The hard limit: 10 × 300 ms = 3 s; a 5 s tool with progress ends.
	start := time.Now()
	_, err := e.m.CallTool(testkit.Context(t), "fx", "slow", json.RawMessage(`{"ms":5000}`), session.CallOptions{OperationID: "endless", Progress: func(session.Progress) {}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past the hard limit: %v (after %s)", err, time.Since(start))
	}
}

// With NoProgressExtension a tool longer than its timeout times out even
// while it reports progress.
func TestProgressExtensionOff(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{NoRecord: true})
	c := srvCfg("fx", f.URL(), true)
	c.ToolTimeout = config.Duration(300 * time.Millisecond)
	st := newStore(t, t.TempDir())
	if err := st.AddServer(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	m := New(Options{Store: st, Logger: testkit.Logger(t), HandshakeTimeout: 10 * time.Second, NoProgressExtension: true})
	t.Cleanup(func() { m.Close() })
	_, err := m.CallTool(testkit.Context(t), "fx", "slow", json.RawMessage(`{"ms":900}`), session.CallOptions{OperationID: "x", Progress: func(session.Progress) {}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want a timeout", err)
	}
}
