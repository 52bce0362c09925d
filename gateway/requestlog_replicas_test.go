package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/internal/clocktest"
	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// logReplica is one gateway process: its database handle and gateway.
type logReplica struct {
	pg *store.Postgres
	gw *gateway.Gateway
}

// startLogReplica opens the database at dsn as a replica whose shared
// request log is written only in full batches or when flushed (its
// interval is never up in a test), so that the test counts its writes.
func startLogReplica(t *testing.T, ctx context.Context, dsn, keyDir string, eo ...engine.Options) *logReplica {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	o := engine.Options{Logger: log}
	if len(eo) > 0 {
		o = eo[0]
		o.Logger = log
	}
	pg, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{KeyDir: keyDir, LogFlushInterval: time.Hour, Options: store.Options{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	r := &logReplica{pg: pg, gw: gateway.New(gateway.Options{DB: pg, Engine: o, Logger: log})}
	t.Cleanup(func() { r.gw.Close() })
	return r
}

func (r *logReplica) engine(t *testing.T, ctx context.Context, email string) *engine.Engine {
	t.Helper()
	e, _, err := r.gw.Engine(ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// addLogPerson adds a person with the test server as "fx", its origin
// granted.
func addLogPerson(t *testing.T, ctx context.Context, r *logReplica, fx *fixture.Server, email string) *engine.Engine {
	t.Helper()
	if _, err := r.gw.AddUser(ctx, email); err != nil {
		t.Fatal(err)
	}
	e := r.engine(t, ctx, email)
	if _, err := e.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: fx.URL(), By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	if err := e.Grant(ctx, "http://"+fx.Addr(), ""); err != nil {
		t.Fatal(err)
	}
	return e
}

func echoCall(t *testing.T, ctx context.Context, e *engine.Engine, i int) {
	t.Helper()
	res, err := e.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: fmt.Appendf(nil, `{"text":"%d"}`, i), Approved: true}, localapi.CallHandler{})
	if err != nil || res.IsError {
		t.Fatalf("call %d: %v %+v", i, err, res)
	}
}

func logOf(t *testing.T, ctx context.Context, e *engine.Engine) []localapi.LogEntry {
	t.Helper()
	l, err := e.Log(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// callConns returns the connection of each tools/call in l, in order.
func callConns(l []localapi.LogEntry) []string {
	var out []string
	for _, x := range l {
		if x.RPCMethod == "tools/call" {
			out = append(out, x.ConnectionID)
		}
	}
	return out
}

func revisionOf(t *testing.T, ctx context.Context, pg *store.Postgres, email string) int64 {
	t.Helper()
	var rev int64
	if err := pg.DB().QueryRowContext(ctx, `SELECT revision FROM users WHERE email = $1`, email).Scan(&rev); err != nil {
		t.Fatal(err)
	}
	return rev
}

// Issue #23 ("request logs (bounded)" are shared in PostgreSQL): the
// request log a person's page shows on any replica holds the calls her
// hosts made through every replica, in order, bounded to LogSize, and
// never another person's; writing it bumps no revision and costs a call
// no statement of its own.
func TestRequestLogAcrossReplicas(t *testing.T) {
	ctx := testkit.Context(t)
	fx := testkit.StartFixture(t, fixture.Options{})
	dsn, keyDir := pgtest.DSN(t), t.TempDir()
	a, b := startLogReplica(t, ctx, dsn, keyDir), startLogReplica(t, ctx, dsn, keyDir)
	const alice, bob = "alice@example.org", "bob@example.org"
	addLogPerson(t, ctx, a, fx, alice)
	addLogPerson(t, ctx, a, fx, bob)
	eng := []*engine.Engine{a.engine(t, ctx, alice), b.engine(t, ctx, alice)}
	echoCall(t, ctx, eng[0], -2) // connects each replica's session
	echoCall(t, ctx, eng[1], -1)
	for _, r := range []*logReplica{a, b} {
		if err := r.pg.FlushRequestLog(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rev0 := revisionOf(t, ctx, a.pg, alice)
	before := []store.RequestLogStats{a.pg.RequestLogStats(), b.pg.RequestLogStats()}

	const calls = 120
	for i := range calls {
		echoCall(t, ctx, eng[i%2], i)
	}
	// Before any flush, B shows its own calls (queued) at least.
	if got := callConns(logOf(t, ctx, eng[1])); len(got) == 0 {
		t.Fatal("replica B's log shows none of its own unwritten calls")
	}
	for _, r := range []*logReplica{a, b} {
		if err := r.pg.FlushRequestLog(ctx); err != nil {
			t.Fatal(err)
		}
	}
	la, lb := logOf(t, ctx, eng[0]), logOf(t, ctx, eng[1])
	if len(lb) != manager.LogSize || !slices.Equal(la, lb) {
		t.Fatalf("alice's log on A (%d entries) and on B (%d), want the same %d", len(la), len(lb), manager.LogSize)
	}
	conns := callConns(lb)
	if len(conns) < manager.LogSize-5 || conns[0] == conns[1] {
		t.Fatalf("tools/call entries in the log: %d over connections %v, want about %d from both replicas", len(conns), conns, manager.LogSize)
	}
	for i := 2; i < len(conns); i++ {
		if conns[i] != conns[i%2] {
			t.Fatalf("tools/call %d of the log came through %s, want the replicas in turn: %v", i, conns[i], conns)
		}
	}
	for i := 1; i < len(lb); i++ {
		if lb[i].Time.Before(lb[i-1].Time) {
			t.Fatalf("entry %d at %v before entry %d at %v", i, lb[i].Time, i-1, lb[i-1].Time)
		}
	}

	// Cost: the calls added only batched writes, and no revision (the
	// replicas' catalog saves after their first connect may land late:
	// at most one each).
	if rev := revisionOf(t, ctx, a.pg, alice); rev-rev0 > 2 {
		t.Errorf("alice's revision went %d → %d over %d calls: the log bumps it", rev0, rev, calls)
	}
	var stmts, flushes, entries int64
	for i, r := range []*logReplica{a, b} {
		st := r.pg.RequestLogStats()
		stmts += st.Statements - before[i].Statements
		flushes += st.Flushes - before[i].Flushes
		entries += st.Written - before[i].Written
	}
	t.Logf("%d calls through 2 replicas: %d log entries, %d flushes, %d statements: %.3f statements a call",
		calls, entries, flushes, stmts, float64(stmts)/calls)
	if entries < calls || flushes > entries/50+2 || stmts != 2*flushes {
		t.Errorf("%d entries written in %d flushes of %d statements: want batches of 50 and a final flush each", entries, flushes, stmts)
	}

	// Bob's server has the same id; his log shows nothing of hers.
	for _, x := range logOf(t, ctx, b.engine(t, ctx, bob)) {
		if x.RPCMethod == "tools/call" || slices.Contains(conns, x.ConnectionID) {
			t.Fatalf("bob's log shows %+v (alice's connections: %v)", x, conns[:2])
		}
	}

	// A row that does not decode is skipped, not fatal.
	if _, err := a.pg.DB().ExecContext(ctx, `INSERT INTO request_log (user_id, server_id, at, ref, entry)
		SELECT id, 'fx', $2, 'broken', 'not json' FROM users WHERE email = $1`, alice, lb[len(lb)-1].Time.UnixMicro()+1); err != nil {
		t.Fatal(err)
	}
	if got := logOf(t, ctx, eng[1]); len(got) != manager.LogSize-1 || !slices.Equal(got, lb[1:]) {
		t.Errorf("log with a broken row: %d entries, want the %d others", len(got), manager.LogSize-1)
	}
}

// While PostgreSQL is down a replica's calls to a connected server go
// on, and its page shows the log it holds in memory; the queued entries
// reach the shared log once PostgreSQL is back (issue #23).
func TestRequestLogDuringOutage(t *testing.T) {
	ctx := testkit.Context(t)
	fx := testkit.StartFixture(t, fixture.Options{})
	cluster := pgtest.NewCluster(t)
	dsn := cluster.DSN(t)
	a := startLogReplica(t, ctx, dsn, t.TempDir())
	const alice = "alice@example.org"
	e := addLogPerson(t, ctx, a, fx, alice)
	echoCall(t, ctx, e, 0)
	if err := a.pg.FlushRequestLog(ctx); err != nil {
		t.Fatal(err)
	}
	// The cluster commits asynchronously: what was written must survive
	// its crash.
	if _, err := a.pg.DB().ExecContext(ctx, `CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	cluster.Stop(t)
	for i := 1; i <= 3; i++ {
		echoCall(t, ctx, e, i)
	}
	l := logOf(t, ctx, e)
	if got := callConns(l); len(got) != 4 {
		t.Fatalf("log during the outage: %d tools/call (%+v), want the 4 made in memory", len(got), l)
	}
	if err := a.pg.FlushRequestLog(ctx); err == nil {
		t.Fatal("flushed with PostgreSQL down")
	}
	cluster.Start(t)
	testkit.WaitFor(t, "the queued entries written", func() bool { return a.pg.FlushRequestLog(ctx) == nil })
	var rows int
	if err := a.pg.DB().QueryRowContext(ctx, `SELECT count(*) FROM request_log WHERE entry LIKE '%tools/call%'`).Scan(&rows); err != nil || rows != 4 {
		t.Errorf("tools/call rows after the outage: %d %v, want 4", rows, err)
	}
	if got := callConns(logOf(t, ctx, e)); len(got) != 4 {
		t.Errorf("log after the outage: %d tools/call, want 4", len(got))
	}
}

// A gateway's server that hibernates keeps its request log in the shared
// one, not on the KV shelf (a write of the person's that every replica
// would re-read), and its log still shows it all afterwards (issue #23,
// issue #12).
func TestRequestLogHibernatedOnGateway(t *testing.T) {
	ctx := testkit.Context(t)
	fx := testkit.StartFixture(t, fixture.Options{})
	const check = time.Hour // told apart from other timers on the clock by its length
	clock := clocktest.New(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	a := startLogReplica(t, ctx, pgtest.DSN(t), t.TempDir(), engine.Options{IdleCheck: check, Clock: clock})
	const alice = "alice@example.org"
	e := addLogPerson(t, ctx, a, fx, alice)
	idle := "1ms"
	if _, err := e.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{IdleTimeout: &idle}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		echoCall(t, ctx, e, i)
	}
	for n := 0; ; n++ {
		s, err := e.Server(ctx, "fx")
		if err != nil {
			t.Fatal(err)
		}
		if s.State == localapi.StateIdle {
			break
		}
		if n == 10_000 {
			t.Fatalf("the server is %s after %d idle checks, want idle", s.State, n)
		}
		testkit.WaitFor(t, "the idle check to be scheduled", func() bool { return clock.Pending(check) == 1 })
		clock.Advance(check)
		testkit.WaitFor(t, "the idle check to run", func() bool { return clock.Pending(check) == 1 })
	}
	var l []localapi.LogEntry
	testkit.WaitFor(t, "the polite close (DELETE) in the log", func() bool {
		l = logOf(t, ctx, e)
		return len(l) > 0 && l[len(l)-1].HTTPMethod == "DELETE"
	})
	if got := callConns(l); len(got) != 3 {
		t.Errorf("the hibernated server's log: %d tools/call, want 3: %+v", len(got), l)
	}
	if _, err := e.Store.GetKV(ctx, manager.LogNamespace, "fx"); err == nil {
		t.Error("the request log was shelved in the KV table as well")
	}
	if err := a.pg.FlushRequestLog(ctx); err != nil {
		t.Fatal(err)
	}
	if got := logOf(t, ctx, e); !slices.Equal(got, l) {
		t.Errorf("the log once written: %d entries, want the same %d", len(got), len(l))
	}
}
