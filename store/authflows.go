package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

// OAuth sign-ins shared by a gateway's replicas (SPEC §9 A11, issue #23):
// while a person's sign-in waits for its callback, its record (redirect
// URI, binding, client, PKCE verifier …, opaque here) is kept in
// oauth_flows, so that the authorization server may send the browser back
// to any replica. The row is found by the SHA-256 of the OAuth state (the
// state itself is never stored), belongs to one user, and its record is
// sealed with that user and that state hash in the associated data: a row
// moved to another user or state does not open. A callback is taken once
// (ClaimAuthFlow); the replica that took it records how it ended
// (FinishAuthFlow), which the replica that started the flow learns through
// the change feed. Expired rows are no one's and are purged as new ones
// are written. Only a gateway's database has them: a personal store keeps
// its flows in memory.

// AuthFlowNamespace is the Namespace of the change FinishAuthFlow
// publishes.
const AuthFlowNamespace = "oauth-flows"

// Purposes of the associated data of a flow's sealed parts (never rows of
// the secrets table).
const (
	purposeAuthFlow        = "oauth-flow"
	purposeAuthFlowOutcome = "oauth-flow-outcome"
)

// ErrAuthFlowTaken: the flow's callback was taken already (by this
// replica or another); a second delivery changes nothing.
var ErrAuthFlowTaken = errors.New("the sign-in's callback was received already")

// AuthFlow is a shared sign-in as the store holds it, opened.
type AuthFlow struct {
	ServerID string
	// Record is what PutAuthFlow stored.
	Record  []byte
	Expires time.Time
	// Claimed: a replica took the callback.
	Claimed bool
	// Outcome is what FinishAuthFlow stored; nil until then.
	Outcome []byte
}

// AuthStateHash is the key of a flow: the hex SHA-256 of its OAuth state.
func AuthStateHash(state string) string {
	h := sha256.Sum256([]byte(state))
	return hex.EncodeToString(h[:])
}

// authFlowKey is the associated data of a flow's sealed parts.
func authFlowKey(purpose, serverID, hash string) SecretKey {
	return SecretKey{Purpose: purpose, ServerID: serverID, Binding: config.Binding{Resource: hash}}
}

// sharedFlows refuses a store that is not a gateway user's.
func (s *DB) sharedFlows(step string) error {
	if s.pg == nil || s.user == "" {
		return fmt.Errorf("store: %s: sign-in flows are shared only in a gateway's database", step)
	}
	if s.closed.Load() {
		return fmt.Errorf("store: %s: %w", step, ErrClosed)
	}
	return nil
}

// PutAuthFlow records the user's sign-in of serverID waiting for the
// callback with state, until expires; record is sealed. A flow of the
// same state is replaced. Expired flows of anyone are purged on the way.
func (s *DB) PutAuthFlow(ctx context.Context, state, serverID string, record []byte, expires time.Time) error {
	const step = "record a sign-in"
	if err := s.sharedFlows(step); err != nil {
		return err
	}
	hash := AuthStateHash(state)
	blob, err := s.seal(authFlowKey(purposeAuthFlow, serverID, hash), record)
	if err != nil {
		return fmt.Errorf("store: %s: %w", step, err)
	}
	now := nowMillis()
	err = s.writeTx(ctx, func(tx *txn) (*Change, error) {
		if _, err := tx.exec(ctx, `DELETE FROM oauth_flows WHERE expires <= ?`, now); err != nil {
			return nil, fmt.Errorf("purge expired: %w", err)
		}
		// A state is random (130 bits): the same one twice is the same
		// flow's, and never another user's to replace.
		res, err := tx.exec(ctx, `INSERT INTO oauth_flows (state_hash, user_id, server_id, sealed, expires) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (state_hash) DO UPDATE SET server_id = excluded.server_id,
				sealed = excluded.sealed, expires = excluded.expires, claimed = NULL, outcome = NULL
			WHERE oauth_flows.user_id = excluded.user_id`,
			hash, tx.user(), serverID, blob, expires.UnixMilli())
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return nil, fmt.Errorf("the state is another user's flow's: %w", ErrDuplicate)
		}
		return nil, nil
	})
	if err != nil {
		return fmt.Errorf("store: %s of server %q: %w", step, serverID, err)
	}
	return nil
}

// ClaimAuthFlow takes the callback of the user's flow with state, once:
// ErrNotFound when the user has no such flow (or it expired),
// ErrAuthFlowTaken when it was taken before. Two replicas claiming at
// once: one wins.
func (s *DB) ClaimAuthFlow(ctx context.Context, state string) (AuthFlow, error) {
	const step = "take a sign-in's callback"
	if err := s.sharedFlows(step); err != nil {
		return AuthFlow{}, err
	}
	hash := AuthStateHash(state)
	now := nowMillis()
	var (
		f       AuthFlow
		blob    []byte
		expires int64
		taken   bool
	)
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		err := tx.queryRow(ctx, `UPDATE oauth_flows SET claimed = ?
			WHERE state_hash = ? AND user_id = ? AND claimed IS NULL AND expires > ?
			RETURNING server_id, sealed, expires`, now, hash, tx.user(), now).Scan(&f.ServerID, &blob, &expires)
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		err = tx.queryRow(ctx, `SELECT true FROM oauth_flows WHERE state_hash = ? AND user_id = ? AND expires > ?`,
			hash, tx.user(), now).Scan(&taken)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, err
	})
	switch {
	case errors.Is(err, ErrNotFound):
		return AuthFlow{}, fmt.Errorf("store: %s: %w", step, ErrNotFound)
	case err != nil:
		return AuthFlow{}, fmt.Errorf("store: %s: %w", step, err)
	case taken:
		return AuthFlow{}, fmt.Errorf("store: %s: %w", step, ErrAuthFlowTaken)
	}
	if f.Record, err = s.open(authFlowKey(purposeAuthFlow, f.ServerID, hash), blob); err != nil {
		return AuthFlow{}, fmt.Errorf("store: %s: %w", step, err)
	}
	f.Expires, f.Claimed = time.UnixMilli(expires), true
	return f, nil
}

// GetAuthFlow reads the user's flow with state: ErrNotFound when there is
// none (or it expired).
func (s *DB) GetAuthFlow(ctx context.Context, state string) (AuthFlow, error) {
	const step = "read a sign-in"
	if err := s.sharedFlows(step); err != nil {
		return AuthFlow{}, err
	}
	hash := AuthStateHash(state)
	var (
		f             AuthFlow
		blob, outcome []byte
		expires       int64
		claimed       sql.NullInt64
	)
	err := s.readTx(ctx, func(tx *txn) error {
		return tx.queryRow(ctx, `SELECT server_id, sealed, expires, claimed, outcome FROM oauth_flows
			WHERE state_hash = ? AND user_id = ? AND expires > ?`, hash, tx.user(), nowMillis()).Scan(&f.ServerID, &blob, &expires, &claimed, &outcome)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return AuthFlow{}, fmt.Errorf("store: %s: %w", step, ErrNotFound)
	}
	if err != nil {
		return AuthFlow{}, fmt.Errorf("store: %s: %w", step, err)
	}
	if f.Record, err = s.open(authFlowKey(purposeAuthFlow, f.ServerID, hash), blob); err != nil {
		return AuthFlow{}, fmt.Errorf("store: %s: %w", step, err)
	}
	if outcome != nil {
		if f.Outcome, err = s.open(authFlowKey(purposeAuthFlowOutcome, f.ServerID, hash), outcome); err != nil {
			return AuthFlow{}, fmt.Errorf("store: %s: %w", step, err)
		}
	}
	f.Expires, f.Claimed = time.UnixMilli(expires), claimed.Valid
	return f, nil
}

// FinishAuthFlow records how the user's claimed flow with state ended
// (outcome, sealed) and keeps it until keep has passed, for the replica
// that started it, which learns of it through the change feed (a change
// of AuthFlowNamespace here, a re-read elsewhere). ErrNotFound when there
// is no such claimed flow.
func (s *DB) FinishAuthFlow(ctx context.Context, state string, outcome []byte, keep time.Duration) error {
	const step = "record how a sign-in ended"
	if err := s.sharedFlows(step); err != nil {
		return err
	}
	hash := AuthStateHash(state)
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		var serverID string
		err := tx.queryRow(ctx, `SELECT server_id FROM oauth_flows WHERE state_hash = ? AND user_id = ? AND claimed IS NOT NULL`,
			hash, tx.user()).Scan(&serverID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, err
		}
		blob, err := s.seal(authFlowKey(purposeAuthFlowOutcome, serverID, hash), outcome)
		if err != nil {
			return nil, err
		}
		if _, err := tx.exec(ctx, `UPDATE oauth_flows SET outcome = ?, expires = ? WHERE state_hash = ? AND user_id = ?`,
			blob, time.Now().Add(keep).UnixMilli(), hash, tx.user()); err != nil {
			return nil, err
		}
		return &Change{Kind: ChangeOther, ServerID: serverID, Namespace: AuthFlowNamespace}, nil
	})
	if err != nil {
		return fmt.Errorf("store: %s: %w", step, err)
	}
	return nil
}

// DeleteAuthFlow forgets the user's flow with state (none: no error).
func (s *DB) DeleteAuthFlow(ctx context.Context, state string) error {
	const step = "forget a sign-in"
	if err := s.sharedFlows(step); err != nil {
		return err
	}
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		_, err := tx.exec(ctx, `DELETE FROM oauth_flows WHERE state_hash = ? AND user_id = ?`, AuthStateHash(state), tx.user())
		return nil, err
	})
	if err != nil {
		return fmt.Errorf("store: %s: %w", step, err)
	}
	return nil
}

// AuthFlowUser returns the user whose sign-in waits for the callback with
// state (or was completed and not yet forgotten): how a replica that
// did not start it finds whose it is. ErrNotFound for a state no
// unexpired flow has.
func (p *Postgres) AuthFlowUser(ctx context.Context, state string) (string, error) {
	var user string
	err := p.db.QueryRowContext(ctx, `SELECT user_id FROM oauth_flows WHERE state_hash = $1 AND expires > $2`,
		AuthStateHash(state), nowMillis()).Scan(&user)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: find a sign-in's user: %w", ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: find a sign-in's user: %w", p.root.unavailable(err))
	}
	return user, nil
}
