package engine

import (
	"context"
	"errors"
	"os"

	"github.com/remotemcp/remotemcp/localapi"
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

// Lazy listing. A registry refresh lists (and so connects) the servers
// that have no session, but only those its context wants (registry.catalog),
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
