package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// TestMain checks for leaked goroutines, and stops the PostgreSQL
// cluster pgtest may have started (replicas_test.go) before.
func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Wrap(m)) }

func openStore(t *testing.T) *store.DB {
	t.Helper()
	st, err := store.Open(context.Background(), t.TempDir(), store.Options{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openCards(t *testing.T, kv KV, o Options) *Cards {
	t.Helper()
	c, err := Open(testkit.Context(t), kv, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func askRequest(mode string) *mcp.ElicitRequest {
	var schema map[string]any
	if err := json.Unmarshal([]byte(askSchema), &schema); err != nil {
		panic(err)
	}
	p := &mcp.ElicitParams{Mode: mode, Message: "What is your name?", RequestedSchema: schema}
	if mode == "url" {
		p.RequestedSchema, p.URL = nil, "https://example.com/form"
	}
	return &mcp.ElicitRequest{Params: p}
}

type handled struct {
	res *mcp.ElicitResult
	err error
}

// handle runs Handle in the background, like the SDK does, for a
// question of the one admitted call of server: the session ties a
// question to the call whose stream carried it (with no call or several,
// to none here).
func handle(ctx context.Context, c *Cards, server, conn string) <-chan handled {
	ch := make(chan handled, 1)
	op := onlyCall(c, server)
	go func() {
		res, err := c.Handle(ctx, manager.ElicitInfo{ServerID: server, ConnectionID: conn, OperationID: op}, askRequest("form"))
		ch <- handled{res, err}
	}()
	return ch
}

// onlyCall is the operation id of the one admitted call of server, or "".
func onlyCall(c *Cards, server string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.servers[server]
	if g == nil || len(g.calls) != 1 {
		return ""
	}
	for op := range g.calls {
		return op
	}
	return ""
}

func waitPending(t *testing.T, c *Cards, n int) []Card {
	t.Helper()
	var p []Card
	testkit.WaitFor(t, fmt.Sprintf("%d pending cards", n), func() bool { p = c.Pending(); return len(p) >= n })
	return p
}

func recvH(t *testing.T, ch <-chan handled) handled {
	t.Helper()
	select {
	case h := <-ch:
		return h
	case <-time.After(2 * time.Minute):
		t.Fatal("handler did not return")
		return handled{}
	}
}

func TestAnswerContinuesTheCall(t *testing.T) {
	st := openStore(t)
	c := openCards(t, st, Options{})
	events := c.Subscribe(testkit.Context(t))
	adm, err := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "ask", OperationID: "op1", Arguments: json.RawMessage(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	ch := handle(testkit.Context(t), c, "s", "c1")
	card := waitPending(t, c, 1)[0]
	if card.Tool != "ask" || card.OperationID != "op1" || string(card.Arguments) != `{"x":1}` || card.ConnectionID != "c1" || card.Status != StatusPending {
		t.Fatalf("card = %+v", card)
	}
	select {
	case ev := <-events:
		if ev.ID != card.ID || ev.Status != StatusPending {
			t.Fatalf("first event %+v", ev)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no event for the new card")
	}
	if err := c.Answer(testkit.Context(t), card.ID, Response{Action: "maybe"}); err == nil {
		t.Fatal("a bad action was accepted")
	}
	if err := c.Answer(testkit.Context(t), "el-nope", Response{Action: ActionDecline}); !errors.Is(err, ErrUnknownCard) {
		t.Fatalf("unknown card: %v", err)
	}
	if err := c.Answer(testkit.Context(t), card.ID, Response{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}); err != nil {
		t.Fatal(err)
	}
	h := recvH(t, ch)
	if h.err != nil || h.res.Action != "accept" || h.res.Content["name"] != "Ada" || h.res.Content["age"] != float64(42) {
		t.Fatalf("handler = %+v, %v", h.res, h.err)
	}
	got, _ := c.Get(testkit.Context(t), card.ID)
	if got.Status != StatusAccepted || got.Settled {
		t.Fatalf("before the call ends: %+v", got)
	}
	if intr := adm.Finish(); intr != nil {
		t.Fatalf("Finish reported an interruption: %+v", intr)
	}
	got, _ = c.Get(testkit.Context(t), card.ID)
	if !got.Settled || got.Response == nil || got.Response.Content["age"] != float64(42) {
		t.Fatalf("after the call ends: %+v", got)
	}
	all, err := c.List(testkit.Context(t))
	if err != nil || len(all) != 1 || all[0].ID != card.ID {
		t.Fatalf("List = %+v, %v", all, err)
	}
}

func TestURLModeDeclined(t *testing.T) {
	c := openCards(t, openStore(t), Options{})
	res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s"}, askRequest("url"))
	if err != nil || res.Action != "decline" {
		t.Fatalf("url mode = %+v, %v", res, err)
	}
	if all, _ := c.List(testkit.Context(t)); len(all) != 0 {
		t.Fatalf("url mode made a card: %+v", all)
	}
}

// Issue #20 item 3 (routing): with two calls in flight, a question is
// the card of the call whose stream carried it (ElicitInfo.OperationID),
// and closes when that call ends; a question tied to no call, or to a
// call not in flight, is declined and leaves no card. Before, a question
// with two calls in flight was a card of the server that either call's
// host was asked.
func TestQuestionGoesToItsCall(t *testing.T) {
	c := openCards(t, openStore(t), Options{})
	a1, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t1", OperationID: "o1"})
	a2, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t2", OperationID: "o2", Arguments: json.RawMessage(`{"b":2}`)})
	for _, op := range []string{"", "o3"} {
		res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", OperationID: op}, askRequest("form"))
		if err != nil || res.Action != "decline" {
			t.Fatalf("question of call %q = %+v, %v; want declined", op, res, err)
		}
	}
	if all, _ := c.List(testkit.Context(t)); len(all) != 0 {
		t.Fatalf("a declined question made a card: %+v", all)
	}
	ch := make(chan handled, 1)
	go func() {
		res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", OperationID: "o2"}, askRequest("form"))
		ch <- handled{res, err}
	}()
	card := waitPending(t, c, 1)[0]
	if card.Tool != "t2" || card.OperationID != "o2" || string(card.Arguments) != `{"b":2}` || card.Kind != "" {
		t.Fatalf("card not attributed to its call o2: %+v", card)
	}
	a1.Finish()
	if len(c.Pending()) != 1 {
		t.Fatal("the card closed when another call ended")
	}
	a2.Finish()
	h := recvH(t, ch)
	if h.err == nil {
		t.Fatalf("handler = %+v, want an error", h.res)
	}
	got, _ := c.Get(testkit.Context(t), card.ID)
	if got.Status != StatusCancelled || !strings.Contains(got.Reason, "tool call ended") || !got.Settled {
		t.Fatalf("card = %+v", got)
	}
	if msg := (Card{Status: StatusInterrupted, ServerID: "s"}).FailureMessage(); !strings.Contains(msg, "A tool call on MCP server") {
		t.Fatalf("unattributed failure message %q", msg)
	}
}

// R4.5: admission waits while a card of the server is pending; a waiting
// call whose context ends is refused; other servers are not held up.
func TestAdmitWaitsForOpenCard(t *testing.T) {
	c := openCards(t, openStore(t), Options{})
	a, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "ask", OperationID: "o1"})
	defer a.Finish()
	ch := handle(testkit.Context(t), c, "s", "")
	card := waitPending(t, c, 1)[0]

	if other, err := c.Admit(testkit.Context(t), CallInfo{ServerID: "other", OperationID: "x"}); err != nil {
		t.Fatalf("another server waited: %v", err)
	} else {
		other.Finish()
	}
	ctx, cancel := context.WithTimeout(testkit.Context(t), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Admit(ctx, CallInfo{ServerID: "s", OperationID: "o2"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued admit = %v, want the context's error", err)
	}
	admitted := make(chan error, 1)
	go func() {
		b, err := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", OperationID: "o3"})
		if err == nil {
			b.Finish()
		}
		admitted <- err
	}()
	select {
	case err := <-admitted:
		t.Fatalf("admitted while the card is pending (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := c.Answer(testkit.Context(t), card.ID, Response{Action: ActionDecline}); err != nil {
		t.Fatal(err)
	}
	if err := <-admitted; err != nil {
		t.Fatal(err)
	}
	if h := recvH(t, ch); h.err != nil || h.res.Action != "decline" {
		t.Fatalf("handler = %+v, %v", h.res, h.err)
	}
}

func TestHandlerContextEnds(t *testing.T) {
	c := openCards(t, openStore(t), Options{})
	a, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "ask", OperationID: "o1"})
	ctx, cancel := context.WithCancel(testkit.Context(t))
	ch := handle(ctx, c, "s", "")
	card := waitPending(t, c, 1)[0]
	cancel()
	if h := recvH(t, ch); !errors.Is(h.err, context.Canceled) {
		t.Fatalf("handler = %+v, %v", h.res, h.err)
	}
	if got, _ := c.Get(testkit.Context(t), card.ID); got.Status != StatusCancelled || got.Settled {
		t.Fatalf("card settled while its call runs: %+v", got)
	}
	a.Finish()
	got, _ := c.Get(testkit.Context(t), card.ID)
	if got.Status != StatusCancelled || !got.Settled {
		t.Fatalf("card = %+v", got)
	}
	if err := c.Answer(testkit.Context(t), card.ID, Response{Action: ActionDecline}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("answer after close: %v", err)
	}
	if b, err := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", OperationID: "o"}); err != nil {
		t.Fatalf("the gate stayed shut: %v", err)
	} else {
		b.Finish()
	}
}

// R6.2: a new instance closes cards left pending by a dead process, and
// answered cards whose call never finished there, as interrupted; the old instance stops writing
// them; a re-send needs confirmation and happens once.
func TestOpenInterruptsLeftovers(t *testing.T) {
	st := openStore(t)
	old := openCards(t, st, Options{})
	// An answered card whose call is still running...
	a1, _ := old.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t1", OperationID: "o1", Arguments: json.RawMessage(`{}`)})
	ch1 := handle(testkit.Context(t), old, "s", "")
	answered := waitPending(t, old, 1)[0]
	if err := old.Answer(testkit.Context(t), answered.ID, Response{Action: ActionAccept, Content: map[string]any{"name": "A"}}); err != nil {
		t.Fatal(err)
	}
	recvH(t, ch1)
	// ...and a pending one on another server.
	a2, _ := old.Admit(testkit.Context(t), CallInfo{ServerID: "s2", Tool: "ask", OperationID: "o2", Arguments: json.RawMessage(`{"q":1}`)})
	ch2 := handle(testkit.Context(t), old, "s2", "")
	var pending Card
	for _, p := range waitPending(t, old, 1) {
		if p.ServerID == "s2" {
			pending = p
		}
	}

	// The old process dies (as after a crash, nothing closed its cards):
	// its owner lock is free, so the next instance takes the cards over.
	crash(old)
	next := openCards(t, st, Options{})
	for _, c := range []struct {
		id, reason string
	}{{pending.ID, "restarted while the question was open"}, {answered.ID, "may have reached the server"}} {
		got, err := next.Get(testkit.Context(t), c.id)
		if err != nil || got.Status != StatusInterrupted || !strings.Contains(got.Reason, c.reason) {
			t.Fatalf("card %s after restart = %+v, %v", c.id, got, err)
		}
	}
	got, _ := next.Get(testkit.Context(t), pending.ID)
	if msg := got.FailureMessage(); !strings.Contains(msg, "never reached the server") || !strings.Contains(msg, `"ask"`) {
		t.Fatalf("failure message %q", msg)
	}
	if got, _ := next.Get(testkit.Context(t), answered.ID); strings.Contains(got.FailureMessage(), "never reached") {
		t.Fatalf("an answered card claims the answer never reached the server: %q", got.FailureMessage())
	}

	// The old instance winds down without overwriting the new state.
	old.Close()
	if h := recvH(t, ch2); h.err == nil {
		t.Fatalf("old handler = %+v, want an error", h.res)
	}
	a1.Finish()
	a2.Finish()
	for _, id := range []string{pending.ID, answered.ID} {
		if got, _ := next.Get(testkit.Context(t), id); got.Status != StatusInterrupted || got.Settled {
			t.Fatalf("old instance overwrote %s: %+v", id, got)
		}
	}

	if _, err := next.ClaimResend(testkit.Context(t), pending.ID, "r1"); !errors.Is(err, ErrRetryNotConfirmed) {
		t.Fatalf("claim before confirm: %v", err)
	}
	if err := next.ConfirmRetry(testkit.Context(t), pending.ID); err != nil {
		t.Fatal(err)
	}
	card, err := next.ClaimResend(testkit.Context(t), pending.ID, "r1")
	if err != nil || !card.Resent || card.ResendOperationID != "r1" || string(card.Arguments) != `{"q":1}` {
		t.Fatalf("claim = %+v, %v", card, err)
	}
	if _, err := next.ClaimResend(testkit.Context(t), pending.ID, "r2"); !errors.Is(err, ErrAlreadyResent) {
		t.Fatalf("second claim: %v", err)
	}
	if err := next.ConfirmRetry(testkit.Context(t), pending.ID); !errors.Is(err, ErrAlreadyResent) {
		t.Fatalf("confirm after the re-send: %v", err)
	}
	intr, _ := next.Interrupted(testkit.Context(t))
	if len(intr) != 1 || intr[0].ID != answered.ID {
		t.Fatalf("owed failures = %+v", intr)
	}

	// A third instance keeps what the second decided.
	third := openCards(t, st, Options{})
	if got, _ := third.Get(testkit.Context(t), pending.ID); got.Status != StatusInterrupted || !got.Resent {
		t.Fatalf("third instance sees %+v", got)
	}
}

func TestRetryRules(t *testing.T) {
	st := openStore(t)
	c := openCards(t, st, Options{})
	a, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t", OperationID: "o"})
	ch := handle(testkit.Context(t), c, "s", "")
	card := waitPending(t, c, 1)[0]
	if err := c.ConfirmRetry(testkit.Context(t), card.ID); err == nil {
		t.Fatal("confirmed a retry of a pending card")
	}
	c.Answer(testkit.Context(t), card.ID, Response{Action: ActionCancel})
	recvH(t, ch)
	a.Finish()
	if err := c.ConfirmRetry(testkit.Context(t), card.ID); !errors.Is(err, ErrNotInterrupted) {
		t.Fatalf("confirm on a cancelled card: %v", err)
	}
	if err := c.ConfirmRetry(testkit.Context(t), "el-none"); !errors.Is(err, ErrUnknownCard) {
		t.Fatalf("confirm on an unknown card: %v", err)
	}
}

// Close interrupts the open question; the call learns it through Finish.
func TestCloseInterrupts(t *testing.T) {
	st := openStore(t)
	c := openCards(t, st, Options{})
	a, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "ask", OperationID: "o"})
	ch := handle(testkit.Context(t), c, "s", "")
	card := waitPending(t, c, 1)[0]
	c.Close()
	if h := recvH(t, ch); !errors.Is(h.err, ErrClosed) {
		t.Fatalf("handler = %+v, %v", h.res, h.err)
	}
	intr := a.Finish()
	if intr == nil || intr.ID != card.ID || !strings.Contains(intr.FailureMessage(), "never reached the server") {
		t.Fatalf("Finish = %+v", intr)
	}
	if _, err := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", OperationID: "o2"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("admit after close: %v", err)
	}
	if _, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s"}, askRequest("form")); !errors.Is(err, ErrClosed) {
		t.Fatalf("handle after close: %v", err)
	}
	reopened := openCards(t, st, Options{})
	if got, _ := reopened.Get(testkit.Context(t), card.ID); got.Status != StatusInterrupted || !strings.Contains(got.Reason, "shut down") {
		t.Fatalf("after reopen: %+v", got)
	}
}

func TestRetention(t *testing.T) {
	st := openStore(t)
	now := time.Now().UTC()
	for id, updated := range map[string]time.Time{"old": now.Add(-48 * time.Hour), "new": now} {
		raw, _ := json.Marshal(Card{ID: id, ServerID: "s", Status: StatusAccepted, Settled: true, Created: updated, Updated: updated})
		if err := st.PutKV(testkit.Context(t), Namespace, id, raw); err != nil {
			t.Fatal(err)
		}
	}
	c := openCards(t, st, Options{Retention: 24 * time.Hour})
	if _, err := c.Get(testkit.Context(t), "old"); !errors.Is(err, ErrUnknownCard) {
		t.Fatalf("old card kept: %v", err)
	}
	if got, err := c.Get(testkit.Context(t), "new"); err != nil || got.Status != StatusAccepted {
		t.Fatalf("new card: %+v, %v", got, err)
	}
}

// fakeSource is a manager stand-in whose current connection the test sets.
type fakeSource struct {
	mu   sync.Mutex
	conn string
	ch   chan manager.Event
}

func (f *fakeSource) Subscribe(ctx context.Context) <-chan manager.Event { return f.ch }

func (f *fakeSource) CurrentConnection(string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conn, f.conn != ""
}

// In a bubble (testing/synctest), so that "nothing happens" is checked
// once the watcher has handled the event, not after a guess of how long
// that takes.
func TestWatchClosesCardsOfGoneConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := openCards(t, openStore(t), Options{})
		src := &fakeSource{conn: "c1", ch: make(chan manager.Event, 4)}
		c.Watch(src)
		a, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "ask", OperationID: "o1"})
		defer a.Finish()
		ch := handle(testkit.Context(t), c, "s", "c1")
		card := waitPending(t, c, 1)[0]
		src.ch <- manager.Event{ServerID: "s"} // same connection: nothing happens
		synctest.Wait()                        // the event is handled
		if len(c.Pending()) != 1 {
			t.Fatal("a card of the current connection was closed")
		}
		src.mu.Lock()
		src.conn = "c2"
		src.mu.Unlock()
		src.ch <- manager.Event{ServerID: "s"}
		if h := recvH(t, ch); h.err == nil {
			t.Fatalf("handler = %+v, want an error", h.res)
		}
		if got, _ := c.Get(testkit.Context(t), card.ID); got.Status != StatusCancelled || !strings.Contains(got.Reason, "connection") {
			t.Fatalf("card = %+v", got)
		}
		close(src.ch)
	})
}

// Issue #20 item 3 (routing; SPEC §9 A10): a question that names no call
// (the standalone stream) is the card of the server's call in flight when
// there is exactly one, is declined with none, and remotemcp's own
// approval question never takes that path.
func TestStandaloneQuestionGoesToTheOnlyCall(t *testing.T) {
	c := openCards(t, openStore(t), Options{})
	if res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", Standalone: true}, askRequest("form")); err != nil || res.Action != "decline" {
		t.Fatalf("question with no call in flight = %+v, %v; want declined", res, err)
	}
	a, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t1", OperationID: "o1", Arguments: json.RawMessage(`{"a":1}`)})
	other, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "other", Tool: "x", OperationID: "o9"})
	defer other.Finish()
	ch := make(chan handled, 1)
	go func() {
		res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", Standalone: true}, askRequest("form"))
		ch <- handled{res, err}
	}()
	card := waitPending(t, c, 1)[0]
	if card.OperationID != "o1" || card.Tool != "t1" || string(card.Arguments) != `{"a":1}` {
		t.Fatalf("card not attributed to the only call o1: %+v", card)
	}
	if err := c.Answer(testkit.Context(t), card.ID, Response{Action: ActionDecline}); err != nil {
		t.Fatal(err)
	}
	if h := recvH(t, ch); h.err != nil || h.res.Action != "decline" {
		t.Fatalf("handler = %+v, %v", h.res, h.err)
	}
	a.Finish()
}

// Issue #20 item 3, review finding 1: only the standalone stream's
// question may go to the server's one call in flight. One that came on
// another request's stream (a host's prompts/get) or could not be tied to
// a stream (Standalone false, no call) is declined with one call in
// flight, and no card is made; and remotemcp's own approval question,
// admitted as "<op>-approval", is never the call a standalone question
// goes to.
func TestOnlyCallFallbackOnlyForStandalone(t *testing.T) {
	c := openCards(t, openStore(t), Options{})
	a, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t1", OperationID: "o1"})
	if res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s"}, askRequest("form")); err != nil || res.Action != "decline" {
		t.Fatalf("question off the standalone stream with one call in flight = %+v, %v; want declined", res, err)
	}
	if p := c.Pending(); len(p) != 0 {
		t.Fatalf("a card was made for it: %+v", p)
	}
	a.Finish()

	appr, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t1", OperationID: "o2" + ApprovalSuffix})
	if res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", Standalone: true}, askRequest("form")); err != nil || res.Action != "decline" {
		t.Fatalf("standalone question with only an approval pending = %+v, %v; want declined", res, err)
	}
	if p := c.Pending(); len(p) != 0 {
		t.Fatalf("the server's question was attached to the approval: %+v", p)
	}
	// With the approval and one real call, the real call is the only
	// call.
	b, _ := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t3", OperationID: "o3"})
	ch := make(chan handled, 1)
	go func() {
		res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", Standalone: true}, askRequest("form"))
		ch <- handled{res, err}
	}()
	card := waitPending(t, c, 1)[0]
	if card.OperationID != "o3" {
		t.Fatalf("card attributed to %q, want the tool call o3", card.OperationID)
	}
	if err := c.Answer(testkit.Context(t), card.ID, Response{Action: ActionDecline}); err != nil {
		t.Fatal(err)
	}
	recvH(t, ch)
	b.Finish()
	appr.Finish()
}
