package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// lockKeepalive is how often the lock connection is pinged while
	// this process holds a lock, so its loss is noticed within about
	// that long even when nobody locks or unlocks. (A restart of the
	// server is usually noticed sooner: the change feed's listening
	// connection hears of it at once and wakes the keeper.)
	lockKeepalive = time.Second
	// lockRetryMin and lockRetryMax bound the backoff of connecting
	// again and re-taking lost locks. Short: until a lost lock is taken
	// again, another process may take it.
	lockRetryMin = 100 * time.Millisecond
	lockRetryMax = 500 * time.Millisecond
)

// pgLocks are the advisory locks one process holds on a gateway's
// database. They live on one connection of their own (not the pool's): a
// lock held for as long as an engine runs (elicit's owner lock) must not
// pin a pooled connection per user, or a hundred users would exhaust the
// pool. Session advisory locks are re-entrant on one connection, so the
// holders inside this process exclude each other with a semaphore per
// key first.
//
// A session's advisory locks end with the session: when the connection
// is lost (PostgreSQL restarted, the backend was terminated, the network
// dropped it), PostgreSQL releases every lock this process holds while
// their holders go on believing they hold them. So while any lock is
// held a keeper goroutine pings the connection every lockKeepalive, and
// once it (or any statement) finds the connection gone, the keeper
// connects again, backing off from lockRetryMin to lockRetryMax, and
// takes every held lock again. A held lock therefore excludes the other
// processes except during the outage: from the loss of the connection
// until the keeper has re-taken it (the time the server is down, plus
// at most about lockKeepalive before and lockRetryMax after). If another
// process took the lock in that window, the keeper says so as an error
// and keeps trying until it has the lock back or its holder unlocks;
// until then both take themselves for its holder. Work that must never
// overlap across such a window needs a check of its own (a row lock, a
// revision).
type pgLocks struct {
	cfg   *pgx.ConnConfig
	log   *slog.Logger
	where string // the database, for messages

	ctx    context.Context // ends with close: the keeper and its connects
	cancel context.CancelFunc

	dial sync.Mutex // serializes connecting, without holding mu
	mu   sync.Mutex // guards the fields below; statements on conn run under it
	conn *pgx.Conn
	sems map[int64]chan struct{}
	held map[int64]*heldLock // the keys this process's holders hold
	// keeping: the keeper runs; kick wakes it.
	keeping bool
	kick    chan struct{}
	done    chan struct{} // closed when the keeper returns
	closed  bool
}

// heldLock is a lock a holder of this process holds.
type heldLock struct {
	user, name string
	// onConn: locked on conn now. False once the connection it was
	// taken on was lost, until the keeper takes it again.
	onConn bool
	// contested: the keeper found it taken by another process (and said
	// so once).
	contested bool
}

// init prepares l for the database of cfg.
func (l *pgLocks) init(cfg *pgx.ConnConfig, log *slog.Logger, where string) {
	l.cfg, l.log, l.where = cfg, log, where
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.sems, l.held = map[int64]chan struct{}{}, map[int64]*heldLock{}
	l.kick, l.done = make(chan struct{}, 1), make(chan struct{})
}

// lock takes the lock name of user for this process and every other
// process on the database, waiting until it is free or ctx ends.
func (l *pgLocks) lock(ctx context.Context, user, name string) (unlock func(), err error) {
	key := pgLockKey(user, name)
	l.mu.Lock()
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
	if err := retryLock(ctx, func() (bool, error) { return l.try(ctx, key, user, name) }); err != nil {
		<-sem
		return nil, err
	}
	return sync.OnceFunc(func() {
		l.release(key)
		<-sem
	}), nil
}

// try tries the lock once on the lock connection, opening one when there
// is none. A connection found dead is replaced once: only a failure on a
// fresh one is the caller's.
//
// A waiter that gives up must not touch the connection: its locks are
// every holder's in this process, and a statement cancelled by ctx (or
// refused because ctx is already done) would make try drop it, releasing
// them all while their holders go on. So ctx is checked first, and the
// statement, which never waits, runs to its end (bounded by
// pgStatementTimeout: a connection that does not answer is lost anyway).
func (l *pgLocks) try(ctx context.Context, key int64, user, name string) (bool, error) {
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		c, fresh, err := l.connLocked(ctx)
		if err != nil {
			return false, err
		}
		ok, err := tryAdvisory(context.Background(), c, key)
		if err != nil {
			l.dropConnLocked(err)
			l.mu.Unlock()
			if fresh {
				return false, fmt.Errorf("lock connection: %w", err)
			}
			continue
		}
		if ok {
			l.held[key] = &heldLock{user: user, name: name, onConn: true}
			l.startKeeperLocked()
		}
		l.mu.Unlock()
		return ok, nil
	}
}

// tryAdvisory runs pg_try_advisory_lock on c, bounded by
// pgStatementTimeout and ctx.
func tryAdvisory(ctx context.Context, c *pgx.Conn, key int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, pgStatementTimeout)
	defer cancel()
	var ok bool
	err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok)
	return ok, err
}

// connLocked returns the lock connection with mu held, connecting (with
// ctx) when there is none; fresh says it was connected now. On error mu
// is not held. Connecting happens without mu, so holders unlocking
// meanwhile need not wait for a server that does not answer; dial makes
// it one connect at a time.
func (l *pgLocks) connLocked(ctx context.Context) (c *pgx.Conn, fresh bool, err error) {
	l.mu.Lock()
	for {
		if l.closed {
			l.mu.Unlock()
			return nil, false, ErrClosed
		}
		if l.conn != nil {
			return l.conn, false, nil
		}
		l.mu.Unlock()
		l.dial.Lock()
		l.mu.Lock()
		if l.closed || l.conn != nil {
			l.dial.Unlock() // closed, or connected meanwhile
			continue
		}
		l.mu.Unlock()
		c, err = dialOwn(ctx, l.cfg, lockAppName)
		l.mu.Lock()
		l.dial.Unlock()
		switch {
		case err != nil:
			l.mu.Unlock()
			return nil, false, fmt.Errorf("lock connection: %w", err)
		case l.closed:
			l.mu.Unlock()
			hardClose(c)
			return nil, false, ErrClosed
		}
		l.conn = c
		return c, true, nil
	}
}

// release unlocks key. A lock lost with an earlier connection has nothing
// left to unlock. If the statement fails, the connection is dropped (its
// locks end with it) and the keeper takes the others' again.
func (l *pgLocks) release(key int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[key]
	delete(l.held, key)
	if h == nil || !h.onConn || l.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgStatementTimeout)
	defer cancel()
	if _, err := l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
		l.dropConnLocked(err)
	}
}

// dropConnLocked closes the lock connection for good (its session ends,
// and PostgreSQL releases what it held): every held lock is lost until
// the keeper takes it again. Called with mu held.
func (l *pgLocks) dropConnLocked(why error) {
	if l.conn == nil {
		return
	}
	hardClose(l.conn)
	l.conn = nil
	n := 0
	for _, h := range l.held {
		if h.onConn {
			h.onConn = false
			n++
		}
	}
	if n > 0 && !l.closed {
		l.log.Warn("store: lost the connection of this process's advisory locks; taking them again", "db", l.where, "locks", n, "err", why)
		l.wake()
	}
}

// wake wakes the keeper: it pings the connection, or tries again to take
// the lost locks, now.
func (l *pgLocks) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// startKeeperLocked starts the keeper on the first lock. Called with mu
// held.
func (l *pgLocks) startKeeperLocked() {
	if l.keeping || l.closed {
		return
	}
	l.keeping = true
	go l.keep()
}

// keep watches the lock connection while locks are held and takes lost
// locks again, until close.
func (l *pgLocks) keep() {
	defer close(l.done)
	backoff := lockRetryMin
	for {
		var wait time.Duration // 0: until woken
		l.mu.Lock()
		held, lost := len(l.held) > 0, l.lostLocked()
		l.mu.Unlock()
		switch {
		case lost:
			if l.retake() {
				backoff = lockRetryMin
				wait = lockKeepalive
			} else {
				wait = backoff
				backoff = min(2*backoff, lockRetryMax)
				// Not again at once for the connection this retake
				// dropped: the backoff says when.
				select {
				case <-l.kick:
				default:
				}
			}
		case held:
			if !l.ping() {
				continue // lost: take them again at once
			}
			wait = lockKeepalive
		}
		var (
			t     *time.Timer
			timer <-chan time.Time
		)
		if wait > 0 {
			t = time.NewTimer(wait)
			timer = t.C
		}
		select {
		case <-l.ctx.Done():
		case <-l.kick:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if l.ctx.Err() != nil {
			return
		}
	}
}

// lostLocked reports whether a held lock is not on the connection.
// Called with mu held.
func (l *pgLocks) lostLocked() bool {
	for _, h := range l.held {
		if !h.onConn {
			return true
		}
	}
	return false
}

// ping checks the connection; false when it was lost (and dropped).
func (l *pgLocks) ping() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return !l.lostLocked()
	}
	ctx, cancel := context.WithTimeout(l.ctx, pgStatementTimeout)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		if l.ctx.Err() != nil {
			return true // closing
		}
		l.dropConnLocked(fmt.Errorf("ping: %w", err))
		return false
	}
	return true
}

// retake takes every lost lock again, in one statement; true once none
// is lost.
func (l *pgLocks) retake() bool {
	c, _, err := l.connLocked(l.ctx)
	if err != nil {
		if l.ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			l.log.Debug("store: advisory locks: cannot connect yet", "db", l.where, "err", err)
		}
		return false
	}
	defer l.mu.Unlock()
	var keys []int64
	for key, h := range l.held {
		if !h.onConn {
			keys = append(keys, key)
		}
	}
	if len(keys) == 0 {
		return true
	}
	taken, err := tryAdvisoryAll(l.ctx, c, keys)
	if err != nil {
		if l.ctx.Err() == nil {
			l.dropConnLocked(err)
		}
		return false
	}
	again := 0
	for _, key := range keys {
		h := l.held[key]
		switch {
		case taken[key]:
			h.onConn = true
			if h.contested {
				l.log.Warn("store: took back an advisory lock another process had taken while this one's connection was lost", "db", l.where, "user", h.user, "lock", h.name)
				h.contested = false
			} else {
				again++
			}
		case !h.contested:
			h.contested = true
			l.log.Error("store: an advisory lock this process holds was taken by another process while its connection was lost; both may act as its holder until it is taken back (retrying)",
				"db", l.where, "user", h.user, "lock", h.name)
		}
	}
	if again > 0 {
		l.log.Info("store: took advisory locks again after their connection was lost", "db", l.where, "locks", again)
	}
	return len(taken) == len(keys)
}

// tryAdvisoryAll runs pg_try_advisory_lock on c for each of keys, in one
// statement, and returns those it took.
func tryAdvisoryAll(ctx context.Context, c *pgx.Conn, keys []int64) (map[int64]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, pgStatementTimeout)
	defer cancel()
	rows, err := c.Query(ctx, `SELECT k FROM unnest($1::bigint[]) AS k WHERE pg_try_advisory_lock(k)`, keys)
	if err != nil {
		return nil, err
	}
	taken := map[int64]bool{}
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, err
		}
		taken[k] = true
	}
	return taken, rows.Err()
}

// close ends the keeper and releases every lock (the database is
// closing).
func (l *pgLocks) close() {
	if l.cancel == nil {
		return // never initialized
	}
	l.cancel()
	l.mu.Lock()
	l.closed = true
	keeping := l.keeping
	if l.conn != nil {
		hardClose(l.conn)
		l.conn = nil
	}
	clear(l.held)
	l.mu.Unlock()
	if keeping {
		<-l.done
	}
}
