package manager

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// LogSize is how many HTTP exchanges the request log keeps per server
// (R5.3, SPEC B1).
const LogSize = 50

// The shared log of a gateway keeps as many (store.RequestLogSize): a
// compile-time check that the two stay equal.
const (
	_ = uint(LogSize - store.RequestLogSize)
	_ = uint(store.RequestLogSize - LogSize)
)

// requestLog is a server's ring of its last LogSize exchanges, across
// reconnects. It has its own lock: it is written on every request.
type requestLog struct {
	mu sync.Mutex
	// ring grows with the exchanges up to LogSize, then wraps at next: a
	// lazy server that never connects costs nothing, a quiet one little.
	ring []session.Exchange
	next int // where the next exchange goes once the ring is full
	// unshelve, when set, brings back the exchanges an idle server's log
	// put on the shelf (see shelve); the ring is empty meanwhile.
	unshelve func() []session.Exchange
}

// restoreLocked brings a shelved log back. l.mu held.
func (l *requestLog) restoreLocked() {
	if l.unshelve == nil {
		return
	}
	back := l.unshelve()
	l.unshelve = nil
	if len(back) > LogSize {
		back = back[len(back)-LogSize:]
	}
	l.ring, l.next = back, 0
}

func (l *requestLog) add(ex session.Exchange) {
	l.mu.Lock()
	l.restoreLocked()
	if len(l.ring) < LogSize {
		if len(l.ring) == cap(l.ring) {
			// Doubling, but never past LogSize.
			grown := make([]session.Exchange, len(l.ring), min(max(2*cap(l.ring), 4), LogSize))
			copy(grown, l.ring)
			l.ring = grown
		}
		l.ring = append(l.ring, ex)
	} else {
		l.ring[l.next] = ex
		l.next = (l.next + 1) % LogSize
	}
	l.mu.Unlock()
}

// entriesLocked returns the stored exchanges, oldest first. l.mu held.
func (l *requestLog) entriesLocked() []session.Exchange {
	out := make([]session.Exchange, 0, len(l.ring))
	out = append(out, l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}

// snapshot returns the stored exchanges, oldest first.
func (l *requestLog) snapshot() []session.Exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.restoreLocked()
	return l.entriesLocked()
}

// RecordExchange adds an exchange made for the server outside its sessions
// (an OAuth request) to its request log; unknown ids are ignored.
func (m *Manager) RecordExchange(id string, ex session.Exchange) {
	if e := m.entry(id); e != nil {
		m.record(e.id, e.ext(), ex)
	}
}

// record adds an exchange to the server's log in memory and, in a
// gateway, to the log the replicas share (queued: no I/O here).
func (m *Manager) record(id string, x *extra, ex session.Exchange) {
	x.log.add(ex)
	if m.o.SharedLog != nil {
		m.o.SharedLog.AppendLog(id, ex)
	}
}

// Log returns the server's last LogSize HTTP exchanges, oldest first:
// method, JSON-RPC method, status, time and a redacted error — never a
// header or a body, so never a secret.
//
// With a SharedLog (a gateway's replicas, issue #23) they are the
// exchanges of every replica, this one's not yet written included. When
// the shared log cannot be read (PostgreSQL unreachable) Log falls back
// to the exchanges this process made itself and still holds in memory —
// none for a server that hibernated meanwhile, whose log is not kept in
// memory then (see shelve) — and says so in the process's log.
func (m *Manager) Log(id string) ([]session.Exchange, error) {
	e, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	if m.o.SharedLog != nil {
		ctx, cancel := context.WithTimeout(m.ctx, cacheTimeout)
		got, err := m.o.SharedLog.ReadLog(ctx, id, LogSize)
		cancel()
		if err == nil {
			return got, nil
		}
		m.log.Warn("manager: read the shared request log; showing this replica's own exchanges", "server", id, "err", err)
	}
	x := e.peek()
	if x == nil {
		return []session.Exchange{}, nil // never logged anything
	}
	return x.log.snapshot(), nil
}

// SharedLog is a request log the replicas of a gateway share (issue #23:
// a person's page on any replica shows the exchanges her hosts made
// through all of them). Nil in Options (a personal engine): each
// process keeps its own log in memory, as before.
type SharedLog interface {
	// AppendLog adds an exchange of server id. It is called on the
	// path of every request: it must neither block nor do I/O.
	AppendLog(id string, ex session.Exchange)
	// ReadLog returns the server's last n exchanges of all replicas,
	// oldest first.
	ReadLog(ctx context.Context, id string, n int) ([]session.Exchange, error)
}

// LogStore is what StoreLog needs of a store: *store.DB of a gateway
// user (store.DB.SharesRequestLog).
type LogStore interface {
	AppendRequestLog(serverID string, at time.Time, entry []byte)
	RequestLog(ctx context.Context, serverID string, n int) ([]store.RequestLogEntry, error)
}

// StoreLog is the SharedLog kept in a gateway's database: each
// exchange as its JSON (metadata only, redacted). An entry that does not
// decode (written by something else, damaged) is skipped and said in
// Logger, not fatal: one bad row must not hide the rest of the log.
type StoreLog struct {
	Store  LogStore
	Logger *slog.Logger // nil: skips silently
}

var _ SharedLog = StoreLog{}

// AppendLog queues the exchange's JSON in the store.
func (s StoreLog) AppendLog(id string, ex session.Exchange) {
	b, err := json.Marshal(ex)
	if err != nil {
		return // only plain fields: cannot happen
	}
	s.Store.AppendRequestLog(id, ex.Time, b)
}

// ReadLog reads the shared log and decodes it, skipping what does not
// decode.
func (s StoreLog) ReadLog(ctx context.Context, id string, n int) ([]session.Exchange, error) {
	rows, err := s.Store.RequestLog(ctx, id, n)
	if err != nil {
		return nil, err
	}
	out := make([]session.Exchange, 0, len(rows))
	bad := 0
	for _, r := range rows {
		var ex session.Exchange
		if err := json.Unmarshal(r.Entry, &ex); err != nil {
			bad++
			continue
		}
		out = append(out, ex)
	}
	if bad > 0 && s.Logger != nil {
		s.Logger.Warn("manager: skipped entries of the shared request log that do not decode", "server", id, "skipped", bad)
	}
	return out, nil
}

// LogShelf keeps the request logs of idle servers out of memory (in the
// store), so a hibernated server costs next to nothing (issue #12). The
// log is metadata only, redacted: never a header or a body.
type LogShelf interface {
	ShelveLog(ctx context.Context, id string, b []byte) error
	// UnshelveLog returns what was shelved (nil when nothing) and forgets it.
	UnshelveLog(ctx context.Context, id string) ([]byte, error)
}

// shelve moves a server's request log to the shelf; the next exchange or
// look at the log brings it back. A failure keeps it in memory.
//
// With a SharedLog the log is dropped from memory instead: the shared
// log has it (or its queue, until written), and Log reads it from there.
// Shelving it too would be a write of the person's settings (the KV
// table bumps the revision, and every replica would re-read her state)
// for a copy only Log's fallback would ever read.
func (m *Manager) shelve(e *entry) {
	if m.o.Logs == nil && m.o.SharedLog == nil {
		return
	}
	x := e.peek()
	if x == nil {
		return // nothing logged
	}
	l := &x.log
	l.mu.Lock()
	defer l.mu.Unlock()
	if m.o.SharedLog != nil {
		if l.unshelve == nil {
			l.ring, l.next = nil, 0
		}
		return
	}
	if l.unshelve != nil || len(l.ring) == 0 {
		return
	}
	b, err := json.Marshal(l.entriesLocked())
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), cacheTimeout)
	defer cancel()
	if err := m.o.Logs.ShelveLog(ctx, e.id, b); err != nil {
		m.log.Warn("manager: shelve the request log of an idle server", "server", e.id, "err", err)
		return
	}
	l.ring, l.next = nil, 0
	l.unshelve = func() []session.Exchange {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), cacheTimeout)
		defer cancel()
		b, err := m.o.Logs.UnshelveLog(ctx, e.id)
		var back []session.Exchange
		if err == nil && b != nil {
			err = json.Unmarshal(b, &back)
		}
		if err != nil {
			m.log.Warn("manager: bring back the request log of an idle server", "server", e.id, "err", err)
		}
		return back
	}
}
