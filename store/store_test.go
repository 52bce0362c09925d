package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

func testServerRoundTrip(t *testing.T, b backend) {
	ctx := context.Background()
	servers := []config.Server{
		noneServer("plain", "https://plain.example.com/mcp"),
		bearerServer("tok", "https://tok.example.com/mcp", "tok-SECRET-123"),
		{
			ID: "oauth-pre", Name: "Pre-registered", URL: "https://oauth.example.com/mcp?tenant=1",
			Auth: config.Auth{
				Kind: config.AuthOAuth, ClientID: "client-1", ClientSecret: "client-SECRET-456",
				Scopes:       []string{"read", "write"},
				Binding:      &config.Binding{Resource: "https://oauth.example.com/mcp?tenant=1", Issuer: "https://as.example.com"},
				RedirectPort: 8123,
			},
			Enabled: true, DisabledTools: []string{"rm", "dd"}, ToolTimeout: config.Duration(90 * time.Second),
		},
		{
			ID: "oauth-dcr", Name: "DCR", URL: "http://127.0.0.1:9000/mcp",
			Auth: config.Auth{Kind: config.AuthOAuth},
		},
		{
			ID: "headers", Name: "Headers", URL: "https://h.example.com/mcp",
			Auth:    config.Auth{Kind: config.AuthBearer, Token: "tok-h"},
			Headers: map[string]string{"X-Api-Key": "hdr-SECRET-789", "X-Empty": ""}, ProtocolVersion: "2025-03-26", LogLevel: "debug",
		},
	}
	s := b.open(t)
	for _, srv := range servers {
		if err := s.AddServer(ctx, srv); err != nil {
			t.Fatalf("AddServer(%s): %v", srv.ID, err)
		}
	}
	check := func(t *testing.T, s *DB) {
		t.Helper()
		for _, want := range servers {
			got, err := s.GetServer(ctx, want.ID)
			if err != nil {
				t.Fatalf("GetServer(%s): %v", want.ID, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("GetServer(%s)\n got %+v\nwant %+v", want.ID, got, want)
			}
		}
		list, err := s.ListServers(ctx)
		if err != nil {
			t.Fatalf("ListServers: %v", err)
		}
		if !reflect.DeepEqual(list, servers) {
			t.Errorf("ListServers\n got %+v\nwant %+v", list, servers)
		}
	}
	check(t, s)

	// Restart: a new Open of the same store sees the same servers.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(t, b.again(t, s))
}

func testGetServerNotFound(t *testing.T, b backend) {
	s := b.open(t)
	if _, err := s.GetServer(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetServer = %v, want ErrNotFound", err)
	}
	if err := s.DeleteServer(context.Background(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("DeleteServer = %v, want ErrNotFound", err)
	}
	if err := s.UpdateServer(context.Background(), noneServer("nope", "https://x.example.com")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("UpdateServer = %v, want ErrNotFound", err)
	}
}

// testRefusedWritesLeaveDataUnchanged: every write that is refused leaves
// the database (and its WAL) byte-for-byte as it was; in PostgreSQL,
// every row.
func testRefusedWritesLeaveDataUnchanged(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddServer(ctx, headerServer("hd", "https://hd.example.com/mcp", map[string]string{"X-Key": "hdrA"})); err != nil {
		t.Fatal(err)
	}
	bad := func(mut func(*config.Server)) config.Server {
		srv := bearerServer("b", "https://b.example.com/mcp", "tokB")
		mut(&srv)
		return srv
	}
	tests := []struct {
		name string
		op   func() error
		want error // nil: any error
	}{
		{"add empty id", func() error { return s.AddServer(ctx, bad(func(c *config.Server) { c.ID = "" })) }, nil},
		{"add bad id", func() error { return s.AddServer(ctx, bad(func(c *config.Server) { c.ID = "Bad/Id" })) }, nil},
		{"add bad url", func() error { return s.AddServer(ctx, bad(func(c *config.Server) { c.URL = "not a url" })) }, nil},
		{"add http remote", func() error {
			return s.AddServer(ctx, bad(func(c *config.Server) { c.URL = "http://b.example.com/mcp" }))
		}, nil},
		{"add bearer without token", func() error { return s.AddServer(ctx, bad(func(c *config.Server) { c.Auth.Token = "" })) }, nil},
		{"add token with space", func() error { return s.AddServer(ctx, bad(func(c *config.Server) { c.Auth.Token = "a b" })) }, nil},
		{"add duplicate", func() error { return s.AddServer(ctx, bearerServer("a", "https://a2.example.com/mcp", "x")) }, ErrDuplicate},
		{"update invalid", func() error {
			return s.UpdateServer(ctx, bad(func(c *config.Server) { c.ID = "a"; c.Auth.Kind = "magic" }))
		}, nil},
		{"update missing", func() error { return s.UpdateServer(ctx, bad(func(*config.Server) {})) }, ErrNotFound},
		{"update rebind", func() error {
			return s.UpdateServer(ctx, bearerServer("a", "https://other.example.com/mcp", "tokA"))
		}, ErrBearerRebind},
		{"update header rebind", func() error {
			return s.UpdateServer(ctx, headerServer("hd", "https://other.example.com/mcp", map[string]string{"X-Key": "hdrA"}))
		}, ErrHeaderRebind},
		{"add reserved header", func() error {
			return s.AddServer(ctx, bad(func(c *config.Server) { c.Headers = map[string]string{"Authorization": "Bearer x"} }))
		}, nil},
		{"delete missing", func() error { return s.DeleteServer(ctx, "zzz") }, ErrNotFound},
		{"secret of missing server", func() error {
			return s.PutSecret(ctx, SecretKey{ServerID: "zzz", Purpose: PurposeRefreshToken}, []byte("x"))
		}, ErrNotFound},
		{"kv not json", func() error { return s.PutKV(ctx, "ns", "k", []byte("{")) }, nil},
		{"delete missing secret", func() error { return s.DeleteSecret(ctx, SecretKey{ServerID: "a", Purpose: "nope"}) }, errNone},
		{"delete missing kv", func() error { return s.DeleteKV(ctx, "ns", "nope") }, errNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, s)
			rev, _ := s.Revision(ctx)
			err := tt.op()
			switch {
			case tt.want == errNone:
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
			case err == nil:
				t.Fatal("write succeeded, want an error")
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			sameSums(t, before, snapshot(t, s))
			if rev2, _ := s.Revision(ctx); rev2 != rev {
				t.Errorf("revision %d -> %d", rev, rev2)
			}
		})
	}
	got, err := s.GetServer(ctx, "a")
	if err != nil || got.URL != "https://a.example.com/mcp" || got.Auth.Token != "tokA" {
		t.Fatalf("server a after refused writes: %+v, %v", got, err)
	}
}

// errNone marks a table case that must succeed without writing.
var errNone = errors.New("no error")

func testUpdateServerBearerRebind(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	// Same canonical resource, other spelling: the token may stay.
	if err := s.UpdateServer(ctx, bearerServer("a", "https://A.example.com:443/mcp", "tokA")); err != nil {
		t.Fatalf("same resource: %v", err)
	}
	// Another resource with the old token: refused.
	err := s.UpdateServer(ctx, bearerServer("a", "https://a.example.com/other", "tokA"))
	if !errors.Is(err, ErrBearerRebind) {
		t.Fatalf("UpdateServer = %v, want ErrBearerRebind", err)
	}
	// Another resource with a new token: fine.
	if err := s.UpdateServer(ctx, bearerServer("a", "https://a.example.com/other", "tokNEW")); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetServer(ctx, "a")
	if got.URL != "https://a.example.com/other" || got.Auth.Token != "tokNEW" {
		t.Fatalf("after update: %+v", got)
	}
	// The user confirmed the same token is meant for the new URL.
	if err := s.UpdateServerWith(ctx, bearerServer("a", "https://b.example.com/mcp", "tokNEW"), UpdateOptions{RebindBearer: true}); err != nil {
		t.Fatal(err)
	}
	// Only one bearer secret is left, under the new resource.
	keys, err := s.ListSecrets(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := []SecretKey{{ServerID: "a", Purpose: PurposeBearer, Binding: config.Binding{Resource: "https://b.example.com/mcp"}}}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("secrets = %+v, want %+v", keys, want)
	}
	// Switching to auth none drops the token.
	if err := s.UpdateServer(ctx, noneServer("a", "https://b.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	if keys, _ := s.ListSecrets(ctx, "a"); len(keys) != 0 {
		t.Fatalf("secrets after kind none: %+v", keys)
	}
}

// testSecretsNeverInClear greps every file of the data directory for the
// secrets, before and after a checkpoint; in PostgreSQL, every row.
func testSecretsNeverInClear(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	const (
		bearer  = "bearer-NEEDLE-7f3a9c"
		bearer2 = "bearer-NEEDLE-second-11d2"
		client  = "client-NEEDLE-secret-42"
		refresh = "refresh-NEEDLE-token-99"
		header  = "header-NEEDLE-value-3c"
		header2 = "header-NEEDLE-second-d8"
	)
	if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", bearer)); err != nil {
		t.Fatal(err)
	}
	a2 := bearerServer("a", "https://a.example.com/mcp", bearer2)
	a2.Headers = map[string]string{"X-Api-Key": header}
	if err := s.UpdateServer(ctx, a2); err != nil {
		t.Fatal(err)
	}
	h := headerServer("h", "https://h.example.com/mcp", map[string]string{"X-Api-Key": header2})
	if err := s.AddServer(ctx, h); err != nil {
		t.Fatal(err)
	}
	o := config.Server{ID: "o", URL: "https://o.example.com/mcp", Auth: config.Auth{Kind: config.AuthOAuth, ClientID: "cid", ClientSecret: client}}
	if err := s.AddServer(ctx, o); err != nil {
		t.Fatal(err)
	}
	k := SecretKey{ServerID: "o", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: "https://o.example.com/mcp", Issuer: "https://as.example.com"}}
	if err := s.PutSecret(ctx, k, []byte(refresh)); err != nil {
		t.Fatal(err)
	}
	if s.d == sqliteDialect {
		if _, err := os.Stat(filepath.Join(s.dir, DBFileName+"-wal")); err != nil {
			t.Errorf("no WAL file to check: %v", err)
		}
	}
	for _, needle := range []string{bearer, bearer2, client, refresh, header, header2, "NEEDLE"} {
		if hits := whereInClear(t, s, needle); len(hits) > 0 {
			t.Errorf("%q found in clear in %v", needle, hits)
		}
	}
	// And they still open.
	got, err := s.GetServer(ctx, "a")
	if err != nil || got.Auth.Token != bearer2 || got.Headers["X-Api-Key"] != header {
		t.Fatalf("GetServer(a) = %+v, %v", got, err)
	}
	v, err := s.GetSecret(ctx, k)
	if err != nil || string(v) != refresh {
		t.Fatalf("GetSecret = %q, %v", v, err)
	}
}

func testSecretsAPI(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	if err := s.AddServer(ctx, noneServer("a", "https://a.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	b1 := config.Binding{Resource: "https://a.example.com/mcp", Issuer: "https://as1.example.com"}
	b2 := config.Binding{Resource: "https://a.example.com/mcp", Issuer: "https://as2.example.com"}
	k1 := SecretKey{ServerID: "a", Purpose: PurposeRefreshToken, Binding: b1}
	k2 := SecretKey{ServerID: "a", Purpose: PurposeRefreshToken, Binding: b2}
	k3 := SecretKey{ServerID: "a", Purpose: PurposeRegistration, Binding: b1}

	if _, err := s.GetSecret(ctx, k1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetSecret missing = %v, want ErrNotFound", err)
	}
	for i, k := range []SecretKey{k1, k2, k3} {
		if err := s.PutSecret(ctx, k, []byte(fmt.Sprint("v", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutSecret(ctx, k1, []byte("v0-rotated")); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[SecretKey]string{k1: "v0-rotated", k2: "v1", k3: "v2"} {
		got, err := s.GetSecret(ctx, k)
		if err != nil || string(got) != want {
			t.Errorf("GetSecret(%+v) = %q, %v; want %q", k, got, err, want)
		}
	}
	if err := s.PutSecret(ctx, SecretKey{Purpose: "x"}, nil); err == nil {
		t.Error("PutSecret without server id succeeded")
	}
	if err := s.DeleteSecret(ctx, k2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSecret(ctx, k2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	// Secrets die with their server, and do not come back with a new
	// server of the same id.
	if err := s.DeleteServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddServer(ctx, noneServer("a", "https://a.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.ListSecrets(ctx, "a"); err != nil || len(keys) != 0 {
		t.Fatalf("secrets after delete+add: %+v, %v", keys, err)
	}
}

func testKV(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	if _, err := s.GetKV(ctx, "grants", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetKV missing = %v", err)
	}
	put := map[string]string{"https://a.example.com": `{"granted":true}`, "https://b.example.com": `[1,2]`}
	for k, v := range put {
		if err := s.PutKV(ctx, "grants", k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutKV(ctx, "cards", "c1", []byte(`"x"`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKV(ctx, "grants", "https://a.example.com", []byte(`{"granted":false}`)); err != nil {
		t.Fatal(err)
	}
	put["https://a.example.com"] = `{"granted":false}`
	all, err := s.ListKV(ctx, "grants")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(put) {
		t.Fatalf("ListKV = %v", all)
	}
	for k, v := range put {
		if string(all[k]) != v {
			t.Errorf("ListKV[%s] = %s, want %s", k, all[k], v)
		}
	}
	if err := s.DeleteKV(ctx, "grants", "https://b.example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetKV(ctx, "grants", "https://b.example.com"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	for _, c := range []struct{ ns, key, v string }{{"", "k", "1"}, {"ns", "", "1"}, {"ns", "k", "nope"}} {
		if err := s.PutKV(ctx, c.ns, c.key, []byte(c.v)); err == nil {
			t.Errorf("PutKV(%q,%q,%q) succeeded", c.ns, c.key, c.v)
		}
	}
	if m, err := s.ListKV(ctx, "empty"); err != nil || len(m) != 0 {
		t.Fatalf("ListKV(empty) = %v, %v", m, err)
	}
}

func TestOpenNewerSchema(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	if err := s.AddServer(context.Background(), noneServer("a", "https://a.example.com")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	execRaw(t, dir, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion()+7))
	before := fileSums(t, dir)
	_, err := Open(context.Background(), dir, Options{})
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open = %v, want ErrNewerSchema", err)
	}
	t.Log(err)
	for _, want := range []string{dir, fmt.Sprintf("schema %d > %d", SchemaVersion()+7, SchemaVersion()), "upgrade remotemcp"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	sameSums(t, before, fileSums(t, dir))
}

func TestOpenCorrupt(t *testing.T) {
	random := make([]byte, 8192)
	rand.Read(random)
	headerThenJunk := make([]byte, 8192)
	rand.Read(headerThenJunk)
	copy(headerThenJunk, sqliteMagic)
	tests := []struct {
		name string
		data []byte
	}{
		{"random bytes", random},
		{"short", []byte("hello")},
		{"text", []byte(strings.Repeat("not a database\n", 100))},
		{"sqlite header then junk", headerThenJunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, DBFileName)
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(context.Background(), dir, Options{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "left untouched") {
				t.Errorf("error %q should name %s and say it was left untouched", err, path)
			}
			got, _ := os.ReadFile(path)
			if string(got) != string(tt.data) {
				t.Error("database file was modified")
			}
			if _, err := os.Stat(filepath.Join(dir, keyFileName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("key file created next to a corrupt database: %v", err)
			}
		})
	}
}

// TestOpenDamagedPage: a real store whose second page was overwritten is
// caught by the integrity check and left as it is.
func TestOpenDamagedPage(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir)
	for i := range 20 {
		if err := s.AddServer(context.Background(), noneServer(fmt.Sprint("s", i), "https://a.example.com")); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	path := filepath.Join(dir, DBFileName)
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 3*4096 {
		t.Fatalf("database of %d bytes: %v", len(b), err)
	}
	junk := make([]byte, 4096)
	rand.Read(junk)
	copy(b[4096:], junk)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := fileSums(t, dir)
	_, err = Open(context.Background(), dir, Options{})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
	t.Log(err)
	sameSums(t, before, fileSums(t, dir))
}

func TestKeyFile(t *testing.T) {
	ctx := context.Background()
	t.Run("created 0600", func(t *testing.T) {
		dir := t.TempDir()
		openT(t, dir)
		fi, err := os.Stat(filepath.Join(dir, keyFileName))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 || fi.Size() != keySize {
			t.Fatalf("key file mode %v size %d", fi.Mode(), fi.Size())
		}
		fi, _ = os.Stat(filepath.Join(dir, DBFileName))
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("database mode %v", fi.Mode())
		}
	})
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		t.Run(fmt.Sprintf("mode %04o refused", mode), func(t *testing.T) {
			dir := t.TempDir()
			openT(t, dir).Close()
			key := filepath.Join(dir, keyFileName)
			if err := os.Chmod(key, mode); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctx, dir, Options{})
			if err == nil || !strings.Contains(err.Error(), "chmod 600 "+key) {
				t.Fatalf("Open = %v, want an error with the chmod fix", err)
			}
			t.Log(err)
		})
	}
	t.Run("missing with sealed secrets", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir)
		if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com", "tok")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		key := filepath.Join(dir, keyFileName)
		os.Remove(key)
		before := fileSums(t, dir)
		_, err := Open(ctx, dir, Options{})
		if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("Open = %v, want a missing key error", err)
		}
		t.Log(err)
		if _, err := os.Stat(key); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("a new key was created")
		}
		sameSums(t, before, fileSums(t, dir))
	})
	t.Run("missing without secrets", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir)
		if err := s.AddServer(ctx, noneServer("a", "https://a.example.com")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		os.Remove(filepath.Join(dir, keyFileName))
		s = openT(t, dir)
		if _, err := s.GetServer(ctx, "a"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("wrong length", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, keyFileName), []byte("short"), 0o600)
		if _, err := Open(ctx, dir, Options{}); err == nil || !strings.Contains(err.Error(), "not a remotemcp key") {
			t.Fatalf("Open = %v", err)
		}
	})
}

func testTamperedAndMovedBlobs(t *testing.T, b backend) {
	ctx := context.Background()
	bind := config.Binding{Resource: "https://a.example.com/mcp", Issuer: "https://as.example.com"}
	k := SecretKey{ServerID: "a", Purpose: PurposeRefreshToken, Binding: bind}
	tests := []struct {
		name           string
		sqlite, pgsql  string // the tampering; pgsql "" when it is sqlite's
		asKey          SecretKey
		dropBOwnBearer bool
	}{
		// The last byte is set to another value: 0x00, or 0x01 when it is
		// 0x00 already (the tag is random: 1 run in 256 changed nothing).
		{name: "flipped byte",
			sqlite: `UPDATE secrets SET sealed = CAST(substr(sealed, 1, length(sealed)-1) || CASE WHEN substr(sealed, -1) = X'00' THEN X'01' ELSE X'00' END AS BLOB) WHERE purpose = 'oauth-refresh'`,
			pgsql:  `UPDATE secrets SET sealed = set_byte(sealed, length(sealed)-1, CASE WHEN get_byte(sealed, length(sealed)-1) = 0 THEN 1 ELSE 0 END) WHERE purpose = 'oauth-refresh'`,
			asKey:  k},
		{name: "truncated", sqlite: `UPDATE secrets SET sealed = substr(sealed, 1, 10) WHERE purpose = 'oauth-refresh'`, asKey: k},
		{name: "moved to another issuer", sqlite: `UPDATE secrets SET issuer = 'https://evil.example.com' WHERE purpose = 'oauth-refresh'`,
			asKey: SecretKey{ServerID: "a", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: bind.Resource, Issuer: "https://evil.example.com"}}},
		{name: "moved to another resource", sqlite: `UPDATE secrets SET resource = 'https://evil.example.com' WHERE purpose = 'oauth-refresh'`,
			asKey: SecretKey{ServerID: "a", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: "https://evil.example.com", Issuer: bind.Issuer}}},
		{name: "moved to another purpose", sqlite: `UPDATE secrets SET purpose = 'oauth-registration' WHERE purpose = 'oauth-refresh'`,
			asKey: SecretKey{ServerID: "a", Purpose: PurposeRegistration, Binding: bind}},
		{name: "moved to another server", sqlite: `UPDATE secrets SET server_id = 'b' WHERE purpose = 'oauth-refresh'`,
			asKey: SecretKey{ServerID: "b", Purpose: PurposeRefreshToken, Binding: bind}},
		{name: "bearer moved to another server", sqlite: `UPDATE secrets SET server_id = 'b', resource = 'https://b.example.com/mcp' WHERE purpose = 'bearer' AND server_id = 'a'`,
			asKey:          SecretKey{ServerID: "b", Purpose: PurposeBearer, Binding: config.Binding{Resource: "https://b.example.com/mcp"}},
			dropBOwnBearer: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := b.open(t)
			if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
				t.Fatal(err)
			}
			if err := s.AddServer(ctx, bearerServer("b", "https://b.example.com/mcp", "tokB")); err != nil {
				t.Fatal(err)
			}
			if err := s.PutSecret(ctx, k, []byte("refresh")); err != nil {
				t.Fatal(err)
			}
			if tt.dropBOwnBearer {
				rawExec(t, s, `DELETE FROM secrets WHERE server_id = 'b'`)
			}
			q := tt.sqlite
			if tt.pgsql != "" {
				q = bySQL(s, tt.sqlite, tt.pgsql)
			}
			rawExec(t, s, q)
			if _, err := s.GetSecret(ctx, tt.asKey); !errors.Is(err, ErrSealOpen) {
				t.Fatalf("GetSecret = %v, want ErrSealOpen", err)
			}
		})
	}
}

// testConcurrentHandlesWrite: three handles on one store (three
// processes) write at once; every write lands, each handle opens what the
// others sealed (one key), and the revision counts every write.
func testConcurrentHandlesWrite(t *testing.T, b backend) {
	ctx := context.Background()
	const n = 3
	stores := []*DB{b.open(t)}
	for len(stores) < n {
		stores = append(stores, b.again(t, stores[0]))
	}
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			for j := range 10 {
				id := fmt.Sprintf("s%d-%d", i, j)
				if err := s.AddServer(ctx, bearerServer(id, "https://x.example.com/"+id, "tok"+id)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, s := range stores {
		list, err := s.ListServers(ctx)
		if err != nil || len(list) != n*10 {
			t.Fatalf("ListServers = %d, %v", len(list), err)
		}
		for _, srv := range list {
			if srv.Auth.Token != "tok"+srv.ID {
				t.Fatalf("%s token %q", srv.ID, srv.Auth.Token)
			}
		}
	}
	if rev, _ := stores[0].Revision(ctx); rev != n*10 {
		t.Fatalf("revision %d, want %d", rev, n*10)
	}
}

func TestConcurrentOpenAndWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const n = 3
	stores := make([]*DB, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			stores[i], errs[i] = Open(ctx, dir, Options{PollInterval: testPoll})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	// All share one key: what one seals the others open.
	for i, s := range stores {
		wg.Go(func() {
			for j := range 10 {
				id := fmt.Sprintf("s%d-%d", i, j)
				if err := s.AddServer(ctx, bearerServer(id, "https://x.example.com/"+id, "tok"+id)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, s := range stores {
		list, err := s.ListServers(ctx)
		if err != nil || len(list) != n*10 {
			t.Fatalf("ListServers = %d, %v", len(list), err)
		}
		for _, srv := range list {
			if srv.Auth.Token != "tok"+srv.ID {
				t.Fatalf("%s token %q", srv.ID, srv.Auth.Token)
			}
		}
	}
	if rev, _ := stores[0].Revision(ctx); rev != n*10 {
		t.Fatalf("revision %d, want %d", rev, n*10)
	}
}

func testClosed(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := s.AddServer(ctx, noneServer("a", "https://a.example.com")); !errors.Is(err, ErrClosed) {
		t.Errorf("AddServer after Close = %v", err)
	}
	if _, err := s.ListServers(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("ListServers after Close = %v", err)
	}
	if _, err := s.Lock(ctx, "x"); !errors.Is(err, ErrClosed) {
		t.Errorf("Lock after Close = %v", err)
	}
	if _, ok := <-s.Subscribe(ctx); ok {
		t.Error("Subscribe after Close delivered")
	}
}

func TestDataDir(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "flag")
	env := filepath.Join(t.TempDir(), "env")
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", cfg)
	t.Setenv(EnvHome, env)
	got, err := DataDir(flag)
	if err != nil || got != flag {
		t.Fatalf("DataDir(flag) = %q, %v", got, err)
	}
	got, err = DataDir("")
	if err != nil || got != env {
		t.Fatalf("DataDir(env) = %q, %v", got, err)
	}
	t.Setenv(EnvHome, "")
	base, _ := os.UserConfigDir()
	got, err = DataDir("")
	if err != nil || got != filepath.Join(base, "remotemcp") {
		t.Fatalf("DataDir() = %q, %v", got, err)
	}
	for _, d := range []string{flag, env, got} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, fi.Mode(), err)
		}
	}
}

func TestDSNEscapesPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "we?ird #dir%20")
	s := openT(t, dir)
	if err := s.AddServer(context.Background(), noneServer("a", "https://a.example.com")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DBFileName)); err != nil {
		t.Fatal(err)
	}
}
