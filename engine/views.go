package engine

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// Server views. A listing (Servers, a live update) reads in a constant
// number of queries, whatever the number of servers: the configs, the
// revisions of every server, the held tools of every server, the grants
// and the pending approvals; the rest (states, flows) is in memory.
//
// The live server list of the subscriptions (Subscribe) is kept between
// updates: each server's view is rebuilt only when what it is built from
// changed (its revision, its status, its held tools, its sign-in flow,
// the grants …), and the list is encoded once per change for every
// subscriber. Before, every event made each subscriber rebuild every
// server with two queries each, so connecting N servers cost O(N²)
// (issue #21: 97 ms per server at 500 against 73 at 100).

// serverViews builds the list of every server: stored configs, live
// states, grants, pending approvals and flows.
func (c *Engine) serverViews(ctx context.Context) ([]localapi.Server, error) {
	// Configs and revisions in one read: each revision is its config's.
	cfgs, revs, err := c.Store.ListServersRevisions(ctx)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return nil, err
	}
	granted, pending := c.grantsAndPending(ctx)
	status := c.statusByID()
	held := c.allHeld(ctx)
	out := make([]localapi.Server, 0, len(cfgs))
	for i, srv := range cfgs {
		out = append(out, c.view(ctx, srv, revs[i], status[srv.ID], held[srv.ID], granted, pending))
	}
	return out, nil
}

// serverView builds one server's view.
func (c *Engine) serverView(ctx context.Context, id string) (*localapi.Server, error) {
	srv, rev, err := c.Store.GetServerRevision(ctx, id)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errNoServer(id)
		}
		return nil, err
	}
	granted, pending := c.grantsAndPending(ctx)
	st, serr := c.Manager.ServerStatusOf(id)
	if serr != nil {
		st = manager.ServerStatus{}
	}
	held, herr := c.Store.HeldHashes(ctx, id)
	if herr != nil {
		held = nil
	}
	v := c.view(ctx, srv, rev, st, held, granted, pending)
	return &v, nil
}

// grantsAndPending reads the granted origins and the pending approvals.
// A damaged grant or pending record is left out by the broker; the list
// still shows.
func (c *Engine) grantsAndPending(ctx context.Context) (map[string]bool, []hostperm.Pending) {
	grants, _ := c.Hosts.Grants(ctx)
	pending, _ := c.Hosts.Pending(ctx)
	granted := make(map[string]bool, len(grants))
	for _, g := range grants {
		granted[g.Origin] = true
	}
	return granted, pending
}

// statusByID is the manager's status of every server.
func (c *Engine) statusByID() map[string]manager.ServerStatus {
	l := c.Manager.Status()
	out := make(map[string]manager.ServerStatus, len(l))
	for _, st := range l {
		out[st.ID] = st
	}
	return out
}

// allHeld is the stored held-tool hashes of every server (none when they
// cannot be read: the list still shows).
func (c *Engine) allHeld(ctx context.Context) map[string]map[string]string {
	held, err := c.Store.AllHeldHashes(ctx)
	if err != nil {
		return nil
	}
	return held
}

// heldNames are a server's held tools: those of its current catalog
// (live) and those with a stored change (hashes), which an idle server
// keeps; and the hashes of the stored changes (nil when none). Names and
// hashes only: this runs for every server on every listing, so it never
// reads a definition (issue #20 item 3 review).
func heldNames(live []string, hashes map[string]string) ([]string, map[string]string) {
	out := slices.Clone(live)
	for tool := range hashes {
		out = append(out, tool)
	}
	slices.Sort(out)
	if len(hashes) == 0 {
		hashes = nil
	} else {
		hashes = maps.Clone(hashes)
	}
	return slices.Compact(out), hashes
}

// viewInputs is what one server's view is built from besides its config;
// a kept view whose inputs are equal is still current.
type viewInputs struct {
	rev     int64
	st      manager.ServerStatus
	held    map[string]string
	flow    *localapi.AuthFlow
	waiting *manager.Reason
	// signedOut is the in-memory sign-out mark: 0 unknown (state reads
	// the store), 1 not signed out, 2 signed out.
	signedOut int
	grants    uint64 // viewCache.grantsGen
}

type keptView struct {
	in viewInputs
	v  localapi.Server
}

// viewCache is the live server list of the subscriptions. Its views are
// only ever encoded, never handed out, so they are shared safely.
type viewCache struct {
	mu   sync.Mutex // one rebuild at a time; subscribers share its result
	cfgs map[string]config.Server
	revs map[string]int64 // the revision each config was read at
	// stale marks configs to read again whatever their revision: their
	// secrets changed (the store's change feed), or everything (nil
	// cfgs) after the feed lost track.
	stale map[string]bool
	// held is the stored held-tool hashes of every server (nil: read
	// them all), heldStale those to read again (the change feed's pin
	// writes): a pin table scan per update would cost O(tools).
	held      map[string]map[string]string
	heldStale map[string]bool
	views     map[string]*keptView
	order     []string // the ids of the last list, in order
	granted   map[string]bool
	pending   []hostperm.Pending
	grantsGen uint64
	enc       json.RawMessage // the last list, encoded
	built     uint64          // views built so far (tests count work with it)
}

// markStale makes the next rebuild read the config of id again ("" for
// every server, and their held tools).
func (vc *viewCache) markStale(id string) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if id == "" {
		vc.cfgs, vc.revs, vc.stale = nil, nil, nil
		vc.held, vc.heldStale = nil, nil
		return
	}
	if vc.stale == nil {
		vc.stale = map[string]bool{}
	}
	vc.stale[id] = true
}

// markHeldStale makes the next rebuild read the held tools of id again
// ("" for every server).
func (vc *viewCache) markHeldStale(id string) {
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if id == "" {
		vc.held, vc.heldStale = nil, nil
		return
	}
	if vc.heldStale == nil {
		vc.heldStale = map[string]bool{}
	}
	vc.heldStale[id] = true
}

// keptHeld brings the kept held-tool hashes up to date: all of them in
// one query the first time, then those the change feed marked. vc.mu
// held.
func (c *Engine) keptHeld(ctx context.Context) map[string]map[string]string {
	vc := &c.views
	if vc.held == nil {
		held, err := c.Store.AllHeldHashes(ctx)
		if err != nil {
			return nil // shown without; read again next time
		}
		vc.held, vc.heldStale = held, nil
		return vc.held
	}
	for id := range vc.heldStale {
		h, err := c.Store.HeldHashes(ctx, id)
		if err != nil {
			continue // stays marked
		}
		if len(h) == 0 {
			delete(vc.held, id)
		} else {
			vc.held[id] = h
		}
		delete(vc.heldStale, id)
	}
	return vc.held
}

// liveServers is the encoded server list of the subscriptions, rebuilt
// where it changed (see viewCache).
func (c *Engine) liveServers(ctx context.Context) (json.RawMessage, error) {
	vc := &c.views
	vc.mu.Lock()
	defer vc.mu.Unlock()
	revs, err := c.Store.ServerRevisions(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.refreshConfigs(ctx, revs); err != nil {
		return nil, err
	}
	changed := false
	granted, pending := c.grantsAndPending(ctx)
	if vc.grantsGen == 0 || !maps.Equal(granted, vc.granted) || !reflect.DeepEqual(pending, vc.pending) {
		vc.granted, vc.pending = granted, pending
		vc.grantsGen++
	}
	status := c.statusByID()
	held := c.keptHeld(ctx)
	if vc.views == nil {
		vc.views = map[string]*keptView{}
	}
	out := make([]localapi.Server, 0, len(revs))
	order := make([]string, 0, len(revs))
	for _, r := range revs {
		srv, ok := vc.cfgs[r.ID]
		if !ok {
			continue // removed since the revisions were read
		}
		waiting, signedOut := c.Manager.Marks(r.ID)
		in := viewInputs{rev: vc.revs[r.ID], st: status[r.ID], held: held[r.ID], flow: c.flows.view(r.ID),
			waiting: waiting, signedOut: signedOut, grants: vc.grantsGen}
		kv := vc.views[r.ID]
		// A disconnected OAuth server's state also depends on its
		// tokens (state reads them), which change without an event of
		// their own: its view is built every time.
		volatile := srv.Auth.Kind.OAuthCapable() && in.st.State != manager.StateReady
		if kv == nil || volatile || !reflect.DeepEqual(in, kv.in) {
			v := c.view(ctx, srv, in.rev, in.st, in.held, vc.granted, vc.pending)
			// state may have learnt the sign-out mark from the store.
			_, in.signedOut = c.Manager.Marks(r.ID)
			kv = &keptView{in: in, v: v}
			vc.views[r.ID] = kv
			vc.built++
			changed = true
		}
		out = append(out, kv.v)
		order = append(order, r.ID)
	}
	if !slices.Equal(order, vc.order) {
		changed = true
		for id := range vc.views {
			if _, ok := vc.cfgs[id]; !ok {
				delete(vc.views, id)
			}
		}
	}
	vc.order = order
	if changed || vc.enc == nil {
		if vc.enc, err = marshal(out); err != nil {
			return nil, err
		}
	}
	return vc.enc, nil
}

// refreshConfigs reads the configs that changed since they were kept:
// those whose revision moved, those marked stale, new ones; and forgets
// removed ones. A first read (or one after the feed lost track) reads
// them all in one query. vc.mu held.
func (c *Engine) refreshConfigs(ctx context.Context, revs []store.IDRevision) error {
	vc := &c.views
	present := make(map[string]bool, len(revs))
	var todo []store.IDRevision
	for _, r := range revs {
		present[r.ID] = true
		if rev, ok := vc.revs[r.ID]; !ok || rev != r.Revision || vc.stale[r.ID] {
			todo = append(todo, r)
		}
	}
	for id := range vc.cfgs {
		if !present[id] {
			delete(vc.cfgs, id)
			delete(vc.revs, id)
		}
	}
	if vc.cfgs == nil {
		vc.cfgs, vc.revs = map[string]config.Server{}, map[string]int64{}
	}
	if len(todo) > 8 {
		// Many at once (the first read): one query. Each config is kept
		// with the revision read before it, so one written in between is
		// read again next time, never kept as current.
		cfgs, err := c.Store.ListServers(ctx)
		if err != nil && !errors.Is(err, store.ErrSealOpen) {
			return err
		}
		want := make(map[string]int64, len(todo))
		for _, r := range todo {
			want[r.ID] = r.Revision
		}
		for _, srv := range cfgs {
			if rev, ok := want[srv.ID]; ok {
				vc.cfgs[srv.ID], vc.revs[srv.ID] = srv, rev
				delete(vc.stale, srv.ID)
			}
		}
		return nil
	}
	for _, r := range todo {
		srv, rev, err := c.Store.GetServerRevision(ctx, r.ID)
		if err != nil && !errors.Is(err, store.ErrSealOpen) {
			if errors.Is(err, store.ErrNotFound) {
				continue // removed meanwhile
			}
			return err
		}
		vc.cfgs[r.ID], vc.revs[r.ID] = srv, rev
		delete(vc.stale, r.ID)
	}
	return nil
}

// view builds one server's view from its stored config and revision,
// its manager status, its stored held-tool hashes, the grants and the
// pending approvals.
func (c *Engine) view(ctx context.Context, srv config.Server, rev int64, st manager.ServerStatus, held map[string]string, granted map[string]bool, pending []hostperm.Pending) localapi.Server {
	origin, _ := config.Origin(srv.URL)
	v := localapi.Server{
		ID: srv.ID, Name: srv.Name, URL: srv.URL, Origin: origin,
		Enabled: srv.Enabled, ConnectOnStartup: srv.ConnectOnStartup,
		Auth: localapi.AuthInfo{
			Kind: srv.Auth.Kind, HasToken: srv.Auth.Token != "", ClientID: srv.Auth.ClientID,
			HasClientSecret: srv.Auth.ClientSecret != "", Scopes: slices.Clone(srv.Auth.Scopes),
			RedirectPort: srv.Auth.RedirectPort, ClientMetadataURL: srv.Auth.ClientMetadataURL,
		},
		DisabledTools: append([]string{}, srv.DisabledTools...),
		PinnedTools:   slices.Clone(srv.PinnedTools),
		State:         localapi.StateDisconnected,
		OriginGranted: granted[origin],
		Pending:       []localapi.Pending{},
	}
	if srv.ToolTimeout != 0 {
		v.ToolTimeout = time.Duration(srv.ToolTimeout).String()
	}
	v.IdleTimeout = srv.Idle().String()
	v.Limits = srv.Limits
	// Names only: header values are secrets (SPEC §9 A2).
	v.HeaderNames = headerNames(srv.Headers)
	v.ProtocolVersion, v.LogLevel = srv.ProtocolVersion, srv.LogLevel
	v.Approval, v.Trusted, v.Shared = approvalOf(srv.Approval), srv.Trusted, srv.Shared
	v.Revision = rev
	for _, p := range pending {
		if p.ServerID == srv.ID || (p.ServerID == "" && p.Origin == origin) {
			v.Pending = append(v.Pending, pendingOf(p))
		}
	}
	oauthKind := srv.Auth.Kind.OAuthCapable()
	if oauthKind {
		v.Authorization = c.flows.view(srv.ID)
	}
	if st.ID == srv.ID {
		v.ToolCount = st.ToolCount
		v.HeldTools, v.HeldHashes = heldNames(st.HeldTools, held)
		v.Unpinnable = st.Unpinnable
		// The session's catalog when connected, else the stored one:
		// nothing connects (R2.3).
		if cat, err := c.Manager.CachedCatalog(ctx, srv.ID); err == nil && cat != nil {
			v.Instructions = cat.Instructions
		}
	}
	v.State, v.Reason = c.state(ctx, srv, st)
	if st.ID == srv.ID && st.RetryAt != nil && v.State != localapi.StateReady {
		at := *st.RetryAt
		v.RetryAt = &at
	}
	return v
}
