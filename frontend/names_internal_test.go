package frontend

import (
	"encoding/json"
	"testing"
)

// TestObjectSchema: only object schemas are offered (go-sdk's AddTool
// panics on the rest).
func TestObjectSchema(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object"}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, true},
		{`{"type":"array"}`, false},
		{`{"type":["object","null"]}`, false},
		{`{}`, false},
		{`true`, false},
		{`null`, false},
		{``, false},
		{`[1]`, false},
	} {
		if got := objectSchema(json.RawMessage(tc.schema)); got != tc.want {
			t.Errorf("objectSchema(%s) = %t, want %t", tc.schema, got, tc.want)
		}
	}
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
