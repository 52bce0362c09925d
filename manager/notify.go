package manager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/remotemcp/remotemcp/session"
)

// Resource subscriptions (SPEC B3, §9 A7) and the log level asked of
// servers. Both belong to the server, not to one session: a subscription
// is renewed on every new session of the server (a reconnect, a restart
// of the server), and so is a log level set at run time.

// maxSubscriptions bounds the URIs subscribed per server.
const maxSubscriptions = 256

// resubscribeTimeout bounds the renewal of one subscription on a new
// session.
const resubscribeTimeout = 10 * time.Second

// SubscribeResource subscribes to updates of a resource of server id,
// connecting it when needed. Subscriptions are counted: each
// SubscribeResource needs its UnsubscribeResource, and only the first
// reaches the server. Updates reach Options.OnResourceUpdated.
func (m *Manager) SubscribeResource(ctx context.Context, id, uri string) error {
	e, err := m.lookup(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.subs[uri] > 0 {
		e.subs[uri]++
		e.mu.Unlock()
		return nil
	}
	if len(e.subs) >= maxSubscriptions {
		e.mu.Unlock()
		return fmt.Errorf("subscribe %s: server %q already has %d subscriptions, the most remotemcp keeps", uri, id, maxSubscriptions)
	}
	e.mu.Unlock()
	_, err = resendOnce(ctx, m, id, func(sess *session.Session) (struct{}, error) {
		return struct{}{}, sess.Subscribe(ctx, uri)
	})
	if err != nil {
		return err
	}
	e.mu.Lock()
	if e.subs == nil {
		e.subs = map[string]int{}
	}
	e.subs[uri]++
	e.mu.Unlock()
	return nil
}

// UnsubscribeResource gives back one subscription of uri; the last one
// unsubscribes on the server's session, if it has one.
func (m *Manager) UnsubscribeResource(ctx context.Context, id, uri string) error {
	e, err := m.lookup(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	n := e.subs[uri]
	switch {
	case n == 0:
		e.mu.Unlock()
		return fmt.Errorf("unsubscribe %s: server %q has no subscription of it", uri, id)
	case n > 1:
		e.subs[uri]--
		e.mu.Unlock()
		return nil
	}
	delete(e.subs, uri)
	sess := e.sess
	e.mu.Unlock()
	if sess == nil {
		return nil // the next session will not renew it
	}
	return sess.Unsubscribe(ctx, uri)
}

// Subscriptions are the URIs subscribed on server id, sorted.
func (m *Manager) Subscriptions(id string) []string {
	e := m.entry(id)
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Sorted(maps.Keys(e.subs))
}

// SetLogLevel asks server id for log messages at level and above on its
// current session, if it has one, and on its later sessions until the
// manager ends (the configured logLevel applies again after a restart).
// It connects nothing (R2.3).
func (m *Manager) SetLogLevel(ctx context.Context, id, level string) error {
	e, err := m.lookup(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.logLevel = level
	sess := e.sess
	e.mu.Unlock()
	if sess == nil {
		return nil
	}
	return sess.SetLogLevel(ctx, level)
}

// renew re-subscribes a new session to the server's subscriptions. A
// failure is logged: the subscription stays, for the next session.
func (m *Manager) renew(e *entry, sess *session.Session) {
	defer m.wg.Done()
	e.mu.Lock()
	uris := slices.Sorted(maps.Keys(e.subs))
	e.mu.Unlock()
	for _, uri := range uris {
		ctx, cancel := context.WithTimeout(m.ctx, resubscribeTimeout)
		err := sess.Subscribe(ctx, uri)
		cancel()
		if err != nil && m.ctx.Err() == nil {
			m.log.Warn("manager: renew a resource subscription on the new session", "server", e.id, "uri", uri, "err", err)
		}
	}
}
