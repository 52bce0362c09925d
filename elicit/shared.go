package elicit

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/remotemcp/remotemcp/internal/fanout"
	"github.com/remotemcp/remotemcp/store"
)

// AnswersNamespace is the store KV namespace through which [Cards.Submit]
// hands an answer to the instance that owns the card, and gets its verdict
// back: one short-lived record per Submit.
const AnswersNamespace = "mcp_elicitation_answers"

// ErrOwnerGone: the instance (process) whose tool call asked the question
// is gone, so no answer can reach the server any more. The card is closed
// as interrupted (R6.2).
var ErrOwnerGone = errors.New("the remotemcp process that asked is gone, so an answer can no longer reach the server")

// Locker takes cross-process advisory locks; *store.DB has it.
type Locker interface {
	// Lock waits until the lock name is free or ctx is done; unlock
	// releases it.
	Lock(ctx context.Context, name string) (unlock func(), err error)
}

// SharedStore is a store several Cards instances (processes) can share:
// owner locks tell live owners from gone ones, and the change feed
// carries answers between them. *store.DB has it.
type SharedStore interface {
	KV
	Locker
	Subscribe(ctx context.Context) <-chan store.Change
}

const (
	// ownerLockWait bounds taking this instance's owner lock; its name is
	// unique, so the lock is free at once.
	ownerLockWait = 10 * time.Second
	// ownerProbe is how long OwnerAlive tries an owner's lock.
	ownerProbe = 60 * time.Millisecond
	// submitProbe is how often a waiting Submit checks that the owner
	// still lives.
	submitProbe = 500 * time.Millisecond
	// answerTTL: answer records older than this belong to a submitter
	// that is long gone; any instance deletes them.
	answerTTL = time.Hour
)

// ownerLockName is the lock an instance holds from Open until Close.
func ownerLockName(owner string) string { return "elicit-cards-" + owner }

// legacyOwnerLockName is the owner lock of remotemcp CLIs that kept
// ownership outside this package (cmd/remotemcp's cardsKV); their cards
// count as alive while they hold it.
func legacyOwnerLockName(owner string) string { return "elicit-owner-" + owner }

// OwnerAlive reports whether the instance owner (a [Card.Owner]) is still
// open: it holds its owner lock. A lock that cannot be checked counts as
// held, so a live owner's cards are never taken over by mistake. Checking
// a live owner takes a few tens of milliseconds.
func OwnerAlive(ctx context.Context, l Locker, owner string) bool {
	if owner == "" {
		return false
	}
	return lockHeld(ctx, l, ownerLockName(owner)) || lockHeld(ctx, l, legacyOwnerLockName(owner))
}

func lockHeld(ctx context.Context, l Locker, name string) bool {
	lctx, cancel := context.WithTimeout(ctx, ownerProbe)
	defer cancel()
	unlock, err := l.Lock(lctx, name)
	if err != nil {
		return true
	}
	unlock()
	return false
}

// answerRecord is one Submit under AnswersNamespace/<random key>.
type answerRecord struct {
	CardID    string    `json:"card"`
	Response  Response  `json:"response"`
	Submitted time.Time `json:"submitted"`
	// Verdict is written by the owner once it applied (or refused) the
	// answer.
	Verdict *verdict `json:"verdict,omitempty"`
}

// Verdict outcomes.
const (
	outcomeApplied    = "applied"
	outcomeNotPending = "not_pending"
	outcomeInvalid    = "invalid"
	outcomeError      = "error"
)

type verdict struct {
	Outcome  string         `json:"outcome"`
	Error    string         `json:"error,omitempty"`
	Problems []FieldProblem `json:"problems,omitempty"`
}

func verdictOf(err error) verdict {
	var ve *ValidationError
	switch {
	case err == nil:
		return verdict{Outcome: outcomeApplied}
	case errors.As(err, &ve):
		return verdict{Outcome: outcomeInvalid, Error: err.Error(), Problems: ve.Problems}
	case errors.Is(err, ErrNotPending):
		return verdict{Outcome: outcomeNotPending, Error: err.Error()}
	default:
		return verdict{Outcome: outcomeError, Error: err.Error()}
	}
}

// err is the verdict as Submit returns it.
func (v verdict) err(cardID string) error {
	switch v.Outcome {
	case outcomeApplied:
		return nil
	case outcomeInvalid:
		return &ValidationError{Problems: v.Problems}
	case outcomeNotPending:
		return fmt.Errorf("answer card %s: %w (the owner says: %s)", cardID, ErrNotPending, v.Error)
	default:
		return fmt.Errorf("answer card %s: the process that asked refused the answer: %s", cardID, v.Error)
	}
}

// Submit answers a pending card from any instance on the data directory.
// If this instance owns the card it is [Cards.Answer]. Otherwise (with a
// [SharedStore]) the answer is checked against the card's form (a
// *ValidationError names every bad field, and nothing is handed over),
// handed to the owner through the store, and Submit waits, bounded by ctx,
// for the owner's verdict: nil once the owner applied it (the tool call
// continues there), an ErrNotPending error if the card was closed
// meanwhile, or the owner's refusal. If the owner is gone, the card is
// closed as interrupted and the error wraps ErrOwnerGone. If ctx ends
// first, the answer is withdrawn and ctx's error returned (in a narrow
// race the owner may just have applied it: Get tells).
//
// With a plain [KV] store Submit is Answer.
func (c *Cards) Submit(ctx context.Context, cardID string, r Response) error {
	if err := checkAction(cardID, r.Action); err != nil {
		return err
	}
	c.mu.Lock()
	mine, closed := c.recs[cardID] != nil, c.closed
	c.mu.Unlock()
	if mine || c.shared == nil {
		return c.Answer(ctx, cardID, r)
	}
	card, err := c.load(ctx, cardID)
	if err != nil {
		return err
	}
	switch {
	case card.Owner == c.instance:
		return c.Answer(ctx, cardID, r)
	case card.Status != StatusPending:
		return fmt.Errorf("answer card %s: %w (it is %s)", cardID, ErrNotPending, card.Status)
	case closed:
		return ErrClosed
	}
	if r.Action == ActionAccept {
		form, err := card.Form()
		if err != nil {
			return fmt.Errorf("answer card %s: the server's form cannot be read: %w", cardID, err)
		}
		if _, err := form.Validate(r.Content); err != nil {
			return err
		}
	} else {
		r.Content = nil
	}
	if !OwnerAlive(ctx, c.shared, card.Owner) {
		return c.ownerGone(ctx, card)
	}
	return c.handOver(ctx, card, r)
}

// handOver writes the answer record and waits for the owner's verdict.
func (c *Cards) handOver(ctx context.Context, card Card, r Response) error {
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	// Subscribed before the record is written, so no verdict is missed.
	changes := c.shared.Subscribe(fctx)
	key := "ans-" + rand.Text()[:20]
	raw, err := json.Marshal(answerRecord{CardID: card.ID, Response: r, Submitted: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := c.kv.PutKV(ctx, AnswersNamespace, key, raw); err != nil {
		return fmt.Errorf("answer card %s: hand the answer over: %w", card.ID, err)
	}
	// Withdraws an answer nobody took, and removes a verdict once read.
	defer func() {
		if err := c.kv.DeleteKV(context.WithoutCancel(ctx), AnswersNamespace, key); err != nil {
			c.log.Warn("elicit: removing an answer record failed", "card", card.ID, "err", err)
		}
	}()
	probe := time.NewTicker(submitProbe)
	defer probe.Stop()
	for {
		v, err := c.readVerdict(ctx, key)
		switch {
		case v != nil:
			return v.err(card.ID)
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("answer card %s: %w", card.ID, err)
		}
		select {
		case <-ctx.Done():
			if v, _ := c.readVerdict(context.WithoutCancel(ctx), key); v != nil {
				return v.err(card.ID)
			}
			return fmt.Errorf("answer card %s: no verdict from the process that asked (the answer was withdrawn): %w", card.ID, ctx.Err())
		case _, ok := <-changes:
			if !ok || !fanout.Drain(changes) {
				changes = nil // the store closed: the probe goes on looking
			}
		case <-probe.C:
			if OwnerAlive(ctx, c.shared, card.Owner) {
				continue
			}
			// The verdict may have been written just before the owner
			// went away.
			if v, _ := c.readVerdict(context.WithoutCancel(ctx), key); v != nil {
				return v.err(card.ID)
			}
			// Or the owner applied the answer and its call ended, and the
			// process with it, before it wrote the verdict: the card
			// holds our answer.
			if now, err := c.load(ctx, card.ID); err == nil && holdsAnswer(now, r) {
				return nil
			}
			return c.ownerGone(ctx, card)
		}
	}
}

// holdsAnswer reports whether a closed card carries the answer r (its
// action, and every field r gave with the same value; the owner may have
// added defaults).
func holdsAnswer(card Card, r Response) bool {
	if card.Status == StatusPending || card.Response == nil || card.Response.Action != r.Action {
		return false
	}
	for k, v := range r.Content {
		a, err1 := json.Marshal(v)
		b, err2 := json.Marshal(card.Response.Content[k])
		if err1 != nil || err2 != nil || string(a) != string(b) {
			return false
		}
	}
	return true
}

// readVerdict returns the owner's verdict on the record key, nil while
// there is none.
func (c *Cards) readVerdict(ctx context.Context, key string) (*verdict, error) {
	raw, err := c.kv.GetKV(ctx, AnswersNamespace, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errors.New("the answer record vanished before the process that asked took it")
	}
	if err != nil {
		return nil, err
	}
	var rec answerRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("unreadable answer record: %w", err)
	}
	return rec.Verdict, nil
}

// ownerGone closes a card whose owner is gone as interrupted (what the
// next Open would do) and says why the answer cannot be delivered.
func (c *Cards) ownerGone(ctx context.Context, seen Card) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	card, err := c.load(ctx, seen.ID)
	if err != nil {
		return err
	}
	if card.Status != StatusPending {
		return fmt.Errorf("answer card %s: %w (it is %s: %s)", card.ID, ErrNotPending, card.Status, card.Reason)
	}
	if card.Owner == seen.Owner {
		card.Status, card.Reason = StatusInterrupted, "the remotemcp process that asked is gone, so an answer can no longer reach the server"
		card.Updated, card.Owner = time.Now().UTC(), c.instance
		if err := c.put(ctx, card); err != nil {
			c.log.Warn("elicit: closing the card of a gone process failed", "card", card.ID, "err", err)
		} else {
			c.publishCard(card)
		}
	}
	return fmt.Errorf("answer card %s: %w; the card is interrupted", card.ID, ErrOwnerGone)
}

// serveAnswers starts the goroutine that applies the answers other
// instances hand over for this instance's cards. Close stops it.
func (c *Cards) serveAnswers() {
	ctx, cancel := context.WithCancel(context.Background())
	c.stopServe = cancel
	changes := c.shared.Subscribe(ctx)
	c.wg.Go(func() {
		defer cancel()
		c.takeAnswers(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case ch, ok := <-changes:
				if !ok {
					return
				}
				relevant := ch.RereadAll() || ch.Namespace == AnswersNamespace
				for more := true; more; {
					select {
					case ch, ok := <-changes:
						if !ok {
							return
						}
						relevant = relevant || ch.RereadAll() || ch.Namespace == AnswersNamespace
					default:
						more = false
					}
				}
				if relevant {
					c.takeAnswers(ctx)
				}
			}
		}
	})
}

// takeAnswers applies the waiting answers for this instance's cards and
// writes each verdict back; it deletes records of long-gone submitters.
func (c *Cards) takeAnswers(ctx context.Context) {
	all, err := c.kv.ListKV(ctx, AnswersNamespace)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("elicit: reading handed-over answers failed", "err", err)
		}
		return
	}
	now := time.Now()
	for key, raw := range all {
		if ctx.Err() != nil {
			return
		}
		var rec answerRecord
		if json.Unmarshal(raw, &rec) != nil || rec.CardID == "" {
			continue
		}
		if now.Sub(rec.Submitted) > answerTTL {
			_ = c.kv.DeleteKV(ctx, AnswersNamespace, key)
			continue
		}
		if rec.Verdict != nil || !c.owns(ctx, rec.CardID) {
			continue
		}
		v := verdictOf(c.Answer(ctx, rec.CardID, rec.Response))
		rec.Verdict = &v
		// A submitter that gave up deleted its record: do not bring it back.
		if _, err := c.kv.GetKV(ctx, AnswersNamespace, key); err != nil {
			continue
		}
		out, err := json.Marshal(rec)
		if err == nil {
			err = c.kv.PutKV(ctx, AnswersNamespace, key, out)
		}
		if err != nil {
			c.log.Warn("elicit: writing an answer's verdict failed", "card", rec.CardID, "err", err)
		}
	}
}

// owns reports whether the card is this instance's.
func (c *Cards) owns(ctx context.Context, id string) bool {
	c.mu.Lock()
	mine := c.recs[id] != nil
	c.mu.Unlock()
	if mine {
		return true
	}
	card, err := c.load(ctx, id)
	return err == nil && card.Owner == c.instance
}

// pruneAnswers deletes the answer records of long-gone submitters.
func (c *Cards) pruneAnswers(ctx context.Context) error {
	all, err := c.kv.ListKV(ctx, AnswersNamespace)
	if err != nil {
		return fmt.Errorf("elicit: load answer records: %w", err)
	}
	now := time.Now()
	for key, raw := range all {
		var rec answerRecord
		if json.Unmarshal(raw, &rec) == nil && now.Sub(rec.Submitted) <= answerTTL {
			continue
		}
		if err := c.kv.DeleteKV(ctx, AnswersNamespace, key); err != nil {
			return fmt.Errorf("elicit: prune answer record %s: %w", key, err)
		}
	}
	return nil
}
