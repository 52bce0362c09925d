// Package pgtest gives tests a real PostgreSQL (issue #22): each call of
// DSN creates a fresh, empty database on a server and drops it when the
// test ends, so the PostgreSQL store is tested against the real thing,
// never a fake, and tests never see each other's rows.
//
// The server comes from, in this order:
//
//   - REMOTEMCP_TEST_POSTGRES: the postgres:// URL of a running server on
//     which the tests may create and drop databases. scripts/test.sh
//     starts one cluster for the whole run and sets it, so the test
//     processes of all packages share one server.
//   - A private cluster that this test process starts on first use, in a
//     temporary directory (initdb, trust authentication on a Unix socket,
//     no TCP), from Debian's postgresql package (pg_ctl on PATH, else the
//     newest /usr/lib/postgresql/*/bin). The package's TestMain must call
//     Main (or run Wrap) so that it is stopped after the tests.
//   - Neither: the test is skipped with a loud message, or fails when
//     REMOTEMCP_REQUIRE_POSTGRES=1 (as in CI, which never skips them).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Environment variables that choose and require the server.
const (
	// EnvServer names a running server (a postgres:// URL of a database
	// to connect to as a role that may create databases).
	EnvServer = "REMOTEMCP_TEST_POSTGRES"
	// EnvRequire, set to 1, turns "no PostgreSQL" from a skip into a
	// failure: CI sets it so that the PostgreSQL tests never go quietly
	// unrun.
	EnvRequire = "REMOTEMCP_REQUIRE_POSTGRES"
)

// installHint says how to get what a missing server needs.
const installHint = "install Debian's postgresql package (apt-get install postgresql), " +
	"or set " + EnvServer + " to the URL of a server where tests may create databases"

// noPostgresError is "there is no server to use", the one failure that
// is a skip rather than an error on a machine that does not require one.
type noPostgresError struct{ looked string }

func (e *noPostgresError) Error() string {
	return "PostgreSQL not found (pg_ctl): neither on PATH nor in " + e.looked
}

// mainUsed records that the test binary's TestMain stops the private
// cluster; DSN refuses to start one otherwise, since nothing would stop
// it and it would outlive the tests.
var mainUsed atomic.Bool

// DSN returns the connection URL (pgx syntax) of a fresh, empty database
// made for this test, and drops the database when the test ends, even
// while connections to it are still open. It skips or fails the test
// when there is no server (see the package documentation).
func DSN(t testing.TB) string {
	t.Helper()
	admin, err := server()
	if np := (*noPostgresError)(nil); errors.As(err, &np) {
		unavailable(t, np)
		return ""
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	dsn, drop, err := createDatabase(context.Background(), admin, t.Name())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := drop(context.Background()); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return dsn
}

// unavailable skips the test, loudly so that nobody mistakes a skipped
// PostgreSQL suite for a passing one, or fails it when EnvRequire says
// the machine must have PostgreSQL.
func unavailable(t testing.TB, np *noPostgresError) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("pgtest: %v, and %s=1 requires it: %s", np, EnvRequire, installHint)
	}
	t.Skipf("!!! PostgreSQL not found (pg_ctl): SKIPPING %s; %s (looked on PATH and in %s; %s=1 makes this a failure)",
		t.Name(), installHint, np.looked, EnvRequire)
}

// server returns the URL of the maintenance database of the server to
// use: EnvServer's, else the private cluster's, starting it on first use.
func server() (*url.URL, error) {
	if s := os.Getenv(EnvServer); s != "" {
		return parseServer(s)
	}
	if !mainUsed.Load() {
		return nil, errors.New("the test binary's TestMain must call pgtest.Main(m) (or run pgtest.Wrap(m)) " +
			"so that the private PostgreSQL cluster is stopped after the tests")
	}
	c, err := private.get()
	if err != nil {
		return nil, err
	}
	return c.adminURL(), nil
}

// parseServer checks EnvServer's value, naming the variable in every
// error so that a wrong setting is found where it was made.
func parseServer(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		// url's error quotes the whole value, password included.
		return nil, fmt.Errorf("%s is not a URL (want postgres:///postgres?host=/socket/dir&user=postgres)", EnvServer)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return nil, fmt.Errorf("%s=%s: want a postgres:// URL (postgres:///postgres?host=/socket/dir&user=postgres)",
			EnvServer, u.Redacted())
	}
	if _, err := pgx.ParseConfig(s); err != nil {
		return nil, fmt.Errorf("%s=%s: %w", EnvServer, u.Redacted(), err)
	}
	return u, nil
}

// seq and runID make database names unique across the tests of one
// process and across the test processes sharing one server (go test
// runs packages in parallel; PIDs are reused, random bytes are not).
var (
	seq       atomic.Int64
	runIDOnce = sync.OnceValue(func() string {
		b := make([]byte, 4)
		rand.Read(b)
		return hex.EncodeToString(b)
	})
)

// dbName is a new database name: unique, a valid unquoted identifier of
// at most 63 bytes, with the test's name in it for whoever looks at the
// server while tests run.
func dbName(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := fmt.Sprintf("pgtest_%s_%d_%s", runIDOnce(), seq.Add(1), b.String())
	return name[:min(len(name), 63)]
}

// createDatabase creates an empty database on the server admin names and
// returns its URL and the function that drops it. The database is made
// from template0 (template1 may hold whatever a shared server's owner put
// there) with UTF-8 and the C locale, so text sorts the same on every
// machine whatever the server's defaults.
func createDatabase(ctx context.Context, admin *url.URL, test string) (string, func(context.Context) error, error) {
	name := dbName(test)
	ident := pgx.Identifier{name}.Sanitize()
	create := "CREATE DATABASE " + ident + " TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
	if err := adminExec(ctx, admin, create); err != nil {
		return "", nil, fmt.Errorf("creating database %s: %w", name, err)
	}
	u := *admin
	u.Path = "/" + name
	u.RawPath = ""
	q := u.Query()
	q.Del("dbname") // would override the path
	u.RawQuery = q.Encode()
	drop := func(ctx context.Context) error {
		// FORCE ends the sessions still open on it (a pool the test did
		// not close), which would otherwise make DROP fail.
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("dropping database %s: %w", name, err)
		}
		return nil
	}
	return u.String(), drop, nil
}

// adminExec runs one statement on its own connection to the maintenance
// database. CREATE and DROP DATABASE cannot run in a transaction, and a
// connection per statement costs a few milliseconds against the many
// more that creating a database takes.
func adminExec(ctx context.Context, admin *url.URL, sql string) error {
	conn, err := pgx.Connect(ctx, admin.String())
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", describe(admin), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("on %s: %w", describe(admin), err)
	}
	return nil
}

// describe names a server in errors: the variable it came from, or the
// private cluster's directory.
func describe(admin *url.URL) string {
	if s := os.Getenv(EnvServer); s != "" {
		return EnvServer + "=" + admin.Redacted()
	}
	return "the private PostgreSQL cluster " + admin.Redacted()
}

// TestingM is what Wrap runs and returns: *testing.M, and what
// goleak.VerifyTestMain takes.
type TestingM interface{ Run() int }

// Wrap returns m with the private cluster stopped after its tests, for a
// TestMain that already hands m to something else:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Wrap(m)) }
//
// The cluster is gone before goleak looks for goroutines left behind.
func Wrap(m TestingM) TestingM {
	mainUsed.Store(true)
	return wrapped{m}
}

type wrapped struct{ m TestingM }

// Run runs the tests, then stops the private cluster if one started. A
// failure to stop it fails the run: a server left running outlives CI.
func (w wrapped) Run() int {
	code := w.m.Run()
	if err := private.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Main is the TestMain of a package whose tests call DSN: it runs the
// tests, stops the private cluster if one started, and exits.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	os.Exit(Wrap(m).Run())
}
