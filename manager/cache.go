package manager

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// CatalogCache keeps each server's last good catalog across sessions and
// processes (issue #12), so a lazy or hibernated server lists its tools
// without connecting. Implementations must be safe for concurrent use.
type CatalogCache interface {
	// LoadCatalog returns the stored encoding, or nil and no error when
	// there is none.
	LoadCatalog(ctx context.Context, id string) ([]byte, error)
	SaveCatalog(ctx context.Context, id string, b []byte) error
	DeleteCatalog(ctx context.Context, id string) error
	// CatalogIDs lists the servers with a stored catalog, so that servers
	// without one are not looked up one by one.
	CatalogIDs(ctx context.Context) ([]string, error)
}

// mayHaveCatalog reports whether id may have a stored catalog: the ids
// listed once, plus those saved since. Another process's save is not
// seen; that server is then listed by connecting, as without a cache.
func (m *Manager) mayHaveCatalog(ctx context.Context, id string) bool {
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	if m.cacheIDs == nil {
		ids, err := m.o.Catalogs.CatalogIDs(ctx)
		if err != nil {
			return true // can't tell: look
		}
		m.cacheIDs = make(map[string]bool, len(ids))
		for _, k := range ids {
			m.cacheIDs[k] = true
		}
	}
	return m.cacheIDs[id]
}

// noteCatalog records that id has (or no longer has) a stored catalog.
func (m *Manager) noteCatalog(id string, has bool) {
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	if m.cacheIDs == nil {
		return // listed on first use
	}
	if has {
		m.cacheIDs[id] = true
	} else {
		delete(m.cacheIDs, id)
	}
}

// cacheTimeout bounds one read or write of the catalog cache.
const cacheTimeout = 10 * time.Second

// CatalogKey is what a stored catalog belongs to: the server's URL and
// sign-in (auth kind and binding). Another key discards it (R2.4).
func CatalogKey(s config.Server) string {
	h := sha256.New()
	h.Write([]byte(s.URL))
	h.Write([]byte{0})
	h.Write([]byte(s.Auth.Kind))
	if b := s.Auth.Binding; b != nil {
		h.Write([]byte{0})
		h.Write([]byte(b.Resource))
		h.Write([]byte{0})
		h.Write([]byte(b.Issuer))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// saveCatalog stores the entry's current catalog, after the last save:
// saves of one server run one at a time, each storing the newest catalog
// then (an older one is never written over a newer one).
func (m *Manager) saveCatalog(e *entry) {
	m.pinSoon(e) // pins.go: held tools show in status without a listing
	if m.o.Catalogs == nil {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		x := e.ext()
		x.saveMu.Lock()
		defer x.saveMu.Unlock()
		m.storeCatalogLocked(e, x)
	}()
}

// storeCatalogLocked stores the entry's current catalog unless the store
// has it already. x is e.ext(), x.saveMu held. A catalog saved after its
// server hibernated (the save was still pending then, so hibernation kept
// it) leaves memory now that the store has it.
func (m *Manager) storeCatalogLocked(e *entry, x *extra) {
	e.mu.Lock()
	c, cfg, seq := e.catalog, e.configLocked(), e.catalogSeq
	if e.sess != nil {
		cfg = e.sess.Server()
	}
	saved := x.savedSeq == seq
	e.mu.Unlock()
	if c == nil || saved {
		return
	}
	b, err := session.EncodeCatalog(c, CatalogKey(cfg))
	if err != nil {
		m.log.Warn("manager: encode the catalog for the cache", "server", e.id, "err", err)
		return
	}
	// The same catalog again (a reconnect, a refresh that changed
	// nothing) is not written again: every write wakes every process on
	// the store.
	sum := sha256.Sum256(catalogBody(b))
	if sum != x.savedSum {
		// Not cancelled by Close, which waits for it: a one-shot command
		// that listed a server leaves its catalog for the next one.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), cacheTimeout)
		defer cancel()
		if err := m.o.Catalogs.SaveCatalog(ctx, e.id, b); err != nil {
			m.log.Warn("manager: store the catalog", "server", e.id, "err", err)
			return
		}
		m.noteCatalog(e.id, true)
		x.savedSum = sum
	}
	e.mu.Lock()
	x.savedSeq = max(x.savedSeq, seq)
	release := e.state == StateIdle && e.sess == nil && e.attempt == nil && e.catalog == c && e.catalogSeq == seq
	if release {
		e.setCatalogLocked(nil)
		x.pins.raw, x.pins.view, x.pins.held = nil, nil, nil
	}
	e.mu.Unlock()
	if release {
		x.dropPinViews()
	}
}

// cachedCatalog is the server's catalog without connecting: the one in
// memory, else the stored one when it belongs to the current URL and
// sign-in and passes validation (R2.10). nil when there is none.
func (m *Manager) cachedCatalog(ctx context.Context, e *entry) *session.Catalog {
	e.mu.Lock()
	c, cfg := e.catalog, e.configLocked()
	e.mu.Unlock()
	if c != nil || m.o.Catalogs == nil || !cfg.Enabled || !m.mayHaveCatalog(ctx, e.id) {
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, cacheTimeout)
	defer cancel()
	b, err := m.o.Catalogs.LoadCatalog(ctx, e.id)
	if err != nil || b == nil {
		if err != nil {
			m.log.Warn("manager: read the stored catalog", "server", e.id, "err", err)
		}
		return nil
	}
	c, err = session.DecodeCatalog(b, CatalogKey(cfg))
	if err != nil {
		if !errors.Is(err, session.ErrStaleCatalog) {
			m.log.Warn("manager: the stored catalog is refused", "server", e.id, "err", err)
		}
		m.dropCatalog(e.id)
		return nil
	}
	sum := sha256.Sum256(catalogBody(b))
	x := e.ext()
	x.saveMu.Lock()
	defer x.saveMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.catalog == nil && CatalogKey(e.configLocked()) == CatalogKey(cfg) {
		e.setCatalogLocked(c)
		x.savedSeq, x.savedSum = e.catalogSeq, sum
	}
	return e.catalog
}

// dropCatalog forgets a server's stored catalog (its URL or sign-in
// changed, it was removed, or what was stored is refused).
func (m *Manager) dropCatalog(id string) {
	if m.o.Catalogs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, cacheTimeout)
	defer cancel()
	if err := m.o.Catalogs.DeleteCatalog(ctx, id); err != nil && m.ctx.Err() == nil {
		m.log.Warn("manager: forget the stored catalog", "server", id, "err", err)
	}
	m.noteCatalog(id, false)
}

// CachedCatalog is the server's catalog without connecting (R2.3): the
// last good one of this process or the stored one. It never counts as
// ready. nil when there is none.
func (m *Manager) CachedCatalog(ctx context.Context, id string) (*session.Catalog, error) {
	e, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	return m.viewOf(ctx, e, m.cachedCatalog(ctx, e)), nil
}

// catalogBody is a stored catalog without its save time, to tell whether
// two encodings hold the same catalog.
func catalogBody(b []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	delete(m, "saved")
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	return out
}

// KV is the key/value part of a store (*store.DB implements it).
type KV interface {
	GetKV(ctx context.Context, ns, key string) ([]byte, error)
	PutKV(ctx context.Context, ns, key string, value []byte) error
	DeleteKV(ctx context.Context, ns, key string) error
	KeysKV(ctx context.Context, ns string) ([]string, error)
}

// The KV namespaces of the servers' last good catalogs and of idle
// servers' request logs, keyed by server id.
const (
	CatalogNamespace = "catalogs"
	LogNamespace     = "request-logs"
)

// KVShelf is the CatalogCache and LogShelf of a store's key/value table:
// catalogs are shared by every process on the store.
type KVShelf struct{ KV KV }

var (
	_ CatalogCache = KVShelf{}
	_ LogShelf     = KVShelf{}
)

// LoadCatalog returns the stored catalog of id; nil when there is none.
func (s KVShelf) LoadCatalog(ctx context.Context, id string) ([]byte, error) {
	return s.get(ctx, CatalogNamespace, id)
}

// SaveCatalog stores the catalog of id, replacing the one before.
func (s KVShelf) SaveCatalog(ctx context.Context, id string, b []byte) error {
	return s.KV.PutKV(ctx, CatalogNamespace, id, b)
}

// DeleteCatalog forgets the catalog of id; a missing one is no error.
func (s KVShelf) DeleteCatalog(ctx context.Context, id string) error {
	if err := s.KV.DeleteKV(ctx, CatalogNamespace, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// CatalogIDs lists the servers with a stored catalog.
func (s KVShelf) CatalogIDs(ctx context.Context) ([]string, error) {
	return s.KV.KeysKV(ctx, CatalogNamespace)
}

// ShelveLog keeps the request log of an idle server id.
func (s KVShelf) ShelveLog(ctx context.Context, id string, b []byte) error {
	return s.KV.PutKV(ctx, LogNamespace, id, b)
}

// UnshelveLog returns the shelved request log of id and forgets it.
func (s KVShelf) UnshelveLog(ctx context.Context, id string) ([]byte, error) {
	b, err := s.get(ctx, LogNamespace, id)
	if err != nil || b == nil {
		return b, err
	}
	if err := s.KV.DeleteKV(ctx, LogNamespace, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return b, nil
}

// get reads ns/key; nil and no error when there is none.
func (s KVShelf) get(ctx context.Context, ns, key string) ([]byte, error) {
	b, err := s.KV.GetKV(ctx, ns, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return b, err
}
