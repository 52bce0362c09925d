package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Each case runs in a bubble (testing/synctest): the waits for lockRetry
// pass on the bubble's clock, once every goroutine is blocked, so "the
// waiter has retried three times" holds however loaded the machine is.
func TestLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		two  bool // a second store: another "process" on the same data directory
	}{
		{"same store", false},
		{"two stores", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				first := openT(t, dir)
				second := first
				if tc.two {
					second = openT(t, dir)
				}
				ctx := context.Background()
				unlock, err := first.Lock(ctx, "refresh-srv")
				if err != nil {
					t.Fatal(err)
				}
				// While held, a second Lock waits and gives up with its ctx.
				short, cancel := context.WithTimeout(ctx, 5*lockRetry)
				defer cancel()
				if _, err := second.Lock(short, "refresh-srv"); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("second Lock = %v, want DeadlineExceeded", err)
				}
				// Another name is independent.
				u2, err := second.Lock(ctx, "refresh-other")
				if err != nil {
					t.Fatal(err)
				}
				u2()

				var got atomic.Bool
				done := make(chan func())
				go func() {
					u, err := second.Lock(ctx, "refresh-srv")
					if err != nil {
						t.Error(err)
					}
					got.Store(true)
					done <- u
				}()
				time.Sleep(3 * lockRetry) // the bubble's clock: three retries
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
