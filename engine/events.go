package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/fanout"
	"github.com/remotemcp/remotemcp/internal/jsonenc"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// Live updates. The sources (manager events, the store's change feed,
// elicitation cards, the registry's snapshots, sign-in flows) only bump a
// per-topic generation; each subscription sends the full current list of
// every topic whose generation moved. Events may be dropped or merged
// anywhere upstream, so sending state instead of deltas is what makes a
// client converge, and a slow reader simply skips intermediate states,
// never the newest. The lists are not rebuilt from scratch for each
// subscriber: the server list keeps each server's view until what it is
// built from changes (viewCache), the tool list is encoded once per
// registry generation, and every subscriber sends the same bytes.

// topic is one kind of live data.
type topic int

const (
	topicServers topic = iota
	topicGrants
	topicCards
	topicCatalog
	topicNotices // per subscriber: the notices it has not seen (noticeRing)
	numTopics
)

var topicNames = [numTopics]localapi.EventType{localapi.EventServers, localapi.EventGrants, localapi.EventCards, localapi.EventCatalog, localapi.EventNotices}

// hub counts generations per topic and wakes subscriptions on a bump.
type hub struct {
	mu   sync.Mutex
	gens [numTopics]uint64
	wake chan struct{} // closed and replaced by every bump
}

func newHub() *hub {
	h := &hub{wake: make(chan struct{})}
	for i := range h.gens {
		h.gens[i] = 1 // subscriptions start at 0, so they send everything first
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

// startWatchers starts the goroutines that feed the hub. They end when
// the engine closes (or their source does).
func (c *Engine) startWatchers() {
	c.goBackground(func(ctx context.Context) {
		for range c.Manager.Subscribe(ctx) {
			c.hub.bump(topicServers)
		}
	})
	c.goBackground(func(ctx context.Context) {
		for ch := range c.Store.Subscribe(ctx) {
			switch {
			case ch.RereadAll():
				c.views.markStale("")
				c.hub.bump(topicServers, topicGrants, topicCards)
			case ch.Kind == store.ChangeServers || ch.Kind == store.ChangeSecrets:
				// A secret may change without the server's revision; a
				// removed server's pins go with it.
				c.views.markStale(ch.ServerID)
				c.views.markHeldStale(ch.ServerID)
				c.hub.bump(topicServers)
			case ch.Namespace == hostperm.NamespaceGrants || ch.Namespace == hostperm.NamespacePending:
				// Pending approvals are shown beside their servers too.
				c.hub.bump(topicGrants, topicServers)
			case ch.Namespace == store.PinNamespace:
				// A held tool changed again: the page reloads its card.
				c.views.markHeldStale(ch.ServerID)
				c.hub.bump(topicServers)
			case ch.Namespace == elicit.Namespace:
				c.hub.bump(topicCards)
			}
		}
	})
	if c.Elicit != nil {
		c.goBackground(func(ctx context.Context) {
			for range c.Elicit.Subscribe(ctx) {
				c.hub.bump(topicCards)
			}
		})
	}
	c.goBackground(func(ctx context.Context) {
		snaps := c.reg.Subscribe(ctx)
		for range snaps {
			fanout.Drain(snaps)
			c.hub.bump(topicCatalog, topicServers)
		}
	})
}

// topicData is the current list of a topic, encoded.
func (c *Engine) topicData(ctx context.Context, t topic) (json.RawMessage, error) {
	var v any
	var err error
	switch t {
	case topicServers:
		return c.liveServers(ctx)
	case topicCatalog:
		return c.catalog.encoded(c)
	case topicGrants:
		v, err = c.grantsState(ctx)
	case topicCards:
		v, err = c.cardList(ctx)
	}
	if err != nil {
		return nil, err
	}
	return marshal(v)
}

// subscribeCoalesce is how long a subscription waits after a wake-up for
// more bumps, so a burst of changes costs one re-read.
const subscribeCoalesce = 30 * time.Millisecond

// Subscribe delivers events until ctx ends or the engine closes: first
// the current list of every type (servers, grants, cards, catalog), then
// the new list of a type each time it changes. A slow reader misses
// intermediate events, never the newest of each type.
func (c *Engine) Subscribe(ctx context.Context) (<-chan localapi.Event, error) {
	ch := make(chan localapi.Event)
	started := c.goBackground(func(bctx context.Context) {
		defer close(ch)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(bctx, cancel)
		defer stop()
		var seen [numTopics]uint64
		// Notices are news, not state: a subscriber gets those after it
		// subscribed, each once.
		noticeSeq := c.notices.last()
		for {
			gens, wake := c.hub.state()
			for t := range numTopics {
				if gens[t] == seen[t] {
					continue
				}
				if t == topicNotices {
					items, last := c.notices.after(noticeSeq)
					if len(items) == 0 {
						seen[t] = gens[t]
						continue
					}
					b, err := marshal(items)
					if err != nil {
						c.log.Error("remotemcp: encode notices", "err", err)
						continue
					}
					select {
					case ch <- localapi.Event{Type: localapi.EventNotices, Data: b}:
						seen[t], noticeSeq = gens[t], last
					case <-ctx.Done():
						return
					}
					continue
				}
				b, err := c.topicData(ctx, t)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					c.log.Warn("remotemcp: live update", "topic", topicNames[t], "err", err)
					continue // keep the old generation: the next bump retries
				}
				select {
				// A copy: the encoded list is shared by every subscriber.
				case ch <- localapi.Event{Type: topicNames[t], Data: bytes.Clone(b)}:
					seen[t] = gens[t]
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-wake:
				select {
				case <-time.After(subscribeCoalesce):
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	})
	if !started {
		close(ch)
		return nil, &localapi.Error{Status: 503, Code: localapi.CodeUnavailable, Message: "remotemcp is closing"}
	}
	return ch, nil
}

// marshal encodes v without HTML escaping: raw bytes from servers (a
// tool's inputSchema) must reach every client unchanged (R4.1).
func marshal(v any) (json.RawMessage, error) { return jsonenc.Marshal(v) }
