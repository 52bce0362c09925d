package store

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/config"
)

// Custom header values are secrets (SPEC §9 A2): sealed like a bearer
// token, bound to purpose, server and canonical resource, never in the
// database in clear.

func headerServer(id, url string, headers map[string]string) config.Server {
	srv := noneServer(id, url)
	srv.Headers = headers
	return srv
}

// storedConfig is the raw config JSON of one server row of s.
func storedConfig(t *testing.T, s *DB, id string) map[string]any {
	t.Helper()
	var js string
	if err := rawQueryRow(t, s, `SELECT config FROM servers WHERE user_id = ? AND id = ?`, s.user, id).Scan(&js); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func testHeadersRoundTrip(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	want := headerServer("h", "https://h.example.com/mcp", map[string]string{
		"X-Api-Key": "key-VALUE-1", "X-Tenant": "acme", "X-Empty": "",
	})
	want.ProtocolVersion, want.LogLevel = "2025-06-18", "info"
	if err := s.AddServer(ctx, want); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, s *DB) {
		t.Helper()
		got, err := s.GetServer(ctx, "h")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("GetServer = %+v, %v\nwant %+v", got, err, want)
		}
		list, err := s.ListServers(ctx)
		if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], want) {
			t.Fatalf("ListServers = %+v, %v", list, err)
		}
	}
	check(t, s)

	// The stored JSON keeps the names, with no values.
	cfg := storedConfig(t, s, "h")
	if h := cfg["headers"]; !reflect.DeepEqual(h, map[string]any{"X-Api-Key": "", "X-Tenant": "", "X-Empty": ""}) {
		t.Fatalf("stored headers = %v", h)
	}
	// One sealed secret per value, bound to the canonical resource.
	keys, err := s.ListSecrets(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	bind := config.Binding{Resource: "https://h.example.com/mcp"}
	wantKeys := []SecretKey{
		{ServerID: "h", Purpose: "header:X-Api-Key", Binding: bind},
		{ServerID: "h", Purpose: "header:X-Empty", Binding: bind},
		{ServerID: "h", Purpose: "header:X-Tenant", Binding: bind},
	}
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Fatalf("secrets = %+v\nwant %+v", keys, wantKeys)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = b.again(t, s)
	check(t, s)

	// A header removed by an update takes its sealed value with it; a
	// changed value replaces the old one.
	want.Headers = map[string]string{"X-Api-Key": "key-VALUE-2"}
	if err := s.UpdateServer(ctx, want); err != nil {
		t.Fatal(err)
	}
	check(t, s)
	if keys, _ := s.ListSecrets(ctx, "h"); len(keys) != 1 || keys[0].Purpose != HeaderPurpose("X-Api-Key") {
		t.Fatalf("secrets after removing headers = %+v", keys)
	}
	if name, ok := IsHeaderPurpose(keys[0].Purpose); !ok || name != "X-Api-Key" {
		t.Fatalf("IsHeaderPurpose(%q) = %q, %v", keys[0].Purpose, name, ok)
	}
	want.Headers = nil
	if err := s.UpdateServer(ctx, want); err != nil {
		t.Fatal(err)
	}
	check(t, s)
	if keys, _ := s.ListSecrets(ctx, "h"); len(keys) != 0 {
		t.Fatalf("secrets after removing every header = %+v", keys)
	}
}

// testHeaderValuesNeverInClear: however a header value gets into the
// store (add, update, edit), neither the database nor its WAL ever holds
// it in clear, before or after a checkpoint (in PostgreSQL, no row).
func testHeaderValuesNeverInClear(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	values := []string{"hdr-NEEDLE-add-5c1e", "hdr-NEEDLE-update-9a7b", "hdr-NEEDLE-edit-2f44", "hdr-NEEDLE-other-7d0c"}
	if err := s.AddServer(ctx, headerServer("a", "https://a.example.com/mcp", map[string]string{"X-Api-Key": values[0]})); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateServer(ctx, headerServer("a", "https://a.example.com/mcp", map[string]string{"X-Api-Key": values[1]})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EditServer(ctx, "a", func(c *config.Server) error {
		c.Headers["X-Api-Key"] = values[2]
		c.Headers["X-Other"] = values[3]
		return nil
	}, UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, needle := range append(values, "NEEDLE") {
		if hits := whereInClear(t, s, needle); len(hits) > 0 {
			t.Errorf("%q found in clear in %v", needle, hits)
		}
	}
	got, err := s.GetServer(ctx, "a")
	if err != nil || got.Headers["X-Api-Key"] != values[2] || got.Headers["X-Other"] != values[3] {
		t.Fatalf("GetServer = %+v, %v", got, err)
	}
}

// testHeaderRebind: a URL change to another canonical resource does not
// carry header values along (like ErrBearerRebind); values given again,
// named in RebindHeaders, or a URL of the same resource pass.
func testHeaderRebind(t *testing.T, b backend) {
	ctx := context.Background()
	const secret = "hdr-secret-0b5e"
	orig := headerServer("a", "https://a.example.com/mcp", map[string]string{"X-Api-Key": secret, "X-Team": ""})
	moved := func(url string, headers map[string]string) config.Server {
		srv := orig.Clone()
		srv.URL = url
		if headers != nil {
			srv.Headers = headers
		}
		return srv
	}
	tests := []struct {
		name string
		srv  config.Server
		opts UpdateOptions
		want error // nil: succeeds
	}{
		{"same resource, other spelling", moved("https://A.example.com:443/mcp", nil), UpdateOptions{}, nil},
		{"other path carries the value", moved("https://a.example.com/v2/mcp", nil), UpdateOptions{}, ErrHeaderRebind},
		{"other host carries the value", moved("https://b.example.com/mcp", nil), UpdateOptions{}, ErrHeaderRebind},
		{"bearer rebind does not cover headers", moved("https://b.example.com/mcp", nil), UpdateOptions{RebindBearer: true}, ErrHeaderRebind},
		{"value given again", moved("https://b.example.com/mcp", nil), UpdateOptions{RebindHeaders: []string{"x-api-key"}}, nil},
		{"new value", moved("https://b.example.com/mcp", map[string]string{"X-Api-Key": "new-value"}), UpdateOptions{}, nil},
		{"header removed", moved("https://b.example.com/mcp", map[string]string{"X-Team": ""}), UpdateOptions{}, nil},
	}
	for _, tt := range tests {
		for _, via := range []string{"UpdateServerWith", "EditServer"} {
			t.Run(tt.name+"/"+via, func(t *testing.T) {
				s := b.open(t)
				if err := s.AddServer(ctx, orig); err != nil {
					t.Fatal(err)
				}
				before := snapshot(t, s)
				var err error
				if via == "EditServer" {
					_, err = s.EditServer(ctx, "a", func(c *config.Server) error {
						c.URL, c.Headers = tt.srv.URL, maps.Clone(tt.srv.Headers)
						return nil
					}, tt.opts)
				} else {
					err = s.UpdateServerWith(ctx, tt.srv, tt.opts)
				}
				if tt.want == nil {
					if err != nil {
						t.Fatalf("err = %v", err)
					}
					got, err := s.GetServer(ctx, "a")
					if err != nil || !reflect.DeepEqual(got.Headers, tt.srv.Headers) || got.URL != tt.srv.URL {
						t.Fatalf("after the update: %+v, %v", got, err)
					}
					return
				}
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				if !strings.Contains(err.Error(), "X-Api-Key") || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "X-Team") {
					t.Fatalf("the error must name the carried header only, never its value: %v", err)
				}
				sameSums(t, before, snapshot(t, s))
			})
		}
	}
}

// testHeaderBlobsBound: a sealed header value moved to another header,
// server or resource does not open; the server is still listed, with the
// value empty and an ErrSealOpen naming the header (not its value).
func testHeaderBlobsBound(t *testing.T, b backend) {
	ctx := context.Background()
	const valA, valB = "value-of-A-31f0", "value-of-B-8e22"
	tests := []struct {
		name string
		sql  []string
		id   string
		bad  string // the header whose value cannot be opened
	}{
		{"swapped between headers", []string{
			`UPDATE secrets SET purpose = 'header:tmp' WHERE purpose = 'header:X-A'`,
			`UPDATE secrets SET purpose = 'header:X-A' WHERE purpose = 'header:X-B'`,
			`UPDATE secrets SET purpose = 'header:X-B' WHERE purpose = 'header:tmp'`,
		}, "a", "X-A"},
		{"moved to another server", []string{
			`DELETE FROM secrets WHERE server_id = 'b'`,
			`UPDATE secrets SET server_id = 'b', resource = 'https://b.example.com/mcp' WHERE purpose = 'header:X-A' AND server_id = 'a'`,
		}, "b", "X-A"},
		{"moved to another resource", []string{
			`UPDATE secrets SET resource = 'https://evil.example.com/mcp' WHERE server_id = 'a' AND purpose = 'header:X-A'`,
		}, "a", "X-A"},
		{"deleted", []string{`DELETE FROM secrets WHERE server_id = 'a' AND purpose = 'header:X-A'`}, "a", "X-A"},
		{"bearer blob as a header", []string{
			`DELETE FROM secrets WHERE server_id = 'b'`,
			`INSERT INTO secrets (user_id, server_id, purpose, resource, issuer, sealed, updated) SELECT user_id, 'b', 'header:X-A', 'https://b.example.com/mcp', '', sealed, 1 FROM secrets WHERE server_id = 'c'`,
		}, "b", "X-A"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := b.open(t)
			for _, srv := range []config.Server{
				headerServer("a", "https://a.example.com/mcp", map[string]string{"X-A": valA, "X-B": valB}),
				headerServer("b", "https://b.example.com/mcp", map[string]string{"X-A": "b-own"}),
				bearerServer("c", "https://c.example.com/mcp", "tokC"),
			} {
				if err := s.AddServer(ctx, srv); err != nil {
					t.Fatal(err)
				}
			}
			rawExec(t, s, tt.sql...)
			got, err := s.GetServer(ctx, tt.id)
			if !errors.Is(err, ErrSealOpen) {
				t.Fatalf("GetServer = %v, want ErrSealOpen", err)
			}
			if got.ID != tt.id || got.Headers[tt.bad] != "" {
				t.Fatalf("GetServer gave %+v; want the server with %s empty", got, tt.bad)
			}
			if msg := err.Error(); !strings.Contains(msg, "header:"+tt.bad) || strings.Contains(msg, valA) || strings.Contains(msg, valB) {
				t.Fatalf("error must name the header and not a value: %v", err)
			}
			list, err := s.ListServers(ctx)
			if !errors.Is(err, ErrSealOpen) || len(list) != 3 {
				t.Fatalf("ListServers = %d servers, %v", len(list), err)
			}
		})
	}
}

// testEditServerRepairsUnopenedHeader: an edit of a server whose header
// value cannot be opened is refused unless it gives the value again or
// removes the header; then it is written, and nothing else is lost.
func testEditServerRepairsUnopenedHeader(t *testing.T, b backend) {
	ctx := context.Background()
	tests := []struct {
		name string
		edit func(*config.Server) error
		want error
	}{
		{"unrelated edit", addTool("t0"), ErrSealOpen},
		{"value given again", func(c *config.Server) error { c.Headers["X-A"] = "fresh"; return nil }, nil},
		{"header removed", func(c *config.Server) error { delete(c.Headers, "X-A"); return nil }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := b.open(t)
			if err := s.AddServer(ctx, headerServer("a", "https://a.example.com/mcp", map[string]string{"X-A": "old", "X-B": "keep"})); err != nil {
				t.Fatal(err)
			}
			rawExec(t, s, bySQL(s, `UPDATE secrets SET sealed = zeroblob(64) WHERE purpose = 'header:X-A'`,
				`UPDATE secrets SET sealed = decode(repeat('00', 64), 'hex') WHERE purpose = 'header:X-A'`))
			got, err := s.EditServer(ctx, "a", tt.edit, UpdateOptions{})
			if tt.want != nil {
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "headers.X-A") {
					t.Fatalf("EditServer = %v, want %v naming headers.X-A", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Headers["X-B"] != "keep" {
				t.Fatalf("edit lost another header: %+v", got.Headers)
			}
			if reread, err := s.GetServer(ctx, "a"); err != nil || !reflect.DeepEqual(reread, got) {
				t.Fatalf("GetServer = %+v, %v; want %+v", reread, err, got)
			}
		})
	}
}

// TestMigrationSealsClearHeaders: a store of schema 3 whose config JSON
// holds header values in clear (written by a build from before the
// values were sealed) opens at the current schema with the values
// sealed, the JSON stripped, and no clear value left in the files.
func TestMigrationSealsClearHeaders(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const value = "legacy-CLEAR-header-4b9d"
	// Schema 3 exactly as the migrations create it, with its key check.
	s := openT(t, dir)
	if err := s.AddServer(ctx, noneServer("keep", "https://keep.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	legacy := headerServer("old", "https://old.example.com/mcp", map[string]string{"X-Api-Key": value, "X-Empty": ""})
	js, err := json.Marshal(legacy)
	if err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	for _, q := range []string{
		`PRAGMA user_version = 3`,
		`INSERT INTO servers (id, config, created, updated) VALUES ('old', '` + string(js) + `', 5, 5)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(grepDir(t, dir, value)) == 0 {
		t.Fatal("test setup: the clear value is not in the files")
	}

	s = openT(t, dir)
	var version int
	if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != SchemaVersion() || version < 4 {
		t.Fatalf("user_version = %d, %v; want %d", version, err, SchemaVersion())
	}
	got, err := s.GetServer(ctx, "old")
	if err != nil || !reflect.DeepEqual(got, legacy) {
		t.Fatalf("GetServer = %+v, %v; want %+v", got, err, legacy)
	}
	if h := storedConfig(t, s, "old")["headers"]; !reflect.DeepEqual(h, map[string]any{"X-Api-Key": "", "X-Empty": ""}) {
		t.Fatalf("stored headers = %v", h)
	}
	checkpointT(t, s)
	if hits := grepDir(t, dir, value); len(hits) > 0 {
		t.Fatalf("the clear value is still in %v", hits)
	}
	// Opening again finds nothing more to do and keeps the value.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir)
	if got, err := s.GetServer(ctx, "old"); err != nil || got.Headers["X-Api-Key"] != value {
		t.Fatalf("reopened: %+v, %v", got, err)
	}
}
