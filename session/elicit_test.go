package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Issue #8 item 16: the elicitation handler gets the requested schema as
// the server sent it, a json.RawMessage with the properties in the
// server's order ("name" before "age"), not go-sdk's alphabetical map.
func TestElicitGetsRawSchemaInServerOrder(t *testing.T) {
	f := startFixture(t, fixture.Options{})
	got := make(chan any, 1)
	s := connect(t, f, Options{Elicit: func(_ context.Context, _ string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		got <- req.Params.RequestedSchema
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, "ask", json.RawMessage(`{}`), CallOptions{})
	if err != nil || res.IsError {
		t.Fatalf("ask: %+v, %v", res, err)
	}
	schema := <-got
	raw, ok := schema.(json.RawMessage)
	if !ok {
		t.Fatalf("RequestedSchema is %T, want json.RawMessage", schema)
	}
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(fixture.AskSchema), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("raw schema %s is not the server's %s", raw, fixture.AskSchema)
	}
	if n, g := bytes.Index(raw, []byte(`"name"`)), bytes.Index(raw, []byte(`"age"`)); n < 0 || g < 0 || n > g {
		t.Fatalf("raw schema lost the server's order: %s", raw)
	}
}

// The handler's request is left alone when no raw schema was captured.
func TestWithRawSchemaFallsBack(t *testing.T) {
	sink := newRawElicitSink()
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{RequestedSchema: map[string]any{"type": "object"}}}
	if got := withRawSchema(req, sink); got != req {
		t.Fatal("request replaced without a capture")
	}
	if got := withRawSchema(req, nil); got != req {
		t.Fatal("request replaced without a sink")
	}
}

func elicitMsg(schema string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"mode":"form","message":"?","requestedSchema":` + schema + `}}`
}

// The capture finds the question in any SSE framing and split, ignores
// other messages, skips an oversized event without losing the next one,
// and never changes the bytes go-sdk reads.
func TestCaptureBodyElicitation(t *testing.T) {
	schema := `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}`
	msg := elicitMsg(schema)
	huge := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", maxCapture) + `"}}`
	bodies := map[string]string{
		"lf":              "event: message\nid: 1\ndata: " + msg + "\n\n",
		"crlf":            "event: message\r\ndata: " + msg + "\r\n\r\n",
		"mixed":           "data: " + msg + "\n\r\n",
		"split data":      "data: " + msg[:17] + "\ndata: " + msg[17:] + "\n\n", // a newline between JSON tokens
		"after another":   "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n: comment\n\ndata:" + msg + "\n\n",
		"unterminated":    "data: " + msg,
		"batch":           "data: [" + msg + "]\n\n",
		"after oversize":  "data: " + huge + "\n\ndata: " + msg + "\n\n",
		"after long line": "data: " + strings.Repeat("y", maxCapture+10) + "\n\ndata: " + msg + "\n\n",
	}
	for name, body := range bodies {
		for _, chunk := range []int{1, 3, 7, 4096, len(body)} {
			if len(body) > 1<<20 && chunk < 4096 {
				continue
			}
			sink := newRawElicitSink()
			cb := &captureBody{rc: io.NopCloser(&chunkReader{data: []byte(body), n: chunk}), elicit: sink}
			out, _ := io.ReadAll(cb)
			if string(out) != body {
				t.Fatalf("%s chunk %d: bytes changed", name, chunk)
			}
			var decoded any
			json.Unmarshal([]byte(schema), &decoded)
			raw, ok := sink.take(decoded)
			if !ok || string(raw) != schema {
				t.Fatalf("%s chunk %d: got %q, %v", name, chunk, raw, ok)
			}
		}
	}
	// Not a question, or a question with no schema: nothing recorded.
	for _, body := range []string{
		"data: " + `{"jsonrpc":"2.0","id":1,"result":{"requestedSchema":{},"method":"elicitation/create"}}` + "\n\n",
		"data: " + elicitMsg("null") + "\n\n",
		"data: " + `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"mode":"url"}}` + "\n\n",
	} {
		sink := newRawElicitSink()
		io.ReadAll(&captureBody{rc: io.NopCloser(strings.NewReader(body)), elicit: sink})
		if len(sink.entries) != 0 {
			t.Errorf("recorded %+v from %q", sink.entries, body)
		}
	}
}

// The sink matches by content, newest first, and keeps a bounded number.
func TestRawElicitSinkBounded(t *testing.T) {
	sink := newRawElicitSink()
	for i := range maxRawElicit + 5 {
		sink.recordMessage([]byte(elicitMsg(fmt.Sprintf(`{"properties":{"b":{"type":"string"},"a%d":{"type":"string"}}}`, i))))
	}
	if len(sink.entries) != maxRawElicit {
		t.Fatalf("%d entries kept", len(sink.entries))
	}
	var old any
	json.Unmarshal([]byte(`{"properties":{"b":{"type":"string"},"a0":{"type":"string"}}}`), &old)
	if _, ok := sink.take(old); ok {
		t.Fatal("the oldest entry was kept beyond the bound")
	}
	var last any
	lastRaw := fmt.Sprintf(`{"properties":{"b":{"type":"string"},"a%d":{"type":"string"}}}`, maxRawElicit+4)
	json.Unmarshal([]byte(lastRaw), &last)
	if raw, ok := sink.take(last); !ok || string(raw) != lastRaw {
		t.Fatalf("take = %s, %v", raw, ok)
	}
	if _, ok := sink.take(last); ok {
		t.Fatal("an entry was handed out twice")
	}
}
