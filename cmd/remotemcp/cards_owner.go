package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/store"
)

// Several remotemcp processes may use one data directory at once: a `call`
// waiting for an answer, the `elicitations answer` that gives it, a
// `retry`. elicit.Cards assumes one owner per data directory: elicit.Open
// closes every pending card as interrupted, also those another live
// process is waiting on. cardsKV is the store as this CLI's cards see it,
// and adds what is missing for several processes:
//
//   - liveness: before a card of this process reaches the store, the
//     process takes the lock "elicit-owner-<instance>" (instance = the
//     card's Owner) and holds it until it exits, so that any process can
//     tell a card whose process is gone (the lock is free) from one that is
//     still waiting (ownerAlive);
//   - no takeover of live cards: while elicit.Open runs, the cards of live
//     processes are hidden from it, so opening the cards never interrupts
//     another process's open question or running call.
type cardsKV struct {
	*store.SQLite

	mu      sync.Mutex
	held    map[string]func() // owner instance → unlock
	opening bool
}

func newCardsKV(st *store.SQLite) *cardsKV {
	return &cardsKV{SQLite: st, held: map[string]func(){}}
}

// ownerLockName is the lock a card's owner holds while it lives.
func ownerLockName(owner string) string { return "elicit-owner-" + owner }

// open opens the cards of the data directory without taking over the
// cards of live processes.
func (k *cardsKV) open(ctx context.Context, o elicit.Options) (*elicit.Cards, error) {
	k.mu.Lock()
	k.opening = true
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.opening = false
		k.mu.Unlock()
	}()
	return elicit.Open(ctx, k, o)
}

// PutKV takes the owner lock of a card before the card is written.
func (k *cardsKV) PutKV(ctx context.Context, ns, key string, value []byte) error {
	if ns == elicit.Namespace {
		var c elicit.Card
		if err := json.Unmarshal(value, &c); err == nil && c.Owner != "" {
			if err := k.hold(ctx, c.Owner); err != nil {
				return err
			}
		}
	}
	return k.SQLite.PutKV(ctx, ns, key, value)
}

// hold takes the owner lock of this process's cards (once).
func (k *cardsKV) hold(ctx context.Context, owner string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.held[owner] != nil {
		return nil
	}
	// The name is unique to this process, so the lock is free at once.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	unlock, err := k.Lock(lctx, ownerLockName(owner))
	if err != nil {
		return fmt.Errorf("mark the elicitation card as this process's: %w", err)
	}
	k.held[owner] = unlock
	return nil
}

// ListKV hides, while the cards are being opened, the cards of processes
// that are still running.
func (k *cardsKV) ListKV(ctx context.Context, ns string) (map[string][]byte, error) {
	all, err := k.SQLite.ListKV(ctx, ns)
	k.mu.Lock()
	opening := k.opening
	k.mu.Unlock()
	if err != nil || ns != elicit.Namespace || !opening {
		return all, err
	}
	alive := map[string]bool{}
	for key, raw := range all {
		var c elicit.Card
		if json.Unmarshal(raw, &c) != nil || c.Owner == "" {
			continue
		}
		live, ok := alive[c.Owner]
		if !ok {
			live = ownerAlive(ctx, k.SQLite, c.Owner)
			alive[c.Owner] = live
		}
		if live {
			delete(all, key)
		}
	}
	return all, nil
}

// release lets go of the owner locks; call it after the cards are closed.
func (k *cardsKV) release() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for owner, unlock := range k.held {
		unlock()
		delete(k.held, owner)
	}
}

// ownerProbe is how long ownerAlive tries the owner lock.
const ownerProbe = 60 * time.Millisecond

// ownerAlive reports whether the process that owns cards of owner still
// runs: it holds the owner lock. An owner whose lock cannot be checked
// counts as alive, so that its cards are never taken over by mistake.
func ownerAlive(ctx context.Context, st *store.SQLite, owner string) bool {
	lctx, cancel := context.WithTimeout(ctx, ownerProbe)
	defer cancel()
	unlock, err := st.Lock(lctx, ownerLockName(owner))
	if err != nil {
		return true
	}
	unlock()
	return false
}
