package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Issue #8 item 16: the elicitation handler gets the requested schema as
// the server sent it, a json.RawMessage with the properties in the
// server's order ("name" before "age"), not go-sdk's alphabetical map.
func TestElicitGetsRawSchemaInServerOrder(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	got := make(chan any, 1)
	s := connect(t, f, Options{Elicit: func(_ context.Context, _ string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		got <- req.Params.RequestedSchema
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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

// The framer's capture finds the question in any SSE framing and split,
// ignores other messages, drops an oversized event without losing the
// next one, and hands go-sdk every other event unchanged.
func TestFramerCapturesElicitation(t *testing.T) {
	const maxMsg = 64 << 10
	schema := `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}`
	msg := elicitMsg(schema)
	huge := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 2*maxMsg) + `"}}`
	bodies := map[string]string{
		"lf":              "event: message\nid: 1\ndata: " + msg + "\n\n",
		"crlf":            "event: message\r\ndata: " + msg + "\r\n\r\n",
		"mixed":           "data: " + msg + "\n\r\n",
		"split data":      "data: " + msg[:17] + "\ndata: " + msg[17:] + "\n\n", // a newline between JSON tokens
		"after another":   "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n: comment\n\ndata:" + msg + "\n\n",
		"unterminated":    "data: " + msg,
		"batch":           "data: [" + msg + "]\n\n",
		"after oversize":  "data: " + huge + "\n\ndata: " + msg + "\n\n",
		"after long line": "data: " + strings.Repeat("y", 2*maxMsg) + "\n\ndata: " + msg + "\n\n",
	}
	for name, body := range bodies {
		for _, chunk := range []int{1, 3, 7, 4096, len(body)} {
			sink := newRawElicitSink()
			out := throughStream(t, body, chunk, maxMsg, capture{elicit: sink})
			if got, want := sseEvents([]byte(out)), eventsWithin(body, maxMsg); !slices.Equal(got, want) {
				t.Fatalf("%s chunk %d: events changed:\n got %q\nwant %q", name, chunk, got, want)
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
		throughStream(t, body, len(body), maxMsg, capture{elicit: sink})
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

// enumsSchema is SEP-1330's five choice shapes as go-sdk's own
// conformance server sends them; go-sdk v1.8.0's client refuses the
// titled multi-select (items with "type": "string" beside anyOf).
const enumsSchema = `{"type":"object","properties":{` +
	`"untitledSingle":{"type":"string","enum":["option1","option2"]},` +
	`"titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First"},{"const":"value2","title":"Second"}]},` +
	`"legacyEnum":{"type":"string","enum":["opt1","opt2"],"enumNames":["One","Two"]},` +
	`"untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2"]}},` +
	`"titledMulti":{"type":"array","items":{"type":"string","anyOf":[{"const":"value1","title":"First"},{"const":"value2","title":"Second"}]}}}}`

// Issue #13: every SEP-1330 choice shape reaches the question handler
// (package elicit parses and bounds it), and the answer reaches the
// server; go-sdk's own client-side schema check is not in the way.
func TestElicitEnumShapesReachHandler(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "enums", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "choose", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: "choose", RequestedSchema: json.RawMessage(enumsSchema)})
			if err != nil {
				return nil, nil, err
			}
			got, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(got)}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	seen := make(chan json.RawMessage, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Connect(ctx, Options{Server: config.Server{ID: "enums", URL: hs.URL, Auth: config.Auth{Kind: config.AuthNone}, Enabled: true},
		Elicit: func(_ context.Context, _ string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			raw, _ := req.Params.RequestedSchema.(json.RawMessage)
			seen <- raw
			// go-sdk's server checks an accepted answer against the schema
			// with the same check; a decline is not checked.
			return &mcp.ElicitResult{Action: "decline"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res, err := s.CallTool(ctx, "choose", json.RawMessage(`{}`), CallOptions{})
	if err != nil || res.IsError {
		var txt string
		if res != nil && len(res.Content) > 0 {
			txt = res.Content[0].(*mcp.TextContent).Text
		}
		t.Fatalf("choose: %q, %v", txt, err)
	}
	if raw := <-seen; string(raw) != enumsSchema {
		t.Fatalf("the handler got %s, want the server's bytes %s", raw, enumsSchema)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; txt != `decline null` {
		t.Fatalf("server saw %q", txt)
	}
}
