package frontend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/clocktest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// countingEngine counts the front end's re-syncs: each lists the tools
// without connecting.
type countingEngine struct {
	localapi.Engine
	syncs atomic.Int64
}

func (c *countingEngine) Tools(ctx context.Context, req localapi.ToolsRequest) (*localapi.ToolList, error) {
	if !req.Connect {
		c.syncs.Add(1)
	}
	return c.Engine.Tools(ctx, req)
}

// lineCounter is a slog handler that counts records by message and
// server.
type lineCounter struct {
	mu    sync.Mutex
	lines map[string]int // "message|server"
}

func (h *lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *lineCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lineCounter) WithGroup(string) slog.Handler            { return h }
func (h *lineCounter) Handle(_ context.Context, r slog.Record) error {
	server := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "server" {
			server = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines[r.Message+"|"+server]++
	return nil
}

func (h *lineCounter) count(msg, server string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lines[msg+"|"+server]
}

const notListed = "frontend: a server's tools could not be listed"

// Issue #20 item 1 (the reconnect storm): a server whose every attempt
// fails with new words (a JSON-RPC error with a counter, as the red
// team's) and an idle host on the front end. Before the change each
// failure was news: the registry published it, the front end re-synced,
// its listing connected again and logged again, ~21 attempts a second.
// Now, on a manual clock: with the clock standing still nothing more is
// sent; each step of the schedule sends one attempt, which re-syncs
// nothing and logs nothing; and when the server comes back, the
// schedule's attempt brings its tools to the idle host. The waits between
// steps only give a storm the chance to show: a slow machine makes fewer
// requests, never more.
func TestIdleFrontEndFollowsTheBackoff(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // only a hang
	defer cancel()
	var down atomic.Bool
	var refused atomic.Int64
	down.Store(true)
	f, err := fixture.Start(fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if !down.Load() {
			return true
		}
		n := refused.Add(1)
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &req) != nil || len(req.ID) == 0 {
			req.ID = json.RawMessage(`1`)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"busy, try later (#%d)"}}`, req.ID, n)
		return false
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })

	clock := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	eng, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: "down", URL: f.URL(), By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	ce := &countingEngine{Engine: eng}
	logs := &lineCounter{lines: map[string]int{}}
	fe, err := frontend.New(ctx, frontend.Options{Engine: ce, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- fe.Run(rctx, st) }()
	t.Cleanup(func() { stop(); <-done })
	changed := make(chan struct{}, 1)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "idle-host"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// nextAt is the server's retryAt, zero while none is ahead (the
	// attempt that was due has not ended yet).
	nextAt := func() time.Time {
		t.Helper()
		v, err := eng.Server(ctx, "down")
		if err != nil {
			t.Fatal(err)
		}
		if v.RetryAt == nil {
			return time.Time{}
		}
		return *v.RetryAt
	}
	retryAt := func() time.Time {
		t.Helper()
		at := nextAt()
		if at.IsZero() {
			t.Fatal("the server has no retryAt")
		}
		return at
	}
	// The host settles in (the first attempt failed, and the front end
	// said so once); with the clock standing still, nothing more.
	testkit.WaitFor(t, "a refused request and the front end's line about it", func() bool {
		return refused.Load() > 0 && logs.count(notListed, "down") > 0
	})
	time.Sleep(time.Second) // room for a storm to show
	reqs, syncs, lines := refused.Load(), ce.syncs.Load(), logs.count(notListed, "down")
	if lines != 1 {
		t.Fatalf("at the start: %d log lines for the server; want one", lines)
	}
	time.Sleep(time.Second)
	if n := refused.Load(); n != reqs {
		t.Fatalf("%d requests while the clock stood still (a reconnect storm); want none", n-reqs)
	}

	// Five steps of the schedule (1, 2, 4, 8, 16 s: 31 s of clock).
	const steps = 5
	for i := range steps {
		at := retryAt()
		clock.Advance(at.Sub(clock.Now()))
		want := reqs + int64(i) + 1
		testkit.WaitFor(t, fmt.Sprintf("the scheduled attempt of step %d to end", i+1), func() bool {
			return refused.Load() >= want && nextAt().After(at)
		})
		time.Sleep(300 * time.Millisecond) // room for a storm to show
	}
	if n := refused.Load() - reqs; n != steps {
		t.Fatalf("%d requests in %d steps of the schedule; want one each", n, steps)
	}
	if n := ce.syncs.Load() - syncs; n != 0 {
		t.Fatalf("the idle front end re-synced %d times on failed attempts; want never", n)
	}
	if n := logs.count(notListed, "down"); n > lines+steps {
		t.Fatalf("%d log lines for the server in %d steps; want at most one per step", n, steps)
	}

	// The server comes back: the schedule's attempt connects, and the
	// idle host is told about the tools.
	down.Store(false)
	clock.Advance(retryAt().Sub(clock.Now()))
	for {
		tl, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(tl.Tools, func(tool *mcp.Tool) bool { return strings.HasPrefix(tool.Name, "down__") }) {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the tools never reached the idle host after the server came back: %v", ctx.Err())
		}
	}
}
