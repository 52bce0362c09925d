package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
)

// The key check (issue #10): a replaced key file must not go on sealing
// new secrets, or the store ends up holding secrets under two keys and
// whichever key is restored later loses the others. So the store keeps a
// record sealed under its key (meta.key_check), and Open refuses a key
// file that cannot open it before anything is written.

// keyCheckKey is the associated data of the key check record. No secret
// has an empty server id (checkSecretKey refuses it), so no sealed secret
// can be moved into the record's place, or the record into a secret's.
var keyCheckKey = SecretKey{Purpose: "remotemcp/key-check"}

// keyCheckText is what the record seals. GCM's tag already proves the key;
// comparing the text as well costs nothing.
const keyCheckText = "remotemcp key check v1"

// sealKeyCheck returns a new key check record under s's key.
func (s *sealer) sealKeyCheck() ([]byte, error) {
	return s.seal("", keyCheckKey, []byte(keyCheckText))
}

// openKeyCheck reports whether blob is a key check record sealed under
// s's key; any other blob is an error wrapping ErrSealOpen.
func (s *sealer) openKeyCheck(blob []byte) error {
	pt, err := s.open("", keyCheckKey, blob)
	if err != nil {
		return fmt.Errorf("key check record: %w", err)
	}
	if string(pt) != keyCheckText {
		return fmt.Errorf("key check record: unexpected content: %w", ErrSealOpen)
	}
	return nil
}

func (s *DB) keyPath() string { return filepath.Join(s.dir, keyFileName) }

// checkKey refuses, before Open writes anything, a key that is not the
// store's: one that cannot open the key check record or, in a store from
// before the record (schema < 3), any of its sealed secrets. key is nil
// when the key file is missing; that is refused only if sealed secrets
// need the key.
func (s *DB) checkKey(ctx context.Context, key []byte, version int) error {
	var sl *sealer
	if key != nil {
		var err error
		if sl, err = newSealer(key); err != nil {
			return err
		}
	}
	var (
		check []byte
		n     int
		opens bool
	)
	err := s.readTx(ctx, func(tx *txn) error {
		if version >= keyCheckSchema {
			if err := tx.queryRow(ctx, `SELECT key_check FROM meta WHERE id = 1`).Scan(&check); err != nil {
				return fmt.Errorf("read key check record: %w", err)
			}
		}
		if err := tx.queryRow(ctx, `SELECT count(*) FROM secrets`).Scan(&n); err != nil {
			return fmt.Errorf("count secrets: %w", err)
		}
		if sl != nil && check == nil && n > 0 {
			var err error
			opens, err = opensASecret(ctx, tx, sl)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: open database %s: check key: %w", s.path, err)
	}
	switch {
	case sl == nil && n > 0:
		return s.missingKeyError(n)
	case sl == nil:
		return nil // ensureKeyCheck re-seals the record under the new key
	case check != nil:
		if sl.openKeyCheck(check) != nil {
			return s.wrongKeyError(n, "it cannot open the store's key check record")
		}
	case n > 0 && !opens:
		return s.wrongKeyError(n, fmt.Sprintf("it opens none of the store's %d sealed secret(s)", n))
	}
	return nil
}

// opensASecret reports whether sl opens at least one stored secret. One
// is enough: a key that opens any secret is the store's, and the others
// may have been tampered with or sealed by the key-mixing bug this check
// ends.
func opensASecret(ctx context.Context, tx *txn, sl *sealer) (bool, error) {
	// A personal store's secrets are all LocalUser's, and one older than
	// schema 6 has no user_id column yet (this runs before migrating).
	q := `SELECT user_id, server_id, purpose, resource, issuer, sealed FROM secrets`
	if tx.s.d == sqliteDialect {
		q = `SELECT 'local', server_id, purpose, resource, issuer, sealed FROM secrets`
	}
	rows, err := tx.query(ctx, q)
	if err != nil {
		return false, fmt.Errorf("read secrets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			user string
			k    SecretKey
			blob []byte
		)
		if err := rows.Scan(&user, &k.ServerID, &k.Purpose, &k.Binding.Resource, &k.Binding.Issuer, &blob); err != nil {
			return false, fmt.Errorf("read secrets: %w", err)
		}
		if _, err := sl.open(user, k, blob); err == nil {
			return true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("read secrets: %w", err)
	}
	return false, nil
}

// ensureKeyCheck runs after the migrations, with s.sealer set: it verifies
// the key check record, or writes it when there is none (a new store, or
// one from before the record whose secrets checkKey found the key opens).
// keyCreated means the key file was missing and Open created it; only then,
// and only while the store holds no sealed secrets, is an existing record
// replaced by one under the new key (the documented way back from a lost
// key for a store with nothing sealed). Processes still holding the old
// key are stopped from sealing by keyUnchanged.
//
// It runs in a write transaction, so processes opening the store at once
// agree on one record. The write is not a store revision: nothing a
// subscriber reads has changed.
func (s *DB) ensureKeyCheck(ctx context.Context, keyCreated bool) error {
	fail := func(err error) error {
		return fmt.Errorf("store: open database %s: key check record: %w", s.path, err)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer sqlTx.Rollback()
	tx := &txn{tx: sqlTx, s: s}
	if s.d == postgresDialect {
		// Replicas opening a new database at once agree on one record:
		// the meta row is locked until the commit.
		if _, err := tx.exec(ctx, `SELECT 1 FROM meta WHERE id = 1 FOR UPDATE`); err != nil {
			return fail(err)
		}
	}
	var check []byte
	if err := tx.queryRow(ctx, `SELECT key_check FROM meta WHERE id = 1`).Scan(&check); err != nil {
		return fail(err)
	}
	if check != nil && s.sealer.openKeyCheck(check) == nil {
		s.keyCheck = check
		return nil
	}
	var n int
	if err := tx.queryRow(ctx, `SELECT count(*) FROM secrets`).Scan(&n); err != nil {
		return fail(err)
	}
	// checkKey passed, but another process may have written between it
	// and this transaction; decide again under the write lock.
	switch {
	case check != nil && keyCreated && n > 0:
		return s.missingKeyError(n)
	case check != nil && !keyCreated:
		return s.wrongKeyError(n, "it cannot open the store's key check record")
	case check == nil && n > 0:
		opens, err := opensASecret(ctx, tx, s.sealer)
		if err != nil {
			return fail(err)
		}
		if !opens {
			return s.wrongKeyError(n, fmt.Sprintf("it opens none of the store's %d sealed secret(s)", n))
		}
	}
	if check != nil {
		s.log.Warn("store: the key file was missing and the store holds no sealed secrets: created a new key and re-sealed the key check record", "key", s.keyPath())
	}
	blob, err := s.sealer.sealKeyCheck()
	if err != nil {
		return fail(err)
	}
	if _, err := tx.exec(ctx, `UPDATE meta SET key_check = ? WHERE id = 1`, blob); err != nil {
		return fail(err)
	}
	if err := sqlTx.Commit(); err != nil {
		return fail(err)
	}
	s.keyCheck = blob
	return nil
}

// keyUnchanged refuses, inside a write transaction that is about to store
// sealed blobs, if the store's key check record is no longer the one this
// process verified on open: another process found the key file missing,
// created a new one and re-keyed the (then secret-less) store. Sealing
// under the old key now would mix two keys again.
func (s *DB) keyUnchanged(ctx context.Context, tx *txn) error {
	var check []byte
	if err := tx.queryRow(ctx, `SELECT key_check FROM meta WHERE id = 1`).Scan(&check); err != nil {
		return fmt.Errorf("read key check record: %w", err)
	}
	if !bytes.Equal(check, s.keyCheck) {
		return fmt.Errorf("another process re-created the key file %s since this one opened the store, so this process's key is no longer the store's; nothing was written — restart this remotemcp process: %w", s.keyPath(), ErrWrongKey)
	}
	return nil
}

// wrongKeyError explains ErrWrongKey for a key file that is present. why
// says how the key was found wrong; n is the number of sealed secrets.
func (s *DB) wrongKeyError(n int, why string) error {
	if s.d == postgresDialect {
		return fmt.Errorf("store: open PostgreSQL %s: key file %s is not the key its secrets were sealed with (%s); give this gateway the key file of the gateway that created the database (every process serving one database needs the same key file); the %d sealed secret(s) cannot be read without it, and nothing was written: %w",
			s.path, s.keyPath(), why, n, ErrWrongKey)
	}
	if n == 0 {
		return fmt.Errorf("store: open %s: key file %s is not the key this store was created with (%s); restore the key file that was used when the store was created, or, as the store holds no sealed secrets, delete %s to have a new key created (the servers are kept); nothing was written: %w",
			s.dir, s.keyPath(), why, s.keyPath(), ErrWrongKey)
	}
	return fmt.Errorf("store: open %s: key file %s is not the key this store was created with (%s); restore the key file that was used when the store was created, or move the data directory away to start over; the %d sealed secret(s) cannot be read without that key, and nothing was written: %w",
		s.dir, s.keyPath(), why, n, ErrWrongKey)
}

// missingKeyError explains ErrWrongKey for a missing key file.
func (s *DB) missingKeyError(n int) error {
	if s.d == postgresDialect {
		return fmt.Errorf("store: open PostgreSQL %s: key file %s is missing but the database holds %d sealed secret(s); copy the key file of the gateway that created the database to %s (every process serving one database needs the same key file); no new key was created: %w",
			s.path, s.keyPath(), n, s.keyPath(), ErrWrongKey)
	}
	return fmt.Errorf("store: open %s: key file %s is missing but the store holds %d sealed secret(s); restore the key file that was used when the store was created (from where you backed up the data directory), or move the data directory away to start over; the secrets cannot be read without it, so no new key was created: %w",
		s.dir, s.keyPath(), n, ErrWrongKey)
}

// errIsOpenRefusal reports whether err is one of Open's typed refusals,
// which carry their own advice.
func errIsOpenRefusal(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrForeignDatabase) ||
		errors.Is(err, ErrNewerSchema) || errors.Is(err, ErrWrongKey)
}
