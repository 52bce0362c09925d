package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
)

// pgLocks are the advisory locks one process holds on a gateway's
// database. They live on one connection of their own: a lock held for as
// long as an engine runs (elicit's owner lock) must not pin a pooled
// connection per user, or a hundred users would exhaust the pool. Session
// advisory locks are re-entrant on one connection, so the holders inside
// this process exclude each other with a semaphore per key first.
type pgLocks struct {
	mu   sync.Mutex // guards conn and sems; statements on conn run under it
	conn *sql.Conn
	sems map[int64]chan struct{}
	held map[int64]bool // keys locked on conn now
}

// lock takes the lock name of user on db for this process and every
// other process on the database, waiting until it is free or ctx ends.
func (l *pgLocks) lock(ctx context.Context, db *sql.DB, user, name string) (unlock func(), err error) {
	key := pgLockKey(user, name)
	l.mu.Lock()
	if l.sems == nil {
		l.sems, l.held = map[int64]chan struct{}{}, map[int64]bool{}
	}
	sem, ok := l.sems[key]
	if !ok {
		sem = make(chan struct{}, 1)
		l.sems[key] = sem
	}
	l.mu.Unlock()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := retryLock(ctx, func() (bool, error) { return l.try(ctx, db, key) }); err != nil {
		<-sem
		return nil, err
	}
	return sync.OnceFunc(func() {
		l.release(key)
		<-sem
	}), nil
}

// try tries the lock once on the lock connection, opening one when there
// is none.
//
// A waiter that gives up must not touch the connection: its locks are
// every holder's in this process, and a statement cancelled by ctx (or
// refused because ctx is already done) would make try drop it, releasing
// them all while their holders go on. So ctx is checked first, and the
// statement, which never waits, runs to its end.
func (l *pgLocks) try(ctx context.Context, db *sql.DB, key int64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		c, err := db.Conn(ctx)
		if err != nil {
			return false, fmt.Errorf("lock connection: %w", err)
		}
		l.conn = c
	}
	var ok bool
	if err := l.conn.QueryRowContext(context.WithoutCancel(ctx), `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		// The connection may be gone, and with it every lock it held:
		// the next try opens another.
		l.dropConn()
		return false, err
	}
	if ok {
		l.held[key] = true
	}
	return ok, nil
}

// release unlocks key. If the connection fails, it is dropped: its locks
// end with it.
func (l *pgLocks) release(key int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held[key] || l.conn == nil {
		return
	}
	delete(l.held, key)
	if _, err := l.conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, key); err != nil {
		l.dropConn()
	}
}

// dropConn closes the lock connection for good (its session ends, and
// PostgreSQL releases what it held). Called with mu held.
func (l *pgLocks) dropConn() {
	if l.conn == nil {
		return
	}
	_ = l.conn.Raw(func(any) error { return errBadConn })
	l.conn.Close()
	l.conn = nil
	clear(l.held)
}

// close releases every lock (the database is closing).
func (l *pgLocks) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropConn()
}

// errBadConn makes database/sql discard a connection (driver.ErrBadConn).
var errBadConn = driver.ErrBadConn
