package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/store"
)

// Live updates. The sources (manager events, the store's change feed,
// elicitation cards, OAuth flows) only bump a per-topic generation; each
// SSE stream re-reads the full current list of every topic whose
// generation moved and sends it. Events may be dropped or merged anywhere
// upstream, so sending state instead of deltas is what makes the page
// converge, and a slow stream simply skips intermediate states.

// topic is one kind of live data.
type topic int

const (
	topicServers topic = iota
	topicGrants
	topicCards
	numTopics
)

var topicNames = [numTopics]string{EventServers, EventGrants, EventCards}

// hub counts generations per topic and wakes streams on a bump.
type hub struct {
	mu   sync.Mutex
	gens [numTopics]uint64
	wake chan struct{} // closed and replaced by every bump
}

func newHub() *hub {
	h := &hub{wake: make(chan struct{})}
	for i := range h.gens {
		h.gens[i] = 1 // streams start at 0, so they send everything first
	}
	return h
}

func (h *hub) bump(ts ...topic) {
	h.mu.Lock()
	for _, t := range ts {
		h.gens[t]++
	}
	close(h.wake)
	h.wake = make(chan struct{})
	h.mu.Unlock()
}

func (h *hub) state() ([numTopics]uint64, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gens, h.wake
}

// startWatchers starts the goroutines that feed the hub. They end when the
// daemon shuts down (or their source closes).
func (s *Server) startWatchers() {
	s.goBackground(func(ctx context.Context) {
		for range s.o.Manager.Subscribe(ctx) {
			s.hub.bump(topicServers)
		}
	})
	s.goBackground(func(ctx context.Context) {
		for c := range s.o.Store.Subscribe(ctx) {
			switch {
			case c.RereadAll():
				s.refreshSecrets(ctx)
				s.hub.bump(topicServers, topicGrants, topicCards)
			case c.Kind == store.ChangeServers || c.Kind == store.ChangeSecrets:
				s.refreshSecrets(ctx)
				s.hub.bump(topicServers)
			case c.Namespace == hostperm.NamespaceGrants || c.Namespace == hostperm.NamespacePending:
				// Pending approvals are shown beside their servers too.
				s.hub.bump(topicGrants, topicServers)
			case c.Namespace == elicit.Namespace:
				s.hub.bump(topicCards)
			}
		}
	})
	s.goBackground(func(ctx context.Context) {
		for range s.o.Cards.Subscribe(ctx) {
			s.hub.bump(topicCards)
		}
	})
}

// topicData computes the current list of a topic.
func (s *Server) topicData(ctx context.Context, t topic) (any, error) {
	switch t {
	case topicServers:
		return s.serverViews(ctx)
	case topicGrants:
		return s.grants(ctx)
	default:
		return s.cardViews(ctx)
	}
}

// sseKeepAlive is how often an idle stream gets a comment line, so that
// proxies and the browser notice a dead connection.
const sseKeepAlive = 25 * time.Second

// sseCoalesce is how long a stream waits after a wake-up for more bumps,
// so a burst of changes costs one re-read.
const sseCoalesce = 30 * time.Millisecond

// handleEvents serves GET /api/events: Server-Sent Events, one event per
// topic with its full current list (see Event), first all of them, then
// each time one changes.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	var seen [numTopics]uint64
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		gens, wake := s.hub.state()
		for t := range numTopics {
			if gens[t] == seen[t] {
				continue
			}
			data, err := s.topicData(ctx, t)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("daemon: live update", "topic", topicNames[t], "err", err)
				// Keep the old generation: the next bump retries.
				continue
			}
			b, err := marshal(data)
			if err != nil {
				s.log.Error("daemon: encode live update", "topic", topicNames[t], "err", err)
				continue
			}
			// JSON has no raw newlines, so one data line is enough.
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", topicNames[t], s.scrub(b)); err != nil {
				return
			}
			seen[t] = gens[t]
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-wake:
			select {
			case <-time.After(sseCoalesce):
			case <-ctx.Done():
				return
			case <-s.closing:
				return
			}
		case <-keep.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		}
	}
}

// refreshSecrets re-reads the bearer tokens and client secrets of every
// server, which scrub removes from anything the daemon sends.
func (s *Server) refreshSecrets(ctx context.Context) {
	srvs, _ := s.o.Store.ListServers(ctx) // with ErrSealOpen the readable ones still count
	var l []string
	for _, srv := range srvs {
		for _, v := range []string{srv.Auth.Token, srv.Auth.ClientSecret} {
			// Very short values would scrub ordinary words; no real token
			// is that short.
			if len(v) >= 8 {
				l = append(l, v)
			}
		}
	}
	s.secrets.Store(&l)
}

// scrub replaces every known secret in b. No response is meant to hold
// one (views carry only "has a token" flags); this is the net under that
// rule, for error text a server or library might have echoed a secret
// into. It cannot know OAuth access and refresh tokens, which the oauth
// package keeps to itself and never puts into errors.
func (s *Server) scrub(b []byte) []byte {
	secs := []string{s.token}
	if p := s.secrets.Load(); p != nil {
		secs = append(secs, *p...)
	}
	str := string(b)
	changed := false
	for _, sec := range secs {
		if sec != "" && strings.Contains(str, sec) {
			str = strings.ReplaceAll(str, sec, "[redacted]")
			changed = true
		}
	}
	if !changed {
		return b
	}
	return []byte(str)
}
