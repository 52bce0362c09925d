package manager

import (
	"errors"
	"time"

	"github.com/remotemcp/remotemcp/session"
)

// Hibernation (issue #12, SPEC §9 A1): a ready session unused for the
// server's idleTimeout is closed politely (DELETE) and the server goes
// idle, keeping its catalog in the store; the next use reconnects, and
// the handshake's fresh listing replaces the stored catalog, so whatever
// changed while it slept (list_changed could not reach it) is picked up
// on wake.

// StateIdle is a hibernated server: no session, catalog kept.
const StateIdle State = "idle"

// ErrHibernated is why an idle server's session was closed.
var ErrHibernated = errors.New("unused for its idle timeout; it reconnects on the next use")

// defaultIdleCheck is how often the manager looks for idle sessions.
const defaultIdleCheck = 15 * time.Second

// idleLoop closes idle sessions until the manager closes. The checks are
// scheduled on the manager's clock, so a test with a manual one decides
// when a check runs (none runs between its steps); how long a session
// has been unused is the session's own measure, on the wall clock.
func (m *Manager) idleLoop() {
	defer m.wg.Done()
	// The timer's function only signals; the check runs here, in the
	// loop the manager owns. The next check is scheduled once this one
	// is done, so checks never overlap.
	due := make(chan struct{}, 1)
	for {
		stop := m.clock.AfterFunc(m.o.IdleCheck, func() {
			select {
			case due <- struct{}{}:
			default:
			}
		})
		select {
		case <-m.ctx.Done():
			stop()
			return
		case <-due:
		}
		m.hibernateIdle(time.Now())
	}
}

// hibernateIdle closes the sessions unused for their server's idle
// timeout. A server is not idle while a call or a question is in flight
// or a resource subscription is open.
func (m *Manager) hibernateIdle(now time.Time) {
	m.mu.Lock()
	entries := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		entries = append(entries, e)
	}
	m.mu.Unlock()
	for _, e := range entries {
		e.mu.Lock()
		sess, idle := e.sess, e.conf.idle()
		busy := sess == nil || idle <= 0 || e.state != StateReady || e.eliciting > 0 || len(e.subs) > 0 || e.timers != nil
		e.mu.Unlock()
		if busy || sess.Busy() || now.Sub(sess.LastUse()) < idle {
			continue
		}
		m.hibernate(e, sess)
	}
}

// hibernate closes sess, if it is still the server's and still idle, and
// leaves the server idle with its catalog stored. The catalog leaves
// memory: the store has it, and the registry keeps its own view.
func (m *Manager) hibernate(e *entry, sess *session.Session) {
	x := e.ext()
	// The catalog leaves memory only once the store has it. The save that
	// follows each new catalog runs in the background and may not have run
	// yet (a refresh just before, a slow or busy store): store it here
	// rather than keep it in memory for the whole sleep. saveMu, held until
	// the decision, keeps a newer catalog's save from interleaving; one
	// committed meanwhile is stored, and released, by its own save.
	x.saveMu.Lock()
	if m.o.Catalogs != nil {
		m.storeCatalogLocked(e, x)
	}
	e.mu.Lock()
	if e.sess != sess || !sess.CloseIfIdle() {
		e.mu.Unlock()
		x.saveMu.Unlock()
		return
	}
	// Until the store has it, the catalog stays in memory too.
	keep := m.o.Catalogs == nil || x.savedSeq != e.catalogSeq
	e.mu.Unlock()
	x.saveMu.Unlock()
	m.log.Info("manager: hibernate an idle server", "server", e.id, "conn", sess.ConnectionID())
	m.disconnect(e, StateIdle, keep, ErrHibernated)
	m.shelve(e)
}
