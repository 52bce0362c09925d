package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"sync/atomic"

	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgMigrations is the schema history of a gateway's PostgreSQL database,
// oldest first, like migrations for SQLite; the version is
// meta.schema_version. Append only. Every table but meta and users has a
// user_id, and the queries of DB are the same as on SQLite.
var pgMigrations = [][]string{
	// 1: the schema of SQLite's version 6, with users.
	{
		`CREATE TABLE users (
			id       TEXT PRIMARY KEY,
			email    TEXT NOT NULL UNIQUE,
			revision BIGINT NOT NULL DEFAULT 0, -- the user's write counter (DB.Revision)
			created  BIGINT NOT NULL
		)`,
		`CREATE TABLE servers (
			user_id  TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
			id       TEXT NOT NULL,
			config   TEXT NOT NULL,
			created  BIGINT NOT NULL,
			updated  BIGINT NOT NULL,
			revision BIGINT NOT NULL DEFAULT 1 CHECK (revision >= 1),
			seq      BIGSERIAL, -- insertion order within one millisecond
			PRIMARY KEY (user_id, id)
		)`,
		`CREATE TABLE secrets (
			user_id   TEXT NOT NULL,
			server_id TEXT NOT NULL,
			purpose   TEXT NOT NULL,
			resource  TEXT NOT NULL,
			issuer    TEXT NOT NULL,
			sealed    BYTEA NOT NULL, -- nonce || AES-256-GCM ciphertext; the user is in the associated data
			updated   BIGINT NOT NULL,
			PRIMARY KEY (user_id, server_id, purpose, resource, issuer),
			FOREIGN KEY (user_id, server_id) REFERENCES servers (user_id, id) ON DELETE CASCADE
		)`,
		`CREATE TABLE kv (
			user_id   TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
			namespace TEXT NOT NULL,
			key       TEXT NOT NULL,
			value     TEXT NOT NULL,
			updated   BIGINT NOT NULL,
			PRIMARY KEY (user_id, namespace, key)
		)`,
		`CREATE TABLE tool_pins (
			user_id    TEXT NOT NULL,
			server_id  TEXT NOT NULL,
			tool       TEXT NOT NULL,
			hash       TEXT NOT NULL,
			definition TEXT NOT NULL,
			pinned     BIGINT NOT NULL,
			held_hash       TEXT,
			held_definition TEXT,
			held_seen       BIGINT,
			PRIMARY KEY (user_id, server_id, tool),
			FOREIGN KEY (user_id, server_id) REFERENCES servers (user_id, id) ON DELETE CASCADE
		)`,
	},
	// 2: servers the admins share with everyone (pgshared.go): the
	// definition, without secrets; each person's copy is theirs.
	{
		`CREATE TABLE shared_servers (
			id      TEXT PRIMARY KEY,
			config  TEXT NOT NULL, -- config.Server JSON, no secrets
			created BIGINT NOT NULL,
			updated BIGINT NOT NULL
		)`,
	},
	// 3: the index of the host tokens' hashes (KVOwner, on every request
	// of a gateway's hosts). Partial: only those records are cast to
	// jsonb (frontend.TokenNamespace; a record of another namespace,
	// which may hold what jsonb refuses, is never indexed).
	{
		`CREATE INDEX kv_host_token_hash ON kv ((value::jsonb ->> 'sha256')) WHERE namespace = 'mcp-http-tokens'`,
	},
	// 4: OAuth sign-ins waiting for their callback (authflows.go), so
	// that the callback may land on any replica (SPEC §9 A11, issue
	// #23). The state itself is never stored, only its SHA-256.
	{
		`CREATE TABLE oauth_flows (
			state_hash TEXT PRIMARY KEY, -- hex SHA-256 of the OAuth state
			user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
			server_id  TEXT NOT NULL,
			sealed     BYTEA NOT NULL, -- the flow record, sealed for the user and this state
			expires    BIGINT NOT NULL, -- unix ms; an expired flow is no one's
			claimed    BIGINT,          -- unix ms: a replica took the callback (never twice)
			outcome    BYTEA,           -- sealed: how a replica that took the callback ended it
			FOREIGN KEY (user_id, server_id) REFERENCES servers (user_id, id) ON DELETE CASCADE
		)`,
		`CREATE INDEX oauth_flows_expires ON oauth_flows (expires)`,
	},
	// 5: the request log the replicas share (requestlog.go; issue #23),
	// the last RequestLogSize entries per (user, server), trimmed as
	// they are written. Not a change of the user's: no revision.
	{
		`CREATE TABLE request_log (
			user_id   TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
			server_id TEXT NOT NULL,
			seq       BIGSERIAL PRIMARY KEY, -- order of writing, after at
			at        BIGINT NOT NULL,       -- the exchange's time, unix µs
			ref       TEXT NOT NULL,         -- the writing process and its number for the entry
			entry     TEXT NOT NULL,         -- JSON of a session.Exchange: metadata only, redacted
			FOREIGN KEY (user_id, server_id) REFERENCES servers (user_id, id) ON DELETE CASCADE
		)`,
		`CREATE INDEX request_log_last ON request_log (user_id, server_id, at, seq)`,
	},
}

// pgMigrateLock is the advisory lock key ("rmcp") that serializes
// migrations of processes opening one database at once.
const pgMigrateLock = 0x726d6370

// idleInTransaction ends a pool connection's transaction that waits this
// long for its next statement (PostgreSQL's
// idle_in_transaction_session_timeout), unless the DSN sets it. A
// replica that is frozen (SIGSTOP, a stalled VM) in the middle of a
// write would otherwise hold the person's revision row, and with it
// every replica's writes for that person, until it wakes; this way its
// late write fails and the others go on. No transaction of ours waits
// that long between statements (SecretLock sets its own, longer bound
// for the token request it holds a row across).
const idleInTransaction = "20s"

// poolConfig is the pool connections' configuration: the DSN's, with
// idleInTransaction.
func poolConfig(cfg *pgx.ConnConfig) *pgx.ConnConfig {
	c := cfg.Copy()
	if _, ok := c.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		c.RuntimeParams["idle_in_transaction_session_timeout"] = idleInTransaction
	}
	return c
}

// DefaultPostgresPollInterval is how often a gateway's database is
// polled for revisions when PostgresOptions.PollInterval is zero. Writes
// arrive by LISTEN/NOTIFY at once, and the listener re-reads every
// revision whenever it listens again; the poll only catches what a
// notification could still miss, so it need not cost every replica four
// queries a second as SQLite's does.
const DefaultPostgresPollInterval = 2 * time.Second

// PostgresOptions tune OpenPostgres.
type PostgresOptions struct {
	Options
	// KeyDir is the directory of the key file that seals the secrets (the
	// gateway's data directory); it is created like a personal store's.
	// Every process serving the database needs the same key file.
	KeyDir string
	// OnWait is told each time the database cannot be reached yet and
	// OpenPostgres waits before trying again (nil: only the Logger is).
	OnWait func(err error, retryIn time.Duration)
	// LogFlushInterval is how long an entry of the shared request log
	// may wait in this process before it is written (requestlog.go;
	// zero: DefaultLogFlushInterval). A full batch is written at once.
	LogFlushInterval time.Duration
}

// Postgres is a gateway's database (SPEC §9 A11): its users, and for each
// user the rows a DB holds (User). Every row, every secret's sealing and
// every revision belongs to one user.
//
// Several processes (replicas) may open one database; each sees the
// others' writes through the change feed (pgfeed.go) and shares their
// advisory locks (pglock.go). Besides its pool (at most 16 connections)
// a Postgres keeps two connections of its own once used: one listening
// for the change feed, one holding this process's advisory locks.
type Postgres struct {
	db     *sql.DB
	pgcfg  *pgx.ConnConfig // the DSN, for the connections of its own: listening, locks
	root   *DB             // user-less: key check, migrations
	log    *slog.Logger
	poll   time.Duration
	ctx    context.Context
	cancel context.CancelFunc

	locks pgLocks     // this process's advisory locks (pglock.go)
	logs  requestLogs // the shared request log's queue and writer (requestlog.go)
	rows  rowSlots    // connections SecretLock may hold at once (secretlock.go)

	mu      sync.Mutex
	open    map[*DB]struct{} // users' DBs handed out by User and not closed yet
	views   map[*DB]int64    // open users' DBs being watched → last revision seen
	watched map[string]int   // users of views → how many
	polling bool             // feedLoop and listenLoop run (pgfeed.go)
	done    chan struct{}    // feedLoop returned
	closed  bool

	// The users notified since feedLoop last looked (pgfeed.go).
	nmu        sync.Mutex
	notify     map[string]struct{}
	notifyFull bool // read every user's revision: notifications may have been missed
	wake       chan struct{}
	listenDone chan struct{} // listenLoop returned

	// onListen, when set (tests), is told the listening connection's
	// server process each time it listens.
	onListen func(pid uint32)

	// unavailLogged is when logUnavailable last logged (UnixNano).
	unavailLogged atomic.Int64

	// removed are told of users the feed found gone (OnUserRemoved).
	rmu     sync.Mutex
	removed []func(id string)
}

// OnUserRemoved registers f, told the id of a user whose DB this process
// has open when the change feed finds that user gone: removed, usually
// by another replica. It runs on the feed's goroutine before the user's
// DBs hear of it, so a gateway closes the person's engine (which ends
// their sessions to remote servers properly) before that engine reads
// an empty store; the feed waits for it.
func (p *Postgres) OnUserRemoved(f func(id string)) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	p.removed = append(p.removed, f)
}

// permanent reports whether a connection error will not go away by
// waiting: the server refused our credentials or has no such database.
func permanent(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "28") || pe.Code == "3D000" // invalid authorization; invalid catalog name
	}
	return false
}

// OpenPostgres opens a gateway's database at dsn (a PostgreSQL URL or
// key=value connection string), migrating its schema and checking the
// key file in o.KeyDir against it. While the server cannot be reached it
// waits, backing off from 0.5 s to 10 s and saying so through o.OnWait
// and the logger, until ctx ends; credentials it refuses or a database
// that does not exist fail at once.
func OpenPostgres(ctx context.Context, dsn string, o PostgresOptions) (*Postgres, error) {
	where := redactDSN(dsn)
	if o.KeyDir == "" {
		return nil, errors.New("store: open PostgreSQL: no directory for the key file")
	}
	dir, err := filepath.Abs(o.KeyDir)
	if err != nil {
		return nil, fmt.Errorf("store: open PostgreSQL: key directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, mkdirError(dir, err)
	}
	pgcfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open PostgreSQL %s: %w", where, err)
	}
	db := stdlib.OpenDB(*poolConfig(pgcfg))
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := waitForPostgres(ctx, db, where, log, o.OnWait); err != nil {
		db.Close()
		return nil, err
	}
	p := &Postgres{
		db: db, pgcfg: pgcfg, log: log, poll: o.PollInterval,
		open: map[*DB]struct{}{}, views: map[*DB]int64{}, watched: map[string]int{},
		done: make(chan struct{}), notify: map[string]struct{}{}, wake: make(chan struct{}, 1), listenDone: make(chan struct{}),
	}
	if p.poll <= 0 {
		p.poll = DefaultPostgresPollInterval
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.logs.init(o.LogFlushInterval)
	p.locks.init(pgcfg, log, where)
	p.root = p.newDB("", dir, where)
	if err := p.init(ctx, dir); err != nil {
		p.cancel()
		p.locks.close()
		db.Close()
		return nil, err
	}
	return p, nil
}

func waitForPostgres(ctx context.Context, db *sql.DB, where string, log *slog.Logger, onWait func(error, time.Duration)) error {
	wait := 500 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil {
			return nil
		}
		if permanent(err) || ctx.Err() != nil {
			return fmt.Errorf("store: connect to PostgreSQL %s: %w", where, err)
		}
		log.Warn("store: PostgreSQL cannot be reached yet; waiting", "db", where, "err", err, "retryIn", wait)
		if onWait != nil {
			onWait(err, wait)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return fmt.Errorf("store: connect to PostgreSQL %s: gave up waiting: %w", where, err)
		}
		wait = min(2*wait, 10*time.Second)
	}
}

// newDB returns a DB of user over p's pool.
func (p *Postgres) newDB(user, dir, where string) *DB {
	s := &DB{
		d: postgresDialect, user: user, dir: dir, path: where, db: p.db, pg: p,
		log: p.log, pollInterval: p.poll, locks: make(map[string]chan struct{}),
	}
	if p.root != nil {
		s.sealer, s.keyCheck = p.root.sealer, p.root.keyCheck
	}
	s.feed.init()
	s.ctx, s.cancel = context.WithCancel(p.ctx)
	return s
}

// init migrates and checks the key, in an order that writes nothing when
// the key is refused (as Open does for SQLite).
func (p *Postgres) init(ctx context.Context, dir string) error {
	s := p.root
	version, err := p.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if version > len(pgMigrations) {
		return fmt.Errorf("store: open PostgreSQL %s: written by a newer remotemcp (schema %d > %d); upgrade remotemcp (the database was left untouched): %w", s.path, version, len(pgMigrations), ErrNewerSchema)
	}
	key, err := readKeyFile(s.keyPath())
	keyMissing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !keyMissing {
		return err
	}
	if version > 0 {
		if err := s.checkKey(ctx, key, keyCheckSchema); err != nil {
			return err
		}
	}
	if err := p.migrate(ctx); err != nil {
		return err
	}
	if keyMissing {
		if key, err = createKeyFile(dir); err != nil {
			return err
		}
	}
	if s.sealer, err = newSealer(key); err != nil {
		return err
	}
	return s.ensureKeyCheck(ctx, keyMissing)
}

// schemaVersion reads meta.schema_version: 0 for an empty database. A
// database with tables but no meta of remotemcp's (none, or another
// program's table of that name) is another program's: refused.
func (p *Postgres) schemaVersion(ctx context.Context) (int, error) {
	fail := func(err error) (int, error) {
		return 0, fmt.Errorf("store: open PostgreSQL %s: identify: %w", p.root.path, err)
	}
	// Under the migrations' lock: a process migrating the new database
	// at this moment has committed once the lock is ours, so its tables
	// are never taken for another program's.
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, pgMigrateLock); err != nil {
		return fail(err)
	}
	var ours bool
	if err := tx.QueryRowContext(ctx, `SELECT count(*) = 2 FROM pg_attribute
		WHERE attrelid = to_regclass('meta') AND attname IN ('schema_version', 'key_check') AND NOT attisdropped`).Scan(&ours); err != nil {
		return fail(err)
	}
	if !ours {
		var tables []string
		rows, err := tx.QueryContext(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename LIMIT 6`)
		if err != nil {
			return fail(err)
		}
		defer rows.Close()
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				return fail(err)
			}
			tables = append(tables, t)
		}
		if err := rows.Err(); err != nil {
			return fail(err)
		}
		if len(tables) > 0 {
			return 0, fmt.Errorf("store: open PostgreSQL %s: its schema holds tables of another program (%s) and no remotemcp schema; give remotemcp a database of its own (it was left untouched): %w", p.root.path, listNames(tables, 5), ErrForeignDatabase)
		}
		return 0, nil
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT schema_version FROM meta WHERE id = 1`).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: open PostgreSQL %s: read schema version: %w", p.root.path, err)
	}
	return v, nil
}

// migrate applies the missing migrations in one transaction, under an
// advisory lock, so processes opening a new database at once apply each
// exactly once.
func (p *Postgres) migrate(ctx context.Context) error {
	fail := func(step string, err error) error {
		return fmt.Errorf("store: migrate PostgreSQL %s: %s: %w", p.root.path, step, err)
	}
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fail("begin", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, pgMigrateLock); err != nil {
		return fail("lock", err)
	}
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS meta (
			id             INTEGER PRIMARY KEY CHECK (id = 1),
			schema_version INTEGER NOT NULL,
			key_check      BYTEA
		)`,
		`INSERT INTO meta (id, schema_version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fail("meta", err)
		}
	}
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT schema_version FROM meta WHERE id = 1`).Scan(&version); err != nil {
		return fail("read schema version", err)
	}
	if version > len(pgMigrations) {
		return fmt.Errorf("store: open PostgreSQL %s: written by a newer remotemcp (schema %d > %d); upgrade remotemcp: %w", p.root.path, version, len(pgMigrations), ErrNewerSchema)
	}
	for v := version; v < len(pgMigrations); v++ {
		for i, stmt := range pgMigrations[v] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fail(fmt.Sprintf("schema %d statement %d", v+1, i+1), err)
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET schema_version = $1 WHERE id = 1`, len(pgMigrations)); err != nil {
		return fail("set version", err)
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	return nil
}

// UserInfo is a gateway user: never their secrets.
type UserInfo struct {
	ID      string
	Email   string
	Created time.Time
}

// ErrBadEmail: AddUser was given something that is not an email address.
var ErrBadEmail = errors.New("not an email address (want name@domain)")

// NormalizeEmail returns the form users are looked up by: trimmed and
// lower case. It refuses what is not name@domain.
func NormalizeEmail(email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	name, domain, ok := strings.Cut(e, "@")
	if !ok || name == "" || domain == "" || strings.ContainsAny(e, " \t\r\n<>,;\"'") || strings.Contains(domain, "@") || len(e) > 254 {
		return "", fmt.Errorf("%q: %w", email, ErrBadEmail)
	}
	return e, nil
}

// AddUser adds a user with a new id; ErrDuplicate when the email has one.
func (p *Postgres) AddUser(ctx context.Context, email string) (UserInfo, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return UserInfo{}, fmt.Errorf("store: add user: %w", err)
	}
	var b [9]byte
	if _, err := rand.Read(b[:]); err != nil {
		return UserInfo{}, fmt.Errorf("store: add user %s: %w", e, err)
	}
	u := UserInfo{ID: "u_" + hex.EncodeToString(b[:]), Email: e, Created: time.UnixMilli(nowMillis()).UTC()}
	res, err := p.db.ExecContext(ctx, `INSERT INTO users (id, email, created) VALUES ($1, $2, $3) ON CONFLICT (email) DO NOTHING`,
		u.ID, u.Email, u.Created.UnixMilli())
	if err != nil {
		return UserInfo{}, fmt.Errorf("store: add user %s: %w", e, p.root.unavailable(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return UserInfo{}, fmt.Errorf("store: add user %s: %w", e, ErrDuplicate)
	}
	return u, nil
}

// UserByEmail finds a user; ErrNotFound if there is none.
func (p *Postgres) UserByEmail(ctx context.Context, email string) (UserInfo, error) {
	e, err := NormalizeEmail(email)
	if err != nil {
		return UserInfo{}, fmt.Errorf("store: find user: %w", err)
	}
	return p.userWhere(ctx, `email = $1`, e)
}

// UserByID finds a user; ErrNotFound if there is none.
func (p *Postgres) UserByID(ctx context.Context, id string) (UserInfo, error) {
	return p.userWhere(ctx, `id = $1`, id)
}

func (p *Postgres) userWhere(ctx context.Context, where string, arg string) (UserInfo, error) {
	var (
		u       UserInfo
		created int64
	)
	err := p.db.QueryRowContext(ctx, `SELECT id, email, created FROM users WHERE `+where, arg).Scan(&u.ID, &u.Email, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return UserInfo{}, fmt.Errorf("store: user %q: %w", arg, ErrNotFound)
	}
	if err != nil {
		return UserInfo{}, fmt.Errorf("store: user %q: %w", arg, p.root.unavailable(err))
	}
	u.Created = time.UnixMilli(created).UTC()
	return u, nil
}

// Users lists the users by email.
func (p *Postgres) Users(ctx context.Context) ([]UserInfo, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT id, email, created FROM users ORDER BY email`)
	if err != nil {
		return nil, fmt.Errorf("store: list users: %w", p.root.unavailable(err))
	}
	defer rows.Close()
	var out []UserInfo
	for rows.Next() {
		var (
			u       UserInfo
			created int64
		)
		if err := rows.Scan(&u.ID, &u.Email, &created); err != nil {
			return nil, fmt.Errorf("store: list users: %w", p.root.unavailable(err))
		}
		u.Created = time.UnixMilli(created).UTC()
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list users: %w", p.root.unavailable(err))
	}
	return out, nil
}

// RemoveUser deletes a user and everything of theirs (servers, secrets,
// records, pins) in one transaction; ErrNotFound if there is none. Their
// open DBs fail every later write with ErrUserRemoved; closing them is
// the caller's. The removal notifies nobody: other processes' subscribers
// of the user hear of it from the poll (a re-read at revision -1), after
// this process has closed what it holds of the user (the gateway ends
// its sessions to remote servers while it can still read their secrets).
func (p *Postgres) RemoveUser(ctx context.Context, id string) error {
	res, err := p.db.ExecContext(ctx, `DELETE FROM users WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("store: remove user %q: %w", id, p.root.unavailable(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: remove user %q: %w", id, ErrNotFound)
	}
	return nil
}

// User returns the store of one user; ErrNotFound if there is none.
// Close it when done (the database stays open).
func (p *Postgres) User(ctx context.Context, id string) (*DB, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("store: user %q: %w", id, ErrClosed)
	}
	if _, err := p.UserByID(ctx, id); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("store: user %q: %w", id, ErrClosed)
	}
	s := p.newDB(id, p.root.dir, p.root.path)
	p.open[s] = struct{}{}
	return s, nil
}

// DB returns the database's connection pool, for what is not a user's
// (the gateway's own queries in tests).
func (p *Postgres) DB() *sql.DB { return p.db }

// watch adds s to the revisions the change feed reads, from last.
func (p *Postgres) watch(s *DB, last int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if _, ok := p.views[s]; !ok {
		p.watched[s.user]++
	}
	p.views[s] = last
	p.startFeed()
}

// forget stops watching s and forgets it (its Close).
func (p *Postgres) forget(s *DB) {
	p.mu.Lock()
	if _, ok := p.views[s]; ok {
		delete(p.views, s)
		if p.watched[s.user]--; p.watched[s.user] <= 0 {
			delete(p.watched, s.user)
		}
	}
	delete(p.open, s)
	p.mu.Unlock()
}

// revisions reads every user's revision (the poll of the change feed).
func (p *Postgres) revisions(ctx context.Context) (map[string]int64, error) {
	rows, err := p.db.QueryContext(ctx, `SELECT id, revision FROM users`)
	if err != nil {
		return nil, err
	}
	return scanRevisions(rows)
}

// scanRevisions reads rows of (id, revision) and closes them.
func scanRevisions(rows *sql.Rows) (map[string]int64, error) {
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var (
			id  string
			rev int64
		)
		if err := rows.Scan(&id, &rev); err != nil {
			return nil, err
		}
		out[id] = rev
	}
	return out, rows.Err()
}

// Close closes the database and every user's DB taken from it, which
// then fail with ErrClosed and close their subscribers' channels.
// Idempotent.
func (p *Postgres) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	polling := p.polling
	open := make([]*DB, 0, len(p.open))
	for s := range p.open {
		open = append(open, s)
	}
	p.mu.Unlock()
	p.cancel()
	if polling {
		<-p.done
		<-p.listenDone
	}
	for _, s := range open {
		s.Close()
	}
	p.closeLog() // its last flush, before the pool closes
	p.locks.close()
	if err := p.db.Close(); err != nil {
		return fmt.Errorf("store: close PostgreSQL: %w", err)
	}
	return nil
}

// pgLockKey is the advisory lock key of a user's lock name.
func pgLockKey(user, name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(user))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return int64(h.Sum64())
}
