package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// listCards runs `elicitations list --json`.
func (c *cli) listCards() []localapi.Card {
	c.t.Helper()
	r := c.ok("elicitations", "list", "--json")
	var rows []localapi.Card
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
		c.t.Fatalf("elicitations list --json: %v\n%s", err, r.out)
	}
	return rows
}

// waitCard waits until exactly one card is listed with status st.
func (c *cli) waitCard(st localapi.CardStatus) localapi.Card {
	c.t.Helper()
	var rows []localapi.Card
	testkit.WaitFor(c.t, "a "+string(st)+" card", func() bool {
		rows = c.listCards()
		return len(rows) == 1 && rows[0].Status == st
	})
	return rows[0]
}

// Without a terminal, the call waits while another process answers
// the card; the answer is checked against the form and its default applied.
func TestElicitationAnsweredFromAnotherProcess(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())

	call := c.start(runOpts{}, "call", "mcp__fx__ask", "{}", "--yes")
	card := c.waitCard(localapi.CardPending)
	if card.ServerID != "fx" || card.Tool != "ask" || card.Message != "What is your name?" || card.Created.IsZero() || !strings.HasPrefix(card.ID, "el-") {
		t.Fatalf("card = %+v", card)
	}
	if r := c.ok("elicitations", "list"); !strings.Contains(r.out, card.ID+"  pending  fx      ask") || !strings.Contains(r.out, "What is your name?") {
		t.Fatalf("elicitations list:\n%s", r.out)
	}

	// Another call meanwhile opens the cards too, and must not take the
	// waiting one over.
	if r := c.ok("call", "mcp__fx__echo", `{"text":"meanwhile"}`, "--yes"); r.out != "meanwhile\n" {
		t.Fatalf("call while a question waits: %s", r)
	}

	// A bad answer is refused with every problem, and the card stays open.
	r := c.fail(exitFail, `field "age": want an integer, got "abc"`, "elicitations", "answer", card.ID, "accept", `{"age": "abc"}`)
	if !strings.Contains(r.err, `field "name": is required`) || !strings.Contains(r.err, "age (integer, default 42) — Your age") {
		t.Fatalf("bad answer: %s", r)
	}
	c.fail(exitFail, `field "nick": is not a field of this form`, "elicitations", "answer", card.ID, "accept", `{"name": "A", "nick": "a"}`)
	c.fail(exitUsage, "CONTENT_JSON must be one JSON object", "elicitations", "answer", card.ID, "accept", `["Ada"]`)
	c.fail(exitUsage, "decline takes no content", "elicitations", "answer", card.ID, "decline", `{}`)
	c.fail(exitUsage, "must be accept, decline or cancel", "elicitations", "answer", card.ID, "maybe")
	c.fail(exitFail, `elicitation card "el-nope"`, "elicitations", "answer", "el-nope", "decline")
	if got := c.waitCard(localapi.CardPending); got.ID != card.ID {
		t.Fatalf("card after bad answers: %+v", got)
	}

	if r = c.ok("elicitations", "answer", card.ID, "accept", `{"name": "Ada"}`); r.out != "answered "+card.ID+": accept\n" {
		t.Fatalf("answer: %s", r)
	}
	r = wait(t, call)
	if r.code != 0 || r.out != "hello Ada (42)\n" {
		t.Fatalf("the waiting call: %s", r)
	}
	wantWait := "waiting for an answer: remotemcp --data-dir " + c.dir + " elicitations answer " + card.ID + ` accept '{"name": "…"}'`
	if !strings.Contains(r.err, wantWait) || !strings.Contains(r.err, "server fx asks (its own words): What is your name?") {
		t.Fatalf("the waiting call's stderr lacks %q:\n%s", wantWait, r.err)
	}
	if rows := c.listCards(); len(rows) != 0 {
		t.Fatalf("cards left after the answer: %+v", rows)
	}
	c.fail(exitFail, "(it is accepted)", "elicitations", "answer", card.ID, "decline")

	// Decline.
	call = c.start(runOpts{}, "call", "mcp__fx__ask", "{}", "--yes")
	card = c.waitCard(localapi.CardPending)
	c.ok("elicitations", "answer", card.ID, "decline")
	if r = wait(t, call); r.code != 0 || r.out != "declined\n" {
		t.Fatalf("declined call: %s", r)
	}
	if n := srv.Executions("ask"); n != 2 {
		t.Fatalf("ask ran %d times, want 2", n)
	}
}

// On a terminal, the card is answered inline, defaults shown.
func TestElicitationInline(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	for _, tc := range []struct{ name, stdin, out string }{
		{"default age", "y\n\nAda\n\n", "hello Ada (42)\n"},
		{"bad age asked again", "y\naccept\nAda\nabc\n7\n", "hello Ada (7)\n"},
		{"required name asked again", "y\na\n\nBo\n3\n", "hello Bo (3)\n"},
		{"decline", "y\ndecline\n", "declined\n"},
		{"end of input cancels", "y\n", "cancelled\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.runWith(runOpts{stdin: tc.stdin, terminal: true}, "call", "mcp__fx__ask")
			if r.code != 0 || r.out != tc.out {
				t.Fatalf("inline answer: %s", r)
			}
			if !strings.Contains(r.err, "server fx asks (its own words): What is your name?") ||
				!strings.Contains(r.err, "accept, decline or cancel? [accept]") {
				t.Fatalf("no inline question: %s", r.err)
			}
			if tc.name == "default age" && !strings.Contains(r.err, "age (integer, default 42) — Your age [42]: ") {
				t.Fatalf("the default is not shown: %s", r.err)
			}
			// The fields come in the server's schema order, name before age.
			if n, a := strings.Index(r.err, "name (string"), strings.Index(r.err, "age (integer"); tc.out != "declined\n" && tc.out != "cancelled\n" && (n < 0 || a < n) {
				t.Fatalf("fields not in the schema's order: %s", r.err)
			}
			if tc.name == "bad age asked again" && (!strings.Contains(r.err, "please answer again") || !strings.Contains(r.err, "  age: ")) {
				t.Fatalf("a bad answer is not explained: %s", r.err)
			}
		})
	}
	if rows := c.listCards(); len(rows) != 0 {
		t.Fatalf("cards left: %+v", rows)
	}
}

// A process ends while its question is open. The card is reported as
// interrupted, cannot be answered, and its call is re-sent only after a
// confirmation, once.
func TestInterruptedCardRetry(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())

	ctx, cancel := context.WithCancel(t.Context())
	call := c.start(runOpts{ctx: ctx}, "call", "mcp__fx__ask", "{}", "--yes")
	card := c.waitCard(localapi.CardPending)
	st, err := store.Open(t.Context(), c.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pending, err := st.GetKV(t.Context(), elicit.Namespace, card.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The process ends, and the store is left as a crash leaves it: the
	// card still pending, its process gone.
	cancel()
	if r := wait(t, call); r.code != exitInterrupted || !strings.Contains(r.err, "interrupted") {
		t.Fatalf("cancelled call: %s", r)
	}
	if err := st.PutKV(t.Context(), elicit.Namespace, card.ID, pending); err != nil {
		t.Fatal(err)
	}

	got := c.waitCard(localapi.CardInterrupted)
	if got.ID != card.ID || !strings.Contains(got.Reason, "stopped") {
		t.Fatalf("card after the crash: %+v", got)
	}
	c.fail(exitFail, "elicitations retry", "elicitations", "answer", card.ID, "accept", `{"name": "X"}`)
	r := c.fail(exitFail, "needs your confirmation", "elicitations", "retry", card.ID)
	if !strings.Contains(r.err, "--yes") {
		t.Fatalf("retry without a terminal: %s", r)
	}
	r = c.runWith(runOpts{stdin: "n\n", terminal: true}, "elicitations", "retry", card.ID)
	if r.code != exitFail || !strings.Contains(r.err, "never reached the server") ||
		!strings.Contains(r.err, "Re-send mcp__fx__ask with {}? It may already have had its effect once. [y/N]") ||
		!strings.Contains(r.err, "was not re-sent") {
		t.Fatalf("retry not confirmed: %s", r)
	}
	if n := srv.Executions("ask"); n != 1 {
		t.Fatalf("ask was re-sent without confirmation (%d runs)", n)
	}

	// Confirmed: re-sent once; the server asks again and is answered inline.
	r = c.runWith(runOpts{stdin: "y\n\nBob\n\n", terminal: true}, "elicitations", "retry", card.ID)
	if r.code != 0 || r.out != "hello Bob (42)\n" {
		t.Fatalf("retry: %s", r)
	}
	if n := srv.Executions("ask"); n != 2 {
		t.Fatalf("ask ran %d times, want 2", n)
	}
	c.fail(exitFail, "already re-sent", "elicitations", "retry", card.ID, "--yes")
	if rows := c.listCards(); len(rows) != 0 {
		t.Fatalf("cards left after the re-send: %+v", rows)
	}
	c.fail(exitFail, `elicitation card "el-nope"`, "elicitations", "retry", "el-nope")
}

// Without anything to show, list says so on stderr.
func TestElicitationsListEmpty(t *testing.T) {
	c := newCLI(t)
	if r := c.ok("elicitations", "list"); r.out != "" || !strings.Contains(r.err, "no questions are waiting") {
		t.Fatalf("empty list: %s", r)
	}
	if r := c.ok("elicitations", "list", "--json"); strings.TrimSpace(r.out) != "[]" {
		t.Fatalf("empty list --json: %s", r)
	}
}
