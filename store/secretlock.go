package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// ErrSecretChanged: a SecretLock's write was refused because the secret
// is no longer the one that was locked (another writer replaced or
// removed it after the lock was lost). Nothing was written.
var ErrSecretChanged = errors.New("the secret was replaced or removed by another writer after it was locked; the new value was not written")

// secretRetry is how often SecretLock.Commit tries its compare-and-set
// write again while PostgreSQL cannot be reached.
const secretRetry = 250 * time.Millisecond

// maxRowLocks is how many SecretLocks one process holds at once in
// PostgreSQL: each keeps a pooled connection (OpenPostgres allows 16)
// for as long as its holder's HTTP request lasts. Many tokens expiring
// together would otherwise take the whole pool, and the rest of the
// process (and a holder reading something else meanwhile) would wait
// for a connection that only a finished refresh gives back. The others
// wait for a slot, as they would for the lock of a busy server.
const maxRowLocks = 8

// rowSlots counts a process's SecretLocks in PostgreSQL (maxRowLocks).
type rowSlots struct {
	once sync.Once
	ch   chan struct{}
}

func (r *rowSlots) slots() chan struct{} {
	r.once.Do(func() { r.ch = make(chan struct{}, maxRowLocks) })
	return r.ch
}

// SecretLock is one secret held for a read-modify-write that may take a
// network round trip in the middle: an OAuth refresh reads the refresh
// token, spends it at the authorization server, and stores the rotated
// one (SPEC §9 A11: refresh single-flight by row lock). Whoever holds the
// lock of a secret is the only LockSecret holder of that secret in every
// process on the database, and what it read stays the current value
// until it commits.
//
// Replace and Delete only record the write; Commit makes it, then
// releases the lock. Release without Commit writes nothing. A SecretLock
// is used by one goroutine; Release may be deferred after Commit.
type SecretLock struct {
	s     *DB
	k     SecretKey
	value []byte // the secret, opened
	blob  []byte // the secret, sealed, as read under the lock

	// PostgreSQL: the transaction that holds the row, and the end of its
	// time bound.
	tx     *sql.Tx
	txCtx  context.Context
	cancel context.CancelFunc

	// SQLite: the advisory (flock) lock of the secret.
	unlock func()

	op    secretOp
	next  []byte // the sealed new value, for opReplace
	ended bool
}

type secretOp uint8

const (
	opNone secretOp = iota
	opReplace
	opDelete
)

// LockSecret locks the secret k and reads it, waiting while another
// holder has it or until ctx ends. A missing secret is ErrNotFound, with
// nothing held: there is no row to lock, and nothing to spend. (An
// anchor row, such as the server's, would be held by every edit of the
// server, and would not single out the binding.) A caller that must
// exclude a writer creating the secret takes an advisory lock (Lock) as
// well; OAuth does, and its sign-in stores refresh tokens under it.
//
// In a gateway's PostgreSQL database the lock is the secret's row,
// locked by SELECT … FOR UPDATE in a transaction of its own; the
// replacement is written in that transaction, so a refresh token is
// spent by one process at a time and its successor is stored before
// anyone else can read the row. Only the row is held, not the user's
// write lock (writeTx): other writes of the user go on, and one that
// touches this row (a sign-in, a removed server) waits for the commit
// instead of deadlocking with it. ctx bounds only the wait for the
// lock; once taken, it is held until Commit or Release, or for at most
// hold: then the transaction is rolled back, by this process and by
// PostgreSQL itself (idle_in_transaction_session_timeout, so a frozen
// process does not hold it either).
//
// While holding the lock, the holder must not wait for a write of the
// same user through another connection (writeTx: PutSecret, DeleteSecret,
// …): a writer holding the user's write lock may be waiting for the row,
// and PostgreSQL cannot see that cycle, which goes through this process.
// Reads are fine. A process holds at most maxRowLocks at once, each on a
// pooled connection of its own.
//
// If the transaction is lost before Commit (its connection was killed,
// PostgreSQL restarted, hold passed), Commit still writes, as a
// compare-and-set on the sealed value that was read: the new value is
// stored only if the secret is still exactly the one locked (else
// ErrSecretChanged), and while PostgreSQL cannot be reached the write is
// tried again until Commit's ctx ends. So a rotated refresh token is not
// lost to a dropped connection. What the row lock can no longer do then
// is keep others out between the loss and the write: OAuth also holds an
// advisory lock, on another connection, for that.
//
// In a personal (SQLite) store, FOR UPDATE does not exist, and a write
// transaction held across an HTTP request would block every other write
// to the file. There the lock is an advisory lock of this secret's own
// (Lock), the value is read after taking it, and Commit writes with the
// same compare-and-set.
func (s *DB) LockSecret(ctx context.Context, k SecretKey, hold time.Duration) (*SecretLock, error) {
	if err := checkSecretKey(k); err != nil {
		return nil, fmt.Errorf("store: lock %s: %w", describeKey(k), err)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("store: lock %s: %w", describeKey(k), ErrClosed)
	}
	if hold <= 0 {
		return nil, fmt.Errorf("store: lock %s: hold %v is not positive", describeKey(k), hold)
	}
	var l *SecretLock
	var err error
	if s.d == postgresDialect {
		l, err = s.lockSecretRow(ctx, k, hold)
	} else {
		l, err = s.lockSecretFile(ctx, k)
	}
	if err != nil {
		return nil, fmt.Errorf("store: lock %s: %w", describeKey(k), err)
	}
	value, err := s.open(k, l.blob)
	if err != nil {
		l.Release()
		return nil, err
	}
	l.value = value
	return l, nil
}

// lockSecretRow begins the transaction and locks the row. The key check
// record and the transaction's idle timeout come with the same statement:
// taking the lock is one round trip after BEGIN.
func (s *DB) lockSecretRow(ctx context.Context, k SecretKey, hold time.Duration) (*SecretLock, error) {
	slots := s.pg.rows.slots()
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	txCtx, cancelTx := context.WithTimeout(context.WithoutCancel(ctx), hold)
	cancel := sync.OnceFunc(func() { cancelTx(); <-slots })
	// Until the lock is taken, the caller giving up ends the transaction
	// (and the wait); afterwards only Commit, Release or hold do.
	stop := context.AfterFunc(ctx, cancel)
	fail := func(err error) (*SecretLock, error) {
		stop()
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, s.unavailable(err)
	}
	tx, err := s.db.BeginTx(txCtx, nil)
	if err != nil {
		return fail(fmt.Errorf("begin: %w", err))
	}
	var blob, check []byte
	err = tx.QueryRowContext(txCtx, s.rebind(`SELECT sealed, (SELECT key_check FROM meta WHERE id = 1), set_config('idle_in_transaction_session_timeout', ?, true)
		FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ? FOR UPDATE`),
		strconv.FormatInt(hold.Milliseconds(), 10), s.user, k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer).Scan(&blob, &check, new(string))
	if errors.Is(err, sql.ErrNoRows) {
		tx.Rollback()
		stop()
		cancel()
		return nil, ErrNotFound
	}
	if err != nil {
		tx.Rollback()
		return fail(fmt.Errorf("lock the row: %w", err))
	}
	if !stop() {
		// ctx ended while the row was being locked: cancel has run.
		tx.Rollback()
		return nil, ctx.Err()
	}
	if !bytes.Equal(check, s.keyCheck) {
		tx.Rollback()
		cancel()
		return nil, fmt.Errorf("another process re-created the key file %s since this one opened the store, so this process's key is no longer the store's; restart this remotemcp process: %w", s.keyPath(), ErrWrongKey)
	}
	return &SecretLock{s: s, k: k, blob: blob, tx: tx, txCtx: txCtx, cancel: cancel}, nil
}

// lockSecretFile takes the secret's advisory lock and reads the secret
// after it.
func (s *DB) lockSecretFile(ctx context.Context, k SecretKey) (*SecretLock, error) {
	unlock, err := s.Lock(ctx, secretLockName(k))
	if err != nil {
		return nil, err
	}
	var blob []byte
	err = s.readTx(ctx, func(tx *txn) error {
		return tx.queryRow(ctx, `SELECT sealed FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`,
			tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer).Scan(&blob)
	})
	if errors.Is(err, sql.ErrNoRows) {
		unlock()
		return nil, ErrNotFound
	}
	if err != nil {
		unlock()
		return nil, fmt.Errorf("read: %w", err)
	}
	return &SecretLock{s: s, k: k, blob: blob, unlock: unlock}, nil
}

// secretLockName is the advisory lock of one secret. The key is hashed:
// a resource and an issuer can be long URLs, and the name becomes a file
// name in a personal store.
func secretLockName(k SecretKey) string {
	h := sha256.New()
	for _, part := range []string{k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return "secret-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// Value returns the secret as it was when the lock was taken; no one has
// changed it through LockSecret since.
func (l *SecretLock) Value() []byte { return l.value }

// Replace makes Commit store value in place of the locked secret.
func (l *SecretLock) Replace(value []byte) error {
	if l.ended {
		return fmt.Errorf("store: replace %s: the lock was released", describeKey(l.k))
	}
	blob, err := l.s.seal(l.k, value)
	if err != nil {
		return fmt.Errorf("store: replace %s: %w", describeKey(l.k), err)
	}
	l.op, l.next = opReplace, blob
	return nil
}

// Delete makes Commit remove the locked secret.
func (l *SecretLock) Delete() {
	if !l.ended {
		l.op, l.next = opDelete, nil
	}
}

// Commit makes the write recorded by Replace or Delete, if any, and
// releases the lock. In PostgreSQL the write goes into the locking
// transaction; if that transaction is gone, it is made as a
// compare-and-set (see LockSecret), retried while PostgreSQL cannot be
// reached until ctx ends. ErrSecretChanged: the secret had been changed
// by another writer meanwhile, and a replacement was not written (a
// deletion of a secret already changed or gone is simply done).
func (l *SecretLock) Commit(ctx context.Context) error {
	if l.ended {
		return fmt.Errorf("store: commit %s: the lock was released", describeKey(l.k))
	}
	defer l.Release()
	if l.op == opNone {
		return nil
	}
	s := l.s
	if l.tx != nil {
		err := l.commitTx()
		if err == nil {
			// The user's revision is bumped after the row is released,
			// never while holding it (see LockSecret), so that the
			// change is reported like any other write of the user.
			if err := s.writeTx(ctx, func(*txn) (*Change, error) {
				return &Change{Kind: ChangeSecrets, ServerID: l.k.ServerID}, nil
			}); err != nil {
				s.log.Warn("store: a locked secret was written, but the revision that reports it was not", "server", l.k.ServerID, "purpose", l.k.Purpose, "err", err)
			}
			return nil
		}
		// End it for sure before writing through another connection,
		// which would otherwise wait for our own row lock.
		l.cancel()
		_ = l.tx.Rollback()
		s.log.Warn("store: the transaction holding a secret's row was lost; writing it by compare-and-set", "server", l.k.ServerID, "purpose", l.k.Purpose, "err", err)
	}
	for {
		err := s.compareAndSet(ctx, l.k, l.blob, l.next)
		if err == nil {
			return nil
		}
		if !errors.Is(s.unavailable(err), ErrUnavailable) || ctx.Err() != nil {
			return fmt.Errorf("store: commit %s: %w", describeKey(l.k), err)
		}
		if sleepCtx(ctx, secretRetry) != nil {
			return fmt.Errorf("store: commit %s: %w", describeKey(l.k), err)
		}
	}
}

// commitTx writes in the locking transaction and commits it.
func (l *SecretLock) commitTx() error {
	ctx := l.txCtx
	var err error
	if l.op == opReplace {
		_, err = l.tx.ExecContext(ctx, l.s.rebind(`UPDATE secrets SET sealed = ?, updated = ? WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`),
			l.next, nowMillis(), l.s.user, l.k.ServerID, l.k.Purpose, l.k.Binding.Resource, l.k.Binding.Issuer)
	} else {
		_, err = l.tx.ExecContext(ctx, l.s.rebind(`DELETE FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`),
			l.s.user, l.k.ServerID, l.k.Purpose, l.k.Binding.Resource, l.k.Binding.Issuer)
	}
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := l.tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// compareAndSet replaces (next != nil) or deletes (next == nil) the
// secret k if it is still sealed as old, in a write transaction of its
// own. A replacement that finds next already stored is done: the commit
// of the locking transaction went through although its answer was lost.
func (s *DB) compareAndSet(ctx context.Context, k SecretKey, old, next []byte) error {
	return s.writeTx(ctx, func(tx *txn) (*Change, error) {
		ch := &Change{Kind: ChangeSecrets, ServerID: k.ServerID}
		if next == nil {
			res, err := tx.exec(ctx, `DELETE FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ? AND sealed = ?`,
				tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer, old)
			if err != nil {
				return nil, err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return nil, err
			}
			return ch, nil
		}
		if err := s.keyUnchanged(ctx, tx); err != nil {
			return nil, err
		}
		res, err := tx.exec(ctx, `UPDATE secrets SET sealed = ?, updated = ? WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ? AND sealed = ?`,
			next, nowMillis(), tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer, old)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 1 {
			return ch, nil
		}
		var cur []byte
		err = tx.queryRow(ctx, `SELECT sealed FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`,
			tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer).Scan(&cur)
		if err == nil && bytes.Equal(cur, next) {
			return ch, nil // written by the lost transaction; its revision is still owed
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, ErrSecretChanged
	})
}

// Release ends the lock without writing (after Commit, it does nothing).
// It is safe to call more than once.
func (l *SecretLock) Release() {
	if l.ended {
		return
	}
	l.ended = true
	if l.tx != nil {
		_ = l.tx.Rollback()
		l.cancel()
	}
	if l.unlock != nil {
		l.unlock()
	}
}
