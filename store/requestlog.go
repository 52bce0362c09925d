package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The request log a gateway's replicas share (issue #23: "request logs
// (bounded)" are shared in PostgreSQL). Each server of each user keeps
// its last RequestLogSize exchanges in request_log, whichever replica
// made them, so that a person's page on any replica shows the calls her
// hosts made through all of them.
//
// The log is on every call's path, so it costs that path no round trip:
// AppendRequestLog only queues the entry in this process's memory, and
// one goroutine of the Postgres writes the queue in batches (every
// PostgresOptions.LogFlushInterval, or at once when requestLogBatch
// entries wait) with two statements: the insert, and the trim of the
// (user, server) pairs it touched to their last RequestLogSize. The
// queue is bounded (requestLogQueueMax): while PostgreSQL cannot be
// reached the oldest entries are dropped, counted, and said in the log;
// a call never waits for it. Writes are not changes of anyone's settings:
// they neither bump the user's revision nor notify the change feed
// (writeTx does both), else every call would make every replica re-read
// the person's state. The entries are opaque here (the manager's JSON of
// a session.Exchange: metadata only, redacted, never a header or a body).

// RequestLogSize is how many entries the shared log keeps per (user,
// server); manager.LogSize, which the manager reads.
const RequestLogSize = 50

const (
	// requestLogBatch is how many waiting entries start a flush before
	// its interval is up.
	requestLogBatch = 50
	// requestLogQueueMax bounds the entries waiting in one process.
	requestLogQueueMax = 4096
	// DefaultLogFlushInterval is how long a new entry may wait before it
	// is written, when PostgresOptions.LogFlushInterval is zero.
	DefaultLogFlushInterval = time.Second
	// requestLogTimeout bounds one flush, and the last one on Close.
	requestLogTimeout = 5 * time.Second
)

// RequestLogEntry is one entry of the shared log, as stored.
type RequestLogEntry struct {
	// At orders the entries (the exchange's time, in microseconds).
	At int64
	// Entry is what AppendRequestLog was given.
	Entry []byte
}

// RequestLogStats counts the shared log's work in this process.
type RequestLogStats struct {
	Queued     int64 // entries given to AppendRequestLog
	Written    int64 // entries written to PostgreSQL
	Dropped    int64 // entries dropped from a full queue (PostgreSQL unreachable)
	Flushes    int64 // flushes that wrote something
	Statements int64 // statements the flushes sent (successful or not)
	Failures   int64 // flushes that failed (their entries wait for the next)
	Waiting    int   // entries queued or being written now
}

// logRow is an entry waiting to be written.
type logRow struct {
	user, server string
	at           int64
	ref          string // origin and number: told apart from rows already written
	entry        []byte
}

// requestLogs is a Postgres's queue of entries and its writer.
type requestLogs struct {
	interval time.Duration
	max      int    // the queue's bound (requestLogQueueMax; tests lower it)
	origin   string // this process, in the refs of its entries

	flushMu sync.Mutex // one flush at a time (the writer, FlushRequestLog)

	mu        sync.Mutex
	queue     []logRow // oldest first
	inflight  []logRow // taken by the flush running now
	next      uint64   // the number of the next entry
	stats     RequestLogStats
	unsaid    int64 // dropped since the last warning
	failing   bool  // the last flush failed (said once)
	wake      chan struct{}
	full      chan struct{}
	done      chan struct{}
	started   bool
	closedLog bool
}

func (l *requestLogs) init(interval time.Duration) {
	if interval <= 0 {
		interval = DefaultLogFlushInterval
	}
	l.interval, l.max, l.origin = interval, requestLogQueueMax, rand.Text()[:12]
	l.wake, l.full, l.done = make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
}

// signal sends on c without waiting.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// appendLog queues an entry; the writer starts with the first.
func (p *Postgres) appendLog(user, server string, at time.Time, entry []byte) {
	l := &p.logs
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closedLog {
		return
	}
	if !l.started {
		l.started = true
		go p.logLoop()
	}
	l.next++
	l.stats.Queued++
	l.queue = append(l.queue, logRow{user: user, server: server, at: at.UnixMicro(),
		ref: l.origin + ":" + strconv.FormatUint(l.next, 36), entry: entry})
	l.dropOverLocked()
	if len(l.queue) == 1 {
		signal(l.wake)
	}
	if len(l.queue) >= requestLogBatch {
		signal(l.full)
	}
}

// dropOverLocked drops the oldest queued entries beyond the bound (the
// batch being written meanwhile is bounded alike: at most twice the
// bound in memory). l.mu held.
func (l *requestLogs) dropOverLocked() {
	if over := len(l.queue) - l.max; over > 0 {
		l.queue = slices.Delete(l.queue, 0, over)
		l.stats.Dropped += int64(over)
		l.unsaid += int64(over)
	}
}

// logLoop is the writer: it waits for a first entry, gives the batch the
// interval to gather (or less, once requestLogBatch wait), writes it,
// and on Close writes what is left, within requestLogTimeout.
func (p *Postgres) logLoop() {
	l := &p.logs
	defer close(l.done)
	last := func() {
		ctx, cancel := context.WithTimeout(context.Background(), requestLogTimeout)
		defer cancel()
		p.flushLog(ctx)
	}
	failed := false // the last flush: then wait the interval, full or not
	for {
		select {
		case <-p.ctx.Done():
			last()
			return
		case <-l.wake:
		}
		// A full signal left from before the last flush took the queue
		// is stale: the queue is looked at instead.
		select {
		case <-l.full:
		default:
		}
		l.mu.Lock()
		full := len(l.queue) >= requestLogBatch && !failed
		l.mu.Unlock()
		if !full {
			t := time.NewTimer(l.interval)
		wait:
			for {
				select {
				case <-p.ctx.Done():
					t.Stop()
					last()
					return
				case <-t.C:
					break wait
				case <-l.full:
					if !failed {
						t.Stop()
						break wait
					}
				}
			}
		}
		ctx, cancel := context.WithTimeout(p.ctx, requestLogTimeout)
		failed = p.flushLog(ctx) != nil
		cancel()
		l.mu.Lock()
		if len(l.queue) > 0 {
			signal(l.wake) // what failed, or came meanwhile
		}
		l.mu.Unlock()
	}
}

// FlushRequestLog writes the entries this process has queued for the
// shared request log now (tests; an owner that wants them out before it
// stops); Close does it too.
func (p *Postgres) FlushRequestLog(ctx context.Context) error {
	return p.flushLog(ctx)
}

// RequestLogStats returns what the shared request log did in this
// process so far.
func (p *Postgres) RequestLogStats() RequestLogStats {
	l := &p.logs
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Waiting = len(l.queue) + len(l.inflight)
	return s
}

// flushLog writes the queue. On failure the entries go back to the head
// of the queue, under its bound.
func (p *Postgres) flushLog(ctx context.Context) error {
	l := &p.logs
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	batch := l.queue
	l.queue, l.inflight = nil, batch
	l.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	n, err := p.writeLog(ctx, batch)
	l.mu.Lock()
	l.inflight = nil
	l.stats.Statements += int64(n)
	if err != nil {
		l.stats.Failures++
		l.queue = append(batch, l.queue...)
		l.dropOverLocked()
	} else {
		l.stats.Flushes++
		l.stats.Written += int64(len(batch))
	}
	unsaid := l.unsaid
	l.unsaid = 0
	waiting := len(l.queue)
	wasFailing := l.failing
	l.failing = err != nil
	l.mu.Unlock()
	if unsaid > 0 {
		p.log.Warn("store: the shared request log's queue is full (PostgreSQL unreachable?); dropped the oldest entries",
			"dropped", unsaid, "waiting", waiting)
	}
	if err != nil {
		if !wasFailing { // once per outage, not once a second
			p.log.Warn("store: write the shared request log; trying again", "entries", len(batch), "err", err)
		}
		return fmt.Errorf("store: write the shared request log: %w", err)
	}
	if wasFailing {
		p.log.Info("store: the shared request log is written again", "entries", len(batch))
	}
	return nil
}

// writeLog inserts the batch, skipping entries of servers that are gone
// (removed meanwhile, with their user perhaps), and trims the pairs it
// touched. It returns how many statements it sent. No transaction: a
// trim that fails after the insert leaves a few more rows than
// RequestLogSize until the next trim, and the readers read the last
// RequestLogSize anyway.
func (p *Postgres) writeLog(ctx context.Context, batch []logRow) (int, error) {
	users, servers, refs, entries := make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch)), make([]string, len(batch))
	ats := make([]int64, len(batch))
	type pair struct{ user, server string }
	seen := map[pair]bool{}
	var pu, ps []string
	for i, r := range batch {
		users[i], servers[i], ats[i], refs[i], entries[i] = r.user, r.server, r.at, r.ref, string(r.entry)
		if k := (pair{r.user, r.server}); !seen[k] {
			seen[k] = true
			pu, ps = append(pu, r.user), append(ps, r.server)
		}
	}
	if _, err := p.db.ExecContext(ctx, `INSERT INTO request_log (user_id, server_id, at, ref, entry)
		SELECT u.user_id, u.server_id, u.at, u.ref, u.entry
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[]) WITH ORDINALITY AS u(user_id, server_id, at, ref, entry, n)
		JOIN servers s ON s.user_id = u.user_id AND s.id = u.server_id
		ORDER BY u.n`, users, servers, ats, refs, entries); err != nil {
		return 1, fmt.Errorf("insert: %w", err)
	}
	if _, err := p.db.ExecContext(ctx, `DELETE FROM request_log r USING (
			SELECT l.seq, row_number() OVER (PARTITION BY l.user_id, l.server_id ORDER BY l.at DESC, l.seq DESC) AS n
			FROM request_log l JOIN unnest($1::text[], $2::text[]) AS t(user_id, server_id)
			ON l.user_id = t.user_id AND l.server_id = t.server_id
		) o WHERE r.seq = o.seq AND o.n > $3`, pu, ps, RequestLogSize); err != nil {
		return 2, fmt.Errorf("trim: %w", err)
	}
	return 2, nil
}

// pendingLog returns the entries of (user, server) not written yet,
// oldest first.
func (p *Postgres) pendingLog(user, server string) []logRow {
	l := &p.logs
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logRow
	for _, q := range [][]logRow{l.inflight, l.queue} {
		for _, r := range q {
			if r.user == user && r.server == server {
				out = append(out, r)
			}
		}
	}
	return out
}

// closeLog stops the writer once it wrote what was left (Close).
func (p *Postgres) closeLog() {
	l := &p.logs
	l.mu.Lock()
	l.closedLog = true
	started := l.started
	l.mu.Unlock()
	if started {
		<-l.done
	}
}

// SharesRequestLog reports whether the DB keeps a request log shared by
// the processes on its database (a gateway user's, in PostgreSQL); a
// personal store does not, and its owner keeps the log in memory.
func (s *DB) SharesRequestLog() bool { return s.pg != nil && s.user != "" }

// AppendRequestLog queues an entry of serverID's shared request log,
// which a batch writes soon (see the top of requestlog.go); it never
// waits on the database. at orders the entries across replicas. Nothing
// happens for a store that does not share its log, or once closed.
func (s *DB) AppendRequestLog(serverID string, at time.Time, entry []byte) {
	if !s.SharesRequestLog() || s.closed.Load() {
		return
	}
	s.pg.appendLog(s.user, serverID, at, entry)
}

// RequestLog returns the last n entries of serverID's shared request
// log, oldest first: those any replica wrote to the database, and this
// process's not written yet, each once. Only the DB's user's entries.
func (s *DB) RequestLog(ctx context.Context, serverID string, n int) ([]RequestLogEntry, error) {
	if !s.SharesRequestLog() {
		return nil, errors.New("store: read the request log: only a gateway's database shares it")
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("store: read the request log: %w", ErrClosed)
	}
	// The pending ones first: an entry the writer takes meanwhile is
	// then read from the database, or seen twice and kept once (its ref).
	pending := s.pg.pendingLog(s.user, serverID)
	rows, err := s.db.QueryContext(ctx, `SELECT at, ref, entry FROM request_log
		WHERE user_id = $1 AND server_id = $2 ORDER BY at DESC, seq DESC LIMIT $3`, s.user, serverID, n)
	if err != nil {
		return nil, fmt.Errorf("store: read the request log of %q: %w", serverID, s.unavailable(err))
	}
	defer rows.Close()
	var out []RequestLogEntry
	refs := map[string]bool{}
	for rows.Next() {
		var (
			e     RequestLogEntry
			ref   string
			entry sql.RawBytes
		)
		if err := rows.Scan(&e.At, &ref, &entry); err != nil {
			return nil, fmt.Errorf("store: read the request log of %q: %w", serverID, err)
		}
		e.Entry = slices.Clone([]byte(entry))
		refs[ref] = true
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read the request log of %q: %w", serverID, s.unavailable(err))
	}
	slices.Reverse(out)
	for _, r := range pending {
		if !refs[r.ref] {
			out = append(out, RequestLogEntry{At: r.at, Entry: r.entry})
		}
	}
	// Stable: the database's order (at, seq), then the queue's.
	slices.SortStableFunc(out, func(a, b RequestLogEntry) int { return cmpInt(a.At, b.At) })
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
