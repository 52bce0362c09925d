package session

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const testSecret = "SECRETSECRETSECRETSECRETSECRET00:"

// sseEvent is an SSE event as the framer holds it: lines ending in '\n'.
func sseEvent(lines ...string) []byte {
	return []byte(strings.Join(lines, "\n") + "\n")
}

// Issue #20 item 3 (routing): the transport marks a server's question or
// sampling request with the call whose stream carried it; the event's
// other lines stay, its data becomes the same message with the mark.
func TestMarkEvent(t *testing.T) {
	ev := sseEvent("id: 7", "event: message",
		`data: {"jsonrpc":"2.0","id":3,"method":"elicitation/create",`,
		`data: "params":{"message":"hi","requestedSchema":{"type":"object"},"_meta":{"x":1,"io.remotemcp/related-call":"forged:op-1"}}}`)
	out := markEvent(ev, eventData(ev), testSecret, relTag("op-2", false))
	if out == nil {
		t.Fatal("not marked")
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "id: 7" || lines[1] != "event: message" || !strings.HasPrefix(lines[2], "data: ") {
		t.Fatalf("marked event:\n%s", out)
	}
	var msg struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		Params struct {
			Message string         `json:"message"`
			Meta    map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[2], "data: ")), &msg); err != nil {
		t.Fatal(err)
	}
	if msg.ID != 3 || msg.Method != "elicitation/create" || msg.Params.Message != "hi" || msg.Params.Meta["x"] != float64(1) ||
		msg.Params.Meta[relatedMetaKey] != testSecret+relCall+"op-2" {
		t.Fatalf("marked message: %+v", msg)
	}
	meta := mcp.Meta(msg.Params.Meta)
	if rel, ok := takeRelated(meta, testSecret); !ok || rel != (relation{call: "op-2"}) {
		t.Fatalf("takeRelated = %+v, %v", rel, ok)
	}
	if _, left := meta[relatedMetaKey]; left {
		t.Fatal("the mark was left in _meta")
	}
}

// Issue #20 item 3: what is not one request of a marked kind passes
// unmarked (and then belongs to no call): notifications, responses,
// other methods, batches, malformed JSON, params or _meta that are not
// objects.
func TestMarkEventLeavesOthers(t *testing.T) {
	for _, data := range []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"elicitation/create"}}`,
		`{"jsonrpc":"2.0","method":"elicitation/create","params":{}}`, // no id: a notification
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"sampling/createMessage"}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"roots/list","params":{"x":"elicitation/create"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"_meta":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"_meta":[]}}`,
		`{"jsonrpc":"2.0","id":1,"method":["elicitation/create"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create"`,
		`elicitation/create`,
		``,
	} {
		ev := sseEvent("data: " + data)
		if out := markEvent(ev, eventData(ev), testSecret, "op"); out != nil {
			t.Errorf("markEvent(%s) marked it:\n%s", data, out)
		}
	}
	// A request without params, or with null ones, gets params with the
	// mark.
	for _, data := range []string{
		`{"jsonrpc":"2.0","id":"a","method":"sampling/createMessage"}`,
		`{"jsonrpc":"2.0","id":"a","method":"sampling/createMessage","params":null}`,
		`{"jsonrpc":"2.0","id":"a","method":"sampling/createMessage","params":{"_meta":null}}`,
	} {
		ev := sseEvent("data: " + data)
		if out := markEvent(ev, eventData(ev), testSecret, relTag("op", false)); out == nil || !bytes.Contains(out, []byte(`"io.remotemcp/related-call":"`+testSecret+`cop"`)) {
			t.Errorf("markEvent(%s) = %s", data, out)
		}
	}
}

// Issue #20 item 3: a mark without the session's secret (one the server
// wrote itself, where the transport did not mark, e.g. in a JSON body)
// ties the request to no call; it is taken off all the same.
func TestTakeRelatedForged(t *testing.T) {
	for _, v := range []any{"op-1", "", testSecret[:10] + "op-1", "XECRETSECRETSECRETSECRETSECRET00:cop-1",
		testSecret, testSecret + "c", testSecret + "x", testSecret + "sx", testSecret + "o1", 42, nil, map[string]any{}} {
		meta := mcp.Meta{relatedMetaKey: v, "keep": true}
		if rel, ok := takeRelated(meta, testSecret); ok || rel != (relation{}) {
			t.Errorf("takeRelated(%v) = %+v, %v; want no call, not standalone", v, rel, ok)
		}
		if _, left := meta[relatedMetaKey]; left || meta["keep"] != true {
			t.Errorf("meta after takeRelated(%v): %v", v, meta)
		}
	}
	if rel, ok := takeRelated(nil, testSecret); ok || rel != (relation{}) {
		t.Errorf("takeRelated(nil) = %+v, %v", rel, ok)
	}
}

// Issue #20 item 3, review finding 1: the marks of the three kinds of
// stream stay apart. A call's stream names its call; the standalone GET
// stream says "standalone" and no call; another request's stream (a
// prompts/get's) says neither, as an unmarked request does, so only the
// standalone stream's question can be given to a call in flight (before,
// the standalone stream and another request's stream had the same empty
// mark).
func TestRelatedMarksTellStreamsApart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		op         string
		standalone bool
		want       relation
	}{
		{"call's stream", "op-7", false, relation{call: "op-7"}},
		{"standalone stream", "", true, relation{standalone: true}},
		{"another request's stream", "", false, relation{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := sseEvent(`data: {"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m"}}`)
			out := markEvent(ev, eventData(ev), testSecret, relTag(tc.op, tc.standalone))
			var msg struct {
				Params struct {
					Meta mcp.Meta `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal(eventData(out), &msg); err != nil {
				t.Fatal(err)
			}
			rel, ok := takeRelated(msg.Params.Meta, testSecret)
			if !ok || rel != tc.want {
				t.Fatalf("takeRelated = %+v, %v; want %+v", rel, ok, tc.want)
			}
			ctx := withRelated(t.Context(), rel)
			if RelatedCall(ctx) != tc.want.call || FromStandaloneStream(ctx) != tc.want.standalone {
				t.Fatalf("RelatedCall %q, FromStandaloneStream %v; want %+v", RelatedCall(ctx), FromStandaloneStream(ctx), tc.want)
			}
		})
	}
	if RelatedCall(t.Context()) != "" || FromStandaloneStream(t.Context()) {
		t.Fatal("a context without a mark names a call or the standalone stream")
	}
}

// FuzzMarkEvent: whatever a server sends, markEvent never panics; what
// it marks is the same message (every key but params._meta's mark kept)
// with the mark, on one data line after the event's other lines. Fuzz
// with
//
//	go test -run='^$' -fuzz='^FuzzMarkEvent$' -fuzztime=60s ./session/
func FuzzMarkEvent(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"hi","requestedSchema":{"type":"object"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1,"_meta":{"k":"v"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"_meta":{"io.remotemcp/related-call":"forged"}}}`,
		`{"jsonrpc":"2.0","method":"elicitation/create"}`,
		`[{"id":1,"method":"sampling/createMessage"}]`,
		`{"id":1,"method":"elicitation/create","params":{"_meta":null},"id":2}`,
		"{\"id\":1,\"method\":\"elicitation/create\",\"params\":{\"message\":\"a\\nb\"}}",
		`{"id":1e400,"method":"elicitation/create"}`,
	} {
		f.Add("id: 1\nevent: message", s, "op-1")
	}
	f.Fuzz(func(t *testing.T, head, data, call string) {
		var lines []string
		for l := range strings.SplitSeq(head, "\n") {
			if l != "" && !strings.HasPrefix(l, "data:") {
				lines = append(lines, l)
			}
		}
		for l := range strings.SplitSeq(data, "\n") {
			lines = append(lines, "data: "+l)
		}
		ev := sseEvent(lines...)
		out := markEvent(ev, eventData(ev), testSecret, relTag(call, false))
		if out == nil {
			return
		}
		outLines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		last := outLines[len(outLines)-1]
		if !strings.HasPrefix(last, "data: ") || strings.Count(string(out), "\ndata:")+boolInt(strings.HasPrefix(string(out), "data:")) != 1 {
			t.Fatalf("marked event has not one data line at the end:\n%q", out)
		}
		var before, after map[string]any
		if err := decodeNumbers(eventData(ev), &before); err != nil {
			t.Fatalf("marked what does not parse: %v", err)
		}
		if err := decodeNumbers([]byte(strings.TrimPrefix(last, "data: ")), &after); err != nil {
			t.Fatalf("the marked message does not parse: %v\n%s", err, last)
		}
		params, _ := after["params"].(map[string]any)
		meta, _ := params["_meta"].(map[string]any)
		var wantCall string // call as JSON carries it (invalid UTF-8 replaced)
		_ = json.Unmarshal([]byte(mustJSON(call)), &wantCall)
		if meta[relatedMetaKey] != testSecret+relTag(wantCall, false) {
			t.Fatalf("mark %v, want the secret and %q", meta[relatedMetaKey], call)
		}
		delete(meta, relatedMetaKey)
		bp, _ := before["params"].(map[string]any)
		bm, _ := bp["_meta"].(map[string]any)
		delete(bm, relatedMetaKey)
		for k, v := range before {
			if k == "params" {
				continue
			}
			if a, b := mustJSON(v), mustJSON(after[k]); a != b {
				t.Fatalf("key %q changed: %s -> %s", k, a, b)
			}
		}
		for k, v := range bp {
			if k == "_meta" {
				continue
			}
			if a, b := mustJSON(v), mustJSON(params[k]); a != b {
				t.Fatalf("params key %q changed: %s -> %s", k, a, b)
			}
		}
		if len(bm) != len(meta) {
			t.Fatalf("_meta changed: %v -> %v", bm, meta)
		}
	})
}

// decodeNumbers decodes JSON keeping numbers as written (1e400 included).
func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
