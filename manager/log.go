package manager

import (
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
	// ring is allocated on the first exchange: a lazy server that never
	// connects costs nothing.
	ring []session.Exchange
	next int // where the next exchange goes
	n    int // how many are stored
}

func (l *requestLog) add(ex session.Exchange) {
	l.mu.Lock()
	if l.ring == nil {
		l.ring = make([]session.Exchange, LogSize)
	}
	l.ring[l.next] = ex
	l.next = (l.next + 1) % LogSize
	l.n = min(l.n+1, LogSize)
	l.mu.Unlock()
}

// snapshot returns the stored exchanges, oldest first.
func (l *requestLog) snapshot() []session.Exchange {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]session.Exchange, 0, l.n)
	for i := range l.n {
		out = append(out, l.ring[(l.next-l.n+i+LogSize)%LogSize])
	}
	return out
}

// RecordExchange adds an exchange made for the server outside its sessions
// (an OAuth request) to its request log; unknown ids are ignored.
func (m *Manager) RecordExchange(id string, ex session.Exchange) {
	if e := m.entry(id); e != nil {
		e.log.add(ex)
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
	return e.log.snapshot(), nil
}
