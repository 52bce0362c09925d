package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// lockRetry is how often Lock retries a lock another process holds. flock
// has no timeout, so a non-blocking attempt is repeated until ctx is done.
const lockRetry = 20 * time.Millisecond

// Lock takes the exclusive advisory lock name, shared by every process on
// this data directory (OAuth takes one per server so only one process
// refreshes a token at a time). It waits until the lock is free or ctx is
// done. The returned unlock releases it; calling unlock more than once is
// harmless.
//
// For a gateway user the lock is a PostgreSQL advisory lock of the user
// and name, shared by every process on the database.
//
// In a personal store the lock is a flock on <data dir>/locks/<name>.lock plus an in-process
// mutex: flock belongs to an open file, so two goroutines of one process
// opening the file twice would not exclude each other on every platform.
// Lock files are never deleted; removing a file someone holds locked would
// let the next process lock a new file of the same name.
func (s *DB) Lock(ctx context.Context, name string) (unlock func(), err error) {
	if name == "" {
		return nil, errors.New("store: lock: empty name")
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("store: lock %q: %w", name, ErrClosed)
	}
	sem := s.lockSem(name)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("store: lock %q: %w", name, ctx.Err())
	}
	release := func() { <-sem }
	if s.d == postgresDialect {
		// The semaphore of this DB is not enough in PostgreSQL: two
		// DBs of one user in a process share the lock connection, where
		// advisory locks are re-entrant; pgLocks has its own.
		unlock, err := s.pg.locks.lock(ctx, s.user, name)
		if err != nil {
			release()
			return nil, fmt.Errorf("store: lock %q: %w", name, err)
		}
		return sync.OnceFunc(func() { unlock(); release() }), nil
	}

	dir := filepath.Join(s.dir, "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		release()
		return nil, fmt.Errorf("store: lock %q: create %s: %w", name, dir, err)
	}
	path := filepath.Join(dir, lockFileName(name))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		release()
		return nil, fmt.Errorf("store: lock %q: %w", name, err)
	}
	err = retryLock(ctx, func() (bool, error) {
		ok, err := tryLockFile(f)
		if err != nil {
			return false, fmt.Errorf("flock %s: %w", path, err)
		}
		return ok, nil
	})
	if err != nil {
		f.Close()
		release()
		return nil, fmt.Errorf("store: lock %q: %w", name, err)
	}
	return sync.OnceFunc(func() {
		unlockFile(f)
		f.Close()
		release()
	}), nil
}

// retryLock calls try until it takes the lock (true), fails, or ctx
// ends: neither flock nor pg_try_advisory_lock waits, so a lock another
// process holds is tried again every lockRetry.
func retryLock(ctx context.Context, try func() (bool, error)) error {
	var t *time.Timer
	for {
		ok, err := try()
		if err != nil || ok {
			return err
		}
		if t == nil {
			t = time.NewTimer(lockRetry)
			defer t.Stop()
		} else {
			t.Reset(lockRetry)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lockSem returns the in-process semaphore of a lock name.
func (s *DB) lockSem(name string) chan struct{} {
	s.locksMu.Lock()
	defer s.locksMu.Unlock()
	sem, ok := s.locks[name]
	if !ok {
		sem = make(chan struct{}, 1)
		s.locks[name] = sem
	}
	return sem
}

// lockFileName maps any lock name to one safe file name: letters, digits,
// '-' and '_' stay, every other byte becomes %XX. Distinct names stay
// distinct, and no name can reach outside the locks directory.
func lockFileName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String() + ".lock"
}
