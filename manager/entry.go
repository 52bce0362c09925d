package manager

import (
	"crypto/sha256"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

// Memory per server (issue #21). A manager may know thousands of servers
// that never connect, so an entry keeps only what every server needs: its
// state, a compact form of its config (srvConfig), and a pointer to what
// only a server that connected, failed, listed or logged needs (extra),
// made on first use. A lazy server costs a few hundred bytes.

// srvConfig is a server's stored config as its entry keeps it: the fields
// most servers set, inline, and the whole config only when it sets any
// other (a token, OAuth settings, limits, headers, ...). server() gives
// back the config exactly as stored.
type srvConfig struct {
	name, url        string
	kind             config.AuthKind
	disabled         []string
	toolTimeout      config.Duration
	idleTimeout      *config.Duration
	enabled, startup bool
	full             *config.Server // nil when the fields above are all of it
}

// compactConfig is s as an entry keeps it.
func compactConfig(s config.Server) srvConfig {
	c := srvConfig{name: s.Name, url: s.URL, kind: s.Auth.Kind, disabled: s.DisabledTools, toolTimeout: s.ToolTimeout,
		idleTimeout: s.IdleTimeout, enabled: s.Enabled, startup: s.ConnectOnStartup}
	if c.name == s.ID {
		c.name = s.ID // one string for both
	}
	for _, k := range []config.AuthKind{config.AuthNone, config.AuthBearer, config.AuthOAuth, config.AuthAuto} {
		if c.kind == k {
			c.kind = k // the constant, not a decoded copy
		}
	}
	// Compared as a whole, so a config field added later is kept too.
	if !reflect.DeepEqual(c.server(s.ID), s) {
		c.full = &s
	}
	return c
}

// server is the config as stored; id is the server's id.
func (c *srvConfig) server(id string) config.Server {
	if c.full != nil {
		return *c.full
	}
	return config.Server{ID: id, Name: c.name, URL: c.url, Auth: config.Auth{Kind: c.kind}, Enabled: c.enabled,
		DisabledTools: c.disabled, ConnectOnStartup: c.startup, ToolTimeout: c.toolTimeout, IdleTimeout: c.idleTimeout}
}

// idle is config.Server.Idle.
func (c *srvConfig) idle() time.Duration {
	if c.idleTimeout == nil {
		return config.DefaultIdleTimeout
	}
	return time.Duration(*c.idleTimeout)
}

// toolDisabled is config.Server.ToolDisabled.
func (c *srvConfig) toolDisabled(tool string) bool { return slices.Contains(c.disabled, tool) }

// trusted is config.Server.Trusted.
func (c *srvConfig) trusted() bool { return c.full != nil && c.full.Trusted }

// extra is what an entry needs once the server connected, failed, listed
// or logged: made on first use (entry.ext) and kept from then on.
type extra struct {
	bo  backoff    // the connect schedule (backoff.go; under entry.mu)
	log requestLog // the last LogSize HTTP exchanges (own lock)
	// saveMu serializes the catalog's saves to the cache; savedSeq is the
	// catalogSeq last stored or loaded from there (under entry.mu),
	// savedSum the digest of that encoding (under saveMu).
	saveMu   sync.Mutex
	savedSeq uint64
	savedSum [sha256.Size]byte
	pins     pinState // the catalog without held tools (pins.go)
}

// ext returns the entry's extra, making it on first use. Safe without
// e.mu.
func (e *entry) ext() *extra {
	if x := e.x.Load(); x != nil {
		return x
	}
	e.x.CompareAndSwap(nil, new(extra))
	return e.x.Load()
}

// peek returns the entry's extra, nil when it has none yet: for readers,
// to whom none means all zero.
func (e *entry) peek() *extra { return e.x.Load() }

// configLocked is the server's stored config. e.mu held.
func (e *entry) configLocked() config.Server { return e.conf.server(e.id) }

// dropPinViews releases the canonical forms the pins kept of a catalog
// that left memory.
func (x *extra) dropPinViews() {
	x.pins.eval.Lock()
	x.pins.formsOf, x.pins.forms = nil, nil
	x.pins.eval.Unlock()
}
