package store

// Tests of compare-and-swap server edits: R5.2 (disabledTools is a safety
// control, so no edit of it may be lost) and issue #9 CAS (concurrent
// `servers set --disable-tool` from separate processes lost edits).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

// addTool is the edit of `servers set --disable-tool name`: it adds its own
// name and leaves the rest of the list alone, so it is correct to re-run.
func addTool(name string) func(*config.Server) error {
	return func(c *config.Server) error {
		if !slices.Contains(c.DisabledTools, name) {
			c.DisabledTools = append(c.DisabledTools, name)
		}
		return nil
	}
}

// checkAllTools fails unless server id holds exactly the tools t0..t(n-1),
// its token is intact, and its revision shows exactly one write per tool.
func checkAllTools(t *testing.T, s *DB, id, token string, n int) {
	t.Helper()
	got, rev, err := s.GetServerRevision(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("t%d", i))
	}
	have := slices.Clone(got.DisabledTools)
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		var missing []string
		for _, w := range want {
			if !slices.Contains(have, w) {
				missing = append(missing, w)
			}
		}
		t.Fatalf("disabledTools has %d names, want %d; missing %v; got %v", len(have), n, missing, got.DisabledTools)
	}
	if got.Auth.Token != token {
		t.Errorf("token %q, want %q", got.Auth.Token, token)
	}
	if rev != int64(1+n) {
		t.Errorf("server revision %d, want %d (AddServer + one write per edit)", rev, 1+n)
	}
}

// testEditServerConcurrentHandlesKeepEveryEdit: 50 writers, each with its
// own Open of the store (own connections, as separate processes have),
// add one tool each at the same moment; all 50 survive (issue #9 CAS,
// R5.2). In PostgreSQL 20 writers: each is a pool of its own, and the
// test server's connections are shared with other tests.
func testEditServerConcurrentHandlesKeepEveryEdit(t *testing.T, b backend) {
	ctx := context.Background()
	first := b.open(t)
	n := 50
	if first.d == postgresDialect {
		n = 20
	}
	if err := first.AddServer(ctx, bearerServer("srv", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	stores := make([]*DB, n)
	for i := range stores {
		stores[i] = b.again(t, first)
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		calls atomic.Int64
		most  atomic.Int64 // most calls of one writer
	)
	errs := make([]error, n)
	for i, s := range stores {
		wg.Go(func() {
			<-start
			tool := fmt.Sprintf("t%d", i)
			var mine int64
			_, errs[i] = s.EditServer(ctx, "srv", func(c *config.Server) error {
				calls.Add(1)
				mine++
				return addTool(tool)(c)
			}, UpdateOptions{})
			for m := most.Load(); mine > m && !most.CompareAndSwap(m, mine); m = most.Load() {
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d edits took %d edit calls, at most %d by one writer (of %d allowed); the rest were conflicts, retried",
		n, calls.Load(), most.Load(), editAttempts)
	checkAllTools(t, b.again(t, first), "srv", "tokA", n)
}

// Environment of TestHelperProcessEditServer.
const (
	helperEnvDir   = "REMOTEMCP_STORE_HELPER_DIR"   // data directory
	helperEnvTool  = "REMOTEMCP_STORE_HELPER_TOOL"  // tool name to add
	helperEnvStart = "REMOTEMCP_STORE_HELPER_START" // file whose creation starts the edit
)

// TestHelperProcessEditServer is not a test: it is the child process of
// TestEditServerConcurrentProcessesKeepEveryEdit, and skips unless that
// test started it.
func TestHelperProcessEditServer(t *testing.T) {
	dir := os.Getenv(helperEnvDir)
	if dir == "" {
		t.Skip("child process of TestEditServerConcurrentProcessesKeepEveryEdit")
	}
	ctx := context.Background()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Open first, then wait for the signal, so the edits themselves race.
	startFile := os.Getenv(helperEnvStart)
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(startFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("start file %s never appeared", startFile)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := s.EditServer(ctx, "srv", addTool(os.Getenv(helperEnvTool)), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEditServerConcurrentProcessesKeepEveryEdit: 24 processes (this test
// binary re-executed) each add one tool to the same server at the same
// moment; all 24 survive (issue #9 CAS, R5.2).
func TestEditServerConcurrentProcessesKeepEveryEdit(t *testing.T) {
	if os.Getenv(helperEnvDir) != "" {
		t.Skip("inside a helper process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	const n = 24
	if err := openT(t, dir).AddServer(ctx, bearerServer("srv", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	startFile := filepath.Join(t.TempDir(), "start")
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for i := range cmds {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcessEditServer$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			helperEnvDir+"="+dir,
			helperEnvTool+"="+fmt.Sprintf("t%d", i),
			helperEnvStart+"="+startFile,
		)
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
	}
	if err := os.WriteFile(startFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	checkAllTools(t, openT(t, dir), "srv", "tokA", n)
}

// testEditServerRetriesAfterBlindUpdate: an UpdateServer between
// EditServer's read and write bumps the revision, so the edit is re-run on
// the updated record and both changes survive (issue #9 CAS).
func testEditServerRetriesAfterBlindUpdate(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	other := b.again(t, s)
	if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	sub := s.Subscribe(t.Context())
	calls := 0
	got, err := s.EditServer(ctx, "a", func(c *config.Server) error {
		calls++
		if calls == 1 {
			cur, err := other.GetServer(ctx, "a")
			if err != nil {
				return err
			}
			cur.Name = "renamed elsewhere"
			if err := other.UpdateServer(ctx, cur); err != nil {
				return err
			}
		}
		return addTool("t0")(c)
	}, UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("edit ran %d times, want 2 (one conflict)", calls)
	}
	if got.Name != "renamed elsewhere" || !slices.Equal(got.DisabledTools, []string{"t0"}) || got.Auth.Token != "tokA" {
		t.Errorf("EditServer returned %+v", got)
	}
	stored, rev, err := s.GetServerRevision(ctx, "a")
	if err != nil || !reflectEqual(stored, got) || rev != 3 {
		t.Errorf("stored %+v rev %d, %v; want %+v rev 3", stored, rev, err, got)
	}
	// The edit is announced with its server id, like UpdateServer's.
	for deadline := time.After(hang); ; {
		select {
		case c := <-sub:
			if c.ServerID == "a" && c.Kind == ChangeServers {
				return
			}
		case <-deadline:
			t.Fatal("no change event for server a")
		}
	}
}

func reflectEqual(a, b config.Server) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// testServerRevisionCountsWrites: AddServer stores revision 1, every
// accepted write of the server adds one, refused writes and no-op edits
// add nothing, and a re-added server starts over (issue #9 CAS).
func testServerRevisionCountsWrites(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	steps := []struct {
		name    string
		op      func() error
		wantErr error // nil: must succeed
		wantRev int64
	}{
		{"add", func() error { return s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")) }, nil, 1},
		{"update", func() error {
			return s.UpdateServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokB"))
		}, nil, 2},
		{"update refused", func() error {
			return s.UpdateServer(ctx, bearerServer("a", "https://b.example.com/mcp", "tokB"))
		}, ErrBearerRebind, 2},
		{"update with rebind", func() error {
			return s.UpdateServerWith(ctx, bearerServer("a", "https://b.example.com/mcp", "tokB"), UpdateOptions{RebindBearer: true})
		}, nil, 3},
		{"edit", func() error { _, err := s.EditServer(ctx, "a", addTool("t0"), UpdateOptions{}); return err }, nil, 4},
		{"no-op edit", func() error { _, err := s.EditServer(ctx, "a", addTool("t0"), UpdateOptions{}); return err }, nil, 4},
		{"edit refused", func() error {
			_, err := s.EditServer(ctx, "a", func(c *config.Server) error { c.URL = "https://c.example.com/mcp"; return nil }, UpdateOptions{})
			return err
		}, ErrBearerRebind, 4},
		{"edit with rebind", func() error {
			_, err := s.EditServer(ctx, "a", func(c *config.Server) error { c.URL = "https://c.example.com/mcp"; return nil },
				UpdateOptions{RebindBearer: true})
			return err
		}, nil, 5},
		{"delete and add again", func() error {
			if err := s.DeleteServer(ctx, "a"); err != nil {
				return err
			}
			return s.AddServer(ctx, noneServer("a", "https://a.example.com/mcp"))
		}, nil, 1},
	}
	for _, st := range steps {
		err := st.op()
		if st.wantErr == nil && err != nil || st.wantErr != nil && !errors.Is(err, st.wantErr) {
			t.Fatalf("%s: err = %v, want %v", st.name, err, st.wantErr)
		}
		rev, err := s.ServerRevision(ctx, "a")
		if err != nil || rev != st.wantRev {
			t.Fatalf("%s: ServerRevision = %d, %v; want %d", st.name, rev, err, st.wantRev)
		}
		if _, rev2, err := s.GetServerRevision(ctx, "a"); err != nil || rev2 != rev {
			t.Fatalf("%s: GetServerRevision = %d, %v; want %d", st.name, rev2, err, rev)
		}
		// The whole list's revisions, in one query (issue #21), agree.
		if srvs, revs, err := s.ListServersRevisions(ctx); err != nil || len(srvs) != 1 || len(revs) != 1 || srvs[0].ID != "a" || revs[0] != rev {
			t.Fatalf("%s: ListServersRevisions = %d servers, revisions %v, %v; want a at %d", st.name, len(srvs), revs, err, rev)
		}
	}
	if _, err := s.ServerRevision(ctx, "zzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ServerRevision(missing) = %v, want ErrNotFound", err)
	}
	if _, _, err := s.GetServerRevision(ctx, "zzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetServerRevision(missing) = %v, want ErrNotFound", err)
	}
}

// testEditServerPersistentConflictFailsWithErrConflict: when another writer
// changes the server during every attempt, EditServer gives up after
// editAttempts with ErrConflict, writes nothing of its own, and leaves the
// record (the other writer's last version) intact and readable (issue #9
// CAS).
func testEditServerPersistentConflictFailsWithErrConflict(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	other := b.again(t, s)
	if err := s.AddServer(ctx, bearerServer("a", "https://a.example.com/mcp", "tokA")); err != nil {
		t.Fatal(err)
	}
	calls := 0
	_, err := s.EditServer(ctx, "a", func(c *config.Server) error {
		calls++
		if _, err := other.EditServer(ctx, "a", func(o *config.Server) error {
			o.Name = fmt.Sprintf("bumped %d", calls)
			return nil
		}, UpdateOptions{}); err != nil {
			return err
		}
		return addTool("mine")(c)
	}, UpdateOptions{})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "kept changing") || !strings.Contains(msg, "retry") {
		t.Errorf("message %q should say the server kept changing and to retry", msg)
	}
	if calls != editAttempts {
		t.Errorf("edit ran %d times, want %d", calls, editAttempts)
	}
	got, rev, err := s.GetServerRevision(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := bearerServer("a", "https://a.example.com/mcp", "tokA")
	want.Name = fmt.Sprintf("bumped %d", editAttempts)
	if !reflectEqual(got, want) || rev != 1+editAttempts {
		t.Fatalf("stored %+v rev %d; want %+v rev %d", got, rev, want, 1+editAttempts)
	}
	// Once the other writer stops, the same edit goes through.
	if _, err := s.EditServer(ctx, "a", addTool("mine"), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetServer(ctx, "a"); !slices.Equal(got.DisabledTools, []string{"mine"}) {
		t.Fatalf("disabledTools %v", got.DisabledTools)
	}
}

// testEditServerRefusedLeavesRecordUnchanged: an edit that fails — its
// function errs, its result is invalid, or the stored record cannot be
// read whole — writes nothing: database and WAL stay byte-for-byte the
// same (in PostgreSQL, every row), and neither revision moves (issue #9
// CAS).
func testEditServerRefusedLeavesRecordUnchanged(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	for _, srv := range []config.Server{
		bearerServer("a", "https://a.example.com/mcp", "tokA"),
		bearerServer("tampered", "https://t.example.com/mcp", "tokT"),
	} {
		if err := s.AddServer(ctx, srv); err != nil {
			t.Fatal(err)
		}
	}
	errBoom := errors.New("boom")
	tests := []struct {
		name  string
		id    string
		setup func(t *testing.T)
		edit  func(*config.Server) error
		want  error // nil: any error
	}{
		{"edit returns an error", "a", nil, func(c *config.Server) error {
			c.DisabledTools = append(c.DisabledTools, "half-done")
			return errBoom
		}, errBoom},
		{"invalid result", "a", nil, func(c *config.Server) error { c.URL = "not a url"; return nil }, nil},
		{"id changed", "a", nil, func(c *config.Server) error { c.ID = "b"; return nil }, nil},
		{"bearer rebind", "a", nil, func(c *config.Server) error { c.URL = "https://other.example.com/mcp"; return nil }, ErrBearerRebind},
		{"missing server", "zzz", nil, addTool("t0"), ErrNotFound},
		{"unreadable secret", "tampered", func(t *testing.T) {
			rawExec(t, s, bySQL(s, `UPDATE secrets SET sealed = zeroblob(64) WHERE server_id = 'tampered'`,
				`UPDATE secrets SET sealed = decode(repeat('00', 64), 'hex') WHERE server_id = 'tampered'`))
		}, addTool("t0"), ErrSealOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup(t)
			}
			before := snapshot(t, s)
			rev, _ := s.Revision(ctx)
			srvRev, _ := s.ServerRevision(ctx, tt.id)
			_, err := s.EditServer(ctx, tt.id, tt.edit, UpdateOptions{})
			switch {
			case err == nil:
				t.Fatal("EditServer succeeded, want an error")
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			sameSums(t, before, snapshot(t, s))
			if rev2, _ := s.Revision(ctx); rev2 != rev {
				t.Errorf("store revision %d -> %d", rev, rev2)
			}
			if srvRev2, _ := s.ServerRevision(ctx, tt.id); srvRev2 != srvRev {
				t.Errorf("server revision %d -> %d", srvRev, srvRev2)
			}
		})
	}
	got, err := s.GetServer(ctx, "a")
	if err != nil || !reflectEqual(got, bearerServer("a", "https://a.example.com/mcp", "tokA")) {
		t.Fatalf("server a after refused edits: %+v, %v", got, err)
	}
}

// TestMigrationAddsServerRevision: a database of schema 1 (before the
// revision column), with servers, a sealed token and KV data, opens,
// migrates to the current schema, keeps everything, and gives each
// existing server revision 1 (issue #9 CAS).
func TestMigrationAddsServerRevision(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	key, err := createKeyFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := newSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	a := bearerServer("a", "https://a.example.com/mcp", "tokA")
	b := noneServer("b", "https://b.example.com/mcp")
	b.DisabledTools = []string{"delete_everything"}

	// Schema 1 exactly as that version created it.
	db := rawDB(t, dir)
	for _, stmt := range migrations[0] {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec(`PRAGMA user_version = 1`)
	for i, srv := range []config.Server{a, b} {
		clean := srv.Clone()
		clean.Auth.Token = ""
		js, err := json.Marshal(clean)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(`INSERT INTO servers (id, config, created, updated) VALUES (?, ?, ?, ?)`, srv.ID, string(js), 1000+i, 1000+i)
	}
	res, err := config.CanonicalResource(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	k := SecretKey{ServerID: "a", Purpose: PurposeBearer, Binding: config.Binding{Resource: res}}
	blob, err := sl.seal(LocalUser, k, []byte("tokA"))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(`INSERT INTO secrets (server_id, purpose, resource, issuer, sealed, updated) VALUES (?, ?, ?, ?, ?, 1)`,
		k.ServerID, k.Purpose, k.Binding.Resource, k.Binding.Issuer, blob)
	mustExec(`INSERT INTO kv (namespace, key, value, updated) VALUES ('ns', 'k', '{"x":1}', 1)`)
	mustExec(`UPDATE meta SET revision = 7 WHERE id = 1`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openT(t, dir)
	var version int
	if err := s.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil || version != SchemaVersion() {
		t.Fatalf("user_version = %d, %v; want %d", version, err, SchemaVersion())
	}
	list, err := s.ListServers(ctx)
	if err != nil || len(list) != 2 || !reflectEqual(list[0], a) || !reflectEqual(list[1], b) {
		t.Fatalf("ListServers = %+v, %v; want %+v, %+v", list, err, a, b)
	}
	for _, id := range []string{"a", "b"} {
		if rev, err := s.ServerRevision(ctx, id); err != nil || rev != 1 {
			t.Errorf("ServerRevision(%s) = %d, %v; want 1", id, rev, err)
		}
	}
	if v, err := s.GetKV(ctx, "ns", "k"); err != nil || string(v) != `{"x":1}` {
		t.Errorf("GetKV = %s, %v", v, err)
	}
	if rev, err := s.Revision(ctx); err != nil || rev != 7 {
		t.Errorf("store revision = %d, %v; want 7 (a migration is not a write)", rev, err)
	}
	// The migrated rows take part in CAS edits like new ones.
	if _, err := s.EditServer(ctx, "b", addTool("t0"), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, rev, err := s.GetServerRevision(ctx, "b")
	if err != nil || rev != 2 || !slices.Equal(got.DisabledTools, []string{"delete_everything", "t0"}) {
		t.Fatalf("after edit: %+v rev %d, %v", got, rev, err)
	}
	// Opening again migrates nothing more.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if rev, err := openT(t, dir).ServerRevision(ctx, "a"); err != nil || rev != 1 {
		t.Fatalf("reopened: ServerRevision(a) = %d, %v", rev, err)
	}
}
