package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Moving in (issue #22, Decided "Moving in"): a personal store is copied
// into a gateway user. Every secret is opened with the source's key and
// user and sealed again for the destination's: a sealed blob is never
// copied, since the user is part of its associated data (sealAAD) and
// would not open elsewhere. The source is only read, in one snapshot; the
// destination is written in one transaction, so a failure at any step
// leaves it as it was.

// ErrCopyNotEmpty: Copy found servers (or records under the keys it would
// write) in the destination. Nothing was written: copying into a user who
// already has servers would mix two lists, and a second copy of the same
// store would be refused as well.
var ErrCopyNotEmpty = errors.New("the destination is not empty")

// CopyStep names a step of Copy, for progress and errors.
type CopyStep string

// The steps of Copy, in order.
const (
	CopyRead   CopyStep = "read the source"
	CopyCheck  CopyStep = "check the destination"
	CopyWrite  CopyStep = "write the destination"
	CopyVerify CopyStep = "verify the destination"
	CopyCommit CopyStep = "commit"
)

// CopyOptions tune Copy.
type CopyOptions struct {
	// Progress, if set, is told of each step once it is done, with what
	// it found or wrote so far. The steps after CopyRead run inside the
	// destination's write transaction, so Progress must not use the
	// destination store.
	Progress func(step CopyStep, r CopyReport)
}

// CopyReport is what Copy read (and, once it returns nil, wrote).
type CopyReport struct {
	// Servers are the ids of the servers, oldest first.
	Servers []string
	// Secrets counts the sealed secrets: bearer tokens, client secrets,
	// header values, OAuth refresh tokens and registrations.
	Secrets int
	// Records counts the KV records, by namespace.
	Records map[string]int
	// Pins counts the tool pins; Held those of them with a held
	// (not yet accepted) definition.
	Pins, Held int
}

// RecordCount is the number of KV records of every namespace.
func (r CopyReport) RecordCount() int {
	n := 0
	for _, c := range r.Records {
		n += c
	}
	return n
}

// copySnapshot is everything of the source's user, secrets opened.
type copySnapshot struct {
	servers []copyServer
	secrets []copySecret
	kv      []copyRecord
	pins    []ToolPin
}

type copyServer struct {
	id, config       string
	created, updated int64
}

type copySecret struct {
	key     SecretKey
	value   []byte
	updated int64
}

type copyRecord struct {
	ns, key, value string
	updated        int64
}

// wipe zeroes the opened secrets.
func (c *copySnapshot) wipe() {
	for _, s := range c.secrets {
		clear(s.value)
	}
}

func (c *copySnapshot) report() CopyReport {
	r := CopyReport{Secrets: len(c.secrets), Records: map[string]int{}, Pins: len(c.pins)}
	for _, s := range c.servers {
		r.Servers = append(r.Servers, s.id)
	}
	for _, rec := range c.kv {
		r.Records[rec.ns]++
	}
	for _, p := range c.pins {
		if p.Held != nil {
			r.Held++
		}
	}
	return r
}

// Copy copies everything of src's user into dst's user: every server
// (its stored config as it is, with its revision starting over at 1),
// every secret (opened from src and sealed again for dst), every KV
// record of every namespace, and every tool pin with its held
// definition, keeping their times. src is only read, in one read
// transaction, so its files are left as they were; dst is written in one
// write transaction, which publishes one "re-read everything" change.
//
// Nothing is written to dst when:
//   - dst already has a server, or a record under a namespace and key of
//     src (ErrCopyNotEmpty, naming them): a second copy of the same store
//     is refused so;
//   - a secret of src cannot be opened (ErrSealOpen, naming each one):
//     the copy would lose it;
//   - a stored config or record of src does not decode;
//   - any write, the read-back check of every re-sealed secret, or the
//     commit fails.
//
// The error names the step (CopyStep) that failed.
func Copy(ctx context.Context, src, dst *DB, o CopyOptions) (CopyReport, error) {
	from, to := src.describe(), dst.describe()
	fail := func(step CopyStep, err error) (CopyReport, error) {
		return CopyReport{}, fmt.Errorf("store: copy %s to %s: %s: %w", from, to, step, err)
	}
	if src == dst || src.path == dst.path && src.user == dst.user {
		return fail(CopyCheck, errors.New("the source and the destination are the same store"))
	}
	progress := func(step CopyStep, r CopyReport) {
		if o.Progress != nil {
			o.Progress(step, r)
		}
	}
	snap, err := src.copySnapshot(ctx)
	if err != nil {
		return fail(CopyRead, err)
	}
	defer snap.wipe()
	report := snap.report()
	progress(CopyRead, report)

	step := CopyCheck
	err = dst.writeTx(ctx, func(tx *txn) (*Change, error) {
		existing, err := dst.checkCopyTarget(ctx, tx, snap)
		if err != nil {
			return nil, err
		}
		progress(CopyCheck, report)
		step = CopyWrite
		if err := dst.writeCopy(ctx, tx, snap); err != nil {
			return nil, err
		}
		progress(CopyWrite, report)
		step = CopyVerify
		if err := dst.verifyCopy(ctx, tx, snap, existing); err != nil {
			return nil, err
		}
		progress(CopyVerify, report)
		step = CopyCommit
		if len(snap.servers) == 0 && len(snap.kv) == 0 {
			return nil, nil // nothing was written: no revision, no event
		}
		return &Change{Kind: ChangeServers}, nil // no id: subscribers re-read everything
	})
	if err != nil {
		return fail(step, err)
	}
	return report, nil
}

// describe names the store for Copy's messages: the SQLite file, or the
// gateway user (the caller knows which database it opened).
func (s *DB) describe() string {
	if s.d == postgresDialect {
		return "gateway user " + s.user
	}
	return s.path
}

// copySnapshot reads everything of s's user in one read transaction and
// opens every secret. It refuses a secret that does not open, a config
// that does not decode and a record that is not JSON, naming each.
//
// Long: one read transaction over every table of the user; split, each
// part would need the transaction and the snapshot passed along.
func (s *DB) copySnapshot(ctx context.Context) (*copySnapshot, error) {
	snap := &copySnapshot{}
	err := s.readTx(ctx, func(tx *txn) error {
		*snap = copySnapshot{}
		rows, err := tx.query(ctx, `SELECT id, config, created, updated FROM servers WHERE user_id = ? ORDER BY `+s.serverOrder(), tx.user())
		if err != nil {
			return fmt.Errorf("servers: %w", err)
		}
		for rows.Next() {
			var c copyServer
			if err := rows.Scan(&c.id, &c.config, &c.created, &c.updated); err != nil {
				rows.Close()
				return fmt.Errorf("servers: %w", err)
			}
			snap.servers = append(snap.servers, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("servers: %w", err)
		}
		var bad []error
		for _, c := range snap.servers {
			if _, err := decodeServer(c.id, c.config); err != nil {
				bad = append(bad, err)
			}
		}

		rows, err = tx.query(ctx, `SELECT server_id, purpose, resource, issuer, sealed, updated FROM secrets WHERE user_id = ?
			ORDER BY server_id, purpose, resource, issuer`, tx.user())
		if err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		for rows.Next() {
			var (
				c    copySecret
				blob []byte
			)
			if err := rows.Scan(&c.key.ServerID, &c.key.Purpose, &c.key.Binding.Resource, &c.key.Binding.Issuer, &blob, &c.updated); err != nil {
				rows.Close()
				return fmt.Errorf("secrets: %w", err)
			}
			if c.value, err = s.open(c.key, blob); err != nil {
				bad = append(bad, err)
				continue
			}
			snap.secrets = append(snap.secrets, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("secrets: %w", err)
		}

		rows, err = tx.query(ctx, `SELECT namespace, key, value, updated FROM kv WHERE user_id = ? ORDER BY namespace, key`, tx.user())
		if err != nil {
			return fmt.Errorf("records: %w", err)
		}
		for rows.Next() {
			var c copyRecord
			if err := rows.Scan(&c.ns, &c.key, &c.value, &c.updated); err != nil {
				rows.Close()
				return fmt.Errorf("records: %w", err)
			}
			if !json.Valid([]byte(c.value)) {
				bad = append(bad, fmt.Errorf("record %s/%s is not valid JSON", c.ns, c.key))
				continue
			}
			snap.kv = append(snap.kv, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("records: %w", err)
		}

		if snap.pins, err = queryPins(ctx, tx, ``); err != nil {
			return fmt.Errorf("tool pins: %w", err)
		}
		if len(bad) > 0 {
			return fmt.Errorf("nothing was copied, because the copy would lose what cannot be read: %w", errors.Join(bad...))
		}
		return nil
	})
	if err != nil {
		snap.wipe()
		return nil, err
	}
	return snap, nil
}

// checkCopyTarget refuses a destination that has servers, or records
// under keys of snap, naming them (ErrCopyNotEmpty). It returns the
// number of records the destination has already.
func (s *DB) checkCopyTarget(ctx context.Context, tx *txn, snap *copySnapshot) (int, error) {
	servers, err := queryStrings(ctx, tx, `SELECT id FROM servers WHERE user_id = ? ORDER BY id`, tx.user())
	if err != nil {
		return 0, fmt.Errorf("servers: %w", err)
	}
	if len(servers) > 0 {
		return 0, fmt.Errorf("it has %d server(s) already (%s); nothing was written (copy into a user without servers, or remove them first): %w",
			len(servers), listNames(servers, 10), ErrCopyNotEmpty)
	}
	have := map[[2]string]bool{}
	rows, err := tx.query(ctx, `SELECT namespace, key FROM kv WHERE user_id = ?`, tx.user())
	if err != nil {
		return 0, fmt.Errorf("records: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return 0, fmt.Errorf("records: %w", err)
		}
		have[k] = true
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("records: %w", err)
	}
	var clash []string
	for _, rec := range snap.kv {
		if have[[2]string{rec.ns, rec.key}] {
			clash = append(clash, rec.ns+"/"+rec.key)
		}
	}
	if len(clash) > 0 {
		return 0, fmt.Errorf("it has record(s) under the same keys already (%s); nothing was written: %w", listNames(clash, 10), ErrCopyNotEmpty)
	}
	return len(have), nil
}

// queryStrings returns the one text column of q's rows.
func queryStrings(ctx context.Context, tx *txn, q string, args ...any) ([]string, error) {
	rows, err := tx.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// writeCopy writes snap for s's user in tx, sealing every secret for it.
func (s *DB) writeCopy(ctx context.Context, tx *txn, snap *copySnapshot) error {
	for _, c := range snap.servers {
		if _, err := tx.exec(ctx, `INSERT INTO servers (user_id, id, config, created, updated, revision) VALUES (?, ?, ?, ?, ?, 1)`,
			tx.user(), c.id, c.config, c.created, c.updated); err != nil {
			return fmt.Errorf("server %q: %w", c.id, err)
		}
	}
	// Sealed one by one, each with its own time: insertSecrets writes a
	// batch with one.
	for _, c := range snap.secrets {
		blob, err := s.seal(c.key, c.value)
		if err != nil {
			return err
		}
		if err := s.insertSecrets(ctx, tx, []sealedSecret{{key: c.key, blob: blob}}, c.updated); err != nil {
			return err
		}
	}
	for _, c := range snap.kv {
		if _, err := tx.exec(ctx, `INSERT INTO kv (user_id, namespace, key, value, updated) VALUES (?, ?, ?, ?, ?)`,
			tx.user(), c.ns, c.key, c.value, c.updated); err != nil {
			return fmt.Errorf("record %s/%s: %w", c.ns, c.key, err)
		}
	}
	for _, p := range snap.pins {
		var hh, hd, seen any // NULL without a held definition
		if p.Held != nil {
			hh, hd, seen = p.Held.Hash, string(p.Held.Definition), p.Held.Seen.UnixMilli()
		}
		if _, err := tx.exec(ctx, `INSERT INTO tool_pins (user_id, server_id, tool, hash, definition, pinned, held_hash, held_definition, held_seen)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			tx.user(), p.ServerID, p.Tool, p.Hash, string(p.Definition), p.Pinned.UnixMilli(), hh, hd, seen); err != nil {
			return fmt.Errorf("tool pin %q of server %q: %w", p.Tool, p.ServerID, err)
		}
	}
	return nil
}

// verifyCopy reads back, in the write transaction, what writeCopy wrote:
// the servers, the records (besides the existing ones) and pins are all
// there, and every secret opens for s's user to the value it had.
func (s *DB) verifyCopy(ctx context.Context, tx *txn, snap *copySnapshot, existing int) error {
	count := func(table string) (int, error) {
		var n int
		err := tx.queryRow(ctx, `SELECT count(*) FROM `+table+` WHERE user_id = ?`, tx.user()).Scan(&n)
		return n, err
	}
	for _, c := range []struct {
		table string
		want  int
	}{{"servers", len(snap.servers)}, {"kv", existing + len(snap.kv)}, {"tool_pins", len(snap.pins)}} {
		n, err := count(c.table)
		if err != nil {
			return fmt.Errorf("count %s: %w", c.table, err)
		}
		if n != c.want {
			return fmt.Errorf("%s holds %d row(s) of the user, want %d", c.table, n, c.want)
		}
	}
	want := make(map[SecretKey][]byte, len(snap.secrets))
	for _, c := range snap.secrets {
		want[c.key] = c.value
	}
	rows, err := tx.query(ctx, `SELECT server_id, purpose, resource, issuer, sealed FROM secrets WHERE user_id = ?`, tx.user())
	if err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var (
			k    SecretKey
			blob []byte
		)
		if err := rows.Scan(&k.ServerID, &k.Purpose, &k.Binding.Resource, &k.Binding.Issuer, &blob); err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		v, ok := want[k]
		if !ok {
			return fmt.Errorf("%s is not one of the source's", describeKey(k))
		}
		got, err := s.open(k, blob)
		if err != nil {
			return err
		}
		same := bytes.Equal(got, v)
		clear(got)
		if !same {
			return fmt.Errorf("%s does not open to the source's value", describeKey(k))
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	if seen != len(want) {
		return fmt.Errorf("%d of the %d secrets were written", seen, len(want))
	}
	return nil
}

// String is the report in one line: "2 servers (a, b), 5 secrets, …".
func (r CopyReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d server(s)", len(r.Servers))
	if len(r.Servers) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(r.Servers, ", "))
	}
	fmt.Fprintf(&b, ", %d secret(s), %d record(s)", r.Secrets, r.RecordCount())
	if len(r.Records) > 0 {
		var parts []string
		for _, ns := range slices.Sorted(maps.Keys(r.Records)) {
			parts = append(parts, fmt.Sprintf("%s %d", ns, r.Records[ns]))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, ", %d tool pin(s) (%d held)", r.Pins, r.Held)
	return b.String()
}
