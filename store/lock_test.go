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

// testLockExcludes: while one handle holds a lock, neither the same
// handle nor another one on the store (another process) takes it; other
// names are independent; once it is released, the waiter gets it. The
// waiter is given time to retry while the lock is held (a pause, not a
// deadline: if it has not tried yet, the test only proves less).
func testLockExcludes(t *testing.T, b backend) {
	for _, tc := range []struct {
		name string
		two  bool
	}{{"same handle", false}, {"two handles", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			first := b.open(t)
			second := first
			if tc.two {
				second = b.again(t, first)
			}
			unlock, err := first.Lock(ctx, "refresh-srv")
			if err != nil {
				t.Fatal(err)
			}
			u2, err := second.Lock(ctx, "refresh-other")
			if err != nil {
				t.Fatalf("another name: %v", err)
			}
			u2()

			var released atomic.Bool
			done := make(chan error, 1)
			go func() {
				u, err := second.Lock(ctx, "refresh-srv")
				if err == nil {
					if !released.Load() {
						err = errors.New("lock taken while the first holder had it")
					}
					u()
				}
				done <- err
			}()
			time.Sleep(5 * lockRetry)
			released.Store(true)
			unlock()
			unlock() // idempotent
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// testLockCancelWhileWaiting: a Lock waiting for a held lock gives up
// with its ctx, and leaves nothing behind: the holder still holds the
// lock until it releases it, and then it can be taken again.
func testLockCancelWhileWaiting(t *testing.T, b backend) {
	ctx := context.Background()
	first := b.open(t)
	second := b.again(t, first)
	unlock, err := first.Lock(ctx, "refresh-srv")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*DB{first, second} {
		wctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			u, err := s.Lock(wctx, "refresh-srv")
			if err == nil {
				u()
			}
			errc <- err
		}()
		time.Sleep(3 * lockRetry) // let it wait (see testLockExcludes)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("waiting Lock = %v, want context.Canceled", err)
		}
	}
	// Still held by first: a new waiter gets it only once first releases.
	var released atomic.Bool
	errc := make(chan error, 1)
	go func() {
		u, err := second.Lock(ctx, "refresh-srv")
		if err == nil {
			if !released.Load() {
				err = errors.New("lock taken while held, after a waiter gave up")
			}
			u()
		}
		errc <- err
	}()
	time.Sleep(5 * lockRetry)
	released.Store(true)
	unlock()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
