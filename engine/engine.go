package engine

import (
	"context"
	"errors"
	"os"
	"slices"

	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
)

// The engine is the one implementation of the local API (issue #9).
var (
	_ localapi.Engine           = (*Engine)(nil)
	_ localapi.CallbackReceiver = (*Engine)(nil)
	_ localapi.SecretLister     = (*Engine)(nil)
)

// Health reports that the engine runs. InProcess is true unless an owner
// serves its callbacks (ServeCallbacks): the daemon, seen from its
// clients, is not in their process.
func (c *Engine) Health(ctx context.Context) (*localapi.Health, error) {
	return &localapi.Health{OK: true, Version: Version, PID: os.Getpid(), Started: c.started, InProcess: c.cbPort.Load() == 0}, nil
}

// errNotRunning answers requests that need sessions before the manager
// and the registry started (Open starts them before it returns, so only a
// request racing a failed Open meets it).
func (c *Engine) errNotRunning() error {
	if c.running {
		return nil
	}
	return &localapi.Error{Status: 503, Code: localapi.CodeUnavailable,
		Message: "remotemcp has not started its connections"}
}

// Lazy listing. The agent registry lists (and so connects) every server
// that has no session when it refreshes. The engine hands it a backend
// whose Catalog connects only the servers the request's context wants,
// so a call or a listing about one server contacts that server only
// (issue #9: in-process commands are lazy).

// wantKey carries the set of servers a refresh may connect.
type wantKey struct{}

// wantSet is the servers a refresh may connect; all means every one.
type wantSet struct {
	all bool
	ids []string
}

// withWant returns a context whose refreshes connect only ids (none when
// ids is empty).
func withWant(ctx context.Context, ids ...string) context.Context {
	return context.WithValue(ctx, wantKey{}, wantSet{ids: ids})
}

// withWantAll returns a context whose refreshes connect every enabled
// server.
func withWantAll(ctx context.Context) context.Context {
	return context.WithValue(ctx, wantKey{}, wantSet{all: true})
}

// errNotWanted is the registry's record of a server the engine chose not
// to connect; it is no failure, and never shown.
var errNotWanted = errors.New("not connected: no request needed this server yet")

// lister is the manager as the registry sees it: its Catalog connects
// only the servers a refresh wants. Calls go to the manager unchanged.
type lister struct{ *manager.Manager }

// Catalog connects only wanted servers (see withWant).
func (b lister) Catalog(ctx context.Context, id string) (*session.Catalog, error) {
	if w, ok := ctx.Value(wantKey{}).(wantSet); ok && !w.all && !slices.Contains(w.ids, id) {
		return nil, errNotWanted
	}
	return b.Manager.Catalog(ctx, id)
}
