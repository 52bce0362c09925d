package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/config"
)

// Server configs are stored as JSON without their secrets; the bearer token,
// the OAuth client secret and every custom header value (SPEC §9 A2) are
// sealed into the secrets table under the server's canonical resource, and
// filled back in on read. The stored JSON keeps the header names, with
// empty values, so a listing can show them without opening anything.

// UpdateOptions modify UpdateServerWith.
type UpdateOptions struct {
	// RebindBearer confirms that the bearer token in the update is meant
	// for the new URL although it equals the token of the old URL. Set it
	// only after an explicit user action (the user re-entered the token
	// for the new URL); without it UpdateServer refuses with
	// ErrBearerRebind.
	RebindBearer bool
	// RebindHeaders names the custom headers (names ignore case) whose
	// values in the update are meant for the new URL although they equal
	// the values given for the old URL: the user supplied them again.
	// Every other header whose value would follow the server to another
	// canonical resource makes UpdateServer refuse with ErrHeaderRebind.
	RebindHeaders []string
}

// ListServers returns every server, oldest first, with its secrets opened.
//
// If some secret cannot be opened (ErrSealOpen: wrong key file, tampered
// data), ListServers still returns all servers, with those secrets empty,
// together with an error wrapping ErrSealOpen that names each of them, so
// the caller can show the servers and ask for the secrets again.
func (s *DB) ListServers(ctx context.Context) ([]config.Server, error) {
	out, _, err := s.listServers(ctx)
	return out, err
}

// ListServersRevisions is ListServers that also returns each server's
// revision (see GetServerRevision), revs[i] that of servers[i], read in
// the same snapshot: one query for a whole list instead of one per
// server (issue #21). Errors are those of ListServers.
func (s *DB) ListServersRevisions(ctx context.Context) (servers []config.Server, revs []int64, err error) {
	return s.listServers(ctx)
}

func (s *DB) listServers(ctx context.Context) ([]config.Server, []int64, error) {
	var (
		out      []config.Server
		revs     []int64
		sealErrs error
	)
	err := s.readTx(ctx, func(tx *txn) error {
		out, revs = nil, nil
		secrets, err := configSecrets(ctx, tx, "")
		if err != nil {
			return err
		}
		rows, err := tx.query(ctx, `SELECT id, config, revision FROM servers WHERE user_id = ? ORDER BY `+s.serverOrder(), tx.user())
		if err != nil {
			return err
		}
		defer rows.Close()
		var errs []error
		for rows.Next() {
			var id, js string
			var rev int64
			if err := rows.Scan(&id, &js, &rev); err != nil {
				return err
			}
			revs = append(revs, rev)
			srv, err := decodeServer(id, js)
			if err != nil {
				return err
			}
			if _, err := s.fillSecrets(&srv, secrets); err != nil {
				errs = append(errs, err)
			}
			out = append(out, srv)
		}
		sealErrs = errors.Join(errs...)
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: list servers: %w", err)
	}
	return out, revs, sealErrs
}

// GetServer returns one server with its secrets opened; ErrNotFound if
// there is none. Like ListServers, a secret that cannot be opened leaves
// its field empty and GetServer returns the server with an error wrapping
// ErrSealOpen.
func (s *DB) GetServer(ctx context.Context, id string) (config.Server, error) {
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
func (s *DB) GetServerRevision(ctx context.Context, id string) (config.Server, int64, error) {
	srv, rev, _, sealErrs, err := s.getServer(ctx, id)
	if err != nil {
		return config.Server{}, 0, fmt.Errorf("store: get server %q: %w", id, err)
	}
	return srv, rev, sealErrs
}

// ServerRevision returns only the revision of one server (see
// GetServerRevision); ErrNotFound if there is none. It opens no secret.
func (s *DB) ServerRevision(ctx context.Context, id string) (int64, error) {
	var rev int64
	err := s.readTx(ctx, func(tx *txn) error {
		err := tx.queryRow(ctx, `SELECT revision FROM servers WHERE user_id = ? AND id = ?`, tx.user(), id).Scan(&rev)
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
// could not be opened and were left empty, and unopened names their
// fields (see fillSecrets).
func (s *DB) getServer(ctx context.Context, id string) (srv config.Server, rev int64, unopened []string, sealErrs, err error) {
	err = s.readTx(ctx, func(tx *txn) error {
		var js string
		err := tx.queryRow(ctx, `SELECT config, revision FROM servers WHERE user_id = ? AND id = ?`, tx.user(), id).Scan(&js, &rev)
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
		unopened, sealErrs = s.fillSecrets(&srv, secrets)
		return nil
	})
	if err != nil {
		return config.Server{}, 0, nil, nil, err
	}
	return srv, rev, unopened, sealErrs, nil
}

// AddServer validates srv and inserts it, sealing its secrets; ErrDuplicate
// when the id exists. Invalid input is refused before the database is
// touched.
func (s *DB) AddServer(ctx context.Context, srv config.Server) error {
	rec, err := s.prepareServer(srv)
	if err != nil {
		return fmt.Errorf("store: add server %q: %w", srv.ID, err)
	}
	err = s.writeTx(ctx, func(tx *txn) (*Change, error) {
		var one int
		err := tx.queryRow(ctx, `SELECT 1 FROM servers WHERE user_id = ? AND id = ?`, tx.user(), srv.ID).Scan(&one)
		if err == nil {
			return nil, ErrDuplicate
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		now := nowMillis()
		if _, err := tx.exec(ctx, `INSERT INTO servers (user_id, id, config, created, updated, revision) VALUES (?, ?, ?, ?, ?, 1)`,
			tx.user(), srv.ID, rec.json, now, now); err != nil {
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
func (s *DB) UpdateServer(ctx context.Context, srv config.Server) error {
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
func (s *DB) UpdateServerWith(ctx context.Context, srv config.Server, opts UpdateOptions) error {
	rec, err := s.prepareServer(srv)
	if err != nil {
		return fmt.Errorf("store: update server %q: %w", srv.ID, err)
	}
	err = s.writeTx(ctx, func(tx *txn) (*Change, error) {
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
// opts.RebindBearer, and header values unless opts.RebindHeaders names
// them.
func (s *DB) replaceServer(ctx context.Context, tx *txn, srv config.Server, rec serverRecord, opts UpdateOptions, expect int64) (int64, error) {
	var (
		js  string
		rev int64
	)
	err := tx.queryRow(ctx, `SELECT config, revision FROM servers WHERE user_id = ? AND id = ?`, tx.user(), srv.ID).Scan(&js, &rev)
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
	if err := s.checkHeaderRebind(ctx, tx, old, srv, rec.resource, opts.RebindHeaders); err != nil {
		return 0, err
	}
	now := nowMillis()
	// The compare-and-swap proper. The write transaction already holds
	// the database's write lock (BEGIN IMMEDIATE), so the row cannot have
	// moved since the SELECT above; the revision in the WHERE clause keeps
	// the statement correct on its own all the same.
	var newRev int64
	err = tx.queryRow(ctx, `UPDATE servers SET config = ?, updated = ?, revision = revision + 1
		WHERE user_id = ? AND id = ? AND revision = ? RETURNING revision`,
		rec.json, now, tx.user(), srv.ID, rev).Scan(&newRev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errStale
	}
	if err != nil {
		return 0, err
	}
	if _, err := tx.exec(ctx, `DELETE FROM secrets WHERE user_id = ? AND server_id = ? AND (purpose IN (?, ?) OR `+headerPurposeSQL+`)`,
		tx.user(), srv.ID, PurposeBearer, PurposeClientSecret); err != nil {
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
func (s *DB) checkBearerRebind(ctx context.Context, tx *txn, old, srv config.Server, newResource string) error {
	if old.Auth.Kind != config.AuthBearer || srv.Auth.Kind != config.AuthBearer || srv.Auth.Token == "" {
		return nil
	}
	oldResource, err := config.CanonicalResource(old.URL)
	if err == nil && oldResource == newResource {
		return nil
	}
	k := SecretKey{ServerID: old.ID, Purpose: PurposeBearer, Binding: config.Binding{Resource: oldResource}}
	var blob []byte
	err = tx.queryRow(ctx, `SELECT sealed FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`,
		tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	oldToken, err := s.open(k, blob)
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

// checkHeaderRebind is checkBearerRebind for custom header values: a
// header of srv whose value is the one sealed for the old resource under
// the same name was carried along by an edit of the URL, not given for
// the new one. Names in rebind were supplied again by the user and pass.
// The error names the headers, never their values. An empty value is no
// secret and passes.
func (s *DB) checkHeaderRebind(ctx context.Context, tx *txn, old, srv config.Server, newResource string, rebind []string) error {
	if len(srv.Headers) == 0 {
		return nil
	}
	oldResource, err := config.CanonicalResource(old.URL)
	if err == nil && oldResource == newResource {
		return nil
	}
	var carried []string
	for _, name := range slices.Sorted(maps.Keys(srv.Headers)) {
		value := srv.Headers[name]
		if value == "" || slices.ContainsFunc(rebind, func(r string) bool { return strings.EqualFold(r, name) }) {
			continue
		}
		k := SecretKey{ServerID: old.ID, Purpose: HeaderPurpose(name), Binding: config.Binding{Resource: oldResource}}
		var blob []byte
		err := tx.queryRow(ctx, `SELECT sealed FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`,
			tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer).Scan(&blob)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		// An unreadable old value cannot have been echoed back.
		if v, err := s.open(k, blob); err == nil && string(v) == value {
			carried = append(carried, name)
		}
	}
	if len(carried) > 0 {
		return &HeaderRebindError{URL: srv.URL, OldURL: old.URL, Headers: carried}
	}
	return nil
}

// DeleteServer removes the server and all its secrets; ErrNotFound if
// there is none.
func (s *DB) DeleteServer(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		res, err := tx.exec(ctx, `DELETE FROM servers WHERE user_id = ? AND id = ?`, tx.user(), id)
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
func (s *DB) prepareServer(srv config.Server) (serverRecord, error) {
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
		blob, err := s.seal(k, []byte(value))
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
	// Every header value is sealed, an empty one too, so that a header
	// whose sealed value is missing on read is noticed (fillSecrets)
	// rather than sent empty. The JSON keeps the names only.
	for _, name := range slices.Sorted(maps.Keys(srv.Headers)) {
		if err := add(HeaderPurpose(name), srv.Headers[name]); err != nil {
			return serverRecord{}, err
		}
		clean.Headers[name] = ""
	}
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

// headerPurposeSQL is an SQL condition true for the purposes of header
// values (PurposeHeaderPrefix). substr, not LIKE or GLOB: header names
// may hold '%', '_' and '*', which are wildcards there.
const headerPurposeSQL = `substr(purpose, 1, 7) = 'header:'`

func init() {
	// headerPurposeSQL spells the prefix out; keep the two in step.
	if len(PurposeHeaderPrefix) != 7 || !strings.Contains(headerPurposeSQL, "'"+PurposeHeaderPrefix+"'") {
		panic("store: headerPurposeSQL does not match PurposeHeaderPrefix")
	}
}

// configSecrets loads the sealed bearer tokens, client secrets and header
// values, of one server or (id == "") of all.
func configSecrets(ctx context.Context, tx *txn, id string) (map[SecretKey][]byte, error) {
	q := `SELECT server_id, purpose, resource, issuer, sealed FROM secrets WHERE user_id = ? AND (purpose IN (?, ?) OR ` + headerPurposeSQL + `)`
	args := []any{tx.user(), PurposeBearer, PurposeClientSecret}
	if id != "" {
		q += ` AND server_id = ?`
		args = append(args, id)
	}
	rows, err := tx.query(ctx, q, args...)
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

// fillSecrets opens the secrets of srv, bound to the canonical resource of
// its current URL, into srv: the bearer token or client secret of its
// configured kind, and the value of every header it names. A secret sealed
// for another resource is not used.
//
// What cannot be opened is left empty and named in unopened ("auth.token",
// "auth.clientSecret", "headers.<name>"), and err (wrapping ErrSealOpen)
// says why. A missing bearer token or client secret is simply absent, as
// before headers existed; a header whose sealed value is missing is
// unopened, since sending it empty would be wrong in a way nobody sees.
func (s *DB) fillSecrets(srv *config.Server, secrets map[SecretKey][]byte) (unopened []string, err error) {
	var errs []error
	resource, rerr := config.CanonicalResource(srv.URL)
	var purpose, field string
	switch srv.Auth.Kind {
	case config.AuthBearer:
		purpose, field = PurposeBearer, "auth.token"
	case config.AuthOAuth:
		purpose, field = PurposeClientSecret, "auth.clientSecret"
	}
	// Without a resource (a URL stored before the URL rules changed,
	// perhaps) nothing can be bound to it, so no token or client secret is
	// filled in.
	if purpose != "" && rerr == nil {
		k := SecretKey{ServerID: srv.ID, Purpose: purpose, Binding: config.Binding{Resource: resource}}
		if blob, ok := secrets[k]; ok {
			v, err := s.open(k, blob)
			switch {
			case err != nil:
				unopened, errs = append(unopened, field), append(errs, err)
			case purpose == PurposeBearer:
				srv.Auth.Token = string(v)
			default:
				srv.Auth.ClientSecret = string(v)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(srv.Headers)) {
		// Whatever the stored JSON held is never used: values live sealed.
		srv.Headers[name] = ""
		k := SecretKey{ServerID: srv.ID, Purpose: HeaderPurpose(name), Binding: config.Binding{Resource: resource}}
		blob, ok := secrets[k]
		if rerr != nil || !ok {
			unopened = append(unopened, "headers."+name)
			errs = append(errs, fmt.Errorf("store: open %s: no sealed value is stored for the server's URL: %w", describeKey(k), ErrSealOpen))
			continue
		}
		v, err := s.open(k, blob)
		if err != nil {
			unopened, errs = append(unopened, "headers."+name), append(errs, err)
			continue
		}
		srv.Headers[name] = string(v)
	}
	return unopened, errors.Join(errs...)
}

// repairs reports whether next, the result of an edit of a server whose
// secrets named in unopened (see fillSecrets) could not be opened, no
// longer needs any of them: each was given again or is no longer used.
// Only then may the edit be written without losing a secret.
func repairs(next config.Server, unopened []string) bool {
	for _, f := range unopened {
		switch name, isHeader := strings.CutPrefix(f, "headers."); {
		case isHeader:
			if v, ok := next.Headers[name]; ok && v == "" {
				return false
			}
		case f == "auth.token":
			if next.Auth.Kind == config.AuthBearer && next.Auth.Token == "" {
				return false
			}
		case f == "auth.clientSecret":
			if next.Auth.Kind == config.AuthOAuth && next.Auth.ClientID != "" && next.Auth.ClientSecret == "" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// insertSecrets writes sealed secrets in tx, after making sure the key
// they were sealed under is still the store's (keyUnchanged).
func (s *DB) insertSecrets(ctx context.Context, tx *txn, secrets []sealedSecret, now int64) error {
	if len(secrets) == 0 {
		return nil
	}
	if err := s.keyUnchanged(ctx, tx); err != nil {
		return err
	}
	for _, sec := range secrets {
		k := sec.key
		if _, err := tx.exec(ctx, `INSERT INTO secrets (user_id, server_id, purpose, resource, issuer, sealed, updated)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (user_id, server_id, purpose, resource, issuer) DO UPDATE SET sealed = excluded.sealed, updated = excluded.updated`,
			tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer, sec.blob, now); err != nil {
			return fmt.Errorf("write %s: %w", describeKey(k), err)
		}
	}
	return nil
}

// sealClearHeaders seals header values found in clear in stored configs
// (written by a build from before schema 4) and blanks them in the JSON,
// in one write transaction. Nothing a reader sees changes (the value was
// and is the header's), so it is no store or server revision. A header
// that already has a sealed value for the server's resource keeps it: the
// sealed one is newer.
//
// It runs on every open, after the key check, and writes only when it
// finds a row with a value in clear; then every header of that row
// without a sealed value is sealed, an empty one too. upgraded (the store
// was below schema 4 when this open began) also seals the headers of rows
// whose values are all empty, which look like rows of schema 4 except for
// their missing secrets; later, a missing secret is reported, not filled.
func (s *DB) sealClearHeaders(ctx context.Context, upgraded bool) error {
	fail := func(err error) error {
		return fmt.Errorf("store: open database %s: seal header values stored in clear: %w", s.path, err)
	}
	// Look first, without the write lock: normally there is nothing to do.
	var found bool
	err := s.readTx(ctx, func(tx *txn) error {
		todo, err := clearHeaderRows(ctx, tx, upgraded)
		found = len(todo) > 0
		return err
	})
	if err != nil {
		return fail(err)
	}
	if !found {
		return nil
	}
	err = s.scrubTx(ctx, func(tx *txn) error {
		// Again under the write lock: another process may have done it.
		todo, err := clearHeaderRows(ctx, tx, upgraded)
		if err != nil {
			return err
		}
		now := nowMillis()
		for _, srv := range todo {
			resource, err := config.CanonicalResource(srv.URL)
			if err != nil {
				resource = "" // bound to nothing; the reader reports it unopened
			}
			var sealed []sealedSecret
			for _, name := range slices.Sorted(maps.Keys(srv.Headers)) {
				k := SecretKey{ServerID: srv.ID, Purpose: HeaderPurpose(name), Binding: config.Binding{Resource: resource}}
				var one int
				err := tx.queryRow(ctx, `SELECT 1 FROM secrets WHERE user_id = ? AND server_id = ? AND purpose = ? AND resource = ? AND issuer = ?`,
					tx.user(), k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer).Scan(&one)
				if err == nil {
					continue
				}
				if !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				blob, err := s.seal(k, []byte(srv.Headers[name]))
				if err != nil {
					return err
				}
				sealed = append(sealed, sealedSecret{key: k, blob: blob})
			}
			clean := srv.Clone()
			inClear := false
			for name, v := range clean.Headers {
				inClear = inClear || v != ""
				clean.Headers[name] = ""
			}
			if len(sealed) == 0 && !inClear {
				continue // sealed already (by another process opening it too)
			}
			js, err := json.Marshal(clean)
			if err != nil {
				return fmt.Errorf("encode config of server %q: %w", srv.ID, err)
			}
			if err := s.insertSecrets(ctx, tx, sealed, now); err != nil {
				return err
			}
			if _, err := tx.exec(ctx, `UPDATE servers SET config = ? WHERE user_id = ? AND id = ?`, string(js), tx.user(), srv.ID); err != nil {
				return err
			}
			s.log.Warn("store: sealed the header values an older remotemcp had stored in clear", "server", srv.ID)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// scrubTx runs fn in a write transaction that publishes no change, on a
// connection with PRAGMA secure_delete on, and then checkpoints the WAL
// into the database file and truncates it: what fn overwrites or deletes
// is zeroed, not left in free space or old WAL frames. For moving clear
// text out of the file (sealClearHeaders); ordinary writes never put a
// secret in clear there.
func (s *DB) scrubTx(ctx context.Context, fn func(tx *txn) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connection: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return fmt.Errorf("secure_delete: %w", err)
	}
	// The connection goes back to the pool; it must not stay slow.
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA secure_delete = OFF`) }()
	sqlTx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer sqlTx.Rollback()
	if err := fn(&txn{tx: sqlTx, s: s}); err != nil {
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	// Best effort: a reader of another process may hold the WAL open, in
	// which case the next checkpoint overwrites the old frames.
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		s.log.Warn("store: checkpoint after sealing header values", "err", err)
	}
	return nil
}

// clearHeaderRows returns the stored servers whose JSON holds a header
// value, or (all) any header at all (sealClearHeaders).
func clearHeaderRows(ctx context.Context, tx *txn, all bool) ([]config.Server, error) {
	// A cheap filter first: only rows with a headers member can qualify.
	rows, err := tx.query(ctx, `SELECT id, config FROM servers WHERE user_id = ? AND config LIKE '%"headers":{%'`, tx.user())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []config.Server
	for rows.Next() {
		var id, js string
		if err := rows.Scan(&id, &js); err != nil {
			return nil, err
		}
		srv, err := decodeServer(id, js)
		if err != nil {
			continue // left for the reader to report
		}
		for _, v := range srv.Headers {
			if all || v != "" {
				out = append(out, srv)
				break
			}
		}
	}
	return out, rows.Err()
}
