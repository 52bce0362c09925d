package manager

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/session"
)

// Issue #12: a session closes for idleness only when no call is in
// flight, and a call that reaches it after that is sent, once, on a fresh
// session: hibernation never cuts a call nor loses one.
func TestHibernationNeverCutsACall(t *testing.T) {
	f, err := fixture.Start(fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	en := e.m.entry("a")
	en.mu.Lock()
	sess := en.sess
	en.mu.Unlock()

	// A call in flight keeps the session.
	ctx, cancel := context.WithCancel(testkit.Context(t))
	done := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(ctx, "slow", []byte(`{"ms":10000}`), session.CallOptions{})
		done <- err
	}()
	testkit.WaitFor(t, "the slow call in flight", func() bool { return sess.Busy() })
	if sess.CloseIfIdle() {
		t.Fatal("CloseIfIdle with a call in flight")
	}
	cancel()
	<-done

	// Idle: closing; a call that comes now is not sent on it...
	if !sess.CloseIfIdle() {
		t.Fatal("CloseIfIdle of an idle session: false")
	}
	_, err = sess.CallTool(testkit.Context(t), "echo", argsEcho, session.CallOptions{})
	if !errors.Is(err, session.ErrCancelledBeforeDispatch) || !errors.Is(err, session.ErrClosed) {
		t.Fatalf("a call on a closing session: %v, want not dispatched", err)
	}
	// ...and through the manager it goes out once on a fresh session.
	before := f.Executions("echo")
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatalf("a call while the session closes: %v", err)
	}
	if n := f.Executions("echo") - before; n != 1 {
		t.Fatalf("echo ran %d times, want 1", n)
	}
}

// flakyShelf is a catalog cache whose saves fail while fail is set; saves
// counts the saves tried.
type flakyShelf struct {
	KVShelf
	fail  atomic.Bool
	saves atomic.Int32
}

func (s *flakyShelf) SaveCatalog(ctx context.Context, id string, b []byte) error {
	defer s.saves.Add(1)
	if s.fail.Load() {
		return errors.New("the store is busy")
	}
	return s.KVShelf.SaveCatalog(ctx, id, b)
}

// Issue #21: a hibernated server's catalog leaves memory once the store
// has it, even when the save that followed the connect had not happened
// when the idle check came (on a loaded machine it had not yet run): the
// idle check stores it; and when the store fails then, the catalog stays
// in memory until a later save succeeds, which releases it.
func TestHibernationStoresAPendingCatalog(t *testing.T) {
	tests := []struct {
		name string
		// failAtHibernation keeps the store failing through the idle check.
		failAtHibernation bool
	}{
		{name: "the connect's save had not happened"},
		{name: "the store fails at the idle check too", failAtHibernation: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testkit.StartFixture(t, fixture.Options{})
			st := newStore(t, t.TempDir())
			if err := st.AddServer(testkit.Context(t), srvCfg("a", f.URL(), false)); err != nil {
				t.Fatal(err)
			}
			shelf := &flakyShelf{KVShelf: KVShelf{KV: st}}
			shelf.fail.Store(true)
			m := New(Options{Store: st, Logger: testkit.Logger(t), Catalogs: shelf, IdleCheck: time.Hour})
			t.Cleanup(func() { m.Close() })
			if err := m.Start(testkit.Context(t)); err != nil {
				t.Fatal(err)
			}
			if err := m.Connect(testkit.Context(t), "a"); err != nil {
				t.Fatal(err)
			}
			// The connect's own save has been tried (and failed): nothing
			// in the background stores the catalog from now on.
			testkit.WaitFor(t, "the connect's save", func() bool { return shelf.saves.Load() >= 1 })
			shelf.fail.Store(tt.failAtHibernation)
			m.hibernateIdle(time.Now().Add(time.Hour))
			if s, err := m.ServerStatusOf("a"); err != nil || s.State != StateIdle {
				t.Fatalf("%s, %v after the idle check, want idle", s.State, err)
			}
			inMemory := func() bool {
				e := m.entry("a")
				e.mu.Lock()
				defer e.mu.Unlock()
				return e.catalog != nil
			}
			if tt.failAtHibernation {
				if !inMemory() {
					t.Fatal("the catalog left memory although the store does not have it")
				}
				// A later save (a refresh's, still queued) succeeds.
				shelf.fail.Store(false)
				e := m.entry("a")
				x := e.ext()
				x.saveMu.Lock()
				m.storeCatalogLocked(e, x)
				x.saveMu.Unlock()
			}
			if inMemory() {
				t.Fatal("an idle server keeps its catalog in memory after the store has it")
			}
			if b, err := shelf.LoadCatalog(testkit.Context(t), "a"); err != nil || b == nil {
				t.Fatalf("the stored catalog: %v, %d bytes", err, len(b))
			}
		})
	}
}
