package elicit

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/manager"
)

// Issue #8 item 16: a question whose schema arrives as raw JSON (as the
// session layer hands it over) becomes a card whose fields, and whose
// stored schema, keep the server's order: "name" before "age".
func TestCardKeepsSchemaOrder(t *testing.T) {
	st := openStore(t)
	c := openCards(t, st, Options{})
	adm, err := c.Admit(testkit.Context(t), CallInfo{ServerID: "s", Tool: "ask", OperationID: "op1"})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan handled, 1)
	go func() {
		req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Mode: "form", Message: "What is your name?", RequestedSchema: json.RawMessage(askSchema)}}
		res, err := c.Handle(testkit.Context(t), manager.ElicitInfo{ServerID: "s", ConnectionID: "c1", OperationID: "op1"}, req)
		ch <- handled{res, err}
	}()
	card := waitPending(t, c, 1)[0]
	form, err := card.Form()
	if err != nil {
		t.Fatal(err)
	}
	if len(form.Fields) != 2 || form.Fields[0].Name != "name" || form.Fields[1].Name != "age" {
		t.Fatalf("card fields %+v; want name, then age", form.Fields)
	}
	if n, a := bytes.Index(card.RequestedSchema, []byte(`"name"`)), bytes.Index(card.RequestedSchema, []byte(`"age"`)); n < 0 || n > a {
		t.Fatalf("stored schema lost the order: %s", card.RequestedSchema)
	}
	if err := c.Answer(context.Background(), card.ID, Response{Action: ActionDecline}); err != nil {
		t.Fatal(err)
	}
	if h := recvH(t, ch); h.err != nil || h.res.Action != "decline" {
		t.Fatalf("handler = %+v, %v", h.res, h.err)
	}
	adm.Finish()
}
