package opid

import (
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	tests := []struct{ prefix string }{{"op-"}, {"mcp-"}, {""}}
	for _, tt := range tests {
		seen := map[string]bool{}
		for range 10000 {
			id := New(tt.prefix)
			rest, ok := strings.CutPrefix(id, tt.prefix)
			if !ok || len(rest) != Len || strings.Trim(rest, alphabet) != "" {
				t.Fatalf("New(%q) = %q, want the prefix and %d base32 characters", tt.prefix, id, Len)
			}
			if seen[id] {
				t.Fatalf("New(%q) repeated %q", tt.prefix, id)
			}
			seen[id] = true
		}
	}
}

// Every character position takes every value: the bits are spread over
// the whole id, not left constant where a counter would be.
func TestNewUsesEveryPosition(t *testing.T) {
	var vals [Len]map[byte]bool
	for i := range vals {
		vals[i] = map[byte]bool{}
	}
	for range 4000 {
		id := New("")
		for i := range Len {
			vals[i][id[i]] = true
		}
	}
	for i, v := range vals {
		if len(v) != 32 {
			t.Errorf("position %d took %d of 32 values", i, len(v))
		}
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New("op-")
	}
}
