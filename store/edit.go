package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

// Compare-and-swap edits of one server (issue #9 CAS). Several processes
// (CLI invocations, the daemon, the settings page) may change the same
// server at once; EditServer makes each change apply to the record as it
// is when the change is written, so none is lost.

const (
	// editAttempts bounds EditServer's read-edit-write rounds before it
	// gives up with ErrConflict.
	editAttempts = 50
	// editBackoffMax caps the jittered pause between two rounds.
	editBackoffMax = 20 * time.Millisecond
)

// EditServer changes one server by compare-and-swap and returns the server
// as written (secrets opened).
//
// It reads the server (secrets opened) and its revision, calls edit on a
// deep copy, validates and seals the result as UpdateServerWith does
// (including the ErrBearerRebind check, which opts.RebindBearer lifts), and
// writes it only if the server's revision is still the one it read,
// incrementing it. If another writer got in between, EditServer reads the
// fresh record and calls edit again, up to 50 times with a short jittered
// pause, then fails with an error wrapping ErrConflict. A successful write
// is published on the change feed like UpdateServer's. If edit leaves the
// server exactly as it was, nothing is written (no revision, no event).
//
// edit may therefore run several times, each time on the current record,
// and must apply its own change only, so that re-running it is correct:
// add or remove its own tool name in DisabledTools, set the one field it
// is about; never assign a list or a whole config captured earlier. It
// runs outside any transaction (it may take its time or even use the
// store) and must not keep the pointer.
//
// Nothing is written, and the stored record stays byte-for-byte as it was,
// when: edit returns an error (returned wrapped, errors.Is-able); the
// edited server is invalid, changes the id, or fails a rebind check
// (ErrBearerRebind, ErrHeaderRebind); the server does not exist
// (ErrNotFound); or a stored secret cannot be opened (ErrSealOpen: writing
// the server back would drop that secret) and the edit neither gives it
// again nor removes it (a header) or the auth that used it.
func (s *DB) EditServer(ctx context.Context, id string, edit func(*config.Server) error, opts UpdateOptions) (config.Server, error) {
	fail := func(step string, err error) (config.Server, error) {
		return config.Server{}, fmt.Errorf("store: edit server %q: %s: %w", id, step, err)
	}
	for attempt := 1; ; attempt++ {
		cur, rev, unopened, sealErrs, err := s.getServer(ctx, id)
		if err != nil {
			return fail("read", err)
		}
		next := cur.Clone()
		if err := edit(&next); err != nil {
			if sealErrs != nil {
				return fail("read", sealErrs)
			}
			return fail("edit", err)
		}
		if sealErrs != nil && !repairs(next, unopened) {
			return fail("read", &UnopenedError{Fields: unopened, Err: sealErrs})
		}
		if next.ID != id {
			return fail("edit", fmt.Errorf("the id cannot change (to %q)", next.ID))
		}
		if reflect.DeepEqual(cur, next) {
			return next, nil
		}
		rec, err := s.prepareServer(next)
		if err != nil {
			return fail("write", err)
		}
		err = s.writeTx(ctx, func(tx *txn) (*Change, error) {
			if _, err := s.replaceServer(ctx, tx, next, rec, opts, rev); err != nil {
				return nil, err
			}
			return &Change{Kind: ChangeServers, ServerID: id}, nil
		})
		switch {
		case err == nil:
			return next, nil
		case !errors.Is(err, errStale):
			return fail("write", err)
		case attempt >= editAttempts:
			return fail(fmt.Sprintf("write (gave up after %d attempts)", attempt), ErrConflict)
		}
		if err := sleepCtx(ctx, editBackoff(attempt)); err != nil {
			return fail(fmt.Sprintf("write (interrupted after %d conflicting attempts)", attempt), err)
		}
	}
}

// editBackoff is the pause after the attempt-th conflict: uniformly random
// in [0, min(2^attempt ms, editBackoffMax)), so writers that collided once
// spread out instead of colliding again.
func editBackoff(attempt int) time.Duration {
	limit := editBackoffMax
	if attempt < 10 {
		limit = min(limit, time.Millisecond<<attempt)
	}
	return rand.N(limit)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
