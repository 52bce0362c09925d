package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/remotemcp/remotemcp/config"
)

// Server configs are stored as JSON without their secrets; the bearer token
// and the OAuth client secret are sealed into the secrets table under the
// server's canonical resource, and filled back in on read.

// UpdateOptions modify UpdateServerWith.
type UpdateOptions struct {
	// RebindBearer confirms that the bearer token in the update is meant
	// for the new URL although it equals the token of the old URL. Set it
	// only after an explicit user action (the user re-entered the token
	// for the new URL); without it UpdateServer refuses with
	// ErrBearerRebind.
	RebindBearer bool
}

// ListServers returns every server, oldest first, with its secrets opened.
//
// If some secret cannot be opened (ErrSealOpen: wrong key file, tampered
// data), ListServers still returns all servers, with those secrets empty,
// together with an error wrapping ErrSealOpen that names each of them, so
// the caller can show the servers and ask for the secrets again.
func (s *SQLite) ListServers(ctx context.Context) ([]config.Server, error) {
	var (
		out      []config.Server
		sealErrs error
	)
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		out = nil
		secrets, err := configSecrets(ctx, tx, "")
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, config FROM servers ORDER BY created, rowid`)
		if err != nil {
			return err
		}
		defer rows.Close()
		var errs []error
		for rows.Next() {
			var id, js string
			if err := rows.Scan(&id, &js); err != nil {
				return err
			}
			srv, err := decodeServer(id, js)
			if err != nil {
				return err
			}
			if err := s.fillSecrets(&srv, secrets); err != nil {
				errs = append(errs, err)
			}
			out = append(out, srv)
		}
		sealErrs = errors.Join(errs...)
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: list servers: %w", err)
	}
	return out, sealErrs
}

// GetServer returns one server with its secrets opened; ErrNotFound if
// there is none. Like ListServers, a secret that cannot be opened leaves
// its field empty and GetServer returns the server with an error wrapping
// ErrSealOpen.
func (s *SQLite) GetServer(ctx context.Context, id string) (config.Server, error) {
	srv, _, err := s.GetServerRevision(ctx, id)
	return srv, err
}

// GetServerRevision is GetServer that also returns the server's revision,
// read in the same snapshot as the config (issue #9 CAS).
//
// The revision is per server: AddServer stores revision 1 and every
// successful UpdateServer, UpdateServerWith or EditServer of that server
// increments it by one, so a caller that read revision r can tell whether
// anyone wrote the server since. It is unrelated to Revision, the store-wide
// write counter of the change feed. A server deleted and added again starts
// over at 1. Errors are those of GetServer (including the server with an
// error wrapping ErrSealOpen); the revision is valid whenever the server is.
func (s *SQLite) GetServerRevision(ctx context.Context, id string) (config.Server, int64, error) {
	srv, rev, sealErrs, err := s.getServer(ctx, id)
	if err != nil {
		return config.Server{}, 0, fmt.Errorf("store: get server %q: %w", id, err)
	}
	return srv, rev, sealErrs
}

// ServerRevision returns only the revision of one server (see
// GetServerRevision); ErrNotFound if there is none. It opens no secret.
func (s *SQLite) ServerRevision(ctx context.Context, id string) (int64, error) {
	var rev int64
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT revision FROM servers WHERE id = ?`, id).Scan(&rev)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: server revision %q: %w", id, err)
	}
	return rev, nil
}

// getServer reads one server, its secrets opened, and its revision from
// one snapshot. err is fatal (unwrapped); sealErrs reports secrets that
// could not be opened and were left empty.
func (s *SQLite) getServer(ctx context.Context, id string) (srv config.Server, rev int64, sealErrs, err error) {
	err = s.readTx(ctx, func(tx *sql.Tx) error {
		var js string
		err := tx.QueryRowContext(ctx, `SELECT config, revision FROM servers WHERE id = ?`, id).Scan(&js, &rev)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if srv, err = decodeServer(id, js); err != nil {
			return err
		}
		secrets, err := configSecrets(ctx, tx, id)
		if err != nil {
			return err
		}
		sealErrs = s.fillSecrets(&srv, secrets)
		return nil
	})
	if err != nil {
		return config.Server{}, 0, nil, err
	}
	return srv, rev, sealErrs, nil
}

// AddServer validates srv and inserts it, sealing its secrets; ErrDuplicate
// when the id exists. Invalid input is refused before the database is
// touched.
func (s *SQLite) AddServer(ctx context.Context, srv config.Server) error {
	rec, err := s.prepareServer(srv)
	if err != nil {
		return fmt.Errorf("store: add server %q: %w", srv.ID, err)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) (*Change, error) {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM servers WHERE id = ?`, srv.ID).Scan(&one)
		if err == nil {
			return nil, ErrDuplicate
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		now := nowMillis()
		if _, err := tx.ExecContext(ctx, `INSERT INTO servers (id, config, created, updated, revision) VALUES (?, ?, ?, ?, 1)`,
			srv.ID, rec.json, now, now); err != nil {
			return nil, err
		}
		if err := s.insertSecrets(ctx, tx, rec.secrets, now); err != nil {
			return nil, err
		}
		return &Change{Kind: ChangeServers, ServerID: srv.ID}, nil
	})
	if err != nil {
		return fmt.Errorf("store: add server %q: %w", srv.ID, err)
	}
	return nil
}

// UpdateServer validates srv and replaces the stored server with the same
// id; ErrNotFound if there is none. It is UpdateServerWith without options:
// moving a bearer server to another canonical resource while keeping its
// old token fails with ErrBearerRebind and writes nothing (R3.10).
func (s *SQLite) UpdateServer(ctx context.Context, srv config.Server) error {
	return s.UpdateServerWith(ctx, srv, UpdateOptions{})
}

// UpdateServerWith is UpdateServer with options.
//
// It is a blind overwrite: whatever another writer stored since the caller
// read srv is lost. To change one thing of a server that others may be
// editing too (a disabled tool, say), use EditServer. The write increments
// the server's revision, so a concurrent EditServer that read the old
// record retries on the new one instead of overwriting it.
//
// The secrets in srv replace the stored ones: a bearer token or client
// secret left empty is deleted. Secrets of other purposes (OAuth refresh
// tokens, registrations) are keyed by their binding and are left alone;
// the OAuth layer never looks them up under another binding.
func (s *SQLite) UpdateServerWith(ctx context.Context, srv config.Server, opts UpdateOptions) error {
	rec, err := s.prepareServer(srv)
	if err != nil {
		return fmt.Errorf("store: update server %q: %w", srv.ID, err)
	}
	err = s.writeTx(ctx, func(tx *sql.Tx) (*Change, error) {
		if _, err := s.replaceServer(ctx, tx, srv, rec, opts, 0); err != nil {
			return nil, err
		}
		return &Change{Kind: ChangeServers, ServerID: srv.ID}, nil
	})
	if err != nil {
		return fmt.Errorf("store: update server %q: %w", srv.ID, err)
	}
	return nil
}

// errStale: replaceServer found another revision than the caller read.
// EditServer retries on it; it never leaves the package.
var errStale = errors.New("server revision changed since it was read")

// replaceServer writes rec (prepared from srv) over the stored server
// srv.ID inside tx and returns the server's new revision. With expect > 0
// it writes only if the stored revision is still expect, and returns
// errStale otherwise; expect == 0 overwrites whatever revision is stored.
// It refuses to carry a bearer token to another resource unless
// opts.RebindBearer.
func (s *SQLite) replaceServer(ctx context.Context, tx *sql.Tx, srv config.Server, rec serverRecord, opts UpdateOptions, expect int64) (int64, error) {
	var (
		js  string
		rev int64
	)
	err := tx.QueryRowContext(ctx, `SELECT config, revision FROM servers WHERE id = ?`, srv.ID).Scan(&js, &rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	if expect > 0 && rev != expect {
		return 0, errStale
	}
	old, err := decodeServer(srv.ID, js)
	if err != nil {
		return 0, err
	}
	if !opts.RebindBearer {
		if err := s.checkBearerRebind(ctx, tx, old, srv, rec.resource); err != nil {
			return 0, err
		}
	}
	now := nowMillis()
	// The compare-and-swap proper. The write transaction already holds
	// the database's write lock (BEGIN IMMEDIATE), so the row cannot have
	// moved since the SELECT above; the revision in the WHERE clause keeps
	// the statement correct on its own all the same.
	var newRev int64
	err = tx.QueryRowContext(ctx, `UPDATE servers SET config = ?, updated = ?, revision = revision + 1
		WHERE id = ? AND revision = ? RETURNING revision`,
		rec.json, now, srv.ID, rev).Scan(&newRev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errStale
	}
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM secrets WHERE server_id = ? AND purpose IN (?, ?)`,
		srv.ID, PurposeBearer, PurposeClientSecret); err != nil {
		return 0, err
	}
	if err := s.insertSecrets(ctx, tx, rec.secrets, now); err != nil {
		return 0, err
	}
	return newRev, nil
}

// checkBearerRebind refuses to carry the old bearer token of old over to a
// URL with another canonical resource: the token was given for the old
// resource, and the caller passing it back unchanged is the normal result
// of editing only the URL in a form.
func (s *SQLite) checkBearerRebind(ctx context.Context, tx *sql.Tx, old, srv config.Server, newResource string) error {
	if old.Auth.Kind != config.AuthBearer || srv.Auth.Kind != config.AuthBearer || srv.Auth.Token == "" {
		return nil
	}
	oldResource, err := config.CanonicalResource(old.URL)
	if err == nil && oldResource == newResource {
		return nil
	}
	k := SecretKey{ServerID: old.ID, Purpose: PurposeBearer, Binding: config.Binding{Resource: oldResource}}
	var blob []byte
	err = tx.QueryRowContext(ctx, `SELECT sealed FROM secrets WHERE server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`,
		k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	oldToken, err := s.sealer.open(k, blob)
	if err != nil {
		// The old token is unreadable, so the caller cannot have echoed
		// it back: the token in srv is new.
		return nil
	}
	if string(oldToken) == srv.Auth.Token {
		return fmt.Errorf("url %q is a different resource than %q: %w", srv.URL, old.URL, ErrBearerRebind)
	}
	return nil
}

// DeleteServer removes the server and all its secrets; ErrNotFound if
// there is none.
func (s *SQLite) DeleteServer(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) (*Change, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM servers WHERE id = ?`, id)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n == 0 {
			return nil, ErrNotFound
		}
		// Its secrets go with it: ON DELETE CASCADE.
		return &Change{Kind: ChangeServers, ServerID: id}, nil
	})
	if err != nil {
		return fmt.Errorf("store: delete server %q: %w", id, err)
	}
	return nil
}

// serverRecord is a server ready to be written: JSON without secrets and
// the sealed secrets.
type serverRecord struct {
	json     string
	resource string
	secrets  []sealedSecret
}

type sealedSecret struct {
	key  SecretKey
	blob []byte
}

// prepareServer validates srv and seals its secrets, all before a
// transaction starts: a config that is refused never touches the file.
func (s *SQLite) prepareServer(srv config.Server) (serverRecord, error) {
	if s.closed.Load() {
		return serverRecord{}, ErrClosed
	}
	if err := srv.Validate(); err != nil {
		return serverRecord{}, fmt.Errorf("invalid config: %w", err)
	}
	resource, err := config.CanonicalResource(srv.URL)
	if err != nil {
		return serverRecord{}, fmt.Errorf("invalid config: %w", err)
	}
	rec := serverRecord{resource: resource}
	add := func(purpose, value string) error {
		k := SecretKey{ServerID: srv.ID, Purpose: purpose, Binding: config.Binding{Resource: resource}}
		blob, err := s.sealer.seal(k, []byte(value))
		if err != nil {
			return err
		}
		rec.secrets = append(rec.secrets, sealedSecret{key: k, blob: blob})
		return nil
	}
	// Only the secret of the configured kind is kept; a stray token on a
	// server of another kind is dropped rather than stored.
	switch srv.Auth.Kind {
	case config.AuthBearer:
		if srv.Auth.Token != "" {
			if err := add(PurposeBearer, srv.Auth.Token); err != nil {
				return serverRecord{}, err
			}
		}
	case config.AuthOAuth:
		if srv.Auth.ClientSecret != "" {
			if err := add(PurposeClientSecret, srv.Auth.ClientSecret); err != nil {
				return serverRecord{}, err
			}
		}
	}
	clean := srv.Clone()
	clean.Auth.Token = ""
	clean.Auth.ClientSecret = ""
	js, err := json.Marshal(clean)
	if err != nil {
		return serverRecord{}, fmt.Errorf("encode config: %w", err)
	}
	rec.json = string(js)
	return rec, nil
}

func decodeServer(id, js string) (config.Server, error) {
	var srv config.Server
	if err := json.Unmarshal([]byte(js), &srv); err != nil {
		return config.Server{}, fmt.Errorf("decode stored config of server %q: %w", id, err)
	}
	srv.ID = id // the primary key is authoritative
	return srv, nil
}

// configSecrets loads the sealed bearer tokens and client secrets, of one
// server or (id == "") of all.
func configSecrets(ctx context.Context, tx *sql.Tx, id string) (map[SecretKey][]byte, error) {
	q := `SELECT server_id, purpose, resource, issuer, sealed FROM secrets WHERE purpose IN (?, ?)`
	args := []any{PurposeBearer, PurposeClientSecret}
	if id != "" {
		q += ` AND server_id = ?`
		args = append(args, id)
	}
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[SecretKey][]byte)
	for rows.Next() {
		var k SecretKey
		var blob []byte
		if err := rows.Scan(&k.ServerID, &k.Purpose, &k.Binding.Resource, &k.Binding.Issuer, &blob); err != nil {
			return nil, err
		}
		out[k] = blob
	}
	return out, rows.Err()
}

// fillSecrets opens the secrets of srv's configured kind, bound to the
// canonical resource of its current URL, into srv. A secret sealed for
// another resource is not used.
func (s *SQLite) fillSecrets(srv *config.Server, secrets map[SecretKey][]byte) error {
	var purpose string
	switch srv.Auth.Kind {
	case config.AuthBearer:
		purpose = PurposeBearer
	case config.AuthOAuth:
		purpose = PurposeClientSecret
	default:
		return nil
	}
	resource, err := config.CanonicalResource(srv.URL)
	if err != nil {
		// Stored before the URL rules changed, perhaps. Without a resource
		// nothing can be bound to it, so no secret is filled in.
		return nil
	}
	k := SecretKey{ServerID: srv.ID, Purpose: purpose, Binding: config.Binding{Resource: resource}}
	blob, ok := secrets[k]
	if !ok {
		return nil
	}
	v, err := s.sealer.open(k, blob)
	if err != nil {
		return err
	}
	if purpose == PurposeBearer {
		srv.Auth.Token = string(v)
	} else {
		srv.Auth.ClientSecret = string(v)
	}
	return nil
}

// insertSecrets writes sealed secrets in tx, after making sure the key
// they were sealed under is still the store's (keyUnchanged).
func (s *SQLite) insertSecrets(ctx context.Context, tx *sql.Tx, secrets []sealedSecret, now int64) error {
	if len(secrets) == 0 {
		return nil
	}
	if err := s.keyUnchanged(ctx, tx); err != nil {
		return err
	}
	for _, sec := range secrets {
		k := sec.key
		if _, err := tx.ExecContext(ctx, `INSERT INTO secrets (server_id, purpose, resource, issuer, sealed, updated)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (server_id, purpose, resource, issuer) DO UPDATE SET sealed = excluded.sealed, updated = excluded.updated`,
			k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer, sec.blob, now); err != nil {
			return fmt.Errorf("write %s: %w", describeKey(k), err)
		}
	}
	return nil
}
