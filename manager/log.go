package manager

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/remotemcp/remotemcp/session"
)

// LogSize is how many HTTP exchanges the request log keeps per server
// (R5.3, SPEC B1).
const LogSize = 50

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
		e.ext().log.add(ex)
	}
}

// Log returns the server's last LogSize HTTP exchanges, oldest first:
// method, JSON-RPC method, status, time and a redacted error — never a
// header or a body, so never a secret.
func (m *Manager) Log(id string) ([]session.Exchange, error) {
	e, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	x := e.peek()
	if x == nil {
		return []session.Exchange{}, nil // never logged anything
	}
	return x.log.snapshot(), nil
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
func (m *Manager) shelve(e *entry) {
	if m.o.Logs == nil {
		return
	}
	x := e.peek()
	if x == nil {
		return // nothing logged
	}
	l := &x.log
	l.mu.Lock()
	defer l.mu.Unlock()
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
