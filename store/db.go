package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LocalUser is the user of the personal mode: every row of a SQLite store
// belongs to it (SPEC §9 A11). A gateway's users have ids of their own
// (Postgres.AddUser), never this one.
const LocalUser = "local"

// ErrUserRemoved: the DB's user was removed from the gateway's database
// (Postgres.RemoveUser) while the DB was in use. Nothing was written.
var ErrUserRemoved = errors.New("the user was removed from the gateway")

// dialect is the SQL dialect of the database a DB lives in. The package's
// queries are written once, with ? placeholders and a user_id column in
// every table, and run on both (rebind).
type dialect uint8

const (
	sqliteDialect dialect = iota
	postgresDialect
)

// DB is the store of one user: the personal store kept in <data
// dir>/remotemcp.db (Open; the user LocalUser), or one user's part of a
// gateway's PostgreSQL database (Postgres.User). Every query it runs is
// limited to its user's rows, and its secrets are sealed with the user in
// the associated data, so a row moved to another user does not open.
//
// It is safe for concurrent use, and several processes (or several *DB in
// one process) may open the same data directory or database.
type DB struct {
	d    dialect
	user string
	dir  string // the data directory: key file, lock files (SQLite)
	// path names the database in messages: the SQLite file, or the
	// PostgreSQL connection string without its password.
	path         string
	db           *sql.DB
	pg           *Postgres // the database a gateway user's DB belongs to; nil for SQLite
	sealer       *sealer
	log          *slog.Logger
	pollInterval time.Duration

	// ctx is cancelled by Close; background queries use it.
	ctx    context.Context
	cancel context.CancelFunc

	// wmu serializes this process's write transactions, so they queue on a
	// mutex instead of spinning in SQLite's busy handler (or on the
	// user's row lock in PostgreSQL) against each other.
	wmu sync.Mutex

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	feed feed

	// keyCheck is the key check record this process verified (or wrote)
	// on open. Writes that seal compare it with the stored one, so a
	// process that still holds an old key stops sealing once another
	// process has re-keyed an empty store (see ensureKeyCheck).
	keyCheck []byte

	locksMu sync.Mutex
	locks   map[string]chan struct{} // in-process half of Lock, per name
}

var _ Store = (*DB)(nil)

// User returns the user whose rows the DB holds (LocalUser for a
// personal store).
func (s *DB) User() string { return s.user }

// rebinds caches the PostgreSQL form of each query text.
var rebinds sync.Map // string -> string

// rebind returns q for the DB's dialect: PostgreSQL numbers its
// placeholders ($1, $2, …) where SQLite takes ?. The package's queries
// hold no ? inside a literal.
func (s *DB) rebind(q string) string {
	if s.d != postgresDialect {
		return q
	}
	if v, ok := rebinds.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	rebinds.Store(q, b.String())
	return b.String()
}

// txn is a transaction of one DB; its queries are rebound for the
// dialect.
type txn struct {
	tx *sql.Tx
	s  *DB
}

func (t *txn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.s.rebind(q), args...)
}

func (t *txn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, t.s.rebind(q), args...)
}

func (t *txn) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.s.rebind(q), args...)
}

// user is the user whose rows the transaction reads and writes.
func (t *txn) user() string { return t.s.user }

// seal seals a secret of the DB's user.
func (s *DB) seal(k SecretKey, plaintext []byte) ([]byte, error) {
	return s.sealer.seal(s.user, k, plaintext)
}

// open opens a secret of the DB's user.
func (s *DB) open(k SecretKey, blob []byte) ([]byte, error) {
	return s.sealer.open(s.user, k, blob)
}

// Revision returns the store's write counter (for a gateway user, the
// user's). Every committed write, by any process, increments it by
// exactly one.
func (s *DB) Revision(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, fmt.Errorf("store: revision: %w", ErrClosed)
	}
	q, args := `SELECT revision FROM meta WHERE id = 1`, []any(nil)
	if s.d == postgresDialect {
		q, args = `SELECT revision FROM users WHERE id = ?`, []any{s.user}
	}
	var rev int64
	err := s.db.QueryRowContext(ctx, s.rebind(q), args...).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrUserRemoved
	}
	if err != nil {
		return 0, fmt.Errorf("store: revision: %w", err)
	}
	return rev, nil
}

// Close stops the change poller and closes every subscriber channel, and,
// for a personal store, the database. A gateway user's DB leaves the
// database to its Postgres. It is idempotent; later calls return the
// first call's result. Locks still held stay held until their unlock
// functions run.
func (s *DB) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cancel()
		s.feed.close()
		if s.pg != nil {
			s.pg.forget(s)
			return
		}
		s.closeErr = s.db.Close()
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("store: close database: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// readTx runs fn in a read-only transaction, so everything fn reads comes
// from one snapshot.
func (s *DB) readTx(ctx context.Context, fn func(tx *txn) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if s.d == postgresDialect {
		// PostgreSQL's default, read committed, takes a snapshot per
		// statement; SQLite's read transaction is one snapshot.
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return s.unavailable(err)
	}
	defer tx.Rollback()
	if err := fn(&txn{tx: tx, s: s}); err != nil {
		return s.unavailable(err)
	}
	return tx.Commit()
}

// writeTx runs fn in a write transaction. If fn reports a change, the
// revision is incremented in the same transaction, and after the commit
// the change (with the new revision) goes to this process's subscribers;
// in PostgreSQL the transaction also notifies the user's id to the other
// processes on the database (pgfeed.go).
// A nil change from fn means nothing was modified: no revision, no event.
//
// A user's write transactions never interleave: SQLite takes the file's
// write lock at BEGIN (IMMEDIATE); in PostgreSQL the transaction first
// locks the user's row, which also makes a removed user's writes fail
// with ErrUserRemoved.
func (s *DB) writeTx(ctx context.Context, fn func(tx *txn) (*Change, error)) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", s.unavailable(err))
	}
	defer sqlTx.Rollback()
	tx := &txn{tx: sqlTx, s: s}
	bump := `UPDATE meta SET revision = revision + 1 WHERE id = 1 RETURNING revision`
	var args []any
	if s.d == postgresDialect {
		var one int
		err := tx.queryRow(ctx, `SELECT 1 FROM users WHERE id = ? FOR UPDATE`, s.user).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrUserRemoved
		}
		if err != nil {
			return fmt.Errorf("lock user: %w", err)
		}
		// The notification goes to every process listening on the
		// database when (and only if) the transaction commits: the
		// change feed of the other replicas (pgfeed.go).
		bump, args = `UPDATE users SET revision = revision + 1 WHERE id = ? RETURNING revision, pg_notify('`+feedChannel+`', id)::text`, []any{s.user}
	}
	ch, err := fn(tx)
	if err != nil {
		return s.unavailable(err)
	}
	if ch == nil {
		// A failed commit is not "nothing was written": the database
		// may have committed before the connection went.
		return sqlTx.Commit()
	}
	dest := []any{&ch.Revision}
	if s.d == postgresDialect {
		var notified string // pg_notify's void, as text
		dest = append(dest, &notified)
	}
	if err := tx.queryRow(ctx, bump, args...).Scan(dest...); err != nil {
		return fmt.Errorf("bump revision: %w", err)
	}
	// Tell the poller this revision is ours before it can become visible,
	// so it is not reported a second time as another process's write.
	s.feed.markOwn(ch.Revision)
	if err := sqlTx.Commit(); err != nil {
		s.feed.unmarkOwn(ch.Revision)
		return fmt.Errorf("commit: %w", err)
	}
	s.feed.publish(*ch)
	return nil
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// serverOrder is the ORDER BY of server listings: oldest first, and in
// the order of insertion within one millisecond.
func (s *DB) serverOrder() string {
	if s.d == postgresDialect {
		return `created, seq`
	}
	return `created, rowid`
}
