package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/store"
)

// reconcileLoop applies stored changes to live sessions (R2.4), in store
// order, one at a time: a config change is never applied out of order.
func (m *Manager) reconcileLoop(changes <-chan store.Change) {
	defer m.wg.Done()
	// A store read that fails leaves the change unapplied: the revision is
	// not marked done, and everything is re-read after a pause.
	var (
		retry   <-chan time.Time
		pending int64 // newest revision seen but not reconciled
	)
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-retry:
			retry = nil
			if err := m.reconcileAll(); err != nil {
				retry = time.After(reconcileRetry)
				continue
			}
			m.setRev(pending)
		case c, ok := <-changes:
			if !ok {
				return
			}
			pending = max(pending, c.Revision)
			var err error
			switch {
			case retry != nil:
				continue // a full re-read is due anyway
			case c.Kind == store.ChangeServers && c.ServerID != "":
				err = m.reconcileID(c.ServerID)
			case c.Kind == store.ChangeServers || c.ServerID == "" && c.Namespace == "":
				// Another process wrote, or the feed coalesced: re-read all.
				err = m.reconcileAll()
			}
			if err != nil {
				m.log.Warn("reconcile: store read failed; retrying", "err", err)
				retry = time.After(reconcileRetry)
				continue
			}
			m.setRev(c.Revision)
		}
	}
}

// reconcileRetry is the pause before re-reading the store after a failed read.
const reconcileRetry = 500 * time.Millisecond

func (m *Manager) reconcileID(id string) error {
	cfg, err := m.o.Store.GetServer(m.ctx, id)
	if errors.Is(err, store.ErrSealOpen) {
		err = nil // reconcile with what could be read; the token-less server fails to authenticate
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		m.reconcile(id, nil)
	case err != nil:
		return fmt.Errorf("read config of %s: %w", id, err)
	default:
		m.reconcile(id, &cfg)
	}
	return nil
}

func (m *Manager) reconcileAll() error {
	servers, err := m.o.Store.ListServers(m.ctx)
	if err != nil && !(errors.Is(err, store.ErrSealOpen) && servers != nil) {
		return fmt.Errorf("list servers: %w", err)
	}
	seen := map[string]bool{}
	for i := range servers {
		seen[servers[i].ID] = true
		m.reconcile(servers[i].ID, &servers[i])
	}
	m.mu.Lock()
	var gone []string
	for id := range m.entries {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	m.mu.Unlock()
	for _, id := range gone {
		m.reconcile(id, nil)
	}
	return nil
}

// reconcile brings one server in line with its stored config (nil:
// deleted). A change of URL or auth binding closes the old client behind
// the disconnect barrier first, then restores the server per
// connectOnStartup (R2.4).
func (m *Manager) reconcile(id string, cfg *config.Server) {
	if cfg == nil {
		e := m.entry(id)
		if e == nil {
			return
		}
		m.disconnect(e, StateDisconnected, false, fmt.Errorf("%w %q: it was removed", ErrUnknownServer, id))
		m.dropCatalog(id)
		e.mu.Lock()
		e.removed = true
		m.emitLocked(e)
		e.mu.Unlock()
		m.mu.Lock()
		if m.entries[id] == e {
			delete(m.entries, id)
		}
		m.mu.Unlock()
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	e := m.entries[id]
	fresh := e == nil
	if fresh {
		e = &entry{id: id, conf: compactConfig(*cfg), state: StateDisconnected}
		m.entries[id] = e
	}
	m.mu.Unlock()

	e.mu.Lock()
	old := e.configLocked()
	live := e.sess != nil || e.attempt != nil || e.reconnecting
	liveCfg := old
	if e.sess != nil {
		liveCfg = e.sess.Server()
	}
	e.conf = compactConfig(*cfg)
	changed := !config.ConnectionEqual(liveCfg, *cfg)
	// Another URL or sign-in: the catalog kept for the old one is not
	// this server's any more (R2.4).
	rebound := !fresh && CatalogKey(old) != CatalogKey(*cfg)
	if rebound {
		e.setCatalogLocked(nil)
	}
	if changed || !old.Enabled {
		// A config change is a new start: the failures of the old
		// config say nothing about the new one (issue #20 item 1).
		m.resetBackoffLocked(e)
	}
	e.mu.Unlock()
	if rebound {
		m.dropCatalog(id)
	}

	switch {
	case !cfg.Enabled:
		m.disconnect(e, StateDisconnected, false, ErrDisabled)
	case live && changed:
		m.disconnect(e, StateDisconnected, false, ErrSuperseded)
		if cfg.ConnectOnStartup && !m.o.NoStartupConnect {
			m.startConnect(e)
		}
	case !live && cfg.ConnectOnStartup && !m.o.NoStartupConnect && (fresh || !old.Enabled || changed):
		m.startConnect(e)
	default:
		e.mu.Lock()
		m.emitLocked(e)
		e.mu.Unlock()
	}
}

func (m *Manager) setRev(rev int64) {
	m.revMu.Lock()
	if rev > m.rev {
		m.rev = rev
	}
	m.revCond.Broadcast()
	m.revMu.Unlock()
}

// Sync waits until every store change up to now has been reconciled.
func (m *Manager) Sync(ctx context.Context) error {
	rev, err := m.o.Store.Revision(ctx)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() {
		m.revMu.Lock()
		m.revCond.Broadcast()
		m.revMu.Unlock()
	})
	defer stop()
	m.revMu.Lock()
	defer m.revMu.Unlock()
	for m.rev < rev {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if m.ctx.Err() != nil {
			return ErrClosed
		}
		m.revCond.Wait()
	}
	return nil
}
