//go:build chaos

package chaos

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// benchWarm and benchWindow: each side first lets every host start a new
// session (spread over the replicas up), then measures.
var (
	benchIdle   = 10 * time.Second
	benchWarm   = 10 * time.Second
	benchWindow = time.Duration(envInt("CHAOS_BENCH_S", 30)) * time.Second
)

// side is one measured window.
type side struct {
	name      string
	calls     int           // successful calls that ended in the window
	cpu       time.Duration // utime+stime of the replicas
	stmts     int64         // pg_stat_statements calls (the chaos database)
	xacts     int64         // pg_stat_database xact_commit + xact_rollback
	window    time.Duration
	failed    int
	errs      []string
	replicaUp int
	// idle: the statements per second and the replicas' CPU (cores)
	// with every host holding its session and calling nothing: the
	// gateway's background work (change feed, pollers).
	idleStmts, idleCPU float64
	// top are the window's statements, most frequent first.
	top []stmtCount
}

type stmtCount struct {
	query string
	calls int64
}

// pgStatements is pg_stat_statements' calls per statement text on the
// chaos database.
func pgStatements(t *testing.T, c *cluster) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT query, sum(calls)::bigint FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) GROUP BY query`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var q string
		var n int64
		if err := rows.Scan(&q, &n); err != nil {
			t.Fatal(err)
		}
		out[strings.Join(strings.Fields(q), " ")] += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBench is the benchmark (scripts/chaos.sh -bench; not in
// CI): the same steady load of hosts without faults, first on one replica
// (the other two stopped: HAProxy sends everything to the first), then
// on three; CPU per call from /proc/PID/stat (utime+stime of the replica
// processes) and PostgreSQL round trips per call.
//
// Round trips are counted as statements, pg_stat_statements' calls on
// the chaos database (BEGIN and COMMIT included: track_utility is on by
// default): pgx sends each statement in one round trip (extended
// protocol, pipelined parse/bind/execute, prepared statements cached),
// so statements are the round trips but for the few first-time prepares.
// Only top-level statements count (pg_stat_statements.track=top): the
// foreign-key checks PostgreSQL runs inside an insert are no round trips.
// Transactions (pg_stat_database) are printed beside them: one
// transaction is one or more round trips.
func TestBench(t *testing.T) {
	c := newCluster(t, 3)
	srv := startServers(t, nServers, tokenTTL)
	tokens, _ := setUpPeople(t, c, srv, users)
	ld := &load{endpoint: fmt.Sprintf("http://127.0.0.1:%d/mcp", c.lbMCP), tokens: tokens, servers: nServers}
	ctx, stop := context.WithCancel(context.Background())
	hosts := ld.run(ctx, nHosts)
	t.Cleanup(func() { stop(); hosts.Wait() })

	// One replica: the others stopped cleanly, every host on the first.
	for _, r := range c.replicas[1:] {
		r.current().stop(syscall.SIGTERM)
	}
	one := measure(t, c, ld, "1 replica")
	// Three replicas.
	for _, r := range c.replicas[1:] {
		if err := r.start(c); err != nil {
			t.Fatal(err)
		}
		if err := c.waitUp(r); err != nil {
			t.Fatal(err)
		}
	}
	three := measure(t, c, ld, "3 replicas")
	stop()
	hosts.Wait()

	per := func(s side, v float64) float64 { return v / float64(max(s.calls, 1)) }
	row := func(what string, a, b float64, format string) {
		ratio := "—"
		if a > 0 {
			ratio = fmt.Sprintf("%.2f×", b/a)
		}
		fmt.Printf("| %s | "+format+" | "+format+" | %s |\n", what, a, b, ratio)
	}
	fmt.Printf("\n== replicas benchmark (%s; %d hosts, %d people × %d servers, access tokens %v, window %v per side)\n",
		time.Now().UTC().Format("2006-01-02 15:04"), nHosts, users, nServers, tokenTTL, benchWindow)
	fmt.Printf("| measure | 1 replica | 3 replicas | ratio |\n|---|---|---|---|\n")
	row("calls per second", float64(one.calls)/one.window.Seconds(), float64(three.calls)/three.window.Seconds(), "%.0f")
	row("replica CPU per call (all replicas, utime+stime)", per(one, float64(one.cpu.Microseconds())), per(three, float64(three.cpu.Microseconds())), "%.0f µs")
	row("replica CPU per second (cores)", one.cpu.Seconds()/one.window.Seconds(), three.cpu.Seconds()/three.window.Seconds(), "%.2f")
	row("PostgreSQL statements (round trips) per call", per(one, float64(one.stmts)), per(three, float64(three.stmts)), "%.1f")
	row("PostgreSQL transactions per call", per(one, float64(one.xacts)), per(three, float64(three.xacts)), "%.1f")
	row("PostgreSQL statements per second", float64(one.stmts)/one.window.Seconds(), float64(three.stmts)/three.window.Seconds(), "%.0f")
	row("idle (hosts connected, no call): PostgreSQL statements per second", one.idleStmts, three.idleStmts, "%.0f")
	row("idle: replica CPU (cores)", one.idleCPU, three.idleCPU, "%.3f")
	net := func(s side) float64 {
		return per(s, float64(s.stmts)-s.idleStmts*s.window.Seconds())
	}
	row("PostgreSQL statements per call, less the idle rate", net(one), net(three), "%.1f")
	fmt.Printf("(failed calls: %d with 1 replica, %d with 3)\n", one.failed, three.failed)
	for _, sd := range []side{one, three} {
		fmt.Printf("statements per call with %s (the most frequent):\n", sd.name)
		for _, st := range sd.top[:min(len(sd.top), 8)] {
			q := st.query
			if len(q) > 110 {
				q = q[:110] + "…"
			}
			fmt.Printf("  %5.2f  %s\n", per(sd, float64(st.calls)), q)
		}
	}
	for _, e := range append(one.errs, three.errs...) {
		fmt.Printf("  failed: %s\n", e)
	}
	if one.calls == 0 || three.calls == 0 {
		t.Fatalf("no successful call in a window: %+v %+v", one, three)
	}
}

// measure moves every host to a new session, lets them warm up, and
// measures one window.
func measure(t *testing.T, c *cluster, ld *load, name string) side {
	t.Helper()
	ld.epoch.Add(1)
	time.Sleep(benchWarm)
	pids := func() []int {
		var out []int
		for _, r := range c.replicas {
			if ch := r.current(); ch != nil && ch.alive() {
				out = append(out, ch.pid())
			}
		}
		return out
	}
	ps := pids()
	cpu := func() int64 {
		var n int64
		for _, p := range ps {
			n += cpuTicks(p)
		}
		return n
	}
	ld.paused.Store(true)
	time.Sleep(time.Second) // calls under way end
	idle0, _ := pgCounts(t, c)
	idleCPU0, idleStart := cpu(), time.Now()
	time.Sleep(benchIdle)
	idle1, _ := pgCounts(t, c)
	idleCPU1, idleTook := cpu(), time.Since(idleStart)
	ld.paused.Store(false)
	time.Sleep(2 * time.Second)
	stmts0, xacts0 := pgCounts(t, c)
	top0 := pgStatements(t, c)
	cpu0 := cpu()
	start := time.Now()
	time.Sleep(benchWindow)
	cpu1 := cpu()
	end := time.Now()
	stmts1, xacts1 := pgCounts(t, c)
	top1 := pgStatements(t, c)
	s := side{name: name, window: end.Sub(start), stmts: stmts1 - stmts0, xacts: xacts1 - xacts0, replicaUp: len(ps)}
	s.cpu = time.Duration(cpu1-cpu0) * time.Second / time.Duration(clockTicks())
	for q, n := range top1 {
		if d := n - top0[q]; d > 0 {
			s.top = append(s.top, stmtCount{q, d})
		}
	}
	slices.SortFunc(s.top, func(a, b stmtCount) int { return cmp.Compare(b.calls, a.calls) })
	s.idleStmts = float64(idle1-idle0) / idleTook.Seconds()
	s.idleCPU = float64(idleCPU1-idleCPU0) / float64(clockTicks()) / idleTook.Seconds()
	for _, cl := range ld.snapshot() {
		if cl.end.Before(start) || cl.end.After(end) {
			continue
		}
		if cl.ok {
			s.calls++
		} else {
			s.failed++
			s.errs = append(s.errs, fmt.Sprintf("%s on %q: %s", cl.nonce, cl.replica, errorKind(cl.err)))
		}
	}
	return s
}

// pgCounts reads the chaos database's statement and transaction counts.
func pgCounts(t *testing.T, c *cluster) (stmts, xacts int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&stmts); err != nil {
		t.Fatal(err)
	}
	// Counts of other backends reach pg_stat_database within a second
	// (PostgreSQL 15 flushes them at most once a second): the windows
	// are long enough for that to be noise.
	if err := conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&xacts); err != nil {
		t.Fatal(err)
	}
	return stmts, xacts
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times:
// 100 on every Linux that Debian ships (getconf CLK_TCK).
func clockTicks() int64 {
	if v := os.Getenv("CHAOS_CLK_TCK"); v != "" {
		var n int64
		fmt.Sscan(v, &n)
		if n > 0 {
			return n
		}
	}
	return 100
}
