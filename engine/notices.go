package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/session"
)

// noticeRing keeps the last MaxNoticeBacklog notices for the engine's
// subscribers, each of which remembers the sequence number it saw last.
type noticeRing struct {
	mu   sync.Mutex
	seq  uint64 // of the newest notice
	ring []localapi.Notice
	next int
	n    int
}

func (r *noticeRing) add(n localapi.Notice) {
	r.mu.Lock()
	if r.ring == nil {
		r.ring = make([]localapi.Notice, localapi.MaxNoticeBacklog)
	}
	r.seq++
	n.Seq = r.seq
	r.ring[r.next] = n
	r.next = (r.next + 1) % len(r.ring)
	r.n = min(r.n+1, len(r.ring))
	r.mu.Unlock()
}

// last is the sequence number of the newest notice.
func (r *noticeRing) last() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// after returns the kept notices newer than seq, oldest first, and the
// newest sequence number.
func (r *noticeRing) after(seq uint64) ([]localapi.Notice, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []localapi.Notice
	for i := range r.n {
		n := r.ring[(r.next-r.n+i+len(r.ring))%len(r.ring)]
		if n.Seq > seq {
			out = append(out, n)
		}
	}
	return out, r.seq
}

// notice records a server's notification and wakes the subscribers.
func (c *Engine) notice(n localapi.Notice) {
	c.notices.add(n)
	c.hub.bump(topicNotices)
}

func (c *Engine) onServerLog(id string, l session.LogMessage) {
	c.notice(localapi.Notice{Type: localapi.NoticeLog, ServerID: id, Time: l.Time, Level: l.Level, Logger: l.Logger, Text: l.Text})
}

func (c *Engine) onResourceUpdated(id, uri string) {
	c.notice(localapi.Notice{Type: localapi.NoticeResourceUpdated, ServerID: id, Time: time.Now().UTC(), URI: uri})
}

// SubscribeResource subscribes to updates of a server's resource; see
// localapi.Engine.
func (c *Engine) SubscribeResource(ctx context.Context, req localapi.ResourceSubscription) error {
	if err := c.errNotRunning(); err != nil {
		return err
	}
	if err := checkSubscription(req); err != nil {
		return err
	}
	if err := c.callable(ctx, req.ServerID); err != nil {
		return err
	}
	if err := c.Manager.SubscribeResource(ctx, req.ServerID, req.URI); err != nil {
		if errors.Is(err, session.ErrNoSubscriptions) {
			return conflict("server %s: %v", req.ServerID, err)
		}
		return unavailable(fmt.Errorf("subscribe to %s of server %s: %w", req.URI, req.ServerID, err))
	}
	return nil
}

// UnsubscribeResource gives back one subscription; see localapi.Engine.
func (c *Engine) UnsubscribeResource(ctx context.Context, req localapi.ResourceSubscription) error {
	if err := c.errNotRunning(); err != nil {
		return err
	}
	if err := checkSubscription(req); err != nil {
		return err
	}
	if !slices.Contains(c.Manager.Subscriptions(req.ServerID), req.URI) {
		return notFound("server %s has no subscription of %s", req.ServerID, req.URI)
	}
	if err := c.Manager.UnsubscribeResource(ctx, req.ServerID, req.URI); err != nil {
		return unavailable(fmt.Errorf("unsubscribe from %s of server %s: %w", req.URI, req.ServerID, err))
	}
	return nil
}

func checkSubscription(req localapi.ResourceSubscription) error {
	switch {
	case req.ServerID == "":
		return badRequest("serverId", "which server? serverId is required")
	case req.URI == "":
		return badRequest("uri", "which resource? uri is required")
	case len(req.URI) > session.MaxURI:
		return badRequest("uri", "the URI is %d bytes, more than %d", len(req.URI), session.MaxURI)
	}
	return nil
}

// SetLogLevel asks servers for log messages at a level; see
// localapi.Engine. A server without logging is skipped when every server
// is asked, and an error when it is the one asked.
func (c *Engine) SetLogLevel(ctx context.Context, req localapi.LogLevelRequest) error {
	if err := c.errNotRunning(); err != nil {
		return err
	}
	if !slices.Contains(config.LogLevels, req.Level) {
		return badRequest("level", "%q is not a log level; use one of %s", req.Level, strings.Join(config.LogLevels, ", "))
	}
	if req.ServerID != "" {
		if err := c.callable(ctx, req.ServerID); err != nil {
			return err
		}
		if err := c.Manager.SetLogLevel(ctx, req.ServerID, req.Level); err != nil {
			if errors.Is(err, session.ErrNoLogging) {
				return conflict("server %s: %v", req.ServerID, err)
			}
			return unavailable(fmt.Errorf("set the log level of server %s: %w", req.ServerID, err))
		}
		return nil
	}
	var errs []error
	for _, st := range c.Manager.Status() {
		if !st.Enabled {
			continue
		}
		if err := c.Manager.SetLogLevel(ctx, st.ID, req.Level); err != nil && !errors.Is(err, session.ErrNoLogging) {
			errs = append(errs, fmt.Errorf("server %s: %w", st.ID, err))
		}
	}
	if len(errs) > 0 {
		return unavailable(fmt.Errorf("set the log level: %w", errors.Join(errs...)))
	}
	return nil
}
