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
	"regexp"
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
	// 6: users (issue #22, SPEC §9 A11). Every row carries the user it
	// belongs to, so the queries are those of a gateway's PostgreSQL
	// database; a personal store's rows all belong to LocalUser. The
	// unique indexes are the conflict targets of the upserts (the
	// primary keys, kept as they were, cannot name the user). A column
	// that exists already (a schema rewound by hand) is not added again
	// (addsExistingColumn).
	{
		`ALTER TABLE servers ADD COLUMN user_id TEXT NOT NULL DEFAULT 'local'`,
		`CREATE UNIQUE INDEX IF NOT EXISTS servers_user ON servers (user_id, id)`,
		`ALTER TABLE secrets ADD COLUMN user_id TEXT NOT NULL DEFAULT 'local'`,
		`CREATE UNIQUE INDEX IF NOT EXISTS secrets_user ON secrets (user_id, server_id, purpose, resource, issuer)`,
		`ALTER TABLE kv ADD COLUMN user_id TEXT NOT NULL DEFAULT 'local'`,
		`CREATE UNIQUE INDEX IF NOT EXISTS kv_user ON kv (user_id, namespace, key)`,
		`ALTER TABLE tool_pins ADD COLUMN user_id TEXT NOT NULL DEFAULT 'local'`,
		`CREATE UNIQUE INDEX IF NOT EXISTS tool_pins_user ON tool_pins (user_id, server_id, tool)`,
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
func Open(ctx context.Context, dir string, opts Options) (*DB, error) {
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

func open(ctx context.Context, dir string, opts Options) (*DB, error) {
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

	s := &DB{
		d:            sqliteDialect,
		user:         LocalUser,
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
func (s *DB) enableWAL(ctx context.Context) error {
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
func (s *DB) init(ctx context.Context) error {
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

func (s *DB) newerError(version int) error {
	return fmt.Errorf("store: open: data directory %s was written by a newer remotemcp (schema %d > %d); upgrade remotemcp (the database was left untouched): %w", s.dir, version, SchemaVersion(), ErrNewerSchema)
}

func (s *DB) quickCheck(ctx context.Context) error {
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
func (s *DB) migrate(ctx context.Context) error {
	for {
		done, err := s.migrateOne(ctx)
		if err != nil || done {
			return err
		}
	}
}

func (s *DB) migrateOne(ctx context.Context) (done bool, err error) {
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
		if skip, err := addsExistingColumn(ctx, tx, stmt); err != nil || skip {
			if err != nil {
				return false, fmt.Errorf("store: migrate %s to schema %d: statement %d: %w", s.path, version+1, i+1, err)
			}
			continue
		}
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

// addColumn matches the migrations' ALTER TABLE … ADD COLUMN statements.
var addColumn = regexp.MustCompile(`^ALTER TABLE (\w+) ADD COLUMN (\w+) `)

// addsExistingColumn reports whether stmt adds a column its table has
// already: SQLite has no ADD COLUMN IF NOT EXISTS.
func addsExistingColumn(ctx context.Context, tx *sql.Tx, stmt string) (bool, error) {
	m := addColumn.FindStringSubmatch(stmt)
	if m == nil {
		return false, nil
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`, m[1], m[2]).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// Dir returns the data directory the store lives in.
func (s *DB) Dir() string { return s.dir }
