package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DBFileName is the name of the database file inside the data directory.
const DBFileName = "remotemcp.db"

// Errors of Open that callers (the CLI) may want to explain differently.
var (
	// ErrNewerSchema: the database was written by a newer remotemcp.
	ErrNewerSchema = errors.New("database written by a newer remotemcp")
	// ErrCorrupt: the database file is not a (healthy) SQLite database. It
	// is never repaired, overwritten or re-created.
	ErrCorrupt = errors.New("database file is corrupt or not a remotemcp database")
	// ErrForeignDatabase: the database file is a SQLite database of some
	// other program (another application_id, or tables without remotemcp's
	// application_id). It is never migrated or changed; Open does not even
	// create a -wal or -shm file next to it when that can be avoided.
	ErrForeignDatabase = errors.New("not a remotemcp database")
	// ErrWrongKey: the key file is not the key the store was created with
	// (it cannot open the store's key check record, or, in a store older
	// than the record, any of its sealed secrets), or it is missing while
	// sealed secrets need it. Sealing new secrets under another key would
	// leave the store with secrets under two keys, so the store does not
	// open; nothing is written. The message names the key file and says
	// how to recover.
	ErrWrongKey = errors.New("wrong key file")
	// ErrDataDirNotWritable: the data directory, or a file remotemcp keeps
	// in it, cannot be written by this user (permissions, a read-only
	// file system). The message names it and how to choose another data
	// directory.
	ErrDataDirNotWritable = errors.New("data directory not writable")
)

// applicationID marks the file as a remotemcp database (PRAGMA
// application_id, "rmcp"), so Open refuses to migrate some other program's
// SQLite file that happens to sit at the same path.
const applicationID = 0x726d6370

// busyTimeout is how long a statement waits for another connection's (or
// process's) write lock before failing with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// DefaultPollInterval is how often the change feed looks for writes by
// other processes when Options.PollInterval is zero.
const DefaultPollInterval = 250 * time.Millisecond

// Options tune Open.
type Options struct {
	// PollInterval is how often subscribers' poller checks the store
	// revision for writes made by other processes; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives background problems (a failing poll); nil discards.
	Logger *slog.Logger
}

// migrations is the schema history, oldest first. Migration i brings the
// schema from version i to i+1 (PRAGMA user_version) and runs in its own
// transaction. Append only: never edit a migration that has shipped.
var migrations = [][]string{
	// 1: initial schema.
	{
		`CREATE TABLE servers (
			id      TEXT PRIMARY KEY NOT NULL,
			config  TEXT NOT NULL, -- config.Server JSON without Token/ClientSecret
			created INTEGER NOT NULL, -- unix milliseconds
			updated INTEGER NOT NULL
		) STRICT`,
		`CREATE TABLE secrets (
			server_id TEXT NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
			purpose   TEXT NOT NULL,
			resource  TEXT NOT NULL,
			issuer    TEXT NOT NULL,
			sealed    BLOB NOT NULL, -- nonce || AES-256-GCM ciphertext
			updated   INTEGER NOT NULL,
			PRIMARY KEY (server_id, purpose, resource, issuer)
		) STRICT, WITHOUT ROWID`,
		`CREATE TABLE meta (
			id       INTEGER PRIMARY KEY CHECK (id = 1),
			revision INTEGER NOT NULL
		) STRICT`,
		`INSERT INTO meta (id, revision) VALUES (1, 0)`,
		`CREATE TABLE kv (
			namespace TEXT NOT NULL,
			key       TEXT NOT NULL,
			value     TEXT NOT NULL, -- JSON
			updated   INTEGER NOT NULL,
			PRIMARY KEY (namespace, key)
		) STRICT, WITHOUT ROWID`,
		fmt.Sprintf(`PRAGMA application_id = %d`, applicationID),
	},
	// 2: per-server revision for compare-and-swap edits (issue #9 CAS,
	// EditServer). Every write of a server row increments it; rows that
	// exist when the column is added start at 1, as AddServer's do.
	{
		`ALTER TABLE servers ADD COLUMN revision INTEGER NOT NULL DEFAULT 1 CHECK (revision >= 1)`,
	},
	// 3: key check record (issue #10). meta.key_check holds a constant
	// sealed under the store's key, written right after the migrations
	// (SQL cannot seal), so Open can tell a replaced key file before it
	// seals anything under it. NULL until written; stores of schema 1 and
	// 2 get it on their first open, once the key has opened one of their
	// secrets.
	{
		`ALTER TABLE meta ADD COLUMN key_check BLOB`,
	},
	// 4: custom header values are sealed (SPEC §9 A2): servers.config keeps
	// the header names with empty values, and each value is a secret of
	// purpose "header:<name>" bound to the canonical resource. Nothing to
	// change in SQL; the version fences off older binaries, which would
	// send the headers empty (or, one development build, store values in
	// clear). Values an older build stored in clear are sealed by
	// sealClearHeaders on every open, once the key is known.
	{},
	// 5: tool pins (issue #20 item 3): the first definition seen of each
	// tool of a server, and the changed definition that holds it until
	// the person accepts it (pins.go). Not secrets; removing the server
	// removes them. IF NOT EXISTS: a schema rewound by hand (tests do)
	// migrates again.
	{
		`CREATE TABLE IF NOT EXISTS tool_pins (
			server_id  TEXT NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
			tool       TEXT NOT NULL,
			hash       TEXT NOT NULL, -- "sha256:" + hex of definition
			definition TEXT NOT NULL, -- canonical JSON (package pin)
			pinned     INTEGER NOT NULL, -- unix milliseconds
			held_hash       TEXT, -- the changed definition, NULL when none
			held_definition TEXT,
			held_seen       INTEGER,
			PRIMARY KEY (server_id, tool)
		) STRICT, WITHOUT ROWID`,
	},
}

// keyCheckSchema is the first schema version with meta.key_check.
const keyCheckSchema = 3

// headerSealSchema is the first schema version whose header values are
// sealed (SPEC §9 A2).
const headerSealSchema = 4

// SchemaVersion returns the database schema version this binary writes
// (and the newest it can read).
func SchemaVersion() int { return len(migrations) }

// SQLite is the Store kept in <data dir>/remotemcp.db. It is safe for
// concurrent use, and several processes (or several *SQLite in one process)
// may open the same data directory.
type SQLite struct {
	dir          string
	path         string
	db           *sql.DB
	sealer       *sealer
	log          *slog.Logger
	pollInterval time.Duration

	// ctx is cancelled by Close; background queries use it.
	ctx    context.Context
	cancel context.CancelFunc

	// wmu serializes this process's write transactions, so they queue on a
	// mutex instead of spinning in SQLite's busy handler against each other.
	wmu sync.Mutex

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	feed feed

	// keyCheck is the key check record this process verified (or wrote)
	// on open. Writes that seal compare it with the stored one, so a
	// process that still holds an old key stops sealing once another
	// process has re-keyed an empty store (see ensureKeyCheck).
	keyCheck []byte

	locksMu sync.Mutex
	locks   map[string]chan struct{} // in-process half of Lock, per name
}

var _ Store = (*SQLite)(nil)

// Open opens (creating if needed) the store in dir: the SQLite database
// remotemcp.db in WAL mode and the key file that seals secrets. The schema
// is migrated to SchemaVersion().
//
// Open never damages what it finds, and refuses before it writes anything:
//   - a file that is not a SQLite database, or is corrupt: ErrCorrupt;
//   - another program's SQLite database (see ErrForeignDatabase): it is
//     identified through a read-only connection first, so not even a -wal
//     or -shm file is created next to it when that can be avoided;
//   - a database of a newer schema: ErrNewerSchema;
//   - a key file that is not the one the store was created with, or a
//     missing key file while sealed secrets need it: ErrWrongKey. A
//     missing key file is created only while the database holds no
//     sealed secrets;
//   - a data directory this user cannot write: ErrDataDirNotWritable,
//     with a hint instead of SQLite's bare "readonly database".
func Open(ctx context.Context, dir string, opts Options) (*SQLite, error) {
	if dir == "" {
		return nil, errors.New("store: open: empty data directory")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: open: data directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, mkdirError(dir, err)
	}
	s, err := open(ctx, dir, opts)
	if err != nil {
		return nil, notWritable(dir, err)
	}
	return s, nil
}

func open(ctx context.Context, dir string, opts Options) (*SQLite, error) {
	path := filepath.Join(dir, DBFileName)
	hdr, err := checkHeader(path)
	if err != nil {
		return nil, err
	}
	// A header with remotemcp's application_id needs no closer look. Any
	// other non-empty file (including a store of ours whose application_id
	// is still only in the -wal file) is identified read-only before the
	// read-write connection may touch it.
	if !hdr.empty && hdr.appID != applicationID {
		id, err := inspect(ctx, path)
		if err != nil {
			return nil, err
		}
		if !id.ours() {
			return nil, foreignError(path, id)
		}
	}
	// SQLite opens a database file it cannot write read-only without a
	// word and fails only at the first write, and a directory it cannot
	// write as "unable to open database file"; say so up front instead.
	if p, _ := firstNotWritable(dir); p != "" {
		return nil, notWritableError("open", dir, p, nil)
	}
	// Create the file ourselves so it is 0600 (SQLite would use the umask);
	// the -wal and -shm files inherit the database file's mode.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("store: open: create database %s: %w", path, err)
	}

	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("store: open database %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(2)

	s := &SQLite{
		dir:          dir,
		path:         path,
		db:           db,
		log:          opts.Logger,
		pollInterval: opts.PollInterval,
		locks:        make(map[string]chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.pollInterval <= 0 {
		s.pollInterval = DefaultPollInterval
	}
	s.feed.init()
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// dsn builds the driver DSN of the read-write connections: a file: URI
// with the per-connection pragmas. _txlock=immediate makes every
// read-write transaction take the write lock up front, so two writers
// never deadlock upgrading read locks; read-only transactions stay
// deferred.
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	return fileDSN(path, q)
}

// fileDSN is a file: URI of path (so any byte of the path survives, '?'
// included) with the query q.
func fileDSN(path string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

func corruptError(path, why string) error {
	return fmt.Errorf("store: open database: %s: %s; the file was left untouched (move it aside to start afresh, or restore a backup): %w", path, why, ErrCorrupt)
}

// enableWAL sets the journal mode to WAL. Changing it takes the file's
// exclusive lock, and SQLite answers SQLITE_BUSY at once, without its busy
// handler, while another process (or connection) holds a lock, as when
// two remotemcp processes open a new data directory together; so BUSY is
// retried for up to busyTimeout, like any other lock wait here.
func (s *SQLite) enableWAL(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeout)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		var mode string
		err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// isBusy reports whether err is SQLite saying another connection holds a
// lock it needs.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// isCorrupt reports whether err is SQLite saying the file is damaged.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff // primary result code
	return code == sqlite3.SQLITE_CORRUPT || code == sqlite3.SQLITE_NOTADB
}

// init checks, migrates and unseals, in an order that never writes to a
// file it is about to refuse.
func (s *SQLite) init(ctx context.Context) error {
	// The file was identified before this connection opened it; this
	// second look (through the connection that will write) catches a file
	// swapped in since, and a header that named remotemcp while the
	// database does not.
	id, err := readIdentity(ctx, s.db)
	if err != nil {
		if isCorrupt(err) {
			return corruptError(s.path, err.Error())
		}
		return fmt.Errorf("store: open database %s: identify: %w", s.path, err)
	}
	if !id.ours() {
		return foreignError(s.path, id)
	}
	if id.version < 0 {
		return corruptError(s.path, fmt.Sprintf("schema version %d is not one remotemcp writes", id.version))
	}
	if id.version > int64(SchemaVersion()) {
		return s.newerError(int(id.version))
	}
	version := int(id.version)
	if version > 0 {
		if err := s.quickCheck(ctx); err != nil {
			return err
		}
	}

	key, err := readKeyFile(s.keyPath())
	keyMissing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !keyMissing {
		return err
	}
	if version > 0 {
		if err := s.checkKey(ctx, key, version); err != nil {
			return err
		}
	}

	// WAL is a persistent property of the file; setting it is the first
	// write, done only once the file has passed the checks above.
	if err := s.enableWAL(ctx); err != nil {
		return fmt.Errorf("store: open database %s: enable WAL: %w", s.path, err)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}

	if keyMissing {
		if key, err = createKeyFile(s.dir); err != nil {
			return err
		}
	}
	if s.sealer, err = newSealer(key); err != nil {
		return err
	}
	if err := s.ensureKeyCheck(ctx, keyMissing); err != nil {
		return err
	}
	return s.sealClearHeaders(ctx, version > 0 && version < headerSealSchema)
}

func (s *SQLite) newerError(version int) error {
	return fmt.Errorf("store: open: data directory %s was written by a newer remotemcp (schema %d > %d); upgrade remotemcp (the database was left untouched): %w", s.dir, version, SchemaVersion(), ErrNewerSchema)
}

func (s *SQLite) quickCheck(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		if isCorrupt(err) {
			return corruptError(s.path, err.Error())
		}
		return fmt.Errorf("store: open database %s: integrity check: %w", s.path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("store: open database %s: integrity check: %w", s.path, err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		if isCorrupt(err) {
			return corruptError(s.path, err.Error())
		}
		return fmt.Errorf("store: open database %s: integrity check: %w", s.path, err)
	}
	if len(problems) > 0 {
		return corruptError(s.path, fmt.Sprintf("integrity check failed: %v", problems))
	}
	return nil
}

// migrate applies the missing migrations, one transaction each. The version
// is re-read inside each write transaction, so two processes opening a new
// data directory at once apply every migration exactly once.
func (s *SQLite) migrate(ctx context.Context) error {
	for {
		done, err := s.migrateOne(ctx)
		if err != nil || done {
			return err
		}
	}
}

func (s *SQLite) migrateOne(ctx context.Context) (done bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: migrate %s: begin: %w", s.path, err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return false, fmt.Errorf("store: migrate %s: read schema version: %w", s.path, err)
	}
	switch {
	case version < 0:
		return false, corruptError(s.path, fmt.Sprintf("schema version %d is not one remotemcp writes", version))
	case version > SchemaVersion():
		return false, s.newerError(version)
	case version == SchemaVersion():
		return true, nil
	}
	for i, stmt := range migrations[version] {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return false, fmt.Errorf("store: migrate %s to schema %d: statement %d: %w", s.path, version+1, i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version+1)); err != nil {
		return false, fmt.Errorf("store: migrate %s to schema %d: set version: %w", s.path, version+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: migrate %s to schema %d: commit: %w", s.path, version+1, err)
	}
	return false, nil
}

// Dir returns the data directory the store lives in.
func (s *SQLite) Dir() string { return s.dir }

// Revision returns the store's write counter. Every committed write, by
// any process, increments it by exactly one.
func (s *SQLite) Revision(ctx context.Context) (int64, error) {
	if s.closed.Load() {
		return 0, fmt.Errorf("store: revision: %w", ErrClosed)
	}
	var rev int64
	if err := s.db.QueryRowContext(ctx, `SELECT revision FROM meta WHERE id = 1`).Scan(&rev); err != nil {
		return 0, fmt.Errorf("store: revision: %w", err)
	}
	return rev, nil
}

// Close stops the change poller, closes every subscriber channel and the
// database. It is idempotent; later calls return the first call's result.
// Locks still held stay held until their unlock functions run.
func (s *SQLite) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cancel()
		s.feed.close()
		s.closeErr = s.db.Close()
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("store: close database: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// readTx runs fn in a read-only transaction, so everything fn reads comes
// from one snapshot.
func (s *SQLite) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// writeTx runs fn in a write transaction. If fn reports a change, the
// revision is incremented in the same transaction, and after the commit
// the change (with the new revision) goes to this process's subscribers.
// A nil change from fn means nothing was modified: no revision, no event.
func (s *SQLite) writeTx(ctx context.Context, fn func(tx *sql.Tx) (*Change, error)) error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	ch, err := fn(tx)
	if err != nil {
		return err
	}
	if ch == nil {
		return tx.Commit()
	}
	if err := tx.QueryRowContext(ctx, `UPDATE meta SET revision = revision + 1 WHERE id = 1 RETURNING revision`).Scan(&ch.Revision); err != nil {
		return fmt.Errorf("bump revision: %w", err)
	}
	// Tell the poller this revision is ours before it can become visible,
	// so it is not reported a second time as another process's write.
	s.feed.markOwn(ch.Revision)
	if err := tx.Commit(); err != nil {
		s.feed.unmarkOwn(ch.Revision)
		return fmt.Errorf("commit: %w", err)
	}
	s.feed.publish(*ch)
	return nil
}

func nowMillis() int64 { return time.Now().UnixMilli() }
