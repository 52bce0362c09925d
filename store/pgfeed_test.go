package store

// Replicas on one PostgreSQL (issue #23, SPEC §9 A11): each
// OpenPostgres of one database stands for a replica. The change feed
// reaches the others through LISTEN/NOTIFY (with the poll set to an hour,
// nothing else could deliver), a lost listening connection is replaced
// and what it missed is read again, and advisory locks survive a restart
// of the server.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/pgtest"
)

// noPoll is a poll interval no test outlives: a change that arrives came
// through a notification (or the read after listening again).
const noPoll = time.Hour

// openReplica opens the database at dsn as another replica would, with
// poll as the change feed's PollInterval, closed when the test ends.
func openReplica(t testing.TB, dsn, keyDir string, poll time.Duration, log *slog.Logger) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), dsn, PostgresOptions{KeyDir: keyDir, Options: Options{PollInterval: poll, Logger: log}})
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

// recvRevision receives changes until one at revision want or later,
// which must be a re-read (another replica's write).
func recvRevision(t *testing.T, ch <-chan Change, want int64) Change {
	t.Helper()
	for {
		c := recv(t, ch, hang)
		if c.Revision < want {
			continue
		}
		if !c.RereadAll() || c.Revision != want {
			t.Fatalf("got %+v, want a re-read at revision %d", c, want)
		}
		return c
	}
}

// listenPIDs makes p report the server process of its listening
// connection each time it listens. Call before p watches anything.
func listenPIDs(p *Postgres) <-chan uint32 {
	pids := make(chan uint32, 16)
	p.onListen = func(pid uint32) {
		select {
		case pids <- pid:
		default:
		}
	}
	return pids
}

func recvPID(t *testing.T, pids <-chan uint32) uint32 {
	t.Helper()
	select {
	case pid := <-pids:
		return pid
	case <-time.After(hang):
		t.Fatal("the change feed never listened")
		return 0
	}
}

// terminate ends a server process of the database, as an administrator
// (or a failover) would.
func terminate(t *testing.T, db *sql.DB, pid uint32) {
	t.Helper()
	var ok bool
	if err := db.QueryRow(`SELECT pg_terminate_backend($1)`, int64(pid)).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", pid, ok, err)
	}
}

// A write through one replica reaches a subscriber of the same user on
// another at once: by NOTIFY, the poll being an hour away. Logs the
// latency from the write's start to the other replica's subscriber.
func TestPostgresNotifyReachesOtherReplica(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	a := openReplica(t, dsn, keyDir, noPoll, nil)
	b := openReplica(t, dsn, keyDir, noPoll, nil)
	u := addUserT(t, a, "a@example.com")
	other := addUserT(t, a, "other@example.com")
	sa, sb := userT(t, a, u.ID), userT(t, b, u.ID)
	chB := sb.Subscribe(ctx)

	if err := sa.AddServer(ctx, noneServer("x", "https://x.example.com")); err != nil {
		t.Fatal(err)
	}
	recvRevision(t, chB, 1)
	if l, err := sb.ListServers(ctx); err != nil || len(l) != 1 {
		t.Fatalf("B lists %d servers, %v", len(l), err)
	}
	// Another user's write is not this user's change: the next change B
	// sees is its own user's next revision.
	if err := userT(t, a, other.ID).PutKV(ctx, "ns", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}

	const n = 50
	total, after := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if err := sa.PutKV(ctx, "ns", "k", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		committed := time.Now()
		recvRevision(t, chB, int64(i+2))
		total, after = append(total, time.Since(start)), append(after, time.Since(committed))
	}
	slices.Sort(total)
	slices.Sort(after)
	t.Logf("write on replica A → subscriber on replica B, %d writes: from the write's start median %v, max %v; from its return median %v, max %v",
		n, total[n/2], total[n-1], after[n/2], after[n-1])
}

// A notification lost with the listening connection is not a lost
// change: the replica listens again and reads every revision once, and
// notifications reach it again afterwards. A write that notifies nobody
// (here one behind the store's back) is caught by the read after
// listening again; with a short poll, by the poll.
func TestPostgresListenerReconnects(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	raw := pgOpenRaw(t, dsn)
	a := openReplica(t, dsn, keyDir, noPoll, nil)
	b := openReplica(t, dsn, keyDir, noPoll, nil)
	pids := listenPIDs(b)
	u := addUserT(t, a, "a@example.com")
	sa, sb := userT(t, a, u.ID), userT(t, b, u.ID)
	chB := sb.Subscribe(ctx)
	first := recvPID(t, pids)
	var app string
	if err := raw.QueryRow(`SELECT application_name FROM pg_stat_activity WHERE pid = $1`, int64(first)).Scan(&app); err != nil || app != listenAppName {
		t.Fatalf("the listening connection's application_name = %q, %v; want %q", app, err, listenAppName)
	}
	// Once B has seen a notified write, the read it asked for when it
	// first listened is behind it.
	if err := sa.PutKV(ctx, "ns", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	recvRevision(t, chB, 1)

	// A write nobody is told about, then the listening connection dies.
	if _, err := raw.Exec(`UPDATE users SET revision = revision + 1 WHERE id = $1`, u.ID); err != nil {
		t.Fatal(err)
	}
	terminate(t, raw, first)
	if again := recvPID(t, pids); again == first {
		t.Fatalf("listening again on the terminated process %d", again)
	}
	recvRevision(t, chB, 2)
	// And notifications arrive again.
	if err := sa.PutKV(ctx, "ns", "k", []byte("2")); err != nil {
		t.Fatal(err)
	}
	recvRevision(t, chB, 3)

	// With a short poll, a write nobody is told about arrives anyway.
	c := openReplica(t, dsn, keyDir, testPoll, nil)
	chC := userT(t, c, u.ID).Subscribe(ctx)
	if _, err := raw.Exec(`UPDATE users SET revision = revision + 1 WHERE id = $1`, u.ID); err != nil {
		t.Fatal(err)
	}
	recvRevision(t, chC, 4)
}

// Notifications of other programs on the channel, and of users nobody
// watches, are ignored; they deliver nothing and break nothing.
func TestPostgresNotifyIgnoresStrangers(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	raw := pgOpenRaw(t, dsn)
	a := openReplica(t, dsn, keyDir, noPoll, nil)
	b := openReplica(t, dsn, keyDir, noPoll, nil)
	pids := listenPIDs(b)
	u := addUserT(t, a, "a@example.com")
	sa, sb := userT(t, a, u.ID), userT(t, b, u.ID)
	chB := sb.Subscribe(ctx)
	recvPID(t, pids)
	for _, payload := range []string{"", "u_nobody", strings.Repeat("x", 1000), "'; DROP TABLE users; --"} {
		if _, err := raw.Exec(`SELECT pg_notify($1, $2)`, feedChannel, payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := sa.PutKV(ctx, "ns", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	recvRevision(t, chB, 1)
	b.nmu.Lock()
	left := len(b.notify)
	b.nmu.Unlock()
	if left != 0 {
		t.Errorf("%d notified users left waiting", left)
	}
}

// syncBuffer is a log destination tests read while the store writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitLog waits until the log holds want.
func waitLog(t *testing.T, logs *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", want, logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// advisoryHeld counts the advisory locks granted on the database of db,
// failing (and counting none) while the server cannot be reached.
func advisoryHeld(db *sql.DB) int {
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
		return -1
	}
	return n
}

// waitHeld waits until n advisory locks are granted on the database.
func waitHeld(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for advisoryHeld(db) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d advisory locks held, never %d", advisoryHeld(db), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockFails asserts that s cannot take the lock name: another process
// holds it. (Its short wait bounds nothing that must happen.)
func lockFails(t *testing.T, s *DB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	unlock, err := s.Lock(ctx, name)
	if err == nil {
		unlock()
		t.Fatalf("took %q, which another replica holds", name)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock(%q) = %v, want it to wait for the holder", name, err)
	}
}

// A replica's advisory lock survives a restart of PostgreSQL: the lock
// connection is found gone, and the lock taken again on a new one, so
// another replica still cannot take it; it can once the holder unlocks.
// The change feed listens again too: a write after the restart reaches
// the other replica, whose poll is an hour away.
func TestPostgresLocksSurviveRestart(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.NewCluster(t)
	dsn, keyDir := cluster.DSN(t), t.TempDir()
	raw := pgOpenRaw(t, dsn)
	logs := &syncBuffer{}
	a := openReplica(t, dsn, keyDir, testPoll, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	b := openReplica(t, dsn, keyDir, noPoll, nil)
	pids := listenPIDs(b)
	u := addUserT(t, a, "a@example.com")
	sa, sb := userT(t, a, u.ID), userT(t, b, u.ID)
	chB := sb.Subscribe(ctx)
	recvPID(t, pids)
	sa.Subscribe(ctx) // A listens too, as a gateway always does
	const name = "elicit-cards-i-owner"
	unlock, err := sa.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	lockFails(t, sb, name)
	// And one of another user's: every lock is taken again.
	other := addUserT(t, a, "other@example.com")
	unlockOther, err := userT(t, a, other.ID).Lock(ctx, "oauth-srv")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockOther()

	// The cluster commits asynchronously (synchronous_commit=off): a
	// crash would lose the last commits, the schema among them.
	if _, err := raw.Exec(`CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	cluster.Stop(t)
	cluster.Start(t)
	up := time.Now()
	recvPID(t, pids)
	t.Logf("replica B listens again %v after the server accepts connections", time.Since(up))
	waitHeld(t, raw, 2)
	t.Logf("replica A holds its locks again %v after the server accepts connections", time.Since(up))
	lockFails(t, sb, name)
	waitLog(t, logs, "took advisory locks again")
	if !strings.Contains(logs.String(), "locks=2") {
		t.Errorf("A's log does not say it took both locks again:\n%s", logs)
	}
	unlock()
	unlockB, err := sb.Lock(ctx, name)
	if err != nil {
		t.Fatalf("B's Lock once A unlocked: %v", err)
	}
	unlockB()
	if err := sa.PutKV(ctx, "ns", "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	recvRevision(t, chB, 1)
}

// lockPID is the server process of p's lock connection.
func lockPID(t *testing.T, p *Postgres) uint32 {
	t.Helper()
	p.locks.mu.Lock()
	defer p.locks.mu.Unlock()
	if p.locks.conn == nil {
		t.Fatal("no lock connection")
	}
	return p.locks.conn.PgConn().PID()
}

// A lock whose connection was lost and that another replica took
// meanwhile is said loudly (an error in the log) and taken back once
// the other lets it go. Holding the keeper's mutex keeps it from
// noticing the loss until the other replica has the lock.
func TestPostgresLockTakenDuringLoss(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	raw := pgOpenRaw(t, dsn)
	logs := &syncBuffer{}
	a := openReplica(t, dsn, keyDir, testPoll, slog.New(slog.NewTextHandler(logs, nil)))
	b := openReplica(t, dsn, keyDir, testPoll, nil)
	u := addUserT(t, a, "a@example.com")
	sa, sb := userT(t, a, u.ID), userT(t, b, u.ID)
	const name = "oauth-srv"
	unlockA, err := sa.Lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	pid := lockPID(t, a)
	a.locks.mu.Lock()
	terminate(t, raw, pid)
	unlockB, err := sb.Lock(ctx, name) // free once A's session has ended
	if err != nil {
		a.locks.mu.Unlock()
		t.Fatal(err)
	}
	a.locks.mu.Unlock()
	waitLog(t, logs, "level=ERROR msg=\"store: an advisory lock this process holds was taken by another process")
	unlockB()
	waitHeld(t, raw, 1)
	lockFails(t, sb, name)
	waitLog(t, logs, "took back an advisory lock")
	unlockA()
	waitHeld(t, raw, 0)
}

// What a notification may ask for is bounded: a payload longer than any
// user id, or naming a user nobody here watches, is dropped; past
// maxNotified waiting users the delivery loop reads every revision once
// instead of keeping them all.
func TestNotifiedBounds(t *testing.T) {
	p := &Postgres{watched: map[string]int{}, notify: map[string]struct{}{}, wake: make(chan struct{}, 1)}
	long := strings.Repeat("u", maxNotifyPayload+1)
	p.watched[long] = 1
	p.watched["u_watched"] = 1
	for _, payload := range []string{"", long, "u_stranger"} {
		p.notified(payload)
	}
	if users, full := p.takeNotified(); len(users) != 0 || full {
		t.Fatalf("strangers left %v (full %v)", users, full)
	}
	p.notified("u_watched")
	p.notified("u_watched")
	if users, full := p.takeNotified(); len(users) != 1 || full {
		t.Fatalf("one watched user, notified twice: %v (full %v)", users, full)
	}
	for i := range maxNotified + 1 {
		id := "u_" + strconv.Itoa(i)
		p.watched[id] = 1
		p.notified(id)
	}
	users, full := p.takeNotified()
	if len(users) != maxNotified || !full {
		t.Fatalf("%d users waiting (full %v), want %d and a read of every revision", len(users), full, maxNotified)
	}
	select {
	case <-p.wake:
	default:
		t.Fatal("the delivery loop was not woken")
	}
}

// While PostgreSQL is down, what a person is told is only that the
// gateway's database is away: the driver's words (the database's socket,
// user and name) go to the operator's log, once per outage stretch, not
// into answers a person or a host reads (issue #23: people are
// untrusted; the chaos test's outage errors showed the socket path).
func TestPostgresUnavailableSaysNoMore(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.NewCluster(t)
	dsn := cluster.DSN(t)
	raw := pgOpenRaw(t, dsn)
	logs := &syncBuffer{}
	p := openReplica(t, dsn, t.TempDir(), noPoll, slog.New(slog.NewTextHandler(logs, nil)))
	u := addUserT(t, p, "a@example.com")
	s := userT(t, p, u.ID)
	if _, err := raw.Exec(`CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	cluster.Stop(t)
	t.Cleanup(func() { cluster.Start(t) })
	errs := map[string]error{}
	_, errs["GetServer"] = s.GetServer(ctx, "x")
	errs["PutKV"] = s.PutKV(ctx, "ns", "k", []byte(`1`))
	_, errs["UserByEmail"] = p.UserByEmail(ctx, "a@example.com")
	_, errs["AddUser"] = p.AddUser(ctx, "b@example.com")
	_, errs["KVOwner"] = p.KVOwner(ctx, "mcp-http-tokens", "sha256", "x")
	for op, err := range errs {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s = %v, want ErrUnavailable", op, err)
			continue
		}
		for _, leak := range []string{"user=", "database=", "dial", "/tmp", ".s.PGSQL", "postgres:"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s's error shows %q: %v", op, leak, err)
			}
		}
	}
	if n := strings.Count(logs.String(), "the gateway's database cannot be reached"); n != 1 {
		t.Errorf("the outage was logged %d times, want once for these five failures:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), ".s.PGSQL") {
		t.Errorf("the operator's log lacks the driver's error:\n%s", logs.String())
	}
}
