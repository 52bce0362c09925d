package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// The kv table holds the records of later packages (host grants,
// elicitation cards, ...) as JSON under a namespace, so they need no schema
// migration of their own. KV values are NOT sealed: keep secrets in the
// secrets API.

// PutKV stores value (which must be valid JSON) under ns/key, replacing any
// previous value, and publishes a ChangeOther with Namespace ns.
func (s *DB) PutKV(ctx context.Context, ns, key string, value []byte) error {
	if err := checkKV(ns, key); err != nil {
		return fmt.Errorf("store: put kv %s/%s: %w", ns, key, err)
	}
	if !json.Valid(value) {
		return fmt.Errorf("store: put kv %s/%s: value is not valid JSON", ns, key)
	}
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		if _, err := tx.exec(ctx, `INSERT INTO kv (user_id, namespace, key, value, updated) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (user_id, namespace, key) DO UPDATE SET value = excluded.value, updated = excluded.updated`,
			tx.user(), ns, key, string(value), nowMillis()); err != nil {
			return nil, err
		}
		return &Change{Kind: ChangeOther, Namespace: ns}, nil
	})
	if err != nil {
		return fmt.Errorf("store: put kv %s/%s: %w", ns, key, err)
	}
	return nil
}

// GetKV returns the value under ns/key; ErrNotFound if there is none.
func (s *DB) GetKV(ctx context.Context, ns, key string) ([]byte, error) {
	var v string
	err := s.readTx(ctx, func(tx *txn) error {
		return tx.queryRow(ctx, `SELECT value FROM kv WHERE user_id = ? AND namespace = ? AND key = ?`, tx.user(), ns, key).Scan(&v)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: get kv %s/%s: %w", ns, key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get kv %s/%s: %w", ns, key, err)
	}
	return []byte(v), nil
}

// ListKV returns every key and value of a namespace (an empty map if none).
func (s *DB) ListKV(ctx context.Context, ns string) (map[string][]byte, error) {
	out := make(map[string][]byte)
	err := s.readTx(ctx, func(tx *txn) error {
		clear(out)
		rows, err := tx.query(ctx, `SELECT key, value FROM kv WHERE user_id = ? AND namespace = ?`, tx.user(), ns)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			out[k] = []byte(v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: list kv %s: %w", ns, err)
	}
	return out, nil
}

// KeysKV returns the keys under ns, without their values.
func (s *DB) KeysKV(ctx context.Context, ns string) ([]string, error) {
	var out []string
	err := s.readTx(ctx, func(tx *txn) error {
		out = out[:0]
		rows, err := tx.query(ctx, `SELECT key FROM kv WHERE user_id = ? AND namespace = ?`, tx.user(), ns)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			out = append(out, k)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: list kv keys %s: %w", ns, err)
	}
	return out, nil
}

// DeleteKV removes ns/key. Deleting a missing key is not an error and
// publishes no change.
func (s *DB) DeleteKV(ctx context.Context, ns, key string) error {
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		res, err := tx.exec(ctx, `DELETE FROM kv WHERE user_id = ? AND namespace = ? AND key = ?`, tx.user(), ns, key)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 0 {
			return nil, nil
		}
		return &Change{Kind: ChangeOther, Namespace: ns}, nil
	})
	if err != nil {
		return fmt.Errorf("store: delete kv %s/%s: %w", ns, key, err)
	}
	return nil
}

// checkKV insists on a namespace, because a Change without one means
// "re-read everything" (Change.RereadAll).
func checkKV(ns, key string) error {
	switch {
	case ns == "":
		return errors.New("empty namespace")
	case key == "":
		return errors.New("empty key")
	}
	return nil
}
