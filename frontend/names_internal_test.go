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
