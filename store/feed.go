package store

import (
	"context"
	"sync"
	"time"
)

// subscriberBuffer is the capacity of a subscriber channel. One slot is
// kept free for the "re-read everything" event that replaces whatever a
// slow subscriber would otherwise miss.
const subscriberBuffer = 64

// feed is the change feed of one *DB: the subscribers, and the poller
// that notices writes of other processes.
type feed struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
	// own holds the revisions this *DB committed that the poller has not
	// passed yet; nil while no poller runs (nothing needs them then).
	own map[int64]struct{}

	// startMu is held while the poller is being started, so every Subscribe
	// returns only after the poller's starting revision was read: a write
	// after Subscribe returns is always reported.
	startMu  sync.Mutex
	started  bool
	stop     chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

type subscriber struct {
	ch chan Change
	// rereadQueued: the last item in ch is a coalesced "re-read everything"
	// event; further events are covered by it until ch drains.
	rereadQueued bool
	stopAfter    func() bool // unregisters the ctx.Done hook
}

func (f *feed) init() {
	f.subs = make(map[*subscriber]struct{})
	f.stop = make(chan struct{})
	f.stopped = make(chan struct{})
}

// Subscribe delivers changes until ctx is done or the store is closed; the
// channel is closed then. Writes of this *DB arrive at once with their
// server id (or KV namespace); writes of another process or another *DB
// on the same data directory arrive within a few PollIntervals as a Change
// whose RereadAll is true. In a gateway's PostgreSQL database they arrive
// as soon as they commit (LISTEN/NOTIFY, pgfeed.go), and the poll only
// catches what a lost notification missed.
//
// Writers never block on a subscriber: when a subscriber's buffer fills, its
// pending events are coalesced into one RereadAll change.
func (s *DB) Subscribe(ctx context.Context) <-chan Change {
	sub := &subscriber{ch: make(chan Change, subscriberBuffer)}
	f := &s.feed
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		close(sub.ch)
		return sub.ch
	}
	f.subs[sub] = struct{}{}
	// Registered under f.mu so close() sees stopAfter set.
	sub.stopAfter = context.AfterFunc(ctx, func() { f.remove(sub) })
	f.mu.Unlock()
	s.startPoller()
	return sub.ch
}

// remove unregisters sub and closes its channel, once.
func (f *feed) remove(sub *subscriber) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[sub]; ok {
		delete(f.subs, sub)
		close(sub.ch)
	}
}

// publish hands c to every subscriber without blocking. Sends happen only
// under f.mu and receivers only take items out, so the length checks below
// cannot be overtaken by another sender.
func (f *feed) publish(c Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for sub := range f.subs {
		if sub.rereadQueued {
			if len(sub.ch) > 0 {
				// The queued re-read has not been received yet; the
				// subscriber will read state committed before c anyway.
				continue
			}
			sub.rereadQueued = false
		}
		if len(sub.ch) < cap(sub.ch)-1 {
			sub.ch <- c
			continue
		}
		sub.ch <- Change{Kind: ChangeServers, Revision: c.Revision}
		sub.rereadQueued = true
	}
}

// markOwn records a revision about to be committed by this *DB.
func (f *feed) markOwn(rev int64) {
	f.mu.Lock()
	if f.own != nil {
		f.own[rev] = struct{}{}
	}
	f.mu.Unlock()
}

// unmarkOwn forgets a revision whose commit failed, so that a write of
// another process that takes the same number is still reported.
func (f *feed) unmarkOwn(rev int64) {
	f.mu.Lock()
	delete(f.own, rev)
	f.mu.Unlock()
}

// foreign reports whether any revision in (last, cur] was not committed by
// this *DB, and forgets the own revisions up to cur.
func (f *feed) foreign(last, cur int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	// A start revision we could not read, a revision that went backwards
	// (the database was replaced, say restored from a backup), or fewer own
	// revisions than the gap: someone else wrote. Otherwise check each one;
	// revisions are consecutive, so the loop is bounded by len(own).
	foreign := last < 0 || cur < last || cur-last > int64(len(f.own))
	if !foreign {
		for r := last + 1; r <= cur; r++ {
			if _, ok := f.own[r]; !ok {
				foreign = true
				break
			}
		}
	}
	for r := range f.own {
		if r <= cur {
			delete(f.own, r)
		}
	}
	return foreign
}

// close stops the poller and closes every subscriber channel.
func (f *feed) close() {
	f.stopOnce.Do(func() { close(f.stop) })
	f.startMu.Lock()
	started := f.started
	f.started = true // no poller may start after close
	f.startMu.Unlock()
	if started {
		<-f.stopped
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for sub := range f.subs {
		sub.stopAfter()
		delete(f.subs, sub)
		close(sub.ch)
	}
}

// startPoller starts the one poller goroutine of this *DB, on the
// first Subscribe.
func (s *DB) startPoller() {
	f := &s.feed
	f.startMu.Lock()
	defer f.startMu.Unlock()
	if f.started {
		return
	}
	f.started = true
	// Record own revisions from now on, then read where we start: an own
	// write in between is both recorded and at most the start revision, and
	// is forgotten on the first poll.
	f.mu.Lock()
	f.own = make(map[int64]struct{})
	f.mu.Unlock()
	last, err := s.Revision(s.ctx)
	if err != nil {
		// The first successful poll will then report a (harmless) re-read.
		s.log.Warn("store: change poller: read start revision", "dir", s.dir, "err", err)
		last = -1
	}
	if s.pg != nil {
		// One poller reads every user's revision for the whole database.
		close(f.stopped)
		s.pg.watch(s, last)
		return
	}
	go s.poll(last)
}

// observe reports a write of another process when the revision moved
// from last to cur by anything but this DB's own writes.
func (s *DB) observe(last, cur int64) {
	if cur != last && s.feed.foreign(last, cur) {
		s.feed.publish(Change{Kind: ChangeServers, Revision: cur})
	}
}

// poll watches the revision for writes of other processes until Close.
func (s *DB) poll(last int64) {
	f := &s.feed
	defer close(f.stopped)
	t := time.NewTicker(s.pollInterval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		cur, err := s.Revision(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil {
				s.log.Warn("store: change poller: read revision", "dir", s.dir, "err", err)
			}
			continue
		}
		s.observe(last, cur)
		last = cur
	}
}
