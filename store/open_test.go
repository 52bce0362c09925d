package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"modernc.org/sqlite"

	"github.com/remotemcp/remotemcp/config"
)

// dirSnapshot maps every entry of dir (recursively) to the sha256 of its
// content ("dir" for directories), so a test can prove that a refused
// Open neither changed a file nor created one (no -wal, -shm or key).
func dirSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		t.Errorf("data directory changed:\nbefore %v\n after %v", before, after)
	}
}

// foreignDB creates path as another program would, through the same
// driver but none of the store's code, and runs stmts on it.
func foreignDB(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", fileDSN(path, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// schema1 is migration 1 without its application_id: what remotemcp's
// tables look like in a file that does not say it is remotemcp's.
func schema1NoAppID() []string {
	var out []string
	for _, q := range migrations[0] {
		if !strings.HasPrefix(q, "PRAGMA") {
			out = append(out, q)
		}
	}
	return append(out, "PRAGMA user_version = 1")
}

// TestOpenForeignDatabase: another program's SQLite file in the data
// directory is refused with ErrForeignDatabase, and the directory stays
// byte-for-byte as it was: no migration, no -wal, -shm or key file.
func TestOpenForeignDatabase(t *testing.T) {
	tests := []struct {
		name  string
		stmts []string
		want  []string // in the message, besides the path and the advice
	}{
		{"other application id", []string{"CREATE TABLE t (x)", "PRAGMA application_id = 12345"},
			[]string{"application_id 0x00003039", "tables: t"}},
		{"tables without application id", []string{"CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "CREATE TABLE tags (name TEXT)", "INSERT INTO notes (body) VALUES ('keep me')"},
			[]string{"application_id 0x00000000", "user_version 0", "tables: notes, tags"}},
		{"a table named like ours", []string{"CREATE TABLE servers (name TEXT)", "INSERT INTO servers VALUES ('x')"},
			[]string{"tables: servers"}},
		{"remotemcp tables without application id", schema1NoAppID(),
			[]string{"user_version 1", "tables: kv, meta, secrets, servers"}},
		{"user_version only", []string{"PRAGMA user_version = 7"},
			[]string{"user_version 7", "no tables"}},
		{"remotemcp's application id on a schema it never wrote", []string{"CREATE TABLE notes (x)", fmt.Sprintf("PRAGMA application_id = %d", applicationID)},
			[]string{"application_id 0x726d6370", "user_version 0", "tables: notes"}},
		{"view only", []string{"CREATE VIEW v AS SELECT 1 AS one"},
			[]string{"tables: v"}},
		{"WAL mode", []string{"PRAGMA journal_mode = WAL", "CREATE TABLE wal_t (x)", "INSERT INTO wal_t VALUES (1)"},
			[]string{"tables: wal_t"}},
		{"odd table names", []string{"CREATE TABLE \"a b\" (x)", "CREATE TABLE \"new\nline\" (x)"},
			[]string{`"a b"`, `"new\nline"`}},
		{"many tables", func() []string {
			var s []string
			for i := range 12 {
				s = append(s, fmt.Sprintf("CREATE TABLE t%02d (x)", i))
			}
			return s
		}(), []string{"t00, t01", "t07 and 4 more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DBFileName)
			foreignDB(t, path, tt.stmts...)
			before := dirSnapshot(t, dir)
			s, err := Open(context.Background(), dir, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a foreign database")
			}
			if !errors.Is(err, ErrForeignDatabase) || errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrForeignDatabase", err)
			}
			t.Log(err)
			for _, want := range append([]string{path, "not a remotemcp database", "never changes it", "move it away", "--data-dir", "$" + EnvHome}, tt.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q", want)
				}
			}
			sameSnapshot(t, before, dirSnapshot(t, dir))
		})
	}
}

// TestOpenForeignDatabaseInUse: a foreign WAL database that its program
// has open (so its -wal and -shm exist) is refused, and neither the file
// nor its WAL is changed.
func TestOpenForeignDatabaseInUse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DBFileName)
	db, err := sql.Open("sqlite", fileDSN(path, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	for _, q := range []string{"PRAGMA journal_mode = WAL", "CREATE TABLE live (x)", "INSERT INTO live VALUES (1)"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	before := fileSums(t, dir)
	if before[DBFileName+"-wal"] == "absent" {
		t.Fatal("precondition: the foreign program's -wal file should exist")
	}
	if _, err := Open(context.Background(), dir, Options{}); !errors.Is(err, ErrForeignDatabase) {
		t.Fatalf("Open = %v, want ErrForeignDatabase", err)
	}
	sameSums(t, before, fileSums(t, dir))
	if _, err := os.Stat(filepath.Join(dir, keyFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("key file created next to a foreign database: %v", err)
	}
	// The program's own connection still works.
	if _, err := db.Exec("INSERT INTO live VALUES (2)"); err != nil {
		t.Fatal(err)
	}
}

// TestOpenInitialisesEmptyFile: a file with no schema (zero bytes, or a
// SQLite database nothing was ever created in) becomes a store.
func TestOpenInitialisesEmptyFile(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, path string)
	}{
		{"zero bytes", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty SQLite database", func(t *testing.T, path string) {
			foreignDB(t, path, "PRAGMA page_size = 8192", "VACUUM")
		}},
		{"empty SQLite database in WAL mode", func(t *testing.T, path string) {
			foreignDB(t, path, "PRAGMA journal_mode = WAL", "CREATE TABLE x (y)", "DROP TABLE x")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.make(t, filepath.Join(dir, DBFileName))
			s := openT(t, dir)
			if err := s.AddServer(context.Background(), bearerServer("a", "https://a.example.com/mcp", "tok")); err != nil {
				t.Fatal(err)
			}
			var appID, version int64
			db := rawDB(t, dir)
			if err := db.QueryRow("PRAGMA application_id").Scan(&appID); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
				t.Fatal(err)
			}
			if appID != applicationID || version != int64(SchemaVersion()) {
				t.Fatalf("application_id %#x, user_version %d", appID, version)
			}
		})
	}
}

// TestOpenWhileFirstOpenerHoldsWAL: right after a data directory is
// created, remotemcp's application_id is still only in the -wal file (the
// file header says 0). A second opener must take it for ours, through the
// read-only inspection.
func TestOpenWhileFirstOpenerHoldsWAL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s1 := openT(t, dir)
	if err := s1.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	hdr, err := checkHeader(filepath.Join(dir, DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	if hdr.empty || hdr.appID == applicationID {
		t.Fatalf("precondition: want a header without the application id (it should still be in the WAL), got %+v", hdr)
	}
	s2 := openT(t, dir)
	got, err := s2.GetServer(ctx, "a")
	if err != nil || got.Auth.Token != "tokA" {
		t.Fatalf("GetServer = %+v, %v", got, err)
	}
}

// replaceKey overwrites the key file with a random other key.
func replaceKey(t *testing.T, dir string) {
	t.Helper()
	other := make([]byte, keySize)
	rand.Read(other)
	if err := os.WriteFile(filepath.Join(dir, keyFileName), other, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFileT(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func countRows(t *testing.T, dir, table string) int {
	t.Helper()
	var n int
	if err := rawDB(t, dir).QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// storeWithSecrets makes a closed store holding two sealed secrets (a
// bearer token and a refresh token) and returns the key file's bytes.
func storeWithSecrets(t *testing.T, dir string) (key []byte, refresh SecretKey) {
	t.Helper()
	ctx := context.Background()
	s := openT(t, dir)
	if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddServer(ctx, noneServer("b", "https://b.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	refresh = SecretKey{ServerID: "b", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: "r", Issuer: "i"}}
	if err := s.PutSecret(ctx, refresh, []byte("refresh")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return readFileT(t, filepath.Join(dir, keyFileName)), refresh
}

func checkSecretsIntact(t *testing.T, s *DB, refresh SecretKey) {
	t.Helper()
	ctx := context.Background()
	srv, err := s.GetServer(ctx, "a")
	if err != nil || srv.Auth.Token != "tokA" {
		t.Fatalf("GetServer(a) = %+v, %v", srv, err)
	}
	if v, err := s.GetSecret(ctx, refresh); err != nil || string(v) != "refresh" {
		t.Fatalf("GetSecret = %q, %v", v, err)
	}
}

// downgrade turns the closed store in dir into what schema 2 (before the
// key check record) left behind.
func downgrade(t *testing.T, dir string) {
	t.Helper()
	execRaw(t, dir, "ALTER TABLE meta DROP COLUMN key_check", "PRAGMA user_version = 2")
}

// TestKeyCheckWrongKey: a replaced key file is refused before anything
// is sealed or written, with advice; the right key still opens everything
// afterwards.
func TestKeyCheckWrongKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	key, refresh := storeWithSecrets(t, dir)
	keyPath := filepath.Join(dir, keyFileName)

	replaceKey(t, dir)
	before := dirSnapshot(t, dir)
	s, err := Open(ctx, dir, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open with the wrong key succeeded")
	}
	if !errors.Is(err, ErrWrongKey) {
		t.Fatalf("Open = %v, want ErrWrongKey", err)
	}
	t.Log(err)
	for _, want := range []string{keyPath, "not the key this store was created with", "key check record",
		"restore the key file that was used when the store was created", "move the data directory away", "2 sealed secret(s) cannot be read"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q", want)
		}
	}
	sameSnapshot(t, before, dirSnapshot(t, dir))
	if n := countRows(t, dir, "secrets"); n != 2 {
		t.Fatalf("%d secrets after the refusal, want 2", n)
	}

	// The right key, restored, opens the store with every secret.
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir)
	checkSecretsIntact(t, s, refresh)
	if err := s.AddServer(ctx, bearerServer("c", "https://c.example.com/mcp", "tokC")); err != nil {
		t.Fatal(err)
	}
}

// TestKeyCheckWrongKeyNoSecrets: a store without sealed secrets refuses a
// replaced key too, and says that deleting the key file is a way out; a
// deleted key file is then replaced and the servers are kept.
func TestKeyCheckWrongKeyNoSecrets(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openT(t, dir)
	if err := s.AddServer(ctx, noneServer("a", "https://a.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	keyPath := filepath.Join(dir, keyFileName)
	replaceKey(t, dir)
	before := dirSnapshot(t, dir)
	_, err := Open(ctx, dir, Options{})
	if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "delete "+keyPath) {
		t.Fatalf("Open = %v, want ErrWrongKey suggesting to delete the key file", err)
	}
	t.Log(err)
	sameSnapshot(t, before, dirSnapshot(t, dir))

	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir)
	if _, err := s.GetServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddServer(ctx, bearerServer("b", "https://b.example.com/mcp", "tokB")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openT(t, dir) // the new key passes the re-sealed check
	if got, err := s.GetServer(ctx, "b"); err != nil || got.Auth.Token != "tokB" {
		t.Fatalf("GetServer(b) = %+v, %v", got, err)
	}
}

// TestKeyCheckRecord: a new store carries a key check record, and the
// record is not a secret (no server id) nor listed as one.
func TestKeyCheckRecord(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	var check []byte
	if err := rawDB(t, dir).QueryRow("SELECT key_check FROM meta WHERE id = 1").Scan(&check); err != nil {
		t.Fatal(err)
	}
	if err := s.sealer.openKeyCheck(check); err != nil {
		t.Fatalf("key check record does not open: %v", err)
	}
	if n := countRows(t, dir, "secrets"); n != 0 {
		t.Fatalf("%d secrets in a new store", n)
	}
	if rev, err := s.Revision(context.Background()); err != nil || rev != 0 {
		t.Fatalf("revision %d, %v: writing the record is not a store change", rev, err)
	}
}

// TestKeyCheckOldStore: stores from before the key check record (schema 2)
// get one on their first open with the right key; the key is checked
// against their sealed secrets first, before anything is migrated.
func TestKeyCheckOldStore(t *testing.T) {
	ctx := context.Background()
	hasRecord := func(t *testing.T, dir string) {
		t.Helper()
		var check []byte
		if err := rawDB(t, dir).QueryRow("SELECT key_check FROM meta WHERE id = 1").Scan(&check); err != nil || check == nil {
			t.Fatalf("key check record %x, %v", check, err)
		}
	}
	t.Run("right key", func(t *testing.T) {
		dir := t.TempDir()
		_, refresh := storeWithSecrets(t, dir)
		downgrade(t, dir)
		s := openT(t, dir)
		checkSecretsIntact(t, s, refresh)
		hasRecord(t, dir)
		s.Close()
		// And the record now guards the store.
		replaceKey(t, dir)
		if _, err := Open(ctx, dir, Options{}); !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "key check record") {
			t.Fatalf("Open = %v, want ErrWrongKey", err)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		dir := t.TempDir()
		storeWithSecrets(t, dir)
		downgrade(t, dir)
		replaceKey(t, dir)
		before := dirSnapshot(t, dir)
		_, err := Open(ctx, dir, Options{})
		if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "opens none of the store's 2 sealed secret(s)") {
			t.Fatalf("Open = %v, want ErrWrongKey", err)
		}
		t.Log(err)
		sameSnapshot(t, before, dirSnapshot(t, dir)) // not even migrated
	})
	t.Run("right key, one secret tampered", func(t *testing.T) {
		dir := t.TempDir()
		_, refresh := storeWithSecrets(t, dir)
		downgrade(t, dir)
		execRaw(t, dir, `UPDATE secrets SET sealed = X'00' WHERE purpose = 'bearer'`)
		s := openT(t, dir)
		if v, err := s.GetSecret(ctx, refresh); err != nil || string(v) != "refresh" {
			t.Fatalf("GetSecret = %q, %v", v, err)
		}
		hasRecord(t, dir)
	})
	t.Run("no secrets", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir)
		if err := s.AddServer(ctx, noneServer("a", "https://a.example.com/mcp")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		downgrade(t, dir)
		openT(t, dir)
		hasRecord(t, dir)
	})
	t.Run("key missing with secrets", func(t *testing.T) {
		dir := t.TempDir()
		storeWithSecrets(t, dir)
		downgrade(t, dir)
		os.Remove(filepath.Join(dir, keyFileName))
		before := dirSnapshot(t, dir)
		_, err := Open(ctx, dir, Options{})
		if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "is missing") {
			t.Fatalf("Open = %v, want ErrWrongKey for the missing key", err)
		}
		sameSnapshot(t, before, dirSnapshot(t, dir))
	})
}

// TestKeyCheckStopsStaleProcess: when another process re-creates a
// missing key file for a store without secrets, a process still holding
// the old key can no longer seal; the store never holds two keys.
func TestKeyCheckStopsStaleProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	stale := openT(t, dir)
	if err := os.Remove(filepath.Join(dir, keyFileName)); err != nil {
		t.Fatal(err)
	}
	fresh := openT(t, dir) // creates a new key, re-seals the record
	checkpointT(t, fresh)
	before := fileSums(t, dir)
	err := stale.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA"))
	if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("AddServer by the stale process = %v, want ErrWrongKey", err)
	}
	t.Log(err)
	checkpointT(t, fresh)
	sameSums(t, before, fileSums(t, dir))
	// Writes without secrets are not affected; the fresh process seals.
	if err := stale.AddServer(ctx, noneServer("n", "https://n.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	if err := fresh.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	if got, err := fresh.GetServer(ctx, "a"); err != nil || got.Auth.Token != "tokA" {
		t.Fatalf("GetServer = %+v, %v", got, err)
	}
}

// TestOpenNegativeSchemaVersion: a header that names remotemcp but holds
// a negative user_version is refused as corrupt, not migrated (it used to
// index the migrations with it).
func TestOpenNegativeSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir).Close()
	execRaw(t, dir, "PRAGMA user_version = -1")
	before := fileSums(t, dir)
	if _, err := Open(context.Background(), dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
	sameSums(t, before, fileSums(t, dir))
}

// roHelperEnv makes TestReadOnlyDataDir, re-run as an unprivileged user,
// do its checks in the directory the variable names.
const roHelperEnv = "REMOTEMCP_STORE_TEST_RO_BASE"

// TestReadOnlyDataDir: a data directory this user cannot write gives
// ErrDataDirNotWritable with a hint, not SQLite's bare error. Permission
// bits do not stop root, so as root the test re-runs itself as nobody.
func TestReadOnlyDataDir(t *testing.T) {
	if base := os.Getenv(roHelperEnv); base != "" {
		testReadOnlyDataDir(t, base)
		return
	}
	switch {
	case runtime.GOOS == "windows":
		t.Skip("permission bits do not make a directory read-only on Windows")
	case os.Geteuid() != 0:
		testReadOnlyDataDir(t, t.TempDir())
	default:
		runAsNobody(t)
	}
}

// testReadOnlyDataDir does the checks in base, which this (unprivileged)
// user can write.
func testReadOnlyDataDir(t *testing.T, base string) {
	ctx := context.Background()
	// readOnly makes p read-only until the test ends, so cleanup can
	// remove what is inside.
	readOnly := func(t *testing.T, p string, mode os.FileMode) {
		t.Helper()
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, 0o755) })
	}
	checkHint := func(t *testing.T, err error, dir string, more ...string) {
		t.Helper()
		if !errors.Is(err, ErrDataDirNotWritable) {
			t.Fatalf("err = %v, want ErrDataDirNotWritable", err)
		}
		t.Log(err)
		for _, want := range append([]string{dir, "not writable", "chmod u+w", "--data-dir", "$" + EnvHome}, more...) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error does not mention %q", want)
			}
		}
	}
	newStore := func(t *testing.T, name string) string {
		t.Helper()
		dir := filepath.Join(base, name)
		s, err := Open(ctx, dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	t.Run("new store", func(t *testing.T) {
		dir := filepath.Join(base, "new")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := CheckWritable(dir); err != nil {
			t.Fatalf("CheckWritable on a writable directory: %v", err)
		}
		readOnly(t, dir, 0o555)
		checkHint(t, CheckWritable(dir), dir, "data directory "+dir+" is not writable")
		_, err := Open(ctx, dir, Options{})
		checkHint(t, err, dir, "data directory "+dir+" is not writable")
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("files created in a read-only directory: %v", entries)
		}
	})
	t.Run("existing store", func(t *testing.T) {
		dir := newStore(t, "existing")
		readOnly(t, dir, 0o555)
		before := dirSnapshot(t, dir)
		_, err := Open(ctx, dir, Options{})
		checkHint(t, err, dir, "data directory "+dir+" is not writable")
		sameSnapshot(t, before, dirSnapshot(t, dir))
	})
	t.Run("read-only database file", func(t *testing.T) {
		dir := newStore(t, "rofile")
		path := filepath.Join(dir, DBFileName)
		readOnly(t, path, 0o444)
		before := readFileT(t, path)
		_, err := Open(ctx, dir, Options{})
		checkHint(t, err, dir, DBFileName+" in data directory "+dir)
		if !bytes.Equal(before, readFileT(t, path)) {
			t.Error("database file changed")
		}
	})
	t.Run("raw errors", func(t *testing.T) {
		ro := filepath.Join(base, "rawro")
		if err := os.Mkdir(ro, 0o755); err != nil {
			t.Fatal(err)
		}
		readOnly(t, ro, 0o555)
		rw := filepath.Join(base, "rawrw")
		if err := os.Mkdir(rw, 0o755); err != nil {
			t.Fatal(err)
		}
		// A real "attempt to write a readonly database" from SQLite.
		src := filepath.Join(rw, "src.db")
		foreignDB(t, src, "CREATE TABLE t (x)")
		db, err := sql.Open("sqlite", fileDSN(src, url.Values{"mode": {"ro"}}))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, sqliteRO := db.Exec("INSERT INTO t VALUES (1)")
		var se *sqlite.Error
		if !errors.As(sqliteRO, &se) {
			t.Fatalf("precondition: want a SQLite error, got %v", sqliteRO)
		}
		perm := &fs.PathError{Op: "open", Path: filepath.Join(ro, DBFileName), Err: syscall.EACCES}
		tests := []struct {
			name string
			dir  string
			err  error
			hint bool
		}{
			{"permission denied in a read-only directory", ro, perm, true},
			{"SQLite readonly in a read-only directory", ro, fmt.Errorf("store: migrate: %w", sqliteRO), true},
			{"permission denied in a writable directory", rw, perm, false}, // e.g. another user's key file
			{"other error in a read-only directory", ro, errors.New("boom"), false},
			{"typed refusal in a read-only directory", ro, fmt.Errorf("%w (%w)", ErrWrongKey, perm), false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got := notWritable(tt.dir, tt.err)
				if !errors.Is(got, tt.err) {
					t.Fatalf("notWritable lost the cause: %v", got)
				}
				if tt.hint {
					checkHint(t, got, tt.dir)
				} else if got != tt.err {
					t.Fatalf("notWritable = %v, want the error unchanged", got)
				}
			})
		}
	})
	t.Run("data directory cannot be created", func(t *testing.T) {
		parent := filepath.Join(base, "roparent")
		if err := os.Mkdir(parent, 0o755); err != nil {
			t.Fatal(err)
		}
		readOnly(t, parent, 0o555)
		dir := filepath.Join(parent, "remotemcp")
		_, err := DataDir(dir)
		checkHint(t, err, dir)
		_, err = Open(ctx, dir, Options{})
		checkHint(t, err, dir)
	})
}
