package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

// SecretLock (SPEC §9 A11: refresh single-flight by row lock), on both
// backends and, below, what only PostgreSQL's row lock does.

const lockHold = time.Minute

// lockedSecretStore returns a store with server "x" and its refresh token
// "rt-1" under key.
func lockedSecretStore(t *testing.T, b backend) (*DB, SecretKey) {
	t.Helper()
	s := b.open(t)
	ctx := context.Background()
	if err := s.AddServer(ctx, noneServer("x", "https://x.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	k := SecretKey{ServerID: "x", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: "https://x.example.com/mcp", Issuer: "https://as.example.com"}}
	if err := s.PutSecret(ctx, k, []byte("rt-1")); err != nil {
		t.Fatal(err)
	}
	return s, k
}

func getSecretT(t *testing.T, s *DB, k SecretKey) string {
	t.Helper()
	v, err := s.GetSecret(context.Background(), k)
	if errors.Is(err, ErrNotFound) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func lockT(t *testing.T, s *DB, k SecretKey) *SecretLock {
	t.Helper()
	l, err := s.LockSecret(context.Background(), k, lockHold)
	if err != nil {
		t.Fatalf("LockSecret: %v", err)
	}
	t.Cleanup(l.Release)
	return l
}

// waitLockWaiter returns once a backend of the database of s waits for
// a lock (PostgreSQL), so a waiter is known to wait, not merely slow.
func waitLockWaiter(t *testing.T, s *DB) {
	t.Helper()
	if s.d != postgresDialect {
		return
	}
	for {
		var n int
		if err := s.pg.DB().QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSecretLock(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Run("WritesOnCommitOnly", func(t *testing.T) {
				s, k := lockedSecretStore(t, b)
				ctx := context.Background()
				rev0, _ := s.Revision(ctx)
				l := lockT(t, s, k)
				if string(l.Value()) != "rt-1" {
					t.Fatalf("Value = %q", l.Value())
				}
				if err := l.Replace([]byte("rt-2")); err != nil {
					t.Fatal(err)
				}
				l.Release()
				if got := getSecretT(t, s, k); got != "rt-1" {
					t.Fatalf("after Release the secret is %q, want rt-1 (nothing written)", got)
				}
				if err := l.Commit(ctx); err == nil {
					t.Fatal("Commit after Release succeeded")
				}

				ch := s.Subscribe(t.Context())
				l = lockT(t, s, k)
				if err := l.Replace([]byte("rt-2")); err != nil {
					t.Fatal(err)
				}
				if err := l.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if got := getSecretT(t, s, k); got != "rt-2" {
					t.Fatalf("after Commit the secret is %q, want rt-2", got)
				}
				if c := recv(t, ch, hang); c.Kind != ChangeSecrets || c.ServerID != "x" {
					t.Fatalf("change %+v, want secrets of x", c)
				}
				if rev, _ := s.Revision(ctx); rev != rev0+1 {
					t.Fatalf("revision %d → %d, want one write", rev0, rev)
				}

				l = lockT(t, s, k)
				l.Delete()
				if err := l.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if got := getSecretT(t, s, k); got != "<none>" {
					t.Fatalf("after Delete the secret is %q", got)
				}
				// A missing secret locks nothing: ErrNotFound, and the key
				// stays free for the next one.
				if _, err := s.LockSecret(ctx, k, lockHold); !errors.Is(err, ErrNotFound) {
					t.Fatalf("LockSecret of a missing secret = %v, want ErrNotFound", err)
				}
				if err := s.PutSecret(ctx, k, []byte("rt-3")); err != nil {
					t.Fatal(err)
				}
				lockT(t, s, k).Release()
			})

			t.Run("ExcludesAnotherProcess", func(t *testing.T) {
				s, k := lockedSecretStore(t, b)
				other := b.again(t, s)
				ctx := context.Background()
				l := lockT(t, s, k)
				type res struct {
					v   string
					err error
				}
				got := make(chan res, 1)
				go func() {
					l2, err := other.LockSecret(ctx, k, lockHold)
					if err != nil {
						got <- res{err: err}
						return
					}
					defer l2.Release()
					got <- res{v: string(l2.Value())}
				}()
				waitLockWaiter(t, s)
				if err := l.Replace([]byte("rt-2")); err != nil {
					t.Fatal(err)
				}
				if err := l.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				r := <-got
				if r.err != nil || r.v != "rt-2" {
					t.Fatalf("the other process read %q (%v) after waiting, want rt-2: the value committed by the holder", r.v, r.err)
				}
			})

			t.Run("WaiterGivesUp", func(t *testing.T) {
				s, k := lockedSecretStore(t, b)
				other := b.again(t, s)
				l := lockT(t, s, k)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					l2, err := other.LockSecret(ctx, k, lockHold)
					if err == nil {
						l2.Release()
					}
					done <- err
				}()
				waitLockWaiter(t, s)
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("waiter that gave up: %v, want context.Canceled", err)
				}
				l.Release()
				lockT(t, other, k).Release()
			})

			t.Run("ReplaceRefusedIfChangedBehindTheLock", func(t *testing.T) {
				s, k := lockedSecretStore(t, b)
				ctx := context.Background()
				l := lockT(t, s, k)
				if s.d == postgresDialect {
					// Another connection cannot write the row while it is
					// locked; the lock must be lost first.
					killLockingBackend(t, s)
				}
				if err := b.again(t, s).PutSecret(ctx, k, []byte("login")); err != nil {
					t.Fatal(err)
				}
				if err := l.Replace([]byte("rt-2")); err != nil {
					t.Fatal(err)
				}
				if err := l.Commit(ctx); !errors.Is(err, ErrSecretChanged) {
					t.Fatalf("Commit = %v, want ErrSecretChanged", err)
				}
				if got := getSecretT(t, s, k); got != "login" {
					t.Fatalf("secret %q, want the other writer's", got)
				}
				// A deletion of a secret that changed leaves the new one.
				l = lockT(t, s, k)
				if s.d == postgresDialect {
					killLockingBackend(t, s)
				}
				if err := s.PutSecret(ctx, k, []byte("login-2")); err != nil {
					t.Fatal(err)
				}
				l.Delete()
				if err := l.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if got := getSecretT(t, s, k); got != "login-2" {
					t.Fatalf("secret %q, want login-2 kept", got)
				}
			})
		})
	}
}

// killLockingBackend terminates the PostgreSQL backend whose transaction
// holds a secret's row (idle in transaction after SELECT … FOR UPDATE),
// and waits until it is gone.
func killLockingBackend(t *testing.T, s *DB) {
	t.Helper()
	var pid int
	err := s.pg.DB().QueryRow(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()
		AND state LIKE 'idle in transaction%' AND query LIKE '%FROM secrets%FOR UPDATE%'`).Scan(&pid)
	if err != nil {
		t.Fatalf("find the locking backend: %v", err)
	}
	var ok bool
	if err := s.pg.DB().QueryRow(`SELECT pg_terminate_backend($1, 60000)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
}

// PostgreSQL: a lost locking transaction (its connection killed) does not
// lose the replacement: Commit writes it by compare-and-set.
func TestSecretLockConnectionKilledPostgres(t *testing.T) {
	s, k := lockedSecretStore(t, backends[1])
	ctx := context.Background()
	l := lockT(t, s, k)
	killLockingBackend(t, s)
	if err := l.Replace([]byte("rt-2")); err != nil {
		t.Fatal(err)
	}
	rev0, _ := s.Revision(ctx)
	if err := l.Commit(ctx); err != nil {
		t.Fatalf("Commit after the locking connection was killed: %v", err)
	}
	if got := getSecretT(t, s, k); got != "rt-2" {
		t.Fatalf("secret %q, want rt-2", got)
	}
	if rev, _ := s.Revision(ctx); rev != rev0+1 {
		t.Fatalf("revision %d → %d, want one write", rev0, rev)
	}
}

// PostgreSQL: only the row is held. Other writes of the user go on, and
// one that must wait for the row (the server being removed) waits for
// the commit instead of deadlocking with it: the holder never waits for
// the user's write lock while it holds the row.
func TestSecretLockHoldsOnlyTheRowPostgres(t *testing.T) {
	s, k := lockedSecretStore(t, backends[1])
	other := backends[1].again(t, s)
	ctx := context.Background()
	if err := s.AddServer(ctx, noneServer("y", "https://y.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	l := lockT(t, s, k)
	// Not waiting: these return while the row is held.
	if err := other.PutKV(ctx, "grants", "g", []byte(`"v"`)); err != nil {
		t.Fatal(err)
	}
	if err := other.PutSecret(ctx, SecretKey{ServerID: "y", Purpose: PurposeRefreshToken, Binding: k.Binding}, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if got := getSecretT(t, other, k); got != "rt-1" {
		t.Fatalf("a reader saw %q", got)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- other.DeleteServer(ctx, "x") }()
	waitLockWaiter(t, s)
	if err := l.Replace([]byte("rt-2")); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx); err != nil {
		t.Fatalf("Commit while a removal waits for the row: %v", err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("DeleteServer after the commit: %v", err)
	}
	if got := getSecretT(t, s, k); got != "<none>" {
		t.Fatalf("the removed server's secret is %q", got)
	}
}

// PostgreSQL: the lock is held for at most hold, also by PostgreSQL's own
// timeout; a holder that outlived it still writes by compare-and-set
// unless the next holder changed the secret.
func TestSecretLockHoldBoundPostgres(t *testing.T) {
	s, k := lockedSecretStore(t, backends[1])
	other := backends[1].again(t, s)
	ctx := context.Background()
	const hold = 300 * time.Millisecond
	l, err := s.LockSecret(ctx, k, hold)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	var timeout string
	if err := l.tx.QueryRowContext(l.txCtx, `SHOW idle_in_transaction_session_timeout`).Scan(&timeout); err != nil {
		t.Fatal(err)
	}
	if timeout != fmt.Sprint(hold.Milliseconds())+"ms" {
		t.Fatalf("idle_in_transaction_session_timeout = %q, want %dms", timeout, hold.Milliseconds())
	}
	// Waits for hold to pass (however long the machine takes), then gets it.
	l2, err := other.LockSecret(ctx, k, lockHold)
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Replace([]byte("next")); err != nil {
		t.Fatal(err)
	}
	if err := l2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Replace([]byte("late")); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx); !errors.Is(err, ErrSecretChanged) {
		t.Fatalf("late Commit = %v, want ErrSecretChanged", err)
	}
	if got := getSecretT(t, s, k); got != "next" {
		t.Fatalf("secret %q, want next", got)
	}
}

func TestSecretLockName(t *testing.T) {
	a := secretLockName(SecretKey{ServerID: "a", Purpose: "b", Binding: config.Binding{Resource: "c"}})
	b := secretLockName(SecretKey{ServerID: "a", Purpose: "bc"})
	if a == b {
		t.Fatal("two keys share a lock name")
	}
	if len(a) > 64 {
		t.Fatalf("lock name %q too long for a file name", a)
	}
}

// PostgreSQL: a process holds at most maxRowLocks rows at once, so the
// rest of the pool stays free for everything else (and for a holder's own
// reads); the next LockSecret waits for a slot.
func TestSecretLockSlotsPostgres(t *testing.T) {
	s, k := lockedSecretStore(t, backends[1])
	ctx := context.Background()
	keys := []SecretKey{k}
	for i := 1; i <= maxRowLocks; i++ {
		ki := k
		ki.Binding.Issuer = fmt.Sprintf("https://as%d.example.com", i)
		if err := s.PutSecret(ctx, ki, []byte("rt")); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, ki)
	}
	var held []*SecretLock
	for _, ki := range keys[:maxRowLocks] {
		held = append(held, lockT(t, s, ki))
	}
	// Everything else still gets a connection.
	for range 20 {
		if _, err := s.GetServer(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() {
		l, err := s.LockSecret(wctx, keys[maxRowLocks], lockHold)
		if err == nil {
			l.Release()
		}
		got <- err
	}()
	// The waiter does not lock its row while every slot is held (an
	// unlimited one does within a few looks).
	for range 200 {
		var n int
		if err := s.pg.DB().QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND query LIKE '%FROM secrets%FOR UPDATE%' AND pid <> pg_backend_pid()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > maxRowLocks {
			t.Fatalf("%d rows locked by one process, want at most %d", n, maxRowLocks)
		}
		time.Sleep(2 * time.Millisecond)
	}
	held[0].Release()
	if err := <-got; err != nil {
		t.Fatalf("LockSecret after a slot was freed: %v", err)
	}
	cancel()
	// Once more, giving up while waiting for a slot.
	held = append(held, lockT(t, s, keys[0]))
	wctx, cancel = context.WithCancel(ctx)
	go func() {
		_, err := s.LockSecret(wctx, keys[maxRowLocks], lockHold)
		got <- err
	}()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("LockSecret while every slot is held, given up: %v", err)
	}
	if n := s.pg.DB().Stats().InUse; n > maxRowLocks+1 {
		t.Fatalf("%d connections in use with %d rows held", n, maxRowLocks)
	}
}
