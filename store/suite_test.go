package store

// One store, two implementations, one test suite (issue #22): every case
// of TestStoreSuite runs against a personal store (SQLite, user
// LocalUser) and against a gateway user's store (PostgreSQL,
// Postgres.User), so the two cannot drift apart. What only one of them
// has (SQLite's files, WAL and migrations; PostgreSQL's users) is tested
// beside the suite, for that backend alone.

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/remotemcp/remotemcp/internal/pgtest"
)

// backend is where a store of the suite lives.
type backend struct {
	name string
	// open returns a fresh, empty store, closed when the test ends.
	open func(t *testing.T) *DB
	// again returns a second handle on the store of s, as another
	// process opens it: its own connections, change feed, poller and
	// locks; the same rows and key file. It is closed when the test
	// ends, and may be called after s was closed.
	again func(t *testing.T, s *DB) *DB
}

var backends = []backend{
	{
		name:  "sqlite",
		open:  func(t *testing.T) *DB { return openT(t, t.TempDir()) },
		again: func(t *testing.T, s *DB) *DB { return openT(t, s.Dir()) },
	},
	{name: "postgres", open: openPGStore, again: againPGStore},
}

// suiteCase is one backend-independent test.
type suiteCase struct {
	name string
	run  func(t *testing.T, b backend)
}

// suite lists the cases of TestStoreSuite, by area.
var suite = []suiteCase{
	// Servers and secrets (store_test.go).
	{"ServerRoundTrip", testServerRoundTrip},
	{"GetServerNotFound", testGetServerNotFound},
	{"RefusedWritesLeaveDataUnchanged", testRefusedWritesLeaveDataUnchanged},
	{"UpdateServerBearerRebind", testUpdateServerBearerRebind},
	{"SecretsNeverInClear", testSecretsNeverInClear},
	{"SecretsAPI", testSecretsAPI},
	{"KV", testKV},
	{"TamperedAndMovedBlobs", testTamperedAndMovedBlobs},
	{"ConcurrentHandlesWrite", testConcurrentHandlesWrite},
	{"Closed", testClosed},
	// Compare-and-swap edits (edit_test.go).
	{"EditServerConcurrentHandlesKeepEveryEdit", testEditServerConcurrentHandlesKeepEveryEdit},
	{"EditServerRetriesAfterBlindUpdate", testEditServerRetriesAfterBlindUpdate},
	{"ServerRevisionCountsWrites", testServerRevisionCountsWrites},
	{"EditServerPersistentConflictFailsWithErrConflict", testEditServerPersistentConflictFailsWithErrConflict},
	{"EditServerRefusedLeavesRecordUnchanged", testEditServerRefusedLeavesRecordUnchanged},
	// Tool pins (pins_test.go).
	{"ToolPins", testToolPins},
	{"PinSummaries", testPinSummaries},
	// Change feed (feed_test.go).
	{"ChangeFeedOwnWrites", testChangeFeedOwnWrites},
	{"ChangeFeedOtherProcess", testChangeFeedOtherProcess},
	{"ChangeFeedSlowSubscriber", testChangeFeedSlowSubscriber},
	{"SubscribeEnds", testSubscribeEnds},
	// Custom headers (headers_test.go).
	{"HeadersRoundTrip", testHeadersRoundTrip},
	{"HeaderValuesNeverInClear", testHeaderValuesNeverInClear},
	{"HeaderRebind", testHeaderRebind},
	{"HeaderBlobsBound", testHeaderBlobsBound},
	{"EditServerRepairsUnopenedHeader", testEditServerRepairsUnopenedHeader},
	// Locks (lock_test.go).
	{"LockExcludes", testLockExcludes},
	{"LockCancelWhileWaiting", testLockCancelWhileWaiting},
}

// TestStoreSuite runs every case of the suite on every backend:
// TestStoreSuite/<backend>/<case>.
func TestStoreSuite(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range suite {
				t.Run(c.name, func(t *testing.T) { c.run(t, b) })
			}
		})
	}
}

// pgDSN returns the URL of a fresh, empty PostgreSQL database made for
// this test and dropped when it ends (the store's pools are closed by
// then: cleanups run last-registered first). See package pgtest for where
// the server comes from.
func pgDSN(t testing.TB) string {
	t.Helper()
	return pgtest.DSN(t)
}

// pgStore is what again needs to open a gateway user's store a second
// time.
type pgStore struct{ dsn, keyDir, user string }

// pgStores maps every PostgreSQL store the suite opened to its pgStore.
var pgStores sync.Map // *DB -> pgStore

// openPostgresT opens the gateway database at dsn with the suite's poll
// interval, closed when the test ends.
func openPostgresT(t testing.TB, dsn, keyDir string) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), dsn, PostgresOptions{KeyDir: keyDir, Options: Options{PollInterval: testPoll}})
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Postgres.Close: %v", err)
		}
	})
	return p
}

// addUserT adds a user to p.
func addUserT(t testing.TB, p *Postgres, email string) UserInfo {
	t.Helper()
	u, err := p.AddUser(context.Background(), email)
	if err != nil {
		t.Fatalf("AddUser(%s): %v", email, err)
	}
	return u
}

// userT returns the store of user id in p, closed when the test ends.
func userT(t testing.TB, p *Postgres, id string) *DB {
	t.Helper()
	s, err := p.User(context.Background(), id)
	if err != nil {
		t.Fatalf("User(%s): %v", id, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openPGStore is the postgres backend's open: a new database with one
// user, whose store it returns.
func openPGStore(t *testing.T) *DB {
	t.Helper()
	dsn, keyDir := pgDSN(t), t.TempDir()
	p := openPostgresT(t, dsn, keyDir)
	u := addUserT(t, p, "suite@example.com")
	s := userT(t, p, u.ID)
	pgStores.Store(s, pgStore{dsn: dsn, keyDir: keyDir, user: u.ID})
	t.Cleanup(func() { pgStores.Delete(s) })
	return s
}

// againPGStore is the postgres backend's again: another OpenPostgres of
// the database (another gateway process) and the same user's store in it.
func againPGStore(t *testing.T, s *DB) *DB {
	t.Helper()
	v, ok := pgStores.Load(s)
	if !ok {
		t.Fatal("again: not a store of the postgres backend")
	}
	ps := v.(pgStore)
	s2 := userT(t, openPostgresT(t, ps.dsn, ps.keyDir), ps.user)
	pgStores.Store(s2, ps)
	t.Cleanup(func() { pgStores.Delete(s2) })
	return s2
}

// rawExec runs stmts on the database of s behind the store's back, as
// someone with write access to the database file (or to the gateway's
// database) would.
func rawExec(t *testing.T, s *DB, stmts ...string) {
	t.Helper()
	if s.d != postgresDialect {
		execRaw(t, s.dir, stmts...)
		return
	}
	for _, q := range stmts {
		if _, err := s.pg.DB().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// rawQueryRow runs a query (with ? placeholders) on the database of s
// behind the store's back.
func rawQueryRow(t *testing.T, s *DB, q string, args ...any) *sql.Row {
	t.Helper()
	if s.d != postgresDialect {
		return rawDB(t, s.dir).QueryRow(q, args...)
	}
	return s.pg.DB().QueryRow(s.rebind(q), args...)
}

// bySQL picks the statement written for the dialect of s, where the two
// differ (SQLite's zeroblob, PostgreSQL's set_byte).
func bySQL(s *DB, sqlite, postgres string) string {
	if s.d == postgresDialect {
		return postgres
	}
	return sqlite
}

// pgTables are the tables of a gateway's database.
var pgTables = []string{"meta", "users", "servers", "secrets", "kv", "tool_pins", "shared_servers"}

// pgRows returns every row of every table of the gateway database of s,
// as text, one entry per table.
func pgRows(t *testing.T, s *DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, table := range pgTables {
		var rows string
		q := `SELECT coalesce(string_agg(t::text, E'\n' ORDER BY t::text), '') FROM ` + table + ` t`
		if err := s.pg.DB().QueryRow(q).Scan(&rows); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out[table] = rows
	}
	return out
}

// snapshot captures the stored state of s that a refused write must leave
// as it was: the database file and its WAL byte for byte (SQLite, after a
// checkpoint), or every row of every table (PostgreSQL). Compare two with
// sameSums.
func snapshot(t *testing.T, s *DB) map[string]string {
	t.Helper()
	if s.d == postgresDialect {
		return pgRows(t, s)
	}
	checkpointT(t, s)
	return fileSums(t, s.dir)
}

// whereInClear names what of the store of s holds needle in clear: files
// of the data directory, looked at before and after a checkpoint
// (SQLite), or tables (PostgreSQL).
func whereInClear(t *testing.T, s *DB, needle string) []string {
	t.Helper()
	if s.d == postgresDialect {
		var hits []string
		for table, rows := range pgRows(t, s) {
			if strings.Contains(rows, needle) {
				hits = append(hits, table)
			}
		}
		slices.Sort(hits)
		return hits
	}
	hits := grepDir(t, s.dir, needle)
	checkpointT(t, s)
	for _, h := range grepDir(t, s.dir, needle) {
		if !slices.Contains(hits, h) {
			hits = append(hits, h+" (after checkpoint)")
		}
	}
	return hits
}
