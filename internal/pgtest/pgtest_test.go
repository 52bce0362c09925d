package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryRow[T any](t *testing.T, conn *pgx.Conn, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func execSQL(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// userRelations counts what a test could have left in a database:
// relations outside the system schemas.
const userRelations = `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'`

func TestDSNGivesAnEmptyDatabaseToWriteIn(t *testing.T) {
	conn := connect(t, DSN(t))
	if n := queryRow[int64](t, conn, userRelations); n != 0 {
		t.Fatalf("a new database has %d relations outside the system schemas, want 0", n)
	}
	if db := queryRow[string](t, conn, "SELECT current_database()"); !strings.HasPrefix(db, "pgtest_") {
		t.Errorf("connected to database %q, want one that pgtest made", db)
	}
	if c := queryRow[string](t, conn, "SELECT datcollate FROM pg_database WHERE datname = current_database()"); c != "C" {
		t.Errorf("collation %q, want C (the same sort order on every machine)", c)
	}
	execSQL(t, conn, "CREATE TABLE kv (k text PRIMARY KEY, v text NOT NULL)")
	execSQL(t, conn, "INSERT INTO kv VALUES ('a', 'b')")
	if v := queryRow[string](t, conn, "SELECT v FROM kv WHERE k = 'a'"); v != "b" {
		t.Errorf("read back %q, want b", v)
	}
}

func TestTwoDSNsAreTwoDatabases(t *testing.T) {
	a, b := DSN(t), DSN(t)
	if a == b {
		t.Fatalf("both calls returned %s", a)
	}
	ca, cb := connect(t, a), connect(t, b)
	na := queryRow[string](t, ca, "SELECT current_database()")
	nb := queryRow[string](t, cb, "SELECT current_database()")
	if na == nb {
		t.Fatalf("both URLs lead to database %s", na)
	}
	execSQL(t, ca, "CREATE TABLE only_in_a (x int)")
	if found := queryRow[bool](t, cb, "SELECT to_regclass('only_in_a') IS NOT NULL"); found {
		t.Errorf("a table made in %s is visible in %s", na, nb)
	}
}

// TestCleanupDropsTheDatabase keeps a connection open through the
// cleanup, as a test that forgets to close its pool does: the drop must
// not wait for it (or fail because of it).
func TestCleanupDropsTheDatabase(t *testing.T) {
	var name string
	var held *pgx.Conn
	t.Run("user", func(t *testing.T) {
		dsn := DSN(t)
		var err error
		if held, err = pgx.Connect(context.Background(), dsn); err != nil {
			t.Fatal(err)
		}
		if err := held.QueryRow(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	if held == nil {
		t.Fatal("the subtest did not connect")
	}
	defer held.Close(context.Background())
	admin, err := server()
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, admin.String())
	if n := queryRow[int64](t, conn, "SELECT count(*) FROM pg_database WHERE datname = $1", name); n != 0 {
		t.Errorf("database %s still exists after its test ended", name)
	}
	if err := held.Ping(context.Background()); err == nil {
		t.Errorf("the connection to the dropped database %s still works", name)
	}
}

// fakeTB records how DSN ends a test instead of ending it.
type fakeTB struct {
	testing.TB
	kind, msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.kind, f.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.kind, f.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// outcome runs f with a fakeTB on its own goroutine (Fatalf and Skipf
// end it) and says how it ended: "fatal", "skip" or "" (it returned).
func outcome(t *testing.T, f func(testing.TB)) (kind, msg string) {
	ft := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ft)
	}()
	<-done
	return ft.kind, ft.msg
}

func TestBadServerVariableIsNamed(t *testing.T) {
	for _, bad := range []string{
		"postgres://%zz",                                              // not a URL
		"host=/run/postgresql user=postgres",                          // keyword form: not taken
		"mysql://root@localhost/x",                                    // not PostgreSQL
		"postgres:///postgres?host=/nonexistent/pgtest&user=postgres", // nothing there
		"postgres://u:hunter2@/postgres?host=/nonexistent/pgtest",     // nor here, with a password
		"postgres:///postgres?host=/tmp&sslmode=bogus",                // pgx rejects it
	} {
		t.Run("", func(t *testing.T) {
			t.Setenv(EnvServer, bad)
			kind, msg := outcome(t, func(tb testing.TB) { DSN(tb) })
			if kind != "fatal" {
				t.Fatalf("%s=%q: DSN ended with %q (%s), want a failure", EnvServer, bad, kind, msg)
			}
			if !strings.Contains(msg, EnvServer) {
				t.Errorf("%s=%q: the error does not name the variable: %s", EnvServer, bad, msg)
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("the error shows the password: %s", msg)
			}
		})
	}
}

func TestServerVariableIsUsed(t *testing.T) {
	t.Setenv(EnvServer, "")
	admin, err := server() // the private cluster
	if np := (*noPostgresError)(nil); errors.As(err, &np) {
		unavailable(t, np)
	}
	if err != nil {
		t.Fatal(err)
	}
	q := admin.Query()
	q.Set("application_name", "from-the-variable")
	admin.RawQuery = q.Encode()
	t.Setenv(EnvServer, admin.String())
	conn := connect(t, DSN(t))
	if got := queryRow[string](t, conn, "SHOW application_name"); got != "from-the-variable" {
		t.Errorf("application_name %q: the database URL was not made from %s", got, EnvServer)
	}
}

// TestPrivateCluster uses the cluster this process starts even where
// scripts/test.sh provides a shared one, so CI runs that path too.
func TestPrivateCluster(t *testing.T) {
	t.Setenv(EnvServer, "")
	dsn := DSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Query().Get("host")
	if fi, err := os.Stat(filepath.Join(host, "data", "PG_VERSION")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("%s: the socket is not in the private cluster's directory (%v)", dsn, err)
	}
	conn := connect(t, dsn)
	if s := queryRow[string](t, conn, "SHOW listen_addresses"); s != "" {
		t.Errorf("listen_addresses %q: the private cluster listens on TCP", s)
	}
	if s := queryRow[string](t, conn, "SHOW fsync"); s != "off" {
		t.Errorf("fsync %s, want off", s)
	}
}

func TestWithoutMainNoPrivateCluster(t *testing.T) {
	t.Setenv(EnvServer, "")
	mainUsed.Store(false)
	defer mainUsed.Store(true)
	_, err := server()
	if err == nil || !strings.Contains(err.Error(), "pgtest.Main") {
		t.Errorf("without Main: %v, want an error that says to call pgtest.Main", err)
	}
}

func TestNoPostgresSkipsLoudlyOrFails(t *testing.T) {
	_, err := findBins("", filepath.Join(t.TempDir(), "*", "bin"))
	np := (*noPostgresError)(nil)
	if !errors.As(err, &np) {
		t.Fatalf("findBins with nothing installed: %v, want a noPostgresError", err)
	}
	t.Setenv(EnvRequire, "")
	kind, msg := outcome(t, func(tb testing.TB) { unavailable(tb, np) })
	if kind != "skip" || !strings.Contains(msg, "PostgreSQL not found (pg_ctl): SKIPPING") ||
		!strings.Contains(msg, "install Debian's postgresql") {
		t.Errorf("without %s: %s %q, want a loud skip saying what to install", EnvRequire, kind, msg)
	}
	t.Setenv(EnvRequire, "1")
	kind, msg = outcome(t, func(tb testing.TB) { unavailable(tb, np) })
	if kind != "fatal" || !strings.Contains(msg, "apt-get install postgresql") || !strings.Contains(msg, "pg_ctl") {
		t.Errorf("with %s=1: %s %q, want a failure naming pg_ctl and how to install it", EnvRequire, kind, msg)
	}
}

// TestFindBinsNewest lays out Debian's directories: the newest complete
// one wins by version number (lexically, 9.6 would), and pg_ctl on PATH
// wins over all of them, through its symlink.
func TestFindBinsNewest(t *testing.T) {
	root := t.TempDir()
	mk := func(dir string, progs ...string) string {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, p := range progs {
			if err := os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	all := []string{"pg_ctl", "initdb", "postgres"}
	mk(filepath.Join(root, "lib", "9.6", "bin"), all...)
	v15 := mk(filepath.Join(root, "lib", "15", "bin"), all...)
	mk(filepath.Join(root, "lib", "13", "bin"), all...)
	mk(filepath.Join(root, "lib", "17", "bin"), "pg_ctl", "initdb") // no server: incomplete
	glob := filepath.Join(root, "lib", "*", "bin")
	if got, err := findBins("", glob); err != nil || got != v15 {
		t.Errorf("findBins = %s, %v; want %s", got, err, v15)
	}
	v13 := filepath.Join(root, "lib", "13", "bin")
	pathDir := mk(filepath.Join(root, "path"))
	if err := os.Symlink(filepath.Join(v13, "pg_ctl"), filepath.Join(pathDir, "pg_ctl")); err != nil {
		t.Fatal(err)
	}
	if got, err := findBins("/nonexistent"+string(filepath.ListSeparator)+pathDir, glob); err != nil || got != v13 {
		t.Errorf("with pg_ctl of 13 on PATH: findBins = %s, %v; want %s", got, err, v13)
	}
}
