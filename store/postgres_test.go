package store

// What only a gateway's PostgreSQL database has (issue #22, SPEC §9 A11):
// users and their isolation, removing a user, migrations of processes
// opening a new database at once, refusing another program's database or
// another key, and waiting for the server. The behaviour it shares with
// the personal store is tested by TestStoreSuite.

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/remotemcp/remotemcp/config"
)

// pgCount counts the rows of table that belong to user.
func pgCount(t *testing.T, p *Postgres, table, user string) int {
	t.Helper()
	var n int
	if err := p.DB().QueryRow(`SELECT count(*) FROM `+table+` WHERE user_id = $1`, user).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// fillUser gives the store of a user a bearer server "x" with a refresh
// token, a second server, a KV record and a tool pin, all carrying tag.
func fillUser(t *testing.T, s *DB, tag string) SecretKey {
	t.Helper()
	ctx := context.Background()
	if err := s.AddServer(ctx, bearerServer("x", "https://x.example.com/mcp", "tok-"+tag)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddServer(ctx, noneServer("only-"+strings.ToLower(tag), "https://"+tag+".example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	k := SecretKey{ServerID: "x", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: "https://x.example.com/mcp", Issuer: "https://as.example.com"}}
	if err := s.PutSecret(ctx, k, []byte("refresh-"+tag)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutKV(ctx, "grants", "g", []byte(`"`+tag+`"`)); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyPins(ctx, "x", []PinOp{{Action: PinFirst, Tool: "read", Hash: "h-" + tag, Definition: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestPostgresUserIsolation: a user's store never sees or changes another
// user's servers, secrets, records or pins, though both use the same
// server id; its change feed and revision are its own; and a sealed
// secret copied to another user with SQL does not open, because the user
// is in the associated data.
func TestPostgresUserIsolation(t *testing.T) {
	ctx := context.Background()
	p := openPostgresT(t, pgDSN(t), t.TempDir())
	ua, ub := addUserT(t, p, "a@example.com"), addUserT(t, p, "b@example.com")
	a, b := userT(t, p, ua.ID), userT(t, p, ub.ID)
	subB := b.Subscribe(ctx)
	k := fillUser(t, a, "A")

	// B sees nothing of A's.
	if l, err := b.ListServers(ctx); err != nil || len(l) != 0 {
		t.Fatalf("B lists %+v, %v", l, err)
	}
	if _, err := b.GetServer(ctx, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("B GetServer(x) = %v", err)
	}
	if _, err := b.GetSecret(ctx, k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("B GetSecret = %v", err)
	}
	if _, err := b.GetKV(ctx, "grants", "g"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("B GetKV = %v", err)
	}
	if m, err := b.ListKV(ctx, "grants"); err != nil || len(m) != 0 {
		t.Fatalf("B ListKV = %v, %v", m, err)
	}
	if pins, err := b.ToolPins(ctx, "x"); err != nil || len(pins) != 0 {
		t.Fatalf("B ToolPins = %v, %v", pins, err)
	}
	if rev, err := b.Revision(ctx); err != nil || rev != 0 {
		t.Fatalf("B revision = %d, %v; want 0 (A's writes are A's)", rev, err)
	}
	// Nor changes it: B's writes under the same names miss A's rows.
	before := pgRows(t, a)
	for _, op := range []func() error{
		func() error { return b.UpdateServer(ctx, noneServer("x", "https://x.example.com/mcp")) },
		func() error { return b.DeleteServer(ctx, "x") },
		func() error { return b.PutSecret(ctx, k, []byte("b's")) },
		func() error {
			_, err := b.EditServer(ctx, "x", addTool("t"), UpdateOptions{})
			return err
		},
	} {
		if err := op(); !errors.Is(err, ErrNotFound) {
			t.Errorf("B's write of A's server = %v, want ErrNotFound", err)
		}
	}
	// A pin needs a server of B's (as in SQLite, the foreign key refuses it).
	if err := b.ApplyPins(ctx, "x", []PinOp{{Action: PinReplace, Tool: "read", Hash: "hb", Definition: []byte(`{}`)}}); err == nil {
		t.Error("B pinned a tool of A's server")
	}
	if err := b.DeleteSecret(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteKV(ctx, "grants", "g"); err != nil {
		t.Fatal(err)
	}
	sameSums(t, before, pgRows(t, a))
	quiet(t, subB, 10*testPoll) // A's writes are not B's changes

	// The same server id in both users is fine, and each has its own.
	fillUser(t, b, "B")
	for _, c := range []struct {
		s   *DB
		tag string
	}{{a, "A"}, {b, "B"}} {
		srv, err := c.s.GetServer(ctx, "x")
		if err != nil || srv.Auth.Token != "tok-"+c.tag {
			t.Errorf("%s GetServer(x) = %+v, %v", c.tag, srv, err)
		}
		if v, err := c.s.GetSecret(ctx, k); err != nil || string(v) != "refresh-"+c.tag {
			t.Errorf("%s GetSecret = %q, %v", c.tag, v, err)
		}
		if v, err := c.s.GetKV(ctx, "grants", "g"); err != nil || string(v) != `"`+c.tag+`"` {
			t.Errorf("%s GetKV = %s, %v", c.tag, v, err)
		}
		if pins, err := c.s.ToolPins(ctx, "x"); err != nil || len(pins) != 1 || pins["read"].Hash != "h-"+c.tag {
			t.Errorf("%s ToolPins = %+v, %v", c.tag, pins, err)
		}
		l, err := c.s.ListServers(ctx)
		if err != nil || len(l) != 2 || l[1].ID != "only-"+strings.ToLower(c.tag) {
			t.Errorf("%s ListServers = %+v, %v", c.tag, l, err)
		}
	}
	// B's feed carries B's writes only, each once and precisely.
	for range 5 { // fillUser's writes
		if c := recv(t, subB, hang); c.RereadAll() {
			t.Fatalf("B's feed: %+v", c)
		}
	}
	if err := a.PutKV(ctx, "grants", "other", []byte("1")); err != nil {
		t.Fatal(err)
	}
	quiet(t, subB, 10*testPoll)

	// A's sealed refresh token and bearer token, copied into B's rows,
	// do not open for B.
	rawExec(t, a,
		`DELETE FROM secrets WHERE user_id = '`+ub.ID+`'`,
		`INSERT INTO secrets (user_id, server_id, purpose, resource, issuer, sealed, updated)
			SELECT '`+ub.ID+`', server_id, purpose, resource, issuer, sealed, updated FROM secrets WHERE user_id = '`+ua.ID+`'`)
	if _, err := b.GetSecret(ctx, k); !errors.Is(err, ErrSealOpen) {
		t.Fatalf("B GetSecret of A's copied blob = %v, want ErrSealOpen", err)
	}
	if srv, err := b.GetServer(ctx, "x"); !errors.Is(err, ErrSealOpen) || srv.Auth.Token != "" {
		t.Fatalf("B GetServer with A's copied bearer = %+v, %v; want ErrSealOpen and no token", srv, err)
	}
	if v, err := a.GetSecret(ctx, k); err != nil || string(v) != "refresh-A" {
		t.Fatalf("A GetSecret = %q, %v", v, err)
	}
}

// TestPostgresRemoveUser: RemoveUser deletes the user and every row of
// theirs, and nobody else's; their open stores (in this process and in
// another) then fail every write and Revision with ErrUserRemoved and
// write nothing, and their subscribers are told to re-read.
func TestPostgresRemoveUser(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	p := openPostgresT(t, dsn, keyDir)
	ua, ub := addUserT(t, p, "a@example.com"), addUserT(t, p, "b@example.com")
	a, b := userT(t, p, ua.ID), userT(t, p, ub.ID)
	aElsewhere := userT(t, openPostgresT(t, dsn, keyDir), ua.ID)
	k := fillUser(t, a, "A")
	fillUser(t, b, "B")
	sub := a.Subscribe(ctx)
	subElsewhere := aElsewhere.Subscribe(ctx)
	bBefore := map[string]int{}
	for _, table := range []string{"servers", "secrets", "kv", "tool_pins"} {
		bBefore[table] = pgCount(t, p, table, ub.ID)
	}

	if err := p.RemoveUser(ctx, ua.ID); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"servers", "secrets", "kv", "tool_pins"} {
		if n := pgCount(t, p, table, ua.ID); n != 0 {
			t.Errorf("%s: %d rows of the removed user left", table, n)
		}
		if n := pgCount(t, p, table, ub.ID); n != bBefore[table] {
			t.Errorf("%s: B has %d rows, had %d", table, n, bBefore[table])
		}
	}
	if _, err := p.UserByID(ctx, ua.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("UserByID(removed) = %v", err)
	}
	if _, err := p.User(ctx, ua.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("User(removed) = %v", err)
	}
	if err := p.RemoveUser(ctx, ua.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveUser twice = %v, want ErrNotFound", err)
	}
	if users, err := p.Users(ctx); err != nil || len(users) != 1 || users[0].ID != ub.ID {
		t.Errorf("Users = %+v, %v", users, err)
	}

	for name, s := range map[string]*DB{"this process": a, "another process": aElsewhere} {
		writes := map[string]func() error{
			"AddServer":    func() error { return s.AddServer(ctx, noneServer("new", "https://new.example.com/mcp")) },
			"UpdateServer": func() error { return s.UpdateServer(ctx, noneServer("x", "https://x.example.com/mcp")) },
			"DeleteServer": func() error { return s.DeleteServer(ctx, "x") },
			"PutSecret":    func() error { return s.PutSecret(ctx, k, []byte("v")) },
			"DeleteSecret": func() error { return s.DeleteSecret(ctx, k) },
			"PutKV":        func() error { return s.PutKV(ctx, "grants", "g", []byte("1")) },
			"DeleteKV":     func() error { return s.DeleteKV(ctx, "grants", "g") },
			"ApplyPins": func() error {
				return s.ApplyPins(ctx, "x", []PinOp{{Action: PinFirst, Tool: "t", Hash: "h", Definition: []byte(`{}`)}})
			},
			"Revision": func() error { _, err := s.Revision(ctx); return err },
		}
		for _, op := range slices.Sorted(maps.Keys(writes)) {
			if err := writes[op](); !errors.Is(err, ErrUserRemoved) {
				t.Errorf("%s: %s of a removed user = %v, want ErrUserRemoved", name, op, err)
			}
		}
		if l, err := s.ListServers(ctx); err != nil || len(l) != 0 {
			t.Errorf("%s: ListServers of a removed user = %+v, %v", name, l, err)
		}
	}
	for _, table := range []string{"servers", "secrets", "kv", "tool_pins"} {
		if n := pgCount(t, p, table, ua.ID); n != 0 {
			t.Errorf("%s: the removed user's store wrote %d rows", table, n)
		}
	}
	for name, ch := range map[string]<-chan Change{"this process": sub, "another process": subElsewhere} {
		if c := recv(t, ch, hang); !c.RereadAll() {
			t.Errorf("%s: subscriber of the removed user got %+v, want a RereadAll", name, c)
		}
	}
	// B is untouched and goes on.
	if v, err := b.GetSecret(ctx, k); err != nil || string(v) != "refresh-B" {
		t.Fatalf("B GetSecret = %q, %v", v, err)
	}
	if err := b.PutKV(ctx, "grants", "after", []byte("1")); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresAddUser: emails are users' names, compared without case
// and surrounding space; a second user with the same email is refused
// with ErrDuplicate, something that is not an email with ErrBadEmail.
func TestPostgresAddUser(t *testing.T) {
	ctx := context.Background()
	p := openPostgresT(t, pgDSN(t), t.TempDir())
	alice := addUserT(t, p, "  Alice@Example.COM ")
	if alice.Email != "alice@example.com" || alice.ID == "" || alice.ID == LocalUser {
		t.Fatalf("AddUser = %+v", alice)
	}
	for _, dup := range []string{"alice@example.com", "ALICE@EXAMPLE.COM", "\talice@example.com\n"} {
		if _, err := p.AddUser(ctx, dup); !errors.Is(err, ErrDuplicate) {
			t.Errorf("AddUser(%q) = %v, want ErrDuplicate", dup, err)
		}
	}
	for _, bad := range []string{"", "   ", "alice", "@example.com", "alice@", "a b@example.com", "a@b@example.com",
		"<a@example.com>", "a@example.com, b@example.com", `"a"@example.com`, strings.Repeat("a", 250) + "@b.example"} {
		if _, err := p.AddUser(ctx, bad); !errors.Is(err, ErrBadEmail) {
			t.Errorf("AddUser(%q) = %v, want ErrBadEmail", bad, err)
		}
		if _, err := p.UserByEmail(ctx, bad); !errors.Is(err, ErrBadEmail) {
			t.Errorf("UserByEmail(%q) = %v, want ErrBadEmail", bad, err)
		}
	}
	bob := addUserT(t, p, "bob@example.com")
	if bob.ID == alice.ID {
		t.Fatal("two users with one id")
	}
	if u, err := p.UserByEmail(ctx, "ALICE@example.com"); err != nil || u.ID != alice.ID {
		t.Errorf("UserByEmail = %+v, %v", u, err)
	}
	if u, err := p.UserByID(ctx, bob.ID); err != nil || u.Email != "bob@example.com" {
		t.Errorf("UserByID = %+v, %v", u, err)
	}
	if _, err := p.UserByEmail(ctx, "carol@example.com"); !errors.Is(err, ErrNotFound) {
		t.Errorf("UserByEmail(unknown) = %v", err)
	}
	if _, err := p.User(ctx, "u_nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("User(unknown) = %v", err)
	}
	users, err := p.Users(ctx)
	if err != nil || len(users) != 2 || users[0].ID != alice.ID || users[1].ID != bob.ID {
		t.Fatalf("Users = %+v, %v", users, err)
	}
	if !users[0].Created.Equal(alice.Created) {
		t.Errorf("created %v, AddUser said %v", users[0].Created, alice.Created)
	}
}

// TestPostgresConcurrentOpenMigratesOnce: gateway processes starting at
// once on a new database apply each migration exactly once (a second
// run of schema 1 fails: its tables exist) and agree on one key.
func TestPostgresConcurrentOpenMigratesOnce(t *testing.T) {
	ctx := context.Background()
	for range 3 {
		dsn, keyDir := pgDSN(t), t.TempDir()
		const n = 3
		ps := make([]*Postgres, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				ps[i], errs[i] = OpenPostgres(ctx, dsn, PostgresOptions{KeyDir: keyDir, Options: Options{PollInterval: testPoll}})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("OpenPostgres %d: %v", i, err)
			}
			t.Cleanup(func() { ps[i].Close() })
		}
		var version int
		if err := ps[0].DB().QueryRow(`SELECT schema_version FROM meta WHERE id = 1`).Scan(&version); err != nil || version != len(pgMigrations) {
			t.Fatalf("schema_version = %d, %v; want %d", version, err, len(pgMigrations))
		}
		u := addUserT(t, ps[0], "a@example.com")
		if err := userT(t, ps[1], u.ID).AddServer(ctx, bearerServer("x", "https://x.example.com/mcp", "tok")); err != nil {
			t.Fatal(err)
		}
		if srv, err := userT(t, ps[2], u.ID).GetServer(ctx, "x"); err != nil || srv.Auth.Token != "tok" {
			t.Fatalf("GetServer through the third process = %+v, %v", srv, err)
		}
	}
}

// pgTableNames lists the tables of the database's current schema.
func pgTableNames(t *testing.T, dsn string) []string {
	t.Helper()
	db := pgOpenRaw(t, dsn)
	rows, err := db.Query(`SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPostgresForeignDatabase: a database holding another program's
// tables, even one named like remotemcp's, is refused with
// ErrForeignDatabase and left as it was; no key file is created.
func TestPostgresForeignDatabase(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stmts []string
	}{
		{"other tables", []string{`CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)`, `INSERT INTO customers VALUES (1, 'x')`}},
		{"a table named meta", []string{`CREATE TABLE meta (id INTEGER PRIMARY KEY, note TEXT)`, `INSERT INTO meta VALUES (1, 'theirs')`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, keyDir := pgDSN(t), t.TempDir()
			db := pgOpenRaw(t, dsn)
			for _, q := range tc.stmts {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			tables := pgTableNames(t, dsn)
			dump := func() string {
				var s string
				if err := db.QueryRow(`SELECT string_agg(t::text, ',' ORDER BY t::text) FROM ` + tables[0] + ` t`).Scan(&s); err != nil {
					t.Fatal(err)
				}
				return s
			}
			before := dump()
			p, err := OpenPostgres(context.Background(), dsn, PostgresOptions{KeyDir: keyDir})
			if err == nil {
				p.Close()
			}
			if !errors.Is(err, ErrForeignDatabase) {
				t.Fatalf("OpenPostgres = %v, want ErrForeignDatabase", err)
			}
			t.Log(err)
			if got := pgTableNames(t, dsn); !slices.Equal(got, tables) {
				t.Errorf("tables %v, were %v", got, tables)
			}
			if got := dump(); got != before {
				t.Errorf("rows %q, were %q", got, before)
			}
			if _, err := os.Stat(filepath.Join(keyDir, keyFileName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("key file created for a foreign database: %v", err)
			}
		})
	}
}

// TestPostgresWrongKey: a key file that is not the database's is
// refused with ErrWrongKey, whether or not the database holds sealed
// secrets, and a missing one while secrets need it; nothing is written
// and no key file is created.
func TestPostgresWrongKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		secrets     bool
		missing     bool // no key file, rather than another one
		wantMessage string
	}{
		{"another key, secrets", true, false, "not the key"},
		{"another key, no secrets", false, false, "not the key"},
		{"no key, secrets", true, true, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, keyDir := pgDSN(t), t.TempDir()
			p := openPostgresT(t, dsn, keyDir)
			u := addUserT(t, p, "a@example.com")
			s := userT(t, p, u.ID)
			if tc.secrets {
				fillUser(t, s, "A")
			} else if err := s.AddServer(ctx, noneServer("x", "https://x.example.com/mcp")); err != nil {
				t.Fatal(err)
			}
			before := pgRows(t, s)

			otherDir := t.TempDir()
			if !tc.missing {
				if _, err := createKeyFile(otherDir); err != nil {
					t.Fatal(err)
				}
			}
			p2, err := OpenPostgres(ctx, dsn, PostgresOptions{KeyDir: otherDir})
			if err == nil {
				p2.Close()
			}
			if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), tc.wantMessage) {
				t.Fatalf("OpenPostgres = %v, want ErrWrongKey saying %q", err, tc.wantMessage)
			}
			t.Log(err)
			sameSums(t, before, pgRows(t, s))
			if _, err := os.Stat(filepath.Join(otherDir, keyFileName)); tc.missing && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a key file was created: %v", err)
			}
			// The right key still opens everything.
			if tc.secrets {
				if srv, err := userT(t, openPostgresT(t, dsn, keyDir), u.ID).GetServer(ctx, "x"); err != nil || srv.Auth.Token != "tok-A" {
					t.Fatalf("GetServer with the right key = %+v, %v", srv, err)
				}
			}
		})
	}
}

// TestPostgresWaitsForServer: while nothing listens where the server
// should be, OpenPostgres waits, backing off from 0.5 s and saying so
// through OnWait each time, until its ctx ends. Counted, not timed.
func TestPostgresWaitsForServer(t *testing.T) {
	dir := t.TempDir()
	// A socket file nobody listens on: connecting is refused.
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, ".s.PGSQL.5432"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	const waits = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		calls   int
		retries []time.Duration
	)
	p, err := OpenPostgres(ctx, "postgres:///db?host="+dir+"&user=someone&password=hunter2-SECRET",
		PostgresOptions{KeyDir: t.TempDir(), OnWait: func(err error, retryIn time.Duration) {
			calls++
			retries = append(retries, retryIn)
			if err == nil {
				t.Error("OnWait without the error")
			}
			if calls == waits {
				cancel()
			}
		}})
	if err == nil {
		p.Close()
		t.Fatal("OpenPostgres succeeded with nothing listening")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("OpenPostgres = %v, want context.Canceled", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the password: %v", err)
	}
	t.Log(err)
	if calls != waits || !slices.Equal(retries, []time.Duration{500 * time.Millisecond, time.Second}) {
		t.Fatalf("OnWait called %d times with %v; want %d, backing off 0.5s, 1s", calls, retries, waits)
	}
}

// TestPostgresPermanentConnectErrors: credentials the server refuses and
// a database that does not exist fail OpenPostgres at once: waiting
// would not help.
func TestPostgresPermanentConnectErrors(t *testing.T) {
	u, err := url.Parse(pgDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	noDB := *u
	noDB.Path = "/rmcp_no_such_database"
	noRole := *u
	noRole.User = url.User("rmcp_no_such_role")
	q := noRole.Query()
	q.Set("user", "rmcp_no_such_role")
	noRole.RawQuery = q.Encode()
	for name, dsn := range map[string]string{"unknown database": noDB.String(), "unknown role": noRole.String()} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			p, err := OpenPostgres(ctx, dsn, PostgresOptions{KeyDir: t.TempDir(), OnWait: func(err error, _ time.Duration) {
				t.Errorf("OnWait(%v): waiting for a permanent error", err)
				cancel()
			}})
			if err == nil {
				p.Close()
				t.Fatal("OpenPostgres succeeded")
			}
			if !permanent(err) {
				t.Fatalf("OpenPostgres = %v, not a permanent error", err)
			}
			t.Log(err)
		})
	}
	// A wrong password is a 28P01 (the test server may trust every local
	// connection, so it is classified rather than provoked).
	for code, want := range map[string]bool{"28P01": true, "28000": true, "3D000": true, "57P03": false, "53300": false, "08006": false} {
		if got := permanent(&pgconn.PgError{Code: code}); got != want {
			t.Errorf("permanent(%s) = %v, want %v", code, got, want)
		}
	}
}

// TestPostgresLocks: a lock of a user excludes the same user's other
// stores in this process; another user's lock of the same name is
// another lock; and a Lock that gives up (its ctx done) never releases
// the locks this process holds, which share one connection.
func TestPostgresLocks(t *testing.T) {
	ctx := context.Background()
	p := openPostgresT(t, pgDSN(t), t.TempDir())
	ua, ub := addUserT(t, p, "a@example.com"), addUserT(t, p, "b@example.com")
	a1, a2, b := userT(t, p, ua.ID), userT(t, p, ua.ID), userT(t, p, ub.ID)
	heldLocks := func() int {
		t.Helper()
		var n int
		if err := p.DB().QueryRow(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	unlock, err := a1.Lock(ctx, "refresh")
	if err != nil {
		t.Fatal(err)
	}
	if n := heldLocks(); n != 1 {
		t.Fatalf("%d advisory locks held, want 1", n)
	}
	// Another user: another lock, taken at once.
	ub1, err := b.Lock(ctx, "refresh")
	if err != nil {
		t.Fatal(err)
	}
	ub1()
	// A Lock whose ctx is done, again and again, on other names.
	done, cancel := context.WithCancel(ctx)
	cancel()
	for i := range 64 {
		if u, err := a2.Lock(done, "other-"+string(rune('a'+i%26))); err == nil {
			u()
		}
	}
	if n := heldLocks(); n != 1 {
		t.Fatalf("after Locks that gave up: %d advisory locks held, want 1 (a1's)", n)
	}
	// The same user's other store waits for a1.
	var released atomic.Bool
	errc := make(chan error, 1)
	go func() {
		u, err := a2.Lock(ctx, "refresh")
		if err == nil {
			if !released.Load() {
				err = errors.New("a2 took the lock a1 held")
			}
			u()
		}
		errc <- err
	}()
	time.Sleep(5 * lockRetry) // let it wait (see testLockExcludes)
	released.Store(true)
	unlock()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestPostgresCloseClosesUsers: closing the database stops every user's
// store taken from it, subscribed or not, with ErrClosed.
func TestPostgresCloseClosesUsers(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	p, err := OpenPostgres(ctx, dsn, PostgresOptions{KeyDir: keyDir, Options: Options{PollInterval: testPoll}})
	if err != nil {
		t.Fatal(err)
	}
	u := addUserT(t, p, "a@example.com")
	quietUser := userT(t, p, u.ID)
	watched := userT(t, p, u.ID)
	sub := watched.Subscribe(ctx)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	for name, s := range map[string]*DB{"unsubscribed": quietUser, "subscribed": watched} {
		if err := s.AddServer(ctx, noneServer("a", "https://a.example.com")); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: AddServer after Close = %v, want ErrClosed", name, err)
		}
		if _, err := s.ListServers(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: ListServers after Close = %v, want ErrClosed", name, err)
		}
		if _, err := s.Revision(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Revision after Close = %v, want ErrClosed", name, err)
		}
		if _, err := s.Lock(ctx, "x"); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Lock after Close = %v, want ErrClosed", name, err)
		}
		select {
		case _, ok := <-s.Subscribe(ctx):
			if ok {
				t.Errorf("%s: Subscribe after Close delivered", name)
			}
		case <-time.After(hang):
			t.Errorf("%s: Subscribe after Close: the channel stays open", name)
		}
	}
	if _, ok := <-sub; ok {
		t.Error("a subscription outlived Close")
	}
	if _, err := p.User(ctx, u.ID); !errors.Is(err, ErrClosed) {
		t.Errorf("User after Close = %v, want ErrClosed", err)
	}
}

// pgOpenRaw opens the database at dsn directly (not as a store), closed
// when the test ends.
func pgOpenRaw(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// KVOwner runs on every request of a gateway's hosts: it finds a host
// token's owner through the index of schema 3, not by reading every
// record, and it takes only names as namespace and member.
func TestPostgresKVOwnerUsesTheIndex(t *testing.T) {
	ctx := context.Background()
	p := openPostgresT(t, pgDSN(t), t.TempDir())
	a, b := addUserT(t, p, "a@example.com"), addUserT(t, p, "b@example.com")
	const ns = "mcp-http-tokens"
	if err := userT(t, p, a.ID).PutKV(ctx, ns, "laptop", []byte(`{"sha256":"aaaa"}`)); err != nil {
		t.Fatal(err)
	}
	if err := userT(t, p, b.ID).PutKV(ctx, ns, "laptop", []byte(`{"sha256":"bbbb"}`)); err != nil {
		t.Fatal(err)
	}
	// A record of another namespace that jsonb refuses is never cast.
	if err := userT(t, p, a.ID).PutKV(ctx, "catalogs", "x", []byte(`{"d":"\u0000"}`)); err != nil {
		t.Fatalf("a record jsonb refuses, outside the indexed namespace: %v", err)
	}
	if id, err := p.KVOwner(ctx, ns, "sha256", "bbbb"); err != nil || id != b.ID {
		t.Fatalf("KVOwner = %q, %v; want %q", id, err, b.ID)
	}
	if _, err := p.KVOwner(ctx, ns, "sha256' OR true --", "x"); err == nil {
		t.Fatal("KVOwner took a member name that is not a name")
	}
	conn, err := p.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(ctx, `EXPLAIN SELECT user_id FROM kv WHERE namespace = 'mcp-http-tokens' AND (value::jsonb ->> 'sha256') = 'bbbb' LIMIT 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if !strings.Contains(plan.String(), "kv_host_token_hash") {
		t.Fatalf("the lookup does not use the index:\n%s", plan.String())
	}
}

// A frozen replica must not hold a person's writes on every replica for
// as long as it sleeps: the pool's connections end a transaction idle
// for idleInTransaction (issue #23, chaos: SIGSTOP), unless the DSN sets
// its own bound. The transaction is killed by PostgreSQL: its late write
// fails, and another handle's write of the same person goes on.
func TestPostgresIdleTransactionBound(t *testing.T) {
	ctx := context.Background()
	dsn := pgDSN(t)
	p := openPostgresT(t, dsn, t.TempDir())
	var got string
	if err := p.DB().QueryRowContext(ctx, `SHOW idle_in_transaction_session_timeout`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != idleInTransaction {
		t.Errorf("pool's idle_in_transaction_session_timeout = %q, want %q", got, idleInTransaction)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	own := openPostgresT(t, dsn+sep+"idle_in_transaction_session_timeout=300ms", t.TempDir())
	if err := own.DB().QueryRowContext(ctx, `SHOW idle_in_transaction_session_timeout`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "300ms" {
		t.Errorf("the DSN's own bound was replaced: %q", got)
	}
	// With that short bound: a transaction that sleeps between statements
	// is ended by the server, and holds nothing after.
	tx, err := own.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		// Counts the server's verdict, not a clock: the connection is
		// gone once PostgreSQL ended the idle transaction.
		var n int
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		var backends int
		if err := p.DB().QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND datname = current_database()`).Scan(&backends); err != nil {
			t.Fatal(err)
		}
		if backends == 0 {
			if err := tx.QueryRowContext(ctx, `SELECT 1`).Scan(&n); err == nil {
				t.Fatal("a transaction idle past its bound still answers")
			}
			tx.Rollback()
			return
		}
		if i > 600 {
			t.Fatal("PostgreSQL never ended the idle transaction")
		}
	}
}
