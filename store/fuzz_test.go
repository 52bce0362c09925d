package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

// Fuzz targets for what the store decodes itself (issue #10 item 7): the
// stored server config JSON, the key check record, and the database file
// as Open finds it. Sealed secrets are FuzzOpenSealed's (seal_test.go).
// Host grants, pending approvals and elicitation cards are KV values the
// store keeps as opaque JSON; their owners (hostperm, elicit) decode them.

// FuzzDecodeServer: a stored config row decodes without panicking, into
// the row's id, or fails with an error naming the server; what the store
// would write back from a decoded server reads back the same.
func FuzzDecodeServer(f *testing.F) {
	servers := []config.Server{
		noneServer("plain", "https://plain.example.com/mcp"),
		bearerServer("tok", "https://tok.example.com/mcp", ""),
		{
			ID: "oauth", Name: "OAuth", URL: "https://oauth.example.com/mcp?tenant=1",
			Auth: config.Auth{
				Kind: config.AuthOAuth, ClientID: "client-1", Scopes: []string{"read", "write"},
				Binding:      &config.Binding{Resource: "https://oauth.example.com/mcp?tenant=1", Issuer: "https://as.example.com"},
				RedirectPort: 8123,
			},
			Enabled: true, DisabledTools: []string{"rm"}, ToolTimeout: config.Duration(90 * time.Second),
		},
	}
	for _, srv := range servers {
		js, err := json.Marshal(srv)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(srv.ID, string(js))
		f.Add("renamed", string(js)) // the row's id wins over the JSON's
		f.Add(srv.ID, string(js[:len(js)/2]))
	}
	for _, js := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"id":1}`,
		`{"toolTimeout":"90s"}`, `{"toolTimeout":90000}`, `{"toolTimeout":1e300}`, `{"toolTimeout":"forever"}`, `{"toolTimeout":null}`,
		`{"auth":{"binding":null,"scopes":[]}}`, `{"disabledTools":[]}`, `{"auth":{"kind":"magic","redirectPort":-1}}`,
		`{"limits":{"maxMessageBytes":-5}}`, `{"name":"\ud800"}`, "{\"name\":\"\xff\"}",
		`{"headers":{"X-A":"","x-b":"clear"}}`, `{"headers":null}`, `{"headers":{"":1}}`, `{"protocolVersion":"2025-03-26","logLevel":"debug"}`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	} {
		f.Add("s", js)
	}
	f.Fuzz(func(t *testing.T, id, js string) {
		srv, err := decodeServer(id, js)
		if err != nil {
			if want := fmt.Sprintf("decode stored config of server %q: ", id); !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %q does not start with %q", err, want)
			}
			return
		}
		if srv.ID != id {
			t.Fatalf("decoded id %q, row id %q", srv.ID, id)
		}
		// An update writes the config back as JSON; reading that must give
		// the same config, or every read-modify-write would drift.
		once, err := json.Marshal(srv)
		if err != nil {
			t.Fatalf("decoded server does not encode: %v", err)
		}
		back, err := decodeServer(id, string(once))
		if err != nil {
			t.Fatalf("re-encoded server %s does not decode: %v", once, err)
		}
		twice, err := json.Marshal(back)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("config drifts on a round trip:\n%s\n%s (%v)", once, twice, err)
		}
	})
}

// FuzzKeyCheck: only a record this key sealed passes the key check; any
// other bytes fail with ErrSealOpen, without panicking.
func FuzzKeyCheck(f *testing.F) {
	s := testSealer(f, 9)
	other := testSealer(f, 10)
	// Fixed nonces: the fuzzing workers must agree on the valid records.
	valid := map[string]bool{}
	for i := range 3 {
		nonce := bytes.Repeat([]byte{byte(i + 1)}, nonceSize)
		rec := s.aead.Seal(nonce, nonce, []byte(keyCheckText), sealAAD("", keyCheckKey))
		if err := s.openKeyCheck(rec); err != nil {
			f.Fatalf("seed %d: %v", i, err)
		}
		valid[string(rec)] = true
		f.Add(rec)
		f.Add(rec[:len(rec)-1])
		f.Add(other.aead.Seal(nonce, nonce, []byte(keyCheckText), sealAAD("", keyCheckKey))) // another key
		f.Add(s.aead.Seal(nonce, nonce, []byte("tok"), sealAAD(LocalUser, SecretKey{ServerID: "a", Purpose: PurposeBearer})))
		f.Add(s.aead.Seal(nonce, nonce, []byte("other text"), sealAAD("", keyCheckKey))) // right key, wrong content
	}
	f.Add([]byte{})
	f.Add(make([]byte, nonceSize+16))
	f.Fuzz(func(t *testing.T, rec []byte) {
		err := s.openKeyCheck(rec)
		switch {
		case err == nil && !valid[string(rec)]:
			t.Fatalf("key check passed for a record this key did not seal: %x", rec)
		case err != nil && !errors.Is(err, ErrSealOpen):
			t.Fatalf("error %v does not wrap ErrSealOpen", err)
		case err != nil && !strings.HasPrefix(err.Error(), "key check record: "):
			t.Fatalf("error %q does not name the key check record", err)
		}
	})
}

// FuzzOpenDatabase: Open on arbitrary database file bytes never panics;
// it fails with an error that starts with "store: ", and a file it
// refuses as corrupt, foreign, newer or needing a key it does not have
// is left byte-for-byte as it was, without a key file next to it.
func FuzzOpenDatabase(f *testing.F) {
	ctx := context.Background()
	// seed builds a data directory with fn and returns the database file,
	// checkpointed into one file by Close.
	seed := func(fn func(dir string) error) []byte {
		dir := f.TempDir()
		if err := fn(dir); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, DBFileName))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	withStore := func(fn func(s *DB) error) func(string) error {
		return func(dir string) error {
			s, err := Open(ctx, dir, Options{})
			if err != nil {
				return err
			}
			if err := fn(s); err != nil {
				s.Close()
				return err
			}
			return s.Close()
		}
	}
	raw := func(stmts ...string) func(string) error {
		return func(dir string) error {
			db := rawDB(f, dir)
			defer db.Close()
			for _, q := range stmts {
				if _, err := db.Exec(q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return db.Close()
		}
	}
	fresh := seed(withStore(func(*DB) error { return nil }))
	withSecrets := seed(withStore(func(s *DB) error {
		return s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tok"))
	}))
	withServers := seed(withStore(func(s *DB) error {
		if err := s.AddServer(ctx, noneServer("a", "https://a.example.com/mcp")); err != nil {
			return err
		}
		return s.PutKV(ctx, "grants", "https://a.example.com", []byte(`{"granted":true}`))
	}))
	schema2 := seed(func(dir string) error {
		if err := withStore(func(*DB) error { return nil })(dir); err != nil {
			return err
		}
		return raw("ALTER TABLE meta DROP COLUMN key_check", "PRAGMA user_version = 2")(dir)
	})
	foreign := seed(raw("CREATE TABLE notes (x)", "INSERT INTO notes VALUES ('keep')"))
	foreignWAL := seed(raw("PRAGMA journal_mode = WAL", "CREATE TABLE notes (x)"))
	emptyDB := seed(raw("PRAGMA page_size = 4096", "VACUUM"))
	patch := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	for _, b := range [][]byte{
		nil, []byte("hello"), sqliteMagic, append(bytes.Clone(sqliteMagic), make([]byte, 200)...),
		fresh, withSecrets, withServers, schema2, foreign, foreignWAL, emptyDB,
		patch(fresh, hdrUserVersion, 0xffffffff),                // negative schema version
		patch(fresh, hdrUserVersion, uint32(SchemaVersion()+1)), // newer
		patch(fresh, hdrAppID, 0),                               // our tables, no application id
		patch(foreign, hdrAppID, applicationID),                 // a foreign file claiming to be ours
		patch(emptyDB, hdrAppID, applicationID),                 // ours but never migrated
		patch(withServers, hdrUserVersion, 1),                   // an older schema that is not
		fresh[:len(fresh)/2],                                    // truncated
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, DBFileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, dir, Options{PollInterval: time.Hour})
		if err == nil {
			// A store it opened must work.
			if _, err := s.ListServers(ctx); err != nil && !errors.Is(err, ErrSealOpen) {
				t.Errorf("ListServers on an opened store: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			return
		}
		if !strings.HasPrefix(err.Error(), "store: ") {
			t.Fatalf("error %q does not say where it comes from", err)
		}
		if errIsOpenRefusal(err) {
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatalf("refused (%v), but the file changed", err)
			}
			if _, serr := os.Stat(filepath.Join(dir, keyFileName)); !errors.Is(serr, os.ErrNotExist) {
				t.Fatalf("refused (%v), but a key file was created", err)
			}
		}
	})
}
