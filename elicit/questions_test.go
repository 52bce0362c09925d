package elicit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/manager"
)

// formRequest is a form-mode question with a raw schema, as the session
// layer hands it over.
func formRequest(msg, schema string) *mcp.ElicitRequest {
	return &mcp.ElicitRequest{Params: &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: json.RawMessage(schema)}}
}

// Issue #10 item 3: a question while no admitted call to its server is in
// flight is declined, logged, and leaves nothing stored, however many come.
func TestQuestionsOutsideACallMakeNoCards(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, c *Cards)
	}{
		{"no call ever", func(*testing.T, *Cards) {}},
		{"after the call finished", func(t *testing.T, c *Cards) {
			a, err := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "t", OperationID: "o1"})
			if err != nil {
				t.Fatal(err)
			}
			a.Finish()
		}},
		{"while a call to another server runs", func(t *testing.T, c *Cards) {
			a, err := c.Admit(testkit.Context(t), CallInfo{ServerID: "other", Tool: "t", OperationID: "o1"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Finish() })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := openStore(t)
			logs, log := newLog()
			cards := openCards(t, st, Options{Logger: log})
			c.setup(t, cards)
			before := countCards(t, st)
			for i := range 200 {
				res, err := cards.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", ConnectionID: "c1", OperationID: "o1"}, askRequest("form"))
				if err != nil || res.Action != "decline" {
					t.Fatalf("question %d: %+v, %v; want a decline", i, res, err)
				}
			}
			if n := countCards(t, st); n != before || before != 0 {
				t.Fatalf("%d card records, %d before; want none", n, before)
			}
			if all, _ := cards.List(testkit.Context(t)); len(all) != 0 || len(cards.Pending()) != 0 {
				t.Fatalf("cards made: %+v", all)
			}
			out := logs.String()
			if n := strings.Count(out, `server=s reason="the server asked a question while the tool call it belongs to was not in flight"`); n != 200 {
				t.Fatalf("%d declines logged with server and reason, want 200:\n%.400s", n, out)
			}
			cards.mu.Lock()
			_, gated := cards.servers["s"]
			cards.mu.Unlock()
			if gated && c.name == "no call ever" {
				t.Fatal("a stray question left admission state behind")
			}

			// The same question during an admitted call makes a card.
			a, err := cards.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "ask", OperationID: "op"})
			if err != nil {
				t.Fatal(err)
			}
			ch := handle(testkit.Context(t), cards, "s", "c1")
			card := waitPending(t, cards, 1)[0]
			if card.OperationID != "op" || countCards(t, st) != 1 {
				t.Fatalf("card %+v, %d stored", card, countCards(t, st))
			}
			if err := cards.Answer(testkit.Context(t), card.ID, Response{Action: ActionDecline}); err != nil {
				t.Fatal(err)
			}
			recvH(t, ch)
			a.Finish()
		})
	}
}

// Issue #10 item 2: a question over a limit is declined with the limit
// named in the log, and makes no card; one at the limits makes a card.
// Per-server limits override the instance's.
func TestQuestionLimits(t *testing.T) {
	fields := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = fmt.Sprintf(`"f%d":{"type":"boolean"}`, i)
		}
		return props(strings.Join(p, ","))
	}
	lim := Limits{MaxMessage: 10, MaxFields: 3, MaxEnumValues: 2, MaxTitle: 5, MaxDescription: 6, MaxSchemaBytes: 200}
	for _, c := range []struct {
		name, server, msg, schema, limit string // limit "" means a card is made
	}{
		{"at every limit", "s", strings.Repeat("ü", 10), fields(3), ""},
		{"message", "s", strings.Repeat("ü", 11), fields(1), "MaxMessage"},
		{"schema bytes", "s", "Hi", props(`"a":{"type":"string","x-pad":"` + strings.Repeat("x", 200) + `"}`), "MaxSchemaBytes"},
		{"fields", "s", "Hi", fields(4), "MaxFields"},
		{"enum values", "s", "Hi", props(`"a":{"enum":["x","y","z"]}`), "MaxEnumValues"},
		{"title", "s", "Hi", props(`"a":{"type":"string","title":"Title!"}`), "MaxTitle"},
		{"description", "s", "Hi", props(`"a":{"type":"string","description":"Longer!"}`), "MaxDescription"},
		{"inconsistent", "s", "Hi", `{"type":"object","required":["a"]}`, "is not a defined property"},
		{"a server's own limits", "big", "Hi", fields(4), ""},
		{"a server's own limits, still bounded", "big", "Hi", fields(5), "MaxFields"},
		{"a server's limits fall back to the instance's", "big", strings.Repeat("ü", 11), fields(1), "MaxMessage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := openStore(t)
			logs, log := newLog()
			cards := openCards(t, st, Options{Logger: log, Limits: lim, ServerLimits: func(id string) Limits {
				if id == "big" {
					return Limits{MaxFields: 4}
				}
				return Limits{}
			}})
			a, err := cards.Admit(testkit.Context(t), CallInfo{ServerID: c.server, Tool: "ask", OperationID: "op"})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Finish()
			if c.limit == "" {
				ch := make(chan handled, 1)
				go func() {
					res, err := cards.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: c.server, OperationID: "op"}, formRequest(c.msg, c.schema))
					ch <- handled{res, err}
				}()
				card := waitPending(t, cards, 1)[0]
				if err := cards.Answer(testkit.Context(t), card.ID, Response{Action: ActionCancel}); err != nil {
					t.Fatal(err)
				}
				if h := recvH(t, ch); h.err != nil || h.res.Action != "cancel" {
					t.Fatalf("handler = %+v, %v", h.res, h.err)
				}
				return
			}
			res, err := cards.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: c.server, OperationID: "op"}, formRequest(c.msg, c.schema))
			if err != nil || res.Action != "decline" {
				t.Fatalf("Handle = %+v, %v; want a decline", res, err)
			}
			if n := countCards(t, st); n != 0 {
				t.Fatalf("%d cards stored", n)
			}
			if out := logs.String(); !strings.Contains(out, c.limit) || !strings.Contains(out, "server="+c.server) {
				t.Fatalf("the log does not name %s and the server:\n%s", c.limit, out)
			}
		})
	}
}

// A question whose schema go-sdk already decoded (a Go map, as without
// the session layer's raw schema) goes through the same checks.
func TestQuestionLimitsDecodedSchema(t *testing.T) {
	st := openStore(t)
	cards := openCards(t, st, Options{Limits: Limits{MaxFields: 1}})
	a, _ := cards.Admit(testkit.Context(t), CallInfo{ServerID: "s", OperationID: "op"})
	defer a.Finish()
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "Hi", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}, "b": map[string]any{"type": "string"}},
	}}}
	if res, err := cards.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", OperationID: "op"}, req); err != nil || res.Action != "decline" {
		t.Fatalf("Handle = %+v, %v; want a decline", res, err)
	}
	if n := countCards(t, st); n != 0 {
		t.Fatalf("%d cards stored", n)
	}
}
