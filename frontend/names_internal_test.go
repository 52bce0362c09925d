package frontend

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHostInputSchema: object schemas are offered as they are; one
// without "type" is offered with "type": "object" in front (its members in
// order); the rest is left out (go-sdk's AddTool panics on it).
func TestHostInputSchema(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   string // "" when left out
	}{
		{`{"type":"object"}`, `{"type":"object"}`},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{`{}`, `{"type":"object"}`},
		{`{"properties":{"b":{"type":"string"},"a":{}},"required":["b"]}`, `{"type":"object","properties":{"b":{"type":"string"},"a":{}},"required":["b"]}`},
		{`{"type":"array"}`, ""},
		{`{"type":["object","null"]}`, ""},
		{`{"type":null}`, ""},
		{`true`, ""},
		{`null`, ""},
		{``, ""},
		{`[1]`, ""},
		{`{"properties":`, ""},
		{`{"a":1}x`, ""},
		{`{"type":"object","type":"array"}`, ""},
		{`{"type":"array","type":"object"}`, `{"type":"array","type":"object"}`},
	} {
		got, ok := hostInputSchema(json.RawMessage(tc.schema))
		if ok != (tc.want != "") || ok && string(got) != tc.want {
			t.Errorf("hostInputSchema(%s) = %s, %t; want %q", tc.schema, got, ok, tc.want)
		}
	}
}

// Whatever a server sends as an input schema, what hostInputSchema offers
// is a JSON object schema that go-sdk's server takes without panicking.
func FuzzHostInputSchema(f *testing.F) {
	for _, s := range []string{`{}`, `{"type":"object"}`, `{"properties":{"a":{}}}`, `{"type":"array"}`, `null`, `{"properties":`,
		`{"type":"object","type":"array"}`, `{"type":"array","type":"object"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, ok := hostInputSchema(json.RawMessage(in))
		if !ok {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil || m["type"] != "object" {
			t.Fatalf("hostInputSchema(%s) = %s: not an object schema (%v)", in, out, err)
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "f"}, nil)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("AddTool(%s) panicked: %v", out, r)
				}
			}()
			s.AddTool(&mcp.Tool{Name: "t", InputSchema: out}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		}()
	})
}

// A host's answer keeps only the fields the question asked for.
func TestOnlyAsked(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"username":{"type":"string"}},"required":["username"]}`)
	got := onlyAsked(schema, map[string]any{"username": "ada", "email": "a@example.com"})
	if len(got) != 1 || got["username"] != "ada" {
		t.Fatalf("got %v", got)
	}
	if onlyAsked(schema, nil) != nil {
		t.Fatal("nil content changed")
	}
}
