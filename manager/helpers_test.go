package manager

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/store"
)

// env is a real SQLite store in a temp dir plus real MCP servers on
// loopback.
type env struct {
	t     *testing.T
	store *store.DB
	m     *Manager
}

func newStore(t *testing.T, dir string) *store.DB {
	t.Helper()
	st, err := store.Open(context.Background(), dir, store.Options{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newEnv(t *testing.T, servers ...config.Server) *env {
	t.Helper()
	st := newStore(t, t.TempDir())
	for _, s := range servers {
		if err := st.AddServer(context.Background(), s); err != nil {
			t.Fatalf("add server %s: %v", s.ID, err)
		}
	}
	m := New(Options{Store: st, Logger: testkit.Logger(t), BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond, HandshakeTimeout: 10 * time.Second})
	t.Cleanup(func() { m.Close() })
	return &env{t: t, store: st, m: m}
}

func (e *env) start() {
	e.t.Helper()
	if err := e.m.Start(context.Background()); err != nil {
		e.t.Fatalf("start manager: %v", err)
	}
}

func srvCfg(id, url string, startup bool) config.Server {
	return config.Server{ID: id, Name: id, URL: url, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true, ConnectOnStartup: startup}
}

func (e *env) state(id string) State {
	st, err := e.m.ServerStatusOf(id)
	if err != nil {
		return ""
	}
	return st.State
}

func (e *env) update(id string, f func(*config.Server)) {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.store.GetServer(ctx, id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	f(&s)
	if err := e.store.UpdateServer(ctx, s); err != nil {
		e.t.Fatalf("update %s: %v", id, err)
	}
}

// settle waits until no connect attempt or reconnect loop is in flight.
func (m *Manager) settle(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, "manager to settle", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, e := range m.entries {
			e.mu.Lock()
			busy := e.attempt != nil || e.reconnecting
			e.mu.Unlock()
			if busy {
				return false
			}
		}
		return true
	})
}

var argsEcho = json.RawMessage(`{"text":"hi"}`)
