package hostperm

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/store"
)

// While a gateway's PostgreSQL restarts, the requests of connected
// servers go on (issue #23 chaos: every outbound request is checked, and
// a write of another replica had just emptied the cache): a grant read
// from the store within staleGrace is still taken while the store cannot
// be reached. An origin never read, one read without a grant, one revoked
// through this broker, and one past the grace stay refused: the guard
// fails closed on everything it has not seen granted.
func TestGrantsOutliveAnOutage(t *testing.T) {
	ctx := testkit.Context(t)
	cluster := pgtest.NewCluster(t)
	dsn, keyDir := cluster.DSN(t), t.TempDir()
	open := func() *store.Postgres {
		p, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{KeyDir: keyDir, Options: store.Options{PollInterval: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	a, other := open(), open()
	u, err := a.AddUser(ctx, "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.User(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var (
		mu  sync.Mutex
		now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := New(st, Options{Now: clock})
	t.Cleanup(func() { b.Close() })
	const granted, revoked, unseen, missing = "https://as.example.com", "https://gone.example.com", "https://unseen.example.com", "https://never.example.com"
	for _, o := range []string{granted, revoked, unseen} {
		if err := b.Grant(ctx, o, ByCLI); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []string{granted, revoked, missing} {
		b.Check(ctx, o, PurposeMCP, "srv")
	}
	if err := b.Revoke(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	// Another replica writes something of this person's: the feed cannot
	// say what, so the cache is emptied.
	changes := st.Subscribe(ctx)
	ost, err := other.User(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer ost.Close()
	if err := ost.PutKV(ctx, "catalogs", "srv", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, "the other replica's write", changes)

	raw, err := a.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	cluster.Stop(t)
	t.Cleanup(func() { cluster.Start(t) })

	if err := b.Check(ctx, granted+"/mcp", PurposeMCP, "srv"); err != nil {
		t.Errorf("a grant read before the outage is refused during it: %v", err)
	}
	for _, o := range []string{revoked, unseen, missing} {
		if err := b.Check(ctx, o+"/mcp", PurposeMCP, "srv"); err == nil {
			t.Errorf("%s is taken during the outage", o)
		} else if o != revoked && o != missing && !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: %v, want the store's unavailability", o, err)
		}
	}
	mu.Lock()
	now = now.Add(staleGrace)
	mu.Unlock()
	if err := b.Check(ctx, granted+"/mcp", PurposeMCP, "srv"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a grant past its grace during the outage: %v, want refused", err)
	}
}
