package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// R6.1: a server question during a tool call becomes a stored card,
// attributed to the call; the answer is validated, defaults applied, and
// the original call continues.
func TestR6_1_ElicitationCards(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, envOpts{servers: []config.Server{srvCfg("fx", f.URL())}})
	for _, c := range []struct {
		name    string
		bad     []map[string]any // refused answers, each with the fields it must name
		badWant [][]string
		answer  elicit.Response
		want    string
		status  elicit.Status
	}{
		{name: "accept with default age", answer: elicit.Response{Action: elicit.ActionAccept, Content: map[string]any{"name": "Ada"}},
			want: "hello Ada (42)", status: elicit.StatusAccepted},
		{name: "accept a number typed as text", answer: elicit.Response{Action: elicit.ActionAccept, Content: map[string]any{"name": "Ada", "age": "7"}},
			want: "hello Ada (7)", status: elicit.StatusAccepted},
		{name: "decline", answer: elicit.Response{Action: elicit.ActionDecline}, want: "declined", status: elicit.StatusDeclined},
		{name: "cancel", answer: elicit.Response{Action: elicit.ActionCancel}, want: "cancelled", status: elicit.StatusCancelled},
		{name: "bad content refused, then accepted",
			bad:     []map[string]any{{"age": "abc"}, {"name": "Ada", "age": 4.5}, {"name": 7}, {"name": "Ada", "nick": "A"}},
			badWant: [][]string{{`"age": want an integer, got "abc"`, `"name": is required`}, {`"age": want an integer, got 4.5`}, {`"name": want a string, got 7`}, {`"nick": is not a field`}},
			answer:  elicit.Response{Action: elicit.ActionAccept, Content: map[string]any{"name": "Ada", "age": 30}},
			want:    "hello Ada (30)", status: elicit.StatusAccepted},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := "ask-" + strings.ReplaceAll(c.name, " ", "-")
			ch := e.goCall(t, testkit.Context(t), "mcp__fx__ask", `{}`, CallOptions{OperationID: op})
			card := e.waitPending(t, 1)[0]
			if card.Tool != "ask" || card.OperationID != op || card.ServerID != "fx" || card.Message != "What is your name?" || card.Status != elicit.StatusPending {
				t.Fatalf("card = %+v", card)
			}
			raw, err := e.st.GetKV(testkit.Context(t), elicit.Namespace, card.ID)
			if err != nil || !strings.Contains(string(raw), `"status":"pending"`) {
				t.Fatalf("stored card %s, %v", raw, err)
			}
			for i, bad := range c.bad {
				err := e.cards.Answer(testkit.Context(t), card.ID, elicit.Response{Action: elicit.ActionAccept, Content: bad})
				var ve *elicit.ValidationError
				if !errors.As(err, &ve) || !errors.Is(err, elicit.ErrInvalidAnswer) {
					t.Fatalf("bad answer %v: err %v, want a ValidationError", bad, err)
				}
				for _, w := range c.badWant[i] {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("bad answer %v: %q does not say %q", bad, err, w)
					}
				}
			}
			if len(e.cards.Pending()) != 1 {
				t.Fatal("a refused answer closed the card")
			}
			if err := e.cards.Answer(testkit.Context(t), card.ID, c.answer); err != nil {
				t.Fatalf("answer: %v", err)
			}
			out := recv(t, ch)
			if out.err != nil || out.res.Outcome != OutcomeOK || text(out.res) != c.want {
				t.Fatalf("call = %+v (%q), %v; want %q", out.res, text(out.res), out.err, c.want)
			}
			testkit.WaitFor(t, "settled card", func() bool {
				got, err := e.cards.Get(testkit.Context(t), card.ID)
				return err == nil && got.Settled && got.Status == c.status
			})
			if err := e.cards.Answer(testkit.Context(t), card.ID, c.answer); !errors.Is(err, elicit.ErrNotPending) {
				t.Fatalf("second answer: %v, want ErrNotPending", err)
			}
		})
	}
}

// R4.5: calls to a server wait while one of its questions is open; a
// waiting call cancelled first is never dispatched, another one goes once
// the question is answered.
func TestR4_5_QueuedBehindElicitation(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, envOpts{servers: []config.Server{srvCfg("fx", f.URL())}})
	ask := e.goCall(t, testkit.Context(t), "mcp__fx__ask", `{}`, CallOptions{OperationID: "A"})
	card := e.waitPending(t, 1)[0]

	ctxC, cancelC := context.WithCancel(testkit.Context(t))
	defer cancelC()
	queued := map[string]<-chan callOut{
		"B": e.goCall(t, testkit.Context(t), "mcp__fx__echo", `{"text":"b"}`, CallOptions{OperationID: "B"}),
		"C": e.goCall(t, ctxC, "mcp__fx__echo", `{"text":"c"}`, CallOptions{OperationID: "C"}),
		"D": e.goCall(t, testkit.Context(t), "mcp__fx__echo", `{"text":"d"}`, CallOptions{OperationID: "D"}),
	}
	testkit.WaitFor(t, "the queued calls to be approved", func() bool { return len(e.ap.requests()) == 4 })
	time.Sleep(100 * time.Millisecond)
	if n := f.Executions("echo"); n != 0 {
		t.Fatalf("echo ran %d times while a question was open", n)
	}
	e.reg.Cancel("B")
	cancelC()
	for _, op := range []string{"B", "C"} {
		out := recv(t, queued[op])
		if !errors.Is(out.err, ErrCancelled) || out.res.Outcome != OutcomeCancelled || out.res.MaybeExecuted {
			t.Fatalf("queued call %s cancelled: %+v, %v", op, out.res, out.err)
		}
	}
	if n := f.Executions("echo"); n != 0 {
		t.Fatalf("echo ran %d times while the question was open", n)
	}
	if err := e.cards.Answer(testkit.Context(t), card.ID, elicit.Response{Action: elicit.ActionAccept, Content: map[string]any{"name": "Q"}}); err != nil {
		t.Fatal(err)
	}
	if out := recv(t, ask); text(out.res) != "hello Q (42)" {
		t.Fatalf("ask = %+v, %v", out.res, out.err)
	}
	if out := recv(t, queued["D"]); out.err != nil || text(out.res) != "d" {
		t.Fatalf("queued call D = %+v, %v", out.res, out.err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := f.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times, want 1 (only D; B and C were cancelled while queued)", n)
	}
}

// A disconnect while a question is open closes the card at once, instead
// of leaving it to wait for the person.
//
// session.Close cancels the calls in flight, so the card closes either
// through the connection watcher or because its call ended: both say why,
// and neither waits for the person or the 1 s toolTimeout.
func TestDisconnectClosesOpenCard(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	cfg := srvCfg("fx", f.URL())
	cfg.ToolTimeout = config.Duration(time.Second)
	e := newEnv(t, envOpts{servers: []config.Server{cfg}})
	ch := e.goCall(t, testkit.Context(t), "mcp__fx__ask", `{}`, CallOptions{OperationID: "dc"})
	card := e.waitPending(t, 1)[0]
	done := make(chan error, 1)
	go func() { done <- e.m.Disconnect(testkit.Context(t), "fx") }()
	testkit.WaitFor(t, "the card to close", func() bool {
		got, err := e.cards.Get(testkit.Context(t), card.ID)
		return err == nil && got.Status != elicit.StatusPending
	})
	got, err := e.cards.Get(testkit.Context(t), card.ID)
	if err != nil || got.Status != elicit.StatusCancelled ||
		!(strings.Contains(got.Reason, "connection") || strings.Contains(got.Reason, "tool call ended")) {
		t.Fatalf("card after disconnect = %+v, %v", got, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Disconnect hung")
	}
	out := recv(t, ch)
	if out.res.Outcome == OutcomeOK && !out.res.IsError {
		t.Fatalf("the call succeeded without an answer: %+v", out.res)
	}
}

// R6.2: the process dies while a question is open. The next process closes
// the card as interrupted, the model gets an explicit failure, and the
// tool is re-sent only after ConfirmRetry, and only once.
func TestR6_2_RestartInterruptsCard(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	dir := t.TempDir()
	// The first process holds no owner lock: to the next one it looks
	// like a process that crashed (a live owner's cards are left alone).
	p1 := newEnv(t, envOpts{dir: dir, noOwnerLock: true, servers: []config.Server{srvCfg("fx", f.URL())}})
	ch := p1.goCall(t, testkit.Context(t), "mcp__fx__ask", `{}`, CallOptions{OperationID: "ask-1"})
	card := p1.waitPending(t, 1)[0]

	// The "restarted" process opens the same data directory while the old
	// one is still hanging (as after a crash, nothing closed the card).
	p2 := newEnv(t, envOpts{dir: dir})
	got, err := p2.cards.Get(testkit.Context(t), card.ID)
	if err != nil || got.Status != elicit.StatusInterrupted || !strings.Contains(got.Reason, "restarted") {
		t.Fatalf("card after restart = %+v, %v", got, err)
	}
	p1.close()
	if out := recv(t, ch); out.res.Outcome == OutcomeOK && strings.HasPrefix(text(out.res), "hello") {
		t.Fatalf("old process's call claims success: %+v", out.res)
	}
	// The old process no longer writes the card.
	if got, _ := p2.cards.Get(testkit.Context(t), card.ID); got.Status != elicit.StatusInterrupted {
		t.Fatalf("old process overwrote the card: %+v", got)
	}
	if n := f.Executions("ask"); n != 1 {
		t.Fatalf("ask ran %d times", n)
	}

	intr, err := p2.cards.Interrupted(testkit.Context(t))
	if err != nil || len(intr) != 1 || intr[0].ID != card.ID {
		t.Fatalf("interrupted cards = %+v, %v", intr, err)
	}
	res := p2.reg.InterruptedResult(intr[0])
	if res.Outcome != OutcomeInterrupted || res.Tool != "mcp__fx__ask" || res.OperationID != "ask-1" ||
		!strings.Contains(res.Render(), "never reached the server") || !strings.Contains(res.Render(), "not re-sent") {
		t.Fatalf("interrupted result = %+v\n%s", res, res.Render())
	}
	if err := p2.cards.Answer(testkit.Context(t), card.ID, elicit.Response{Action: elicit.ActionAccept, Content: map[string]any{"name": "X"}}); !errors.Is(err, elicit.ErrNotPending) {
		t.Fatalf("answering an interrupted card: %v", err)
	}
	if _, err := p2.reg.Resend(testkit.Context(t), card.ID, CallOptions{}); !errors.Is(err, elicit.ErrRetryNotConfirmed) {
		t.Fatalf("Resend before ConfirmRetry: %v", err)
	}
	if n := f.Executions("ask"); n != 1 {
		t.Fatalf("ask was re-sent without confirmation (%d runs)", n)
	}

	if err := p2.cards.ConfirmRetry(testkit.Context(t), card.ID); err != nil {
		t.Fatal(err)
	}
	resent := make(chan callOut, 1)
	go func() {
		res, err := p2.reg.Resend(testkit.Context(t), card.ID, CallOptions{OperationID: "ask-2"})
		resent <- callOut{res, err}
	}()
	card2 := p2.waitPending(t, 1)[0]
	if card2.OperationID != "ask-2" || card2.Tool != "ask" {
		t.Fatalf("re-sent call's card = %+v", card2)
	}
	if err := p2.cards.Answer(testkit.Context(t), card2.ID, elicit.Response{Action: elicit.ActionAccept, Content: map[string]any{"name": "Bob"}}); err != nil {
		t.Fatal(err)
	}
	if out := recv(t, resent); out.err != nil || text(out.res) != "hello Bob (42)" {
		t.Fatalf("re-sent call = %+v, %v", out.res, out.err)
	}
	if _, err := p2.reg.Resend(testkit.Context(t), card.ID, CallOptions{}); !errors.Is(err, elicit.ErrAlreadyResent) {
		t.Fatalf("second Resend: %v", err)
	}
	if n := f.Executions("ask"); n != 2 {
		t.Fatalf("ask ran %d times, want 2", n)
	}
	if intr, _ := p2.cards.Interrupted(testkit.Context(t)); len(intr) != 0 {
		t.Fatalf("a re-sent card is still listed as owed: %+v", intr)
	}
}

// R6.2: a shutdown while a question is open fails the waiting call with
// an explicit "never reached the server", and the card stays interrupted
// for the next process.
func TestR6_2_ShutdownInterruptsCall(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	dir := t.TempDir()
	e := newEnv(t, envOpts{dir: dir, servers: []config.Server{srvCfg("fx", f.URL())}})
	ch := e.goCall(t, testkit.Context(t), "mcp__fx__ask", `{}`, CallOptions{OperationID: "sd"})
	card := e.waitPending(t, 1)[0]
	if err := e.cards.Close(); err != nil {
		t.Fatal(err)
	}
	out := recv(t, ch)
	if out.err != nil || out.res.Outcome != OutcomeInterrupted || !out.res.MaybeExecuted || !strings.Contains(out.res.Render(), "never reached the server") {
		t.Fatalf("call at shutdown = %+v, %v", out.res, out.err)
	}
	e.close()
	next := newEnv(t, envOpts{dir: dir})
	got, err := next.cards.Get(testkit.Context(t), card.ID)
	if err != nil || got.Status != elicit.StatusInterrupted || !strings.Contains(got.Reason, "shut down") {
		t.Fatalf("card in the next process = %+v, %v", got, err)
	}
	raw, _ := json.Marshal(got)
	if strings.Contains(string(raw), `"settled":true`) {
		t.Fatalf("an interrupted card is settled: %s", raw)
	}
}
