package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/internal/fanout"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
)

// maxDescription caps a tool description in characters, since it is
// server text the model always sees.
const maxDescription = 2048

// listConcurrency bounds the parallel first listings of a refresh.
const listConcurrency = 4

// registry is the engine's view of every server's capabilities: the
// manager's catalogs as one agent.Snapshot under the names the model
// sees, rebuilt when a catalog commits or a server's state or
// disabledTools change (R4.4), and a feed of new snapshots for the live
// tool list. It lists without connecting, except the servers a refresh's
// context wants (withWant): a call or a listing about one server contacts
// that server only (issue #9).
type registry struct {
	m    *manager.Manager
	snap atomic.Pointer[agent.Snapshot]
	subs *fanout.Broker[*agent.Snapshot] // each subscriber gets the newest snapshot

	buildMu sync.Mutex // serializes syncs; guards views and gen
	views   map[string]*serverView
	gen     uint64
}

// serverView is what the registry last saw of one server.
type serverView struct {
	enabled  bool
	disabled []string
	url      string           // the catalog's; another URL drops it (R2.4)
	catalog  *session.Catalog // last good; kept while reconnecting (R4.4)
	err      error
}

// newRegistry makes a registry with an empty snapshot.
func newRegistry(m *manager.Manager) *registry {
	r := &registry{m: m, views: map[string]*serverView{}, subs: fanout.New[*agent.Snapshot](1)}
	r.snap.Store(agent.NewSnapshot(0, nil, maxDescription))
	return r
}

// startRegistry lists every enabled server without connecting any
// (R2.3; issue #12): connected servers by their session's catalog, the
// others by their stored catalog when there is one. Then it follows the
// manager's events in the background, rebuilding the snapshot as they
// come. Refresh lists the servers that have no catalog yet, connecting
// the wanted ones.
func (c *Engine) startRegistry(ctx context.Context) error {
	// Subscribe before the first listing so no commit in between is
	// missed; the feed ends when Close begins.
	events := c.Manager.Subscribe(c.ctx)
	c.reg.sync(ctx, false)
	if err := ctx.Err(); err != nil {
		return err
	}
	c.goBackground(func(ctx context.Context) {
		for range events {
			// Events are snapshots and the broker may drop some, so
			// each batch re-reads the truth instead of trusting the
			// event.
			fanout.Drain(events)
			c.reg.sync(ctx, false)
		}
	})
	return nil
}

// close ends the snapshot feed; the engine's background work (the event
// loop) has stopped before.
func (r *registry) close() { r.subs.Close() }

// Snapshot returns the current snapshot (never nil).
func (r *registry) Snapshot() *agent.Snapshot { return r.snap.Load() }

// Subscribe delivers each new snapshot until ctx is done or the engine
// closes. Only the newest matters, so a slow subscriber sees the latest
// and skips the ones in between.
func (r *registry) Subscribe(ctx context.Context) <-chan *agent.Snapshot {
	return r.subs.Subscribe(ctx)
}

// Refresh re-reads every server now, connecting the enabled servers that
// have no catalog yet when ctx wants them (withWant, withWantAll).
func (r *registry) Refresh(ctx context.Context) error {
	r.sync(ctx, true)
	return ctx.Err()
}

// catalog lists a server, connecting it, when ctx wants it (see
// withWant); errNotWanted otherwise.
func (r *registry) catalog(ctx context.Context, id string) (*session.Catalog, error) {
	if w, ok := ctx.Value(wantKey{}).(wantSet); ok && !w.all && !slices.Contains(w.ids, id) {
		return nil, errNotWanted
	}
	return r.m.Catalog(ctx, id)
}

// sync brings the views in line with the manager and publishes a new
// snapshot when anything changed. It never connects unless listLazy: an
// event loop that connected would retry a failing server forever.
//
// Long: one pass over the manager's statuses under buildMu that updates
// each server's view (new, moved, disabled, ready, not ready) and sets one
// changed flag, then lists the lazy servers concurrently and publishes a
// snapshot only if anything changed; the flag and the lock span all of it.
func (r *registry) sync(ctx context.Context, listLazy bool) {
	r.buildMu.Lock()
	defer r.buildMu.Unlock()
	statuses := r.m.Status()
	changed := false
	seen := map[string]bool{}
	var lazy []string
	for _, st := range statuses {
		seen[st.ID] = true
		v := r.views[st.ID]
		if v == nil {
			v = &serverView{}
			r.views[st.ID] = v
			changed = true
		}
		if v.enabled != st.Enabled || !slices.Equal(v.disabled, st.DisabledTools) {
			v.enabled, v.disabled = st.Enabled, slices.Clone(st.DisabledTools)
			changed = true
		}
		if v.url != st.URL {
			// The server moved: what it listed before is not its catalog.
			v.url = st.URL
			if v.catalog != nil || v.err != nil {
				v.catalog, v.err = nil, nil
				changed = true
			}
		}
		if !st.Enabled {
			if v.catalog != nil || v.err != nil {
				v.catalog, v.err = nil, nil
				changed = true
			}
			continue
		}
		if st.ConnectionID != "" {
			// Ready: read the committed catalog of exactly this connection,
			// which never connects.
			if c, err := r.m.CatalogOn(st.ID, st.ConnectionID); err == nil {
				if c != v.catalog || v.err != nil {
					v.catalog, v.err = c, nil
					changed = true
				}
			}
			continue
		}
		if listLazy {
			lazy = append(lazy, st.ID)
			continue
		}
		// Not ready: keep the last good catalog; jitter is not deletion.
		// A server never listed here shows its stored catalog, if any.
		// One with held tools is read again: an accept brings them back
		// without a connect (issue #20 item 3).
		if v.catalog == nil || len(v.catalog.HeldTools) > 0 {
			if c, err := r.m.CachedCatalog(ctx, st.ID); err == nil && c != nil && c != v.catalog {
				v.catalog, v.err = c, nil
				changed = true
			}
		}
	}
	for id := range r.views {
		if !seen[id] {
			delete(r.views, id)
			changed = true
		}
	}
	if len(lazy) > 0 && r.listLazy(ctx, lazy) {
		changed = true
	}
	if !changed {
		return
	}
	r.gen++
	servers := make([]agent.ServerCatalog, 0, len(r.views))
	for id, v := range r.views {
		if v.enabled {
			servers = append(servers, agent.ServerCatalog{ID: id, DisabledTools: v.disabled, Catalog: v.catalog, Err: v.err})
		}
	}
	s := agent.NewSnapshot(r.gen, servers, maxDescription)
	r.snap.Store(s)
	r.subs.Publish(s)
}

// listLazy lists the servers ids concurrently (connecting the wanted
// ones) and reports whether any view changed. buildMu is held.
func (r *registry) listLazy(ctx context.Context, ids []string) bool {
	type res struct {
		c   *session.Catalog
		err error
	}
	out := make([]res, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listConcurrency)
	for i, id := range ids {
		g.Go(func() error {
			out[i].c, out[i].err = r.catalog(gctx, id)
			return nil
		})
	}
	_ = g.Wait()
	changed := false
	for i, id := range ids {
		v := r.views[id]
		before, beforeErr := v.catalog, errText(v.err)
		switch {
		case out[i].err == nil:
			v.catalog, v.err = out[i].c, nil
		case v.catalog == nil:
			v.err = out[i].err
		}
		// The same failure again is no news: publishing it would wake
		// every subscriber (the MCP front ends re-sync on each snapshot,
		// and their re-sync lists again), a reconnect loop against a
		// server that is down or not signed in to.
		if v.catalog != before || errText(v.err) != beforeErr {
			changed = true
		}
	}
	return changed
}

// errText is what of err is news: its message, "" for nil. A server in
// its backoff window fails with the same cause and a new retry time after
// every attempt; the time and the count alone are no news (it would publish a snapshot
// whenever an attempt's time crossed a second).
func errText(err error) string {
	if err == nil {
		return ""
	}
	var be *manager.BackoffError
	if errors.As(err, &be) && be.Err != nil {
		return "backoff: " + errText(be.Err)
	}
	return err.Error()
}
