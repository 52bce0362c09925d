package store

import (
	"context"
	"fmt"
)

// Bulk reads for listings of every server: one query each instead of one
// per server (a live server list is rebuilt on every change; issue #21).

// IDRevision is a server's id and revision (see GetServerRevision).
type IDRevision struct {
	ID       string
	Revision int64
}

// ServerRevisions returns the id and revision of every server, oldest
// first (the order of ListServers), in one query that opens no secret.
func (s *DB) ServerRevisions(ctx context.Context) ([]IDRevision, error) {
	var out []IDRevision
	err := s.readTx(ctx, func(tx *txn) error {
		out = out[:0]
		rows, err := tx.query(ctx, `SELECT id, revision FROM servers WHERE user_id = ? ORDER BY `+s.serverOrder(), tx.user())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r IDRevision
			if err := rows.Scan(&r.ID, &r.Revision); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: server revisions: %w", err)
	}
	return out, nil
}

// AllHeldHashes is HeldHashes of every server that has held tools, by
// server id, in one query.
func (s *DB) AllHeldHashes(ctx context.Context) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	err := s.readTx(ctx, func(tx *txn) error {
		clear(out)
		rows, err := tx.query(ctx, `SELECT server_id, tool, held_hash FROM tool_pins WHERE user_id = ? AND held_hash IS NOT NULL`, tx.user())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, tool, hash string
			if err := rows.Scan(&id, &tool, &hash); err != nil {
				return err
			}
			if out[id] == nil {
				out[id] = map[string]string{}
			}
			out[id][tool] = hash
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the held tools: %w", err)
	}
	return out, nil
}
