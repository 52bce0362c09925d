package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLock(t *testing.T) {
	dir := t.TempDir()
	a := openT(t, dir)
	b := openT(t, dir) // another "process" on the same data directory

	for _, tc := range []struct {
		name          string
		first, second *SQLite
	}{
		{"same store", a, a},
		{"two stores", a, b},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			unlock, err := tc.first.Lock(ctx, "refresh-srv")
			if err != nil {
				t.Fatal(err)
			}
			// While held, a second Lock waits and gives up with its ctx.
			short, cancel := context.WithTimeout(ctx, 5*lockRetry)
			defer cancel()
			if _, err := tc.second.Lock(short, "refresh-srv"); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("second Lock = %v, want DeadlineExceeded", err)
			}
			// Another name is independent.
			u2, err := tc.second.Lock(ctx, "refresh-other")
			if err != nil {
				t.Fatal(err)
			}
			u2()

			var got atomic.Bool
			done := make(chan func())
			go func() {
				u, err := tc.second.Lock(ctx, "refresh-srv")
				if err != nil {
					t.Error(err)
				}
				got.Store(true)
				done <- u
			}()
			time.Sleep(3 * lockRetry)
			if got.Load() {
				t.Fatal("lock taken twice")
			}
			unlock()
			unlock() // idempotent
			select {
			case u := <-done:
				u()
			case <-time.After(hang):
				t.Fatal("waiter never got the lock")
			}
		})
	}
}

func TestLockFileName(t *testing.T) {
	seen := map[string]string{}
	for _, name := range []string{"a", "A", "refresh-srv_1", "../x", "..", ".", "a/b", "a%2Fb", "ü", "a.b"} {
		f := lockFileName(name)
		if strings.ContainsAny(f[:len(f)-len(".lock")], "/\\.") || filepath.Base(f) != f {
			t.Errorf("lockFileName(%q) = %q is not a plain file name", name, f)
		}
		if prev, ok := seen[f]; ok {
			t.Errorf("%q and %q both map to %q", prev, name, f)
		}
		seen[f] = name
	}
}
