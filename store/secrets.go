package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// PutSecret seals value for k and stores it, replacing any value under the
// same key. The server must exist (ErrNotFound otherwise): secrets live and
// die with their server.
func (s *DB) PutSecret(ctx context.Context, k SecretKey, value []byte) error {
	if err := checkSecretKey(k); err != nil {
		return fmt.Errorf("store: put %s: %w", describeKey(k), err)
	}
	if s.closed.Load() {
		return fmt.Errorf("store: put %s: %w", describeKey(k), ErrClosed)
	}
	blob, err := s.seal(k, value)
	if err != nil {
		return err
	}
	err = s.writeTx(ctx, func(tx *txn) (*Change, error) {
		var one int
		err := tx.queryRow(ctx, `SELECT 1 FROM servers WHERE user_id = ? AND id = ?`, tx.user(), k.ServerID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("no server %q: %w", k.ServerID, ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		if err := s.insertSecrets(ctx, tx, []sealedSecret{{key: k, blob: blob}}, nowMillis()); err != nil {
			return nil, err
		}
		return &Change{Kind: ChangeSecrets, ServerID: k.ServerID}, nil
	})
	if err != nil {
		return fmt.Errorf("store: put %s: %w", describeKey(k), err)
	}
	return nil
}

// GetSecret opens the secret stored under k. ErrNotFound if there is none;
// an error wrapping ErrSealOpen if it cannot be opened.
func (s *DB) GetSecret(ctx context.Context, k SecretKey) ([]byte, error) {
	var blob []byte
	err := s.readTx(ctx, func(tx *txn) error {
		return tx.queryRow(ctx, `SELECT sealed FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`,
			tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer).Scan(&blob)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: get %s: %w", describeKey(k), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get %s: %w", describeKey(k), err)
	}
	return s.open(k, blob)
}

// DeleteSecret removes the secret under k. Deleting a secret that does not
// exist is not an error (callers drop tokens on failure paths and should
// not have to care whether one was stored); it publishes no change.
func (s *DB) DeleteSecret(ctx context.Context, k SecretKey) error {
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		res, err := tx.exec(ctx, `DELETE FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`,
			tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 0 {
			return nil, nil
		}
		return &Change{Kind: ChangeSecrets, ServerID: k.ServerID}, nil
	})
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", describeKey(k), err)
	}
	return nil
}

// ListSecrets returns the keys (never the values) of the secrets stored
// for a server, so a caller can find, say, the refresh tokens of bindings
// it no longer uses and delete them.
func (s *DB) ListSecrets(ctx context.Context, serverID string) ([]SecretKey, error) {
	var out []SecretKey
	err := s.readTx(ctx, func(tx *txn) error {
		out = nil
		rows, err := tx.query(ctx, `SELECT purpose, resource, issuer FROM secrets WHERE user_id = ? AND server_id = ? ORDER BY purpose, resource, issuer`, tx.user(), serverID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			k := SecretKey{ServerID: serverID}
			if err := rows.Scan(&k.Purpose, &k.Binding.Resource, &k.Binding.Issuer); err != nil {
				return err
			}
			out = append(out, k)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: list secrets of server %q: %w", serverID, err)
	}
	return out, nil
}

func checkSecretKey(k SecretKey) error {
	switch {
	case k.ServerID == "":
		return errors.New("empty server id")
	case k.Purpose == "":
		return errors.New("empty purpose")
	}
	return nil
}
