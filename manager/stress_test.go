package manager

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// TestStressLifecycleInvariants runs random connect / disconnect /
// reconnect / config-change / list / call operations, several at a time,
// over several servers, and checks after every step (SPEC §2):
//   - at most one ready session per server, and the server side sees
//     exactly the sessions the manager owns (no leaked candidates, R2.8);
//   - no ready session whose config differs from the stored one (R2.4, R2.5);
//   - nothing is done through a stale connection id (R2.9);
//   - no goroutine is left behind at the end.
//
// REMOTEMCP_STRESS_OPS overrides the number of operations (default 10,000;
// 1,000 with -short).
func TestStressLifecycleInvariants(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ops := 10000
	if testing.Short() {
		ops = 1000
	}
	if v, err := strconv.Atoi(os.Getenv("REMOTEMCP_STRESS_OPS")); err == nil && v > 0 {
		ops = v
	}
	const nServers = 4
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d operations", seed, ops)
	rng := rand.New(rand.NewPCG(seed, 7))

	servers := make([]*fixture.Server, nServers)
	ids := make([]string, nServers)
	st, err := store.Open(context.Background(), t.TempDir(), store.Options{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for i := range servers {
		f, err := fixture.Start(fixture.Options{})
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = f
		ids[i] = fmt.Sprintf("s%d", i)
		if err := st.AddServer(context.Background(), srvCfg(ids[i], f.URL(), i%2 == 0)); err != nil {
			t.Fatal(err)
		}
	}
	m := New(Options{Store: st, Logger: testkit.Logger(t), BackoffBase: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	defer func() {
		m.Close()
		st.Close()
		for _, f := range servers {
			f.Close()
		}
	}()
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}

	var seenMu sync.Mutex
	seen := map[string]map[string]bool{} // server → every connection id ever current
	remember := func(id string) {
		if c, ok := m.CurrentConnection(id); ok {
			seenMu.Lock()
			if seen[id] == nil {
				seen[id] = map[string]bool{}
			}
			seen[id][c] = true
			seenMu.Unlock()
		}
	}
	randomConn := func(r *rand.Rand, id string) string {
		seenMu.Lock()
		defer seenMu.Unlock()
		for c := range seen[id] {
			if r.IntN(3) == 0 {
				return c
			}
		}
		return "c-never-existed"
	}

	ctx := context.Background()
	op := func(r *rand.Rand) {
		i := r.IntN(nServers)
		id := ids[i]
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // only a hang
		defer cancel()
		switch r.IntN(9) {
		case 0:
			m.Connect(cctx, id)
		case 1:
			m.Disconnect(cctx, id)
		case 2:
			m.Reconnect(cctx, id)
		case 3, 4:
			s, err := st.GetServer(cctx, id)
			if err != nil {
				t.Errorf("get %s: %v", id, err)
				return
			}
			switch r.IntN(4) {
			case 0: // URL change: same server, another resource
				if s.URL == servers[i].URL() {
					s.URL = servers[i].URL() + "?v=2"
				} else {
					s.URL = servers[i].URL()
				}
			case 1:
				s.Enabled = !s.Enabled
			case 2:
				s.ConnectOnStartup = !s.ConnectOnStartup
			case 3:
				s.Name = fmt.Sprintf("name-%d", r.IntN(1000))
			}
			if err := st.UpdateServer(cctx, s); err != nil {
				t.Errorf("update %s: %v", id, err)
			}
		case 5, 6:
			m.Catalog(cctx, id)
		case 7:
			if _, err := m.CallTool(cctx, id, "echo", argsEcho, session.CallOptions{}); err != nil {
				expectBenign(t, err)
			}
		case 8:
			if _, err := m.CallToolOn(cctx, id, randomConn(r, id), "echo", argsEcho, session.CallOptions{}); err != nil {
				expectBenign(t, err)
			}
		}
		remember(id)
	}

	done := 0
	for step := 0; done < ops && !t.Failed(); step++ {
		batch := 1 + rng.IntN(6)
		var wg sync.WaitGroup
		for range batch {
			r := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
			wg.Add(1)
			go func() { defer wg.Done(); op(r) }()
		}
		wg.Wait()
		done += batch
		checkInvariants(t, m, st, servers, ids, seen, &seenMu)
	}
}

// expectBenign fails on call errors that are not explained by the random
// lifecycle operations running concurrently.
func expectBenign(t *testing.T, err error) {
	for _, ok := range []error{ErrDisconnected, ErrDisabled, ErrSuperseded, ErrConfigDrift, ErrStaleConnection, ErrClosed, session.ErrClosed, context.Canceled} {
		if errors.Is(err, ok) {
			return
		}
	}
	if session.IsConnectionLost(err) {
		return // closed under the call by a concurrent disconnect
	}
	t.Errorf("unexpected call error: %v", err)
}

func checkInvariants(t *testing.T, m *Manager, st *store.DB, servers []*fixture.Server, ids []string, seen map[string]map[string]bool, seenMu *sync.Mutex) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only a hang
	defer cancel()
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("sync: %v", err)
	}
	m.settle(t)
	for i, id := range ids {
		stored, err := st.GetServer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		e := m.entry(id)
		e.mu.Lock()
		sess, state := e.sess, e.state
		e.mu.Unlock()
		if (sess != nil) != (state == StateReady) {
			t.Fatalf("%s: state %s with session %v", id, state, sess != nil)
		}
		want := 0
		if sess != nil {
			want = 1
			if !stored.Enabled || !config.ConnectionEqual(sess.Server(), stored) {
				t.Fatalf("%s: ready session config %+v differs from stored %+v", id, sess.Server(), stored)
			}
		}
		// The server side must see exactly the manager's sessions: every
		// failed, superseded or disconnected candidate was closed.
		testkit.WaitFor(t, fmt.Sprintf("%s's server to have the manager's %d live sessions", id, want), func() bool { return servers[i].Sessions() == want })
		cur, _ := m.CurrentConnection(id)
		seenMu.Lock()
		var stale []string
		for c := range seen[id] {
			if c != cur && len(stale) < 2 {
				stale = append(stale, c)
			}
		}
		seenMu.Unlock()
		before := servers[i].TotalExecutions()
		for _, c := range stale {
			if _, err := m.CallToolOn(ctx, id, c, "echo", argsEcho, session.CallOptions{}); !errors.Is(err, ErrStaleConnection) {
				t.Fatalf("%s: call through stale connection %s: %v", id, c, err)
			}
			if err := m.CloseConnection(id, c); !errors.Is(err, ErrStaleConnection) {
				t.Fatalf("%s: close through stale connection %s: %v", id, c, err)
			}
		}
		if after := servers[i].TotalExecutions(); after != before {
			t.Fatalf("%s: a stale connection id executed a tool", id)
		}
		if now, _ := m.CurrentConnection(id); now != cur {
			t.Fatalf("%s: a stale close changed the current connection", id)
		}
	}
}
