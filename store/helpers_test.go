package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/pgtest"
)

// TestMain checks for leaked goroutines once the tests are done, and
// stops the PostgreSQL cluster pgtest may have started for them before.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgtest.Wrap(m))
}

// testPoll keeps cross-process tests fast.
const testPoll = 10 * time.Millisecond

// hang bounds a wait for something that must happen: long enough for a
// loaded machine, so it only ends a test that would otherwise hang.
const hang = 2 * time.Minute

func openT(t *testing.T, dir string) *DB {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{PollInterval: testPoll})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawDB opens the database file directly, as an attacker with write
// access to the data directory (or a newer remotemcp) would.
func rawDB(t testing.TB, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(filepath.Join(dir, DBFileName)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func execRaw(t *testing.T, dir string, stmts ...string) {
	t.Helper()
	db := rawDB(t, dir)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// fileSums hashes the database file and its WAL (missing files hash as
// "absent"), so a test can prove a refused operation wrote nothing.
func fileSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{DBFileName, DBFileName + "-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			out[name] = "absent"
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		out[name] = hex.EncodeToString(sum[:])
	}
	return out
}

func sameSums(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %s -> %s", k, v, after[k])
		}
	}
}

func checkpointT(t *testing.T, s *DB) {
	t.Helper()
	if err := s.checkpoint(context.Background()); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
}

// grepDir reports which files of the data directory contain needle.
func grepDir(t *testing.T, dir string, needle string) []string {
	t.Helper()
	var hits []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, e.Name())
		}
	}
	return hits
}

func bearerServer(id, url, token string) config.Server {
	return config.Server{
		ID: id, Name: "Bearer " + id, URL: url,
		Auth:    config.Auth{Kind: config.AuthBearer, Token: token},
		Enabled: true, ConnectOnStartup: true,
	}
}

func noneServer(id, url string) config.Server {
	return config.Server{ID: id, Name: id, URL: url, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true}
}

// recv waits for the next change, failing after d.
func recv(t *testing.T, ch <-chan Change, d time.Duration) Change {
	t.Helper()
	select {
	case c, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		return c
	case <-time.After(d):
		t.Fatalf("no change within %v", d)
	}
	return Change{}
}

// quiet asserts that no change arrives for d.
func quiet(t *testing.T, ch <-chan Change, d time.Duration) {
	t.Helper()
	select {
	case c := <-ch:
		t.Fatalf("unexpected change %+v", c)
	case <-time.After(d):
	}
}

// CheckWritable returns an error wrapping ErrDataDirNotWritable, naming
// what cannot be written and what to do, if this user cannot create files
// in the data directory dir or write the database files in it; nil
// otherwise. Open checks this itself; callers that write in the data
// directory before Open (a lock file, say) call it first, so the user
// gets the hint rather than a bare "permission denied". Where the
// platform cannot tell (no access(2)), it returns nil.
func CheckWritable(dir string) error {
	if p, _ := firstNotWritable(dir); p != "" {
		return notWritableError("check data directory", dir, p, nil)
	}
	return nil
}

// checkpoint copies the WAL into the database file and truncates it. Tests
// use it to compare the bytes of the database file.
func (s *DB) checkpoint(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// IsHeaderPurpose reports whether purpose is that of a custom header
// value, and of which header.
func IsHeaderPurpose(purpose string) (name string, ok bool) {
	return strings.CutPrefix(purpose, PurposeHeaderPrefix)
}
