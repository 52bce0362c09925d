//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/remotemcp/remotemcp/localapi"
)

// The run's size, as the issue has it: 20 people × 5 servers, hosts
// calling at a steady rate, access tokens expiring many times.
var (
	users    = envInt("CHAOS_USERS", 20)
	nServers = envInt("CHAOS_SERVERS", 5)
	nHosts   = envInt("CHAOS_HOSTS", 30)
	// tokenTTL: access tokens expire ~7 times in the run, so every
	// replica refreshes them through the others' rotations.
	tokenTTL = time.Duration(envInt("CHAOS_TOKEN_TTL_S", 15)) * time.Second
)

// The schedule: a warm-up, then each fault followed by a quiet gap
// longer than grace, so the fault windows never overlap.
const (
	warmUp   = 15 * time.Second
	quiet    = 20 * time.Second
	killDown = 5 * time.Second  // a killed replica stays down this long
	pgDown   = 3 * time.Second  // PostgreSQL stays down this long
	freeze   = 30 * time.Second // SIGSTOP … SIGCONT (the issue's)
	// grace ends a fault's window after its recovery: a call that
	// started just before can take hostTimeout (10 s) to fail, HAProxy
	// takes rise×inter (2 s) to take a replica back, and a host that
	// lost its session initializes again (a call's worth) before its
	// next call; 3 s more for a loaded machine.
	grace = hostTimeout + 5*time.Second
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// fault is one injected fault and what it cost.
type fault struct {
	name      string
	victim    string // the replica, "" for PostgreSQL
	start     time.Time
	recovered time.Time // the fault's action ended (restarted, SIGCONT)
	affected  []int     // hosts whose session was on the victim
	failover  time.Duration
	stuck     []int // affected hosts with no successful call after it
	failed    int   // calls that failed in its window
	errors    map[string]int
}

func (f *fault) windowEnd() time.Time { return f.recovered.Add(grace) }

func (f *fault) covers(c call) bool {
	return !c.end.Before(f.start) && !c.start.After(f.windowEnd())
}

// requireCallbacksOnAnyReplica asserts that every sign-in's callback
// comes back to the gateway's public URL (through the load balancer, to
// any replica). It is red until the redirect URI is the public URL's
// /mcp-oauth (#23); false lands the chaos test before that change.
const requireCallbacksOnAnyReplica = true

// TestChaos is the chaos test: 3 replicas under a steady load,
// a replica killed, PostgreSQL restarted, a replica frozen, access
// tokens expiring throughout; then the counts.
func TestChaos(t *testing.T) {
	began := time.Now()
	w := &chaosRun{c: newCluster(t, 3)}
	w.srv = startServers(t, nServers, tokenTTL)
	tokens, publicSignIns := setUpPeople(t, w.c, w.srv, users)
	w.ed = &editor{c: w.c, fxURL: w.srv.fxs[0].URL(), asURL: w.srv.as.URL()}
	if err := w.ed.setUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.ld = &load{endpoint: fmt.Sprintf("http://127.0.0.1:%d/mcp", w.c.lbMCP), tokens: tokens, servers: nServers}
	fig := figures{setUp: time.Since(began), publicSignIns: publicSignIns}
	t.Logf("set up in %v: PostgreSQL, %d replicas, HAProxy, %d people × %d servers signed in", fig.setUp.Round(time.Second), len(w.c.replicas), users, nServers)
	w.run(t)
	fig.load = w.loadTook
	fig.caughtUp = w.caughtUp
	w.count(t, &fig)
	fmt.Print(fig.summary(w))
	fig.check(t, w.faults)
}

// chaosRun is one run: the cluster, the servers, the load, the editor
// and what happened.
type chaosRun struct {
	c   *cluster
	srv *servers
	ld  *load
	ed  *editor

	faults    []*fault
	late      lateWrite
	loadStart time.Time
	loadTook  time.Duration
	caughtUp  time.Duration
	calls     []call
	edits     []edit
}

// run runs the load and, one after another with quiet gaps, the faults.
func (w *chaosRun) run(t *testing.T) {
	t.Helper()
	c, ld, ed := w.c, w.ld, w.ed
	ctx, stop := context.WithCancel(context.Background())
	hosts := ld.run(ctx, nHosts)
	edDone := make(chan struct{})
	go func() { defer close(edDone); ed.run(ctx) }()
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			stop()
			hosts.Wait()
			<-edDone
		}
	}
	t.Cleanup(stopLoad)
	w.loadStart = time.Now()
	sleep(ctx, warmUp)

	// 1. kill -9 a replica, start it again.
	r2 := c.replicas[1]
	f := &fault{name: "kill -9 " + r2.name, victim: r2.name, start: time.Now()}
	f.affected = hostsOn(ld.snapshot(), r2.name, f.start)
	syscall.Kill(r2.current().pid(), syscall.SIGKILL)
	<-r2.current().exited
	sleep(ctx, killDown)
	if err := r2.start(c); err != nil {
		t.Fatal(err)
	}
	if err := c.waitUp(r2); err != nil {
		t.Fatal(err)
	}
	f.recovered = time.Now()
	w.faults = append(w.faults, f)
	sleep(ctx, quiet)

	// 2. Restart PostgreSQL: a fast shutdown (what pg_ctl restart -m fast does),
	// down for pgDown so that edits and a sign-in land in the outage.
	f = &fault{name: "PostgreSQL restart", start: time.Now()}
	f.affected = allHosts()
	c.pg.StopFast(t)
	ed.trySignIn(ctx)
	sleep(ctx, pgDown)
	c.pg.Start(t)
	f.recovered = time.Now()
	w.faults = append(w.faults, f)
	sleep(ctx, quiet)

	// 3. Freeze a replica for 30 s.
	r3 := c.replicas[2]
	f = &fault{name: "SIGSTOP " + r3.name + " 30 s", victim: r3.name, start: time.Now()}
	f.affected = hostsOn(ld.snapshot(), r3.name, f.start)
	late := w.startLateWrite(t, r3)
	syscall.Kill(r3.current().pid(), syscall.SIGSTOP)
	late.send()
	sleep(ctx, freeze)
	syscall.Kill(r3.current().pid(), syscall.SIGCONT)
	f.recovered = time.Now()
	w.late = late.result()
	w.faults = append(w.faults, f)
	// The frozen replica missed the edits of 30 s: how long until its
	// view agrees with the database (the change feed's catch-up).
	ed.pause()
	w.caughtUp = catchUp(c, r3, quiet)
	ed.resume()
	sleep(ctx, quiet-time.Since(f.recovered))

	stopLoad()
	w.loadTook = time.Since(w.loadStart)
	w.calls, w.edits = ld.snapshot(), ed.snapshot()
}

// figures are what the run is judged by.
type figures struct {
	setUp, load                     time.Duration
	ok, failed, failedOutside       int
	outside                         []call
	doubles, crossUser, okNotRun    int
	crossSamples                    []string
	refreshes, reused, invalidGrant int
	lost, phantom                   int
	editCounts                      string
	outageEdits, outageUnclear      int
	outageTexts                     []string
	resumed, caughtUp               time.Duration
	converged                       bool
	late                            lateWrite
	publicSignIns                   int
}

// count works the figures out from the calls, the edits, the test
// servers' and the authorization server's records, and the database.
func (w *chaosRun) count(t *testing.T, fig *figures) {
	t.Helper()
	for _, f := range w.faults {
		f.failover, f.stuck = failover(w.calls, f)
	}
	for _, c := range w.calls {
		if c.ok {
			fig.ok++
			continue
		}
		fig.failed++
		inside := false
		for _, f := range w.faults {
			if f.covers(c) {
				inside = true
				f.failed++
				if f.errors == nil {
					f.errors = map[string]int{}
				}
				f.errors[errorKind(c.err)]++
			}
		}
		if !inside {
			fig.failedOutside++
			if len(fig.outside) < 8 {
				fig.outside = append(fig.outside, c)
			}
		}
	}
	nonces := map[string][]string{}
	for _, fx := range w.srv.fxs {
		for n, callers := range fx.Nonces() {
			nonces[n] = append(nonces[n], callers...)
		}
	}
	cross := func(s string) {
		fig.crossUser++
		if len(fig.crossSamples) < 4 {
			fig.crossSamples = append(fig.crossSamples, s)
		}
	}
	for n, callers := range nonces {
		if len(callers) > 1 {
			fig.doubles++
		}
		u, _ := strconv.Atoi(n[1:3])
		for _, who := range callers {
			if who != subject(u) {
				cross(n + " ran as " + who)
			}
		}
	}
	for _, c := range w.calls {
		if c.ok && c.caller != subject(c.user) {
			cross(c.nonce + " answered as " + c.caller)
		}
		if c.ok && len(nonces[c.nonce]) == 0 {
			fig.okNotRun++
		}
	}
	for _, r := range w.srv.as.RequestsTo("/token") {
		if r.Form.Get("grant_type") == "refresh_token" {
			fig.refreshes++
		}
		if r.Error == "invalid_grant" {
			fig.invalidGrant++
		}
	}
	fig.reused = len(w.srv.as.ReusedRefreshTokens())
	fig.lost, fig.phantom, fig.editCounts = checkEdits(t, w.c, w.edits)
	outage := w.faults[1]
	fig.resumed = -1
	for _, e := range w.edits {
		if !e.end.Before(outage.start) && !e.at.After(outage.recovered) {
			fig.outageEdits++
			if e.outcome == "unknown" {
				fig.outageUnclear++
			}
			if e.err != "" && !slices.Contains(fig.outageTexts, e.op+": "+e.err) {
				fig.outageTexts = append(fig.outageTexts, e.op+": "+e.err)
			}
		}
		if e.outcome == "ok" && e.at.After(outage.recovered) && fig.resumed < 0 {
			fig.resumed = e.end.Sub(outage.recovered)
		}
	}
	fig.converged = replicasAgree(t, w.c)
	fig.late = w.late
}

// summary is the table the run prints (README "Replicas"), and below it
// what explains the figures: the outage's errors, the calls that failed
// outside a window, the fault windows and the kinds of errors in each.
func (fig *figures) summary(w *chaosRun) string {
	var sb strings.Builder
	row := func(what string, format string, args ...any) {
		fmt.Fprintf(&sb, "| %s | "+format+" |\n", append([]any{what}, args...)...)
	}
	fmt.Fprintf(&sb, "\n== chaos summary (%s; set-up %v, load %v; %d replicas, %d people × %d servers, %d hosts, access tokens %v)\n",
		time.Now().UTC().Format("2006-01-02 15:04"), fig.setUp.Round(time.Second), fig.load.Round(time.Second), len(w.c.replicas), users, nServers, nHosts, tokenTTL)
	fmt.Fprintf(&sb, "| figure | value |\n|---|---|\n")
	row("calls ok / failed", "%d / %d", fig.ok, fig.failed)
	row("calls failed outside a fault window", "%d", fig.failedOutside)
	row("host sessions initialized (re-initializations)", "%d (%d)", w.ld.reinits.Load(), w.ld.reinits.Load()-int64(nHosts))
	row("double executions", "%d", fig.doubles)
	row("calls answered ok that never ran", "%d", fig.okNotRun)
	row("cross-user reads", "%d", fig.crossUser)
	row("refresh grants / refresh tokens presented twice / invalid_grant", "%d / %d / %d", fig.refreshes, fig.reused, fig.invalidGrant)
	row("edits ok / refused / unknown; lost; refused but written", "%s; %d; %d", fig.editCounts, fig.lost, fig.phantom)
	row("edits and sign-ins during the PostgreSQL outage (without an answer)", "%d (%d)", fig.outageEdits, fig.outageUnclear)
	row("first successful edit after PostgreSQL was back", "%s", durOrNever(fig.resumed))
	row("the frozen replica's view agrees with the database after SIGCONT", "%s", durOrNever(fig.caughtUp))
	row("replicas' views of the edited servers agree with the database (at the end)", "%v", fig.converged)
	row("the frozen replica's late write (a rename at the revision read before SIGSTOP)", "%s", w.late)
	row("sign-ins whose callback came back through the load balancer (any replica)", "%d of %d", fig.publicSignIns, users*nServers)
	for _, f := range w.faults {
		row(fmt.Sprintf("%s: calls failed in its window; failover (%d hosts affected)", f.name, len(f.affected)), "%d; %s", f.failed, durOrNever(f.failover))
	}
	for _, s := range fig.outageTexts {
		fmt.Fprintf(&sb, "  outage error: %s\n", s)
	}
	for _, c := range fig.outside {
		fmt.Fprintf(&sb, "  failed outside a window: host %d %s at +%v on %q: %s\n", c.host, c.nonce, c.start.Sub(w.loadStart).Round(time.Millisecond), c.replica, c.err)
	}
	for _, s := range fig.crossSamples {
		fmt.Fprintf(&sb, "  cross-user: %s\n", s)
	}
	for _, f := range w.faults {
		fmt.Fprintf(&sb, "  window %s: +%v … +%v\n", f.name, f.start.Sub(w.loadStart).Round(time.Second), f.windowEnd().Sub(w.loadStart).Round(time.Second))
		for _, k := range slices.Sorted(maps.Keys(f.errors)) {
			fmt.Fprintf(&sb, "    %4d × %s\n", f.errors[k], k)
		}
	}
	return sb.String()
}

// check asserts the figures. The only times asserted are the
// issue's own, generously (the machine is a loaded 2-core one).
func (fig *figures) check(t *testing.T, faults []*fault) {
	t.Helper()
	if fig.ok < (fig.ok+fig.failed)/2 {
		t.Errorf("only %d of %d calls succeeded", fig.ok, fig.ok+fig.failed)
	}
	if fig.failedOutside > 0 {
		t.Errorf("%d calls failed outside every fault window (window: fault start to recovery + %v)", fig.failedOutside, grace)
	}
	if fig.doubles > 0 {
		t.Errorf("%d nonces were executed twice (a call re-sent)", fig.doubles)
	}
	if fig.okNotRun > 0 {
		t.Errorf("%d calls were answered ok and never ran", fig.okNotRun)
	}
	if fig.crossUser > 0 {
		t.Errorf("%d calls ran or answered with another person's sign-in: %v", fig.crossUser, fig.crossSamples)
	}
	if fig.reused > 0 {
		t.Errorf("%d refresh tokens were presented twice (two replicas refreshed one grant)", fig.reused)
	}
	if fig.invalidGrant > 0 {
		t.Errorf("the authorization server answered invalid_grant %d times", fig.invalidGrant)
	}
	if fig.lost > 0 {
		t.Errorf("%d edits that returned success are not in the database", fig.lost)
	}
	if fig.phantom > 0 {
		t.Errorf("%d edits were refused and still written", fig.phantom)
	}
	if fig.outageUnclear > 0 {
		t.Errorf("%d edits during the PostgreSQL outage ended without an answer (want a clear error)", fig.outageUnclear)
	}
	// The "all resume within 5 s", asserted generously (the
	// editor edits every 250 ms and the machine is loaded).
	if fig.resumed < 0 || fig.resumed > 15*time.Second {
		t.Errorf("edits resumed %s after PostgreSQL was back (the issue wants 5 s)", durOrNever(fig.resumed))
	}
	// The issue: a frozen replica's late writes are refused by the
	// records' revisions. The stale request may also never be carried
	// out at all (a request that waited out the freeze in the kernel's
	// backlog can be reset at the wake-up): either way it must not be
	// written.
	if fig.late.outcome == "ok" || fig.late.dbName != lateOnTime {
		t.Errorf("the frozen replica's late write: %s", fig.late)
	}
	if fig.caughtUp < 0 {
		t.Errorf("the frozen replica's view did not agree with the database within %v of SIGCONT", quiet)
	}
	if !fig.converged {
		t.Error("the replicas' views of the edited servers do not agree with the database (the feed did not catch up)")
	}
	for _, f := range faults {
		if len(f.stuck) > 0 {
			t.Errorf("%s: hosts %v never called successfully again", f.name, f.stuck)
		}
	}
	// Red until callbacks may land on any replica (#23: the redirect URI
	// on the gateway's --public-url): the sign-in's redirect goes back to
	// the replica that started it.
	if requireCallbacksOnAnyReplica && fig.publicSignIns != users*nServers {
		t.Errorf("%d of %d sign-ins came back through the load balancer: the redirect URI must be the public URL's /mcp-oauth, so that any replica completes it", fig.publicSignIns, users*nServers)
	}
}

// errorKind is a failed call's error without what differs from call to
// call (session ids, nonces, addresses), cut short, to group them.
func errorKind(e string) string {
	e = hexRun.ReplaceAllString(e, "…")
	e = digitRun.ReplaceAllString(e, "N")
	if len(e) > 400 {
		e = e[:400] + "…"
	}
	return e
}

var (
	hexRun   = regexp.MustCompile(`[0-9A-Za-z_-]{20,}`)
	digitRun = regexp.MustCompile(`[0-9]+`)
)

func durOrNever(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(10 * time.Millisecond).String()
}

func allHosts() []int {
	h := make([]int, nHosts)
	for i := range h {
		h[i] = i
	}
	return h
}

// hostsOn are the hosts whose last successful call before t was
// answered by replica name: their sessions live there.
func hostsOn(calls []call, name string, t time.Time) []int {
	last := map[int]string{}
	for _, c := range calls {
		if c.ok && c.end.Before(t) {
			last[c.host] = c.replica
		}
	}
	var out []int
	for h, r := range last {
		if r == name {
			out = append(out, h)
		}
	}
	sort.Ints(out)
	return out
}

// failover is the time from the fault until every affected host has
// completed a successful call that started after it; stuck lists the
// hosts that never did.
func failover(calls []call, f *fault) (time.Duration, []int) {
	first := map[int]time.Time{}
	for _, c := range calls {
		if c.ok && !c.start.Before(f.start) {
			if t, seen := first[c.host]; !seen || c.end.Before(t) {
				first[c.host] = c.end
			}
		}
	}
	var worst time.Duration
	var stuck []int
	for _, h := range f.affected {
		t, ok := first[h]
		if !ok {
			stuck = append(stuck, h)
			continue
		}
		worst = max(worst, t.Sub(f.start))
	}
	if len(f.affected) == 0 {
		return 0, nil
	}
	return worst, stuck
}

// checkEdits compares the spare person's servers in the database with
// the edits: every successful edit must be there unless a later edit of
// the same server may have replaced it (one that succeeded, or one that
// got no answer); a refused edit must not be. It returns the lost
// edits, the refused ones that were written, and the outcome counts.
func checkEdits(t *testing.T, c *cluster, edits []edit) (lost, phantom int, counts string) {
	t.Helper()
	state := dbServers(t, c, spare)
	var nOK, nRefused, nUnknown int
	byID := map[string][]edit{}
	var ids []string
	for _, e := range edits {
		switch e.outcome {
		case "ok":
			nOK++
		case "refused":
			nRefused++
		default:
			nUnknown++
		}
		if e.op == "signin" || e.op == "rename-read" {
			continue
		}
		if _, seen := byID[e.id]; !seen {
			ids = append(ids, e.id)
		}
		byID[e.id] = append(byID[e.id], e)
	}
	for _, id := range ids {
		es := byID[id]
		got, present := state[id]
		if strings.HasPrefix(id, "fixed-") {
			// The acceptable names: the last successful rename's (or the
			// initial one), or a later unanswered one's.
			want := []string{"initial"}
			sawOK := false
			for _, e := range es {
				switch e.outcome {
				case "ok":
					want, sawOK = []string{e.value}, true
				case "unknown":
					want = append(want, e.value)
				}
			}
			if !slices.Contains(want, got) {
				if sawOK {
					lost++
					t.Logf("lost edit: %s is named %q in the database, want one of %v", id, got, want)
				} else {
					phantom++
					t.Logf("refused rename written: %s is named %q in the database, want one of %v", id, got, want)
				}
			}
			continue
		}
		// added-N: present after an add, absent after a remove.
		can := map[bool]bool{false: true}
		sawOK := false
		for _, e := range es {
			switch {
			case e.op == "add" && e.outcome == "ok":
				can, sawOK = map[bool]bool{true: true}, true
			case e.op == "add" && e.outcome == "unknown":
				can[true] = true
			case e.op == "remove" && e.outcome == "ok":
				can, sawOK = map[bool]bool{false: true}, true
			case e.op == "remove" && e.outcome == "unknown":
				can[false] = true
			}
		}
		if !can[present] {
			if sawOK {
				lost++
				t.Logf("lost edit: %s present=%v in the database after %+v", id, present, es)
			} else {
				phantom++
				t.Logf("refused edit written: %s present=%v in the database after %+v", id, present, es)
			}
		}
	}
	return lost, phantom, fmt.Sprintf("%d / %d / %d", nOK, nRefused, nUnknown)
}

// dbServers reads a person's servers (id → name) from the database
// itself, not through a replica.
func dbServers(t *testing.T, c *cluster, who string) map[string]string {
	t.Helper()
	out, err := dbServersErr(c, who)
	if err != nil {
		t.Fatalf("read the edits back: %v", err)
	}
	return out
}

func dbServersErr(c *cluster, who string) (map[string]string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT s.id, s.config FROM servers s JOIN users u ON u.id = s.user_id WHERE u.email = $1`, who)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, cfg string
		if err := rows.Scan(&id, &cfg); err != nil {
			return nil, err
		}
		var s struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(cfg), &s); err != nil {
			return nil, fmt.Errorf("server %s's config: %w", id, err)
		}
		out[id] = s.Name
	}
	return out, rows.Err()
}

// replicasAgree waits (a bounded number of looks) until every replica's
// own page shows the spare person's servers as the database has them:
// the frozen one too, which must have caught up from the feed.
func replicasAgree(t *testing.T, c *cluster) bool {
	t.Helper()
	want := dbServers(t, c, spare)
	for range 120 {
		agree := true
		for _, r := range c.replicas {
			p := c.personAt(spare, r.page)
			ctx, cancel := context.WithTimeout(context.Background(), editTimeout)
			list, err := p.Servers(ctx)
			cancel()
			got := map[string]string{}
			for _, s := range list {
				got[s.ID] = s.Name
			}
			if err != nil || !equalMaps(got, want) {
				agree = false
				break
			}
		}
		if agree {
			return true
		}
		time.Sleep(250 * time.Millisecond)
	}
	return false
}

// catchUp is how long after now replica r's own page shows the spare
// person's servers as the database has them (polled every 100 ms, at
// most for bound; -1 if not by then). The editor is paused meanwhile.
func catchUp(c *cluster, r *replica, bound time.Duration) time.Duration {
	start := time.Now()
	p := c.personAt(spare, r.page)
	for time.Since(start) < bound {
		want, err := dbServersErr(c, spare)
		ctx, cancel := context.WithTimeout(context.Background(), editTimeout)
		list, err2 := p.Servers(ctx)
		cancel()
		if err == nil && err2 == nil {
			got := map[string]string{}
			for _, s := range list {
				got[s.ID] = s.Name
			}
			if equalMaps(got, want) {
				return time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// personAt is a person's page API on one replica, not through the load
// balancer.
func (c *cluster) personAt(email string, port int) *localapi.Client {
	return localapi.NewClientWithTransport(pageTransport{email: email, host: fmt.Sprintf("127.0.0.1:%d", port), next: pageRT})
}

// lateOnTime is the name the server "late" gets while its replica is
// frozen; lateStale the one the frozen replica's late write asks for.
const (
	lateOnTime = "renamed-during-the-freeze"
	lateStale  = "late-write"
)

// lateWrite is the frozen replica's late write and what became of it.
type lateWrite struct {
	outcome string // refused, ok, unknown
	err     string
	dbName  string // the server's name in the database afterwards
}

func (l lateWrite) String() string {
	s := l.outcome
	if l.err != "" {
		s += " (" + errorKind(l.err) + ")"
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return fmt.Sprintf("%s; the database has %q", s, l.dbName)
}

// lateProbe sends a rename of the spare person's server "late" straight
// to a replica about to be frozen, at the revision read before; while it
// is frozen another replica renames the server (its revision moves on);
// once it runs again, the rename it then carries out must be refused.
type lateProbe struct {
	w      *chaosRun
	frozen *replica
	rev    int64
	done   chan lateWrite
}

// startLateWrite reads the server's revision before the freeze.
func (w *chaosRun) startLateWrite(t *testing.T, frozen *replica) *lateProbe {
	t.Helper()
	s, err := w.c.person(spare).Server(context.Background(), "late")
	if err != nil {
		t.Fatalf("the late-write probe's server: %v", err)
	}
	return &lateProbe{w: w, frozen: frozen, rev: s.Revision, done: make(chan lateWrite, 2)}
}

// send sends the stale rename to the frozen replica, which answers only
// once it runs again, then renames the server on another replica.
func (p *lateProbe) send() {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), freeze+ready)
		defer cancel()
		name := lateStale
		_, err := p.w.c.personAt(spare, p.frozen.page).UpdateServer(ctx, "late", localapi.UpdateServerRequest{Revision: p.rev, Name: &name})
		var l lateWrite
		switch le := (*localapi.Error)(nil); {
		case err == nil:
			l.outcome = "ok"
		case errors.As(err, &le):
			l.outcome, l.err = "refused", le.Message
		default:
			l.outcome, l.err = "unknown", err.Error()
		}
		p.done <- l
	}()
	// The stale request reaches the frozen process's socket first.
	time.Sleep(time.Second)
	name := lateOnTime
	// Longer than an edit's timeout: if the replica froze in the middle
	// of a write of this person, it holds the person's revision row until
	// PostgreSQL ends its idle transaction (store's idleInTransaction,
	// 20 s), and this rename waits for that (seen once in CI).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.w.c.personAt(spare, p.w.c.replicas[0].page).UpdateServer(ctx, "late", localapi.UpdateServerRequest{Name: &name}); err != nil {
		p.done <- lateWrite{outcome: "not tried", err: "the rename during the freeze failed: " + err.Error()}
	}
}

// result waits for the frozen replica's answer and reads the name back.
func (p *lateProbe) result() lateWrite {
	l := <-p.done
	l.dbName = "?"
	if names, err := dbServersErr(p.w.c, spare); err == nil {
		l.dbName = names["late"]
	}
	return l
}
