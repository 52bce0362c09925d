package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/pgtest"
)

// openLogReplica opens the database at dsn as a replica whose request
// log writer waits interval for a batch (noPoll: only full batches and
// explicit flushes write).
func openLogReplica(t *testing.T, dsn, keyDir string, interval time.Duration) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), dsn, PostgresOptions{KeyDir: keyDir, LogFlushInterval: interval, Options: Options{PollInterval: noPoll}})
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

// logNumbers reads the shared log of server and returns the "n" of each
// entry, oldest first.
func logNumbers(t *testing.T, s *DB, server string) []int {
	t.Helper()
	got, err := s.RequestLog(context.Background(), server, RequestLogSize)
	if err != nil {
		t.Fatalf("RequestLog: %v", err)
	}
	out := make([]int, 0, len(got))
	for _, e := range got {
		var v struct{ N int }
		if err := json.Unmarshal(e.Entry, &v); err != nil {
			t.Fatalf("entry %q: %v", e.Entry, err)
		}
		out = append(out, v.N)
	}
	return out
}

func numbers(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func entryN(n int) []byte { return fmt.Appendf(nil, `{"n":%d}`, n) }

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Issue #23: the request log of a person's server is one across the
// replicas, bounded, ordered by the exchanges' times, and hers alone;
// writing it changes no revision.
func TestRequestLogSharedByReplicas(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	a, b := openLogReplica(t, dsn, keyDir, noPoll), openLogReplica(t, dsn, keyDir, noPoll)
	alice, bob := addUserT(t, a, "alice@example.com"), addUserT(t, a, "bob@example.com")
	aa, ab, bb := userT(t, a, alice.ID), userT(t, b, alice.ID), userT(t, b, bob.ID)
	for _, s := range []*DB{aa, bb} {
		if err := s.AddServer(ctx, noneServer("fx", "https://fx.example.com/mcp")); err != nil {
			t.Fatal(err)
		}
	}
	if !aa.SharesRequestLog() {
		t.Fatal("a gateway user's store does not share its request log")
	}
	rev0, err := aa.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now()
	const calls = 120
	for i := range calls {
		s := []*DB{aa, ab}[i%2] // the same person through replica A and B in turn
		s.AppendRequestLog("fx", base.Add(time.Duration(i)*time.Microsecond), entryN(i))
	}
	for _, p := range []*Postgres{a, b} {
		if err := p.FlushRequestLog(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := numbers(calls-RequestLogSize, calls)
	for name, s := range map[string]*DB{"A": aa, "B": ab} {
		if got := logNumbers(t, s, "fx"); !slices.Equal(got, want) {
			t.Errorf("alice's log on replica %s: %v, want %v", name, got, want)
		}
	}
	if got := logNumbers(t, bb, "fx"); len(got) != 0 {
		t.Errorf("bob's log of his server fx (same id): %v, want empty", got)
	}
	var rows int
	if err := a.DB().QueryRow(`SELECT count(*) FROM request_log WHERE user_id = $1`, alice.ID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != RequestLogSize {
		t.Errorf("alice has %d rows after %d entries, want them trimmed to %d", rows, calls, RequestLogSize)
	}
	if rev, err := aa.Revision(ctx); err != nil || rev != rev0 {
		t.Errorf("revision %d → %d (%v) after %d log entries, want unchanged", rev0, rev, err, calls)
	}
	for name, p := range map[string]*Postgres{"A": a, "B": b} {
		st := p.RequestLogStats()
		if st.Queued != calls/2 || st.Written != calls/2 || st.Waiting != 0 || st.Statements != 2*st.Flushes {
			t.Errorf("replica %s: %+v, want %d queued and written, two statements a flush", name, st, calls/2)
		}
	}

	// Bob writes through B: his rows, not hers.
	bb.AppendRequestLog("fx", base, entryN(7))
	if got := logNumbers(t, bb, "fx"); !slices.Equal(got, []int{7}) {
		t.Errorf("bob's log with one unwritten entry: %v", got)
	}
	if err := b.FlushRequestLog(ctx); err != nil {
		t.Fatal(err)
	}
	if got := logNumbers(t, bb, "fx"); !slices.Equal(got, []int{7}) {
		t.Errorf("bob's log: %v, want [7]", got)
	}
	if got := logNumbers(t, aa, "fx"); !slices.Equal(got, want) {
		t.Errorf("alice's log after bob's entry: %v", got)
	}

	// An entry being written while read (in the queue and in the
	// table at once) is shown once.
	ab.AppendRequestLog("fx", base.Add(calls*time.Microsecond), entryN(calls))
	b.logs.mu.Lock()
	taken := slices.Clone(b.logs.queue)
	b.logs.mu.Unlock()
	if err := b.FlushRequestLog(ctx); err != nil {
		t.Fatal(err)
	}
	b.logs.mu.Lock()
	b.logs.inflight = taken
	b.logs.mu.Unlock()
	got := logNumbers(t, ab, "fx")
	b.logs.mu.Lock()
	b.logs.inflight = nil
	b.logs.mu.Unlock()
	if !slices.Equal(got, numbers(calls+1-RequestLogSize, calls+1)) {
		t.Errorf("log with an entry both written and in flight: %v", got)
	}

	// A server removed takes its log along; an entry queued for it is
	// dropped at the write instead of failing the batch.
	if err := aa.DeleteServer(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	aa.AppendRequestLog("fx", base, entryN(1))
	if err := a.FlushRequestLog(ctx); err != nil {
		t.Errorf("a batch with an entry of a removed server: %v", err)
	}
	if err := a.DB().QueryRow(`SELECT count(*) FROM request_log WHERE user_id = $1`, alice.ID).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("alice's rows after her server's removal: %d %v", rows, err)
	}
}

// The writer writes a batch as soon as it is full, not one statement per
// entry: the log adds no round trip to a call's path (issue #23).
func TestRequestLogBatches(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	a := openLogReplica(t, dsn, keyDir, noPoll) // only full batches are written
	u := addUserT(t, a, "alice@example.com")
	s := userT(t, a, u.ID)
	if err := s.AddServer(ctx, noneServer("fx", "https://fx.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	const n = 5 * requestLogBatch
	base := time.Now()
	for i := range n {
		s.AppendRequestLog("fx", base.Add(time.Duration(i)*time.Microsecond), entryN(i))
	}
	waitUntil(t, "the full batches written", func() bool { return a.RequestLogStats().Written == n })
	st := a.RequestLogStats()
	if st.Flushes == 0 || st.Written/st.Flushes < requestLogBatch || st.Statements != 2*st.Flushes {
		t.Errorf("%+v: want batches of at least %d entries, two statements each", st, requestLogBatch)
	}
	t.Logf("%d entries: %d flushes, %d statements (%.3f a call)", n, st.Flushes, st.Statements, float64(st.Statements)/n)
	if got := logNumbers(t, s, "fx"); !slices.Equal(got, numbers(n-RequestLogSize, n)) {
		t.Errorf("log: %v", got)
	}
}

// While PostgreSQL is down the entries wait in a bounded queue (the
// oldest dropped and counted), reads fail (the manager shows its own
// then), and what waited is written once it is back.
func TestRequestLogOutage(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.NewCluster(t)
	dsn, keyDir := cluster.DSN(t), t.TempDir()
	a := openLogReplica(t, dsn, keyDir, noPoll)
	u := addUserT(t, a, "alice@example.com")
	s := userT(t, a, u.ID)
	if err := s.AddServer(ctx, noneServer("fx", "https://fx.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	a.logs.mu.Lock()
	a.logs.max = 10
	a.logs.mu.Unlock()
	// The cluster commits asynchronously: what was written must survive
	// its crash.
	if _, err := a.DB().Exec(`CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	cluster.Stop(t)
	base := time.Now()
	for i := range 30 {
		s.AppendRequestLog("fx", base.Add(time.Duration(i)*time.Microsecond), entryN(i))
	}
	if err := a.FlushRequestLog(ctx); err == nil {
		t.Fatal("a flush with PostgreSQL down succeeded")
	}
	if st := a.RequestLogStats(); st.Dropped != 20 || st.Waiting != 10 || st.Written != 0 {
		t.Errorf("during the outage: %+v, want 20 dropped, 10 waiting", st)
	}
	if _, err := s.RequestLog(ctx, "fx", RequestLogSize); err == nil {
		t.Error("the shared log read with PostgreSQL down")
	}
	cluster.Start(t)
	waitUntil(t, "the waiting entries written", func() bool { return a.FlushRequestLog(ctx) == nil })
	if got := logNumbers(t, s, "fx"); !slices.Equal(got, numbers(20, 30)) {
		t.Errorf("after the outage: %v, want the 10 that waited", got)
	}
}

// A replica that closes writes what it still queued first, so the
// others show it.
func TestRequestLogWrittenOnClose(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	a, b := openLogReplica(t, dsn, keyDir, noPoll), openLogReplica(t, dsn, keyDir, noPoll)
	u := addUserT(t, a, "alice@example.com")
	sa, sb := userT(t, a, u.ID), userT(t, b, u.ID)
	if err := sa.AddServer(ctx, noneServer("fx", "https://fx.example.com/mcp")); err != nil {
		t.Fatal(err)
	}
	base := time.Now()
	for i := range 3 {
		sa.AppendRequestLog("fx", base.Add(time.Duration(i)*time.Microsecond), entryN(i))
	}
	if got := logNumbers(t, sb, "fx"); len(got) != 0 {
		t.Fatalf("B shows %v before A wrote anything", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := logNumbers(t, sb, "fx"); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("B after A closed: %v, want [0 1 2]", got)
	}
	sa.AppendRequestLog("fx", base, entryN(9)) // closed: ignored, no writer started again
	if st := a.RequestLogStats(); st.Written != 3 || st.Waiting != 0 {
		t.Errorf("A after Close: %+v", st)
	}
}
