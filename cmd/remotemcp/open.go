package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// open opens the data directory (store and key file) without connecting
// anything.
func (a *app) open(ctx context.Context) (*remotemcp.Client, error) {
	dir := a.dataDir
	if dir == "" {
		// The injected environment, not the process's, so that tests and
		// embedders control it; store.DataDir falls back to the user config
		// directory.
		if v, ok := a.env(store.EnvHome); ok {
			dir = v
		}
	}
	// The facade's own manager is never started (commands start their own,
	// see startManager), and it must not open the elicitation cards:
	// elicit.Open would close the cards other remotemcp processes are
	// waiting on. Commands that call tools open them through cardsKV.
	c, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, Logger: a.log, NoStart: true, AskHost: a.askHost})
	if err != nil {
		return nil, fmt.Errorf("open the data directory: %w", err)
	}
	a.log.Debug("opened data directory", "dir", c.DataDir)
	return c, nil
}

// live is an opened data directory with a running manager that knows only
// the servers a command works with.
type live struct {
	c *remotemcp.Client
	m *manager.Manager
}

// Close disconnects every session, then closes the store.
func (l *live) Close() {
	l.m.Close()
	l.c.Close()
}

// managerOptions are what a command may change about its manager.
type managerOptions struct {
	// handshake bounds each connect attempt (0: the manager's default).
	handshake time.Duration
	// toolTimeout, when positive, replaces the toolTimeout of every server
	// in scope for this invocation (call --timeout).
	toolTimeout time.Duration
	// elicit answers server questions (nil declines them).
	elicit func(ctx context.Context, info manager.ElicitInfo, req *remotemcp.ElicitRequest) (*remotemcp.ElicitResult, error)
}

// startManager starts a manager over c's store that sees only the servers
// in ids (nil: all). Start connects those with connectOnStartup at once;
// the others connect on first use. handshake bounds each connect attempt
// (0: the manager's default).
//
// A manager over the whole store would, on Start, connect every startup
// server, which a command about one server has no business doing.
func (a *app) startManager(ctx context.Context, c *remotemcp.Client, ids []string, handshake time.Duration) (*live, error) {
	return a.startManagerWith(ctx, c, ids, managerOptions{handshake: handshake})
}

// startManagerWith is startManager with more options.
func (a *app) startManagerWith(ctx context.Context, c *remotemcp.Client, ids []string, o managerOptions) (*live, error) {
	var only map[string]bool
	if ids != nil {
		only = make(map[string]bool, len(ids))
		for _, id := range ids {
			only[id] = true
		}
	}
	m := manager.New(manager.Options{
		Store:            scopedStore{SQLite: c.Store, only: only, toolTimeout: o.toolTimeout},
		HTTPClient:       c.HTTP,
		Logger:           a.log,
		HandshakeTimeout: o.handshake,
		Elicit:           o.elicit,
		OAuth:            remotemcp.OAuthProvider(c.OAuth, nil),
		ClientName:       "remotemcp",
		ClientVersion:    remotemcp.Version,
	})
	if err := m.Start(ctx); err != nil {
		m.Close()
		return nil, fmt.Errorf("start the connection manager: %w", err)
	}
	return &live{c: c, m: m}, nil
}

// scopedStore is the store as a manager of one command sees it: only the
// servers the command is about, with the command's overrides.
type scopedStore struct {
	*store.SQLite
	only        map[string]bool // nil: every server
	toolTimeout time.Duration   // > 0: replaces each server's toolTimeout
}

// ListServers lists the servers in scope. A secret that cannot be opened
// does not hide the others: the server concerned fails when it connects,
// with the store's error naming it.
func (s scopedStore) ListServers(ctx context.Context) ([]config.Server, error) {
	all, err := s.SQLite.ListServers(ctx)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return nil, err
	}
	out := all[:0]
	for _, srv := range all {
		if s.only == nil || s.only[srv.ID] {
			out = append(out, s.override(srv))
		}
	}
	return out, nil
}

// GetServer reads a server in scope; the others do not exist for this
// manager, so a change to them is never picked up.
func (s scopedStore) GetServer(ctx context.Context, id string) (config.Server, error) {
	if s.only != nil && !s.only[id] {
		return config.Server{}, fmt.Errorf("server %s is not used by this command: %w", id, store.ErrNotFound)
	}
	srv, err := s.SQLite.GetServer(ctx, id)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return srv, err
	}
	return s.override(srv), err
}

func (s scopedStore) override(srv config.Server) config.Server {
	if s.toolTimeout > 0 {
		srv.ToolTimeout = config.Duration(s.toolTimeout)
	}
	return srv
}

// getServer reads one server, translating "not found" and unreadable
// secrets into what the user should do.
func getServer(ctx context.Context, st *store.SQLite, id string) (config.Server, error) {
	srv, err := st.GetServer(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return config.Server{}, errNoServer(id)
	case errors.Is(err, store.ErrSealOpen):
		return srv, sealError(id, err)
	case err != nil:
		return config.Server{}, fmt.Errorf("read server %s: %w", id, err)
	}
	return srv, nil
}

// errNoServer says a server id is not configured.
func errNoServer(id string) error {
	return fmt.Errorf("no server %q is configured (see \"remotemcp servers list\", or add it with \"remotemcp servers add %s URL\")", id, id)
}

// sealError explains a stored secret that cannot be opened.
func sealError(id string, err error) error {
	return fmt.Errorf("the stored secret of server %s cannot be opened (was the data directory's key file replaced?): %w; "+
		"re-supply the token with \"remotemcp servers set %s --bearer-env VAR\" (or --bearer-stdin), or remove and re-add the server", id, err, id)
}
