package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/remotemcp/remotemcp/config"
)

// ErrSharedSecret: a shared server may not carry a secret. Each person
// signs in to a shared server with their own account; a bearer token,
// client secret or header value would be one secret for all of them.
var ErrSharedSecret = errors.New("a server shared with everyone carries no secret (no bearer token, client secret or header values): each person signs in with their own account")

// SharedServers returns the servers the admins share with everyone,
// oldest first.
func (p *Postgres) SharedServers(ctx context.Context) ([]config.Server, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT id, config FROM shared_servers ORDER BY created, id`)
	if err != nil {
		return nil, fmt.Errorf("store: list shared servers: %w", p.root.unavailable(err))
	}
	defer rows.Close()
	var out []config.Server
	for rows.Next() {
		var id, js string
		if err := rows.Scan(&id, &js); err != nil {
			return nil, fmt.Errorf("store: list shared servers: %w", err)
		}
		srv, err := decodeServer(id, js)
		if err != nil {
			return nil, fmt.Errorf("store: list shared servers: %w", err)
		}
		out = append(out, srv)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list shared servers: %w", err)
	}
	return out, nil
}

// PutSharedServer adds or replaces a shared server's definition. It must
// be valid and carry no secret (ErrSharedSecret).
func (p *Postgres) PutSharedServer(ctx context.Context, srv config.Server) error {
	if err := srv.Validate(); err != nil {
		return fmt.Errorf("store: share server %q: invalid config: %w", srv.ID, err)
	}
	if srv.Auth.Token != "" || srv.Auth.ClientSecret != "" || len(srv.Headers) > 0 {
		return fmt.Errorf("store: share server %q: %w", srv.ID, ErrSharedSecret)
	}
	clean := srv.Clone()
	clean.Shared, clean.Enabled = true, true
	js, err := json.Marshal(clean)
	if err != nil {
		return fmt.Errorf("store: share server %q: %w", srv.ID, err)
	}
	now := nowMillis()
	if _, err := p.db.ExecContext(ctx, `INSERT INTO shared_servers (id, config, created, updated) VALUES ($1, $2, $3, $3)
		ON CONFLICT (id) DO UPDATE SET config = excluded.config, updated = excluded.updated`, srv.ID, string(js), now); err != nil {
		return fmt.Errorf("store: share server %q: %w", srv.ID, p.root.unavailable(err))
	}
	return nil
}

// DeleteSharedServer stops sharing a server; ErrNotFound if it is not
// shared.
func (p *Postgres) DeleteSharedServer(ctx context.Context, id string) error {
	res, err := p.db.ExecContext(ctx, `DELETE FROM shared_servers WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: stop sharing server %q: %w", id, p.root.unavailable(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: stop sharing server %q: %w", id, ErrNotFound)
	}
	return nil
}
