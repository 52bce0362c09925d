package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/store"
)

// crash simulates the death of c's process: the OS releases its owner
// lock, and nothing else happens (its cards stay as they are).
func crash(c *Cards) { c.unlock() }

func openStoreAt(t *testing.T, dir string) *store.DB {
	t.Helper()
	st, err := store.Open(context.Background(), dir, store.Options{PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// twoProcesses returns the stores of two processes on one data directory:
// two store.Open of the same directory, or (same) one store shared by both
// instances.
func twoProcesses(t *testing.T, same bool) (a, b *store.DB) {
	dir := t.TempDir()
	a = openStoreAt(t, dir)
	if same {
		return a, a
	}
	return a, openStoreAt(t, dir)
}

// ask makes a pending card in c for an admitted call, like the manager.
func ask(t *testing.T, c *Cards, server, op string) (Card, *Admission, <-chan handled) {
	t.Helper()
	adm, err := c.Admit(testkit.Context(t), CallInfo{ServerID: server, Tool: "ask", OperationID: op, Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, p := range c.Pending() {
		before[p.ID] = true
	}
	ch := handle(testkit.Context(t), c, server, "")
	for _, p := range waitPending(t, c, len(before)+1) {
		if !before[p.ID] {
			return p, adm, ch
		}
	}
	t.Fatal("no new card")
	return Card{}, nil, nil
}

func stored(t *testing.T, kv KV, id string) Card {
	t.Helper()
	raw, err := kv.GetKV(testkit.Context(t), Namespace, id)
	if err != nil {
		t.Fatal(err)
	}
	var c Card
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func noAnswerRecords(t *testing.T, kv KV) {
	t.Helper()
	if all, err := kv.ListKV(testkit.Context(t), AnswersNamespace); err != nil || len(all) != 0 {
		t.Fatalf("answer records left behind: %d, %v", len(all), err)
	}
}

// An embedder opening cards next to a running daemon does not interrupt
// the daemon's open questions; answers given through it reach the daemon's
// call (accept with content, decline).
func TestSubmitFromAnotherInstance(t *testing.T) {
	for _, same := range []bool{false, true} {
		name := map[bool]string{false: "two stores", true: "one store"}[same]
		t.Run(name, func(t *testing.T) {
			stA, stB := twoProcesses(t, same)
			a := openCards(t, stA, Options{})
			card, adm, ch := ask(t, a, "s", "o1")

			b := openCards(t, stB, Options{})
			if got := stored(t, stB, card.ID); got.Status != StatusPending || got.Owner != card.Owner {
				t.Fatalf("opening B touched A's card: %+v", got)
			}
			if len(a.Pending()) != 1 {
				t.Fatal("A's card is no longer pending in A")
			}
			if err := b.Answer(testkit.Context(t), card.ID, Response{Action: ActionDecline}); !errors.Is(err, ErrNotOwner) {
				t.Fatalf("B.Answer on A's card = %v, want ErrNotOwner", err)
			}
			if err := b.Submit(testkit.Context(t), card.ID, Response{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}); err != nil {
				t.Fatal(err)
			}
			h := recvH(t, ch)
			if h.err != nil || h.res.Action != "accept" || h.res.Content["name"] != "Ada" || h.res.Content["age"] != float64(42) {
				t.Fatalf("A's handler = %+v, %v", h.res, h.err)
			}
			adm.Finish()
			if got := stored(t, stB, card.ID); got.Status != StatusAccepted || !got.Settled || got.Owner != card.Owner {
				t.Fatalf("card after the call = %+v", got)
			}

			card2, adm2, ch2 := ask(t, a, "s", "o2")
			if err := b.Submit(testkit.Context(t), card2.ID, Response{Action: ActionDecline, Content: map[string]any{"ignored": true}}); err != nil {
				t.Fatal(err)
			}
			if h := recvH(t, ch2); h.err != nil || h.res.Action != "decline" || h.res.Content != nil {
				t.Fatalf("A's handler = %+v, %v", h.res, h.err)
			}
			adm2.Finish()
			noAnswerRecords(t, stB)
		})
	}
}

// Submit on the owner's own instance is Answer.
func TestSubmitOwnCard(t *testing.T) {
	a := openCards(t, openStore(t), Options{})
	card, adm, ch := ask(t, a, "s", "o")
	defer adm.Finish()
	if err := a.Submit(testkit.Context(t), card.ID, Response{Action: "maybe"}); err == nil {
		t.Fatal("a bad action was accepted")
	}
	if err := a.Submit(testkit.Context(t), card.ID, Response{Action: ActionCancel}); err != nil {
		t.Fatal(err)
	}
	if h := recvH(t, ch); h.err != nil || h.res.Action != "cancel" {
		t.Fatalf("handler = %+v, %v", h.res, h.err)
	}
	if err := a.Submit(testkit.Context(t), card.ID, Response{Action: ActionCancel}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("second submit = %v", err)
	}
}

// Bad content is refused with every field problem; nothing is handed over
// and the card stays pending.
func TestSubmitInvalidContent(t *testing.T) {
	stA, stB := twoProcesses(t, false)
	a := openCards(t, stA, Options{})
	card, adm, ch := ask(t, a, "s", "o")
	defer adm.Finish()
	b := openCards(t, stB, Options{})
	err := b.Submit(testkit.Context(t), card.ID, Response{Action: ActionAccept, Content: map[string]any{"age": "old", "extra": 1}})
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("submit = %v, want a *ValidationError", err)
	}
	fields := map[string]bool{}
	for _, p := range ve.Problems {
		fields[p.Field] = true
	}
	if !fields["name"] || !fields["age"] {
		t.Fatalf("problems = %+v, want name and age", ve.Problems)
	}
	if got := stored(t, stB, card.ID); got.Status != StatusPending || len(a.Pending()) != 1 {
		t.Fatalf("card after a bad answer = %+v", got)
	}
	noAnswerRecords(t, stB)
	if err := b.Submit(testkit.Context(t), card.ID, Response{Action: ActionAccept, Content: map[string]any{"name": "Bo"}}); err != nil {
		t.Fatal(err)
	}
	if h := recvH(t, ch); h.err != nil || h.res.Content["name"] != "Bo" {
		t.Fatalf("handler = %+v, %v", h.res, h.err)
	}
}

// A closed card gives ErrNotPending, whether Submit sees it closed or the
// owner finds it closed when the answer arrives.
func TestSubmitClosedCard(t *testing.T) {
	stA, stB := twoProcesses(t, false)
	a := openCards(t, stA, Options{})
	card, adm, ch := ask(t, a, "s", "o")
	b := openCards(t, stB, Options{})
	if err := a.Answer(testkit.Context(t), card.ID, Response{Action: ActionDecline}); err != nil {
		t.Fatal(err)
	}
	recvH(t, ch)
	if err := b.Submit(testkit.Context(t), card.ID, Response{Action: ActionDecline}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("submit to an answered card = %v", err)
	}
	if err := b.Submit(testkit.Context(t), "el-none", Response{Action: ActionDecline}); !errors.Is(err, ErrUnknownCard) {
		t.Fatalf("submit to an unknown card = %v", err)
	}
	adm.Finish() // settled: A forgets the card, but still judges answers to it

	// An answer that reaches the owner after the card closed.
	rec, _ := json.Marshal(answerRecord{CardID: card.ID, Response: Response{Action: ActionCancel}, Submitted: time.Now().UTC()})
	if err := stB.PutKV(testkit.Context(t), AnswersNamespace, "ans-late", rec); err != nil {
		t.Fatal(err)
	}
	v := waitVerdict(t, stB, "ans-late")
	if err := v.err(card.ID); !errors.Is(err, ErrNotPending) {
		t.Fatalf("late answer's verdict = %+v (%v)", v, err)
	}
	if got := stored(t, stB, card.ID); got.Status != StatusDeclined {
		t.Fatalf("a late answer changed the card: %+v", got)
	}
}

// The owner checks a handed-over answer itself, and its refusal reaches
// the submitter as the same *ValidationError.
func TestOwnerValidatesHandedOverAnswer(t *testing.T) {
	stA, stB := twoProcesses(t, false)
	a := openCards(t, stA, Options{})
	card, adm, ch := ask(t, a, "s", "o")
	defer adm.Finish()
	rec, _ := json.Marshal(answerRecord{CardID: card.ID, Response: Response{Action: ActionAccept, Content: map[string]any{}}, Submitted: time.Now().UTC()})
	if err := stB.PutKV(testkit.Context(t), AnswersNamespace, "ans-bad", rec); err != nil {
		t.Fatal(err)
	}
	v := waitVerdict(t, stB, "ans-bad")
	var ve *ValidationError
	if err := v.err(card.ID); !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Field != "name" {
		t.Fatalf("verdict = %+v (%v)", v, err)
	}
	if len(a.Pending()) != 1 {
		t.Fatal("a refused answer closed the card")
	}
	a.Answer(testkit.Context(t), card.ID, Response{Action: ActionDecline})
	recvH(t, ch)
}

func waitVerdict(t *testing.T, kv KV, key string) verdict {
	t.Helper()
	ctx := testkit.Context(t)
	var v *verdict
	testkit.WaitFor(t, "the owner's verdict", func() bool {
		raw, err := kv.GetKV(ctx, AnswersNamespace, key)
		if err != nil {
			t.Fatal(err)
		}
		var rec answerRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		v = rec.Verdict
		return v != nil
	})
	return *v
}

// An answer to a card whose process is gone fails, says so, and closes
// the card as interrupted; the dead process's late Close does not
// overwrite it.
func TestSubmitOwnerGone(t *testing.T) {
	stA, stB := twoProcesses(t, false)
	a := openCards(t, stA, Options{})
	card, adm, ch := ask(t, a, "s", "o")
	b := openCards(t, stB, Options{})
	crash(a)
	err := b.Submit(testkit.Context(t), card.ID, Response{Action: ActionAccept, Content: map[string]any{"name": "Ada"}})
	if !errors.Is(err, ErrOwnerGone) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("submit = %v, want ErrOwnerGone", err)
	}
	got := stored(t, stB, card.ID)
	if got.Status != StatusInterrupted || got.Response != nil || !strings.Contains(got.FailureMessage(), "never reached the server") {
		t.Fatalf("card = %+v", got)
	}
	noAnswerRecords(t, stB)
	a.Close()
	if h := recvH(t, ch); h.err == nil {
		t.Fatalf("dead owner's handler = %+v", h.res)
	}
	adm.Finish()
	if got := stored(t, stB, card.ID); got.Status != StatusInterrupted || got.Owner != b.instance {
		t.Fatalf("the dead owner overwrote the card: %+v", got)
	}
	if err := b.Submit(testkit.Context(t), card.ID, Response{Action: ActionDecline}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("submit to the interrupted card = %v", err)
	}
}

// Submit waits for a live owner only as long as ctx allows (and withdraws
// its answer then), and notices an owner that dies while it waits.
func TestSubmitWaitsForOwner(t *testing.T) {
	stA, stB := twoProcesses(t, false)
	a := openCards(t, stA, Options{})
	card, adm, ch := ask(t, a, "s", "o")
	b := openCards(t, stB, Options{})
	// A hangs: it lives but takes no answers.
	a.stopServe()

	ctx, cancel := context.WithTimeout(testkit.Context(t), 300*time.Millisecond)
	defer cancel()
	if err := b.Submit(ctx, card.ID, Response{Action: ActionDecline}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("submit to a hung owner = %v", err)
	}
	noAnswerRecords(t, stB)

	errc := make(chan error, 1)
	ctx = testkit.Context(t)
	go func() { errc <- b.Submit(ctx, card.ID, Response{Action: ActionDecline}) }()
	testkit.WaitFor(t, "the answer to wait for its owner", func() bool {
		all, err := stB.ListKV(ctx, AnswersNamespace)
		return err == nil && len(all) == 1
	})
	crash(a)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrOwnerGone) {
			t.Fatalf("submit = %v, want ErrOwnerGone", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Submit did not notice the owner died")
	}
	noAnswerRecords(t, stB)
	a.Close()
	recvH(t, ch)
	adm.Finish()
}

// Opening cards leaves the open questions and running calls of live
// owners alone: A still answers its card and settles its call.
func TestOpenLeavesLiveOwnersAlone(t *testing.T) {
	stA, stB := twoProcesses(t, false)
	a := openCards(t, stA, Options{})
	running, adm1, ch1 := ask(t, a, "s1", "o1")
	if err := a.Answer(testkit.Context(t), running.ID, Response{Action: ActionAccept, Content: map[string]any{"name": "A"}}); err != nil {
		t.Fatal(err)
	}
	recvH(t, ch1) // answered; the call is still running
	pending, adm2, ch2 := ask(t, a, "s2", "o2")

	openCards(t, stB, Options{})
	if got := stored(t, stB, running.ID); got.Status != StatusAccepted || got.Settled || got.Owner != running.Owner {
		t.Fatalf("running call's card = %+v", got)
	}
	if got := stored(t, stB, pending.ID); got.Status != StatusPending || got.Owner != pending.Owner {
		t.Fatalf("open question = %+v", got)
	}
	if err := a.Answer(testkit.Context(t), pending.ID, Response{Action: ActionDecline}); err != nil {
		t.Fatalf("A lost its card: %v", err)
	}
	recvH(t, ch2)
	adm1.Finish()
	adm2.Finish()
	for _, id := range []string{running.ID, pending.ID} {
		if got := stored(t, stB, id); !got.Settled || got.Status == StatusInterrupted {
			t.Fatalf("card %s = %+v", id, got)
		}
	}
}

// Cards of owners that are gone are interrupted by the next Open: a
// crashed owner's are closed by it, a cleanly closed owner's already are.
func TestOpenInterruptsDeadOwners(t *testing.T) {
	t.Run("crash", func(t *testing.T) {
		stA, stC := twoProcesses(t, false)
		a := openCards(t, stA, Options{})
		card, adm, ch := ask(t, a, "s", "o")
		crash(a)
		c := openCards(t, stC, Options{})
		got := stored(t, stC, card.ID)
		if got.Status != StatusInterrupted || got.Owner != c.instance || !strings.Contains(got.Reason, "while the question was open") {
			t.Fatalf("card = %+v", got)
		}
		a.Close()
		recvH(t, ch)
		adm.Finish()
		if got := stored(t, stC, card.ID); got.Owner != c.instance || got.Status != StatusInterrupted {
			t.Fatalf("the dead owner overwrote the card: %+v", got)
		}
	})
	t.Run("close", func(t *testing.T) {
		stA, stC := twoProcesses(t, false)
		a := openCards(t, stA, Options{})
		card, adm, ch := ask(t, a, "s", "o")
		a.Close()
		recvH(t, ch)
		adm.Finish()
		c := openCards(t, stC, Options{})
		got, err := c.Get(testkit.Context(t), card.ID)
		if err != nil || got.Status != StatusInterrupted || !strings.Contains(got.Reason, "shut down") {
			t.Fatalf("card = %+v, %v", got, err)
		}
		if intr, _ := c.Interrupted(testkit.Context(t)); len(intr) != 1 || intr[0].ID != card.ID {
			t.Fatalf("interrupted = %+v", intr)
		}
	})
}

// OwnerAlive follows the owner lock.
func TestOwnerAlive(t *testing.T) {
	stA, stB := twoProcesses(t, false)
	a := openCards(t, stA, Options{})
	if !OwnerAlive(testkit.Context(t), stB, a.instance) {
		t.Fatal("an open instance looks gone")
	}
	if OwnerAlive(testkit.Context(t), stB, "i-nobody") || OwnerAlive(testkit.Context(t), stB, "") {
		t.Fatal("an unknown owner looks alive")
	}
	a.Close()
	if OwnerAlive(testkit.Context(t), stB, a.instance) {
		t.Fatal("a closed instance looks alive")
	}
}

// kvOnly hides the store's locks and feed: single-owner mode.
type kvOnly struct{ KV }

// With a plain KV there is one owner: a new instance takes every pending
// card over, and Submit is Answer.
func TestPlainKVSingleOwner(t *testing.T) {
	st := openStore(t)
	a := openCards(t, kvOnly{st}, Options{})
	card, adm, ch := ask(t, a, "s", "o")
	b := openCards(t, kvOnly{st}, Options{})
	if got := stored(t, st, card.ID); got.Status != StatusInterrupted || got.Owner != b.instance {
		t.Fatalf("card = %+v", got)
	}
	if err := b.Submit(testkit.Context(t), card.ID, Response{Action: ActionDecline}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("submit = %v", err)
	}
	a.Close()
	recvH(t, ch)
	adm.Finish()
}

// An answer the owner applied before its process ended without writing a
// verdict is recognised by the card holding it.
func TestHoldsAnswer(t *testing.T) {
	closed := Card{Status: StatusAccepted, Response: &Response{Action: ActionAccept, Content: map[string]any{"name": "Ada", "age": 42}}}
	cases := []struct {
		card Card
		r    Response
		want bool
	}{
		{closed, Response{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}, true},
		{closed, Response{Action: ActionAccept, Content: map[string]any{"name": "Bo"}}, false},
		{closed, Response{Action: ActionDecline}, false},
		{Card{Status: StatusDeclined, Response: &Response{Action: ActionDecline}}, Response{Action: ActionDecline}, true},
		{Card{Status: StatusPending}, Response{Action: ActionDecline}, false},
		{Card{Status: StatusCancelled}, Response{Action: ActionCancel}, false},
	}
	for i, tc := range cases {
		if got := holdsAnswer(tc.card, tc.r); got != tc.want {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
}
