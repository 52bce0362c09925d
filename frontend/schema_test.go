package frontend

import (
	"encoding/json"
	"testing"
)

func TestHostSchema(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"titled multi loses the items' type, order kept",
			`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"array","items":{"type":"string","anyOf":[{"const":"x","title":"X"}]}}},"required":["a"]}`,
			`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]}}},"required":["a"]}`},
		{"untitled multi unchanged", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","enum":["x"]}}}}`, ""},
		{"titled multi without type unchanged", `{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"const":"x"}]}}}}`, ""},
		{"plain form unchanged", `{"type":"object","properties":{"name":{"type":"string"}}}`, ""},
		{"not an object", `[1,2]`, ""},
		{"truncated", `{"type":"object","properties":{"a":`, ""},
		{"properties not an object", `{"properties":3}`, ""},
		{"empty", ``, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == "" {
				want = c.in
			}
			if got := string(hostSchema(json.RawMessage(c.in))); got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// hostSchema never panics, returns valid JSON for valid JSON, and changes
// nothing but the items' "type".
func FuzzHostSchema(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","anyOf":[{"const":"x"}]}}}}`)
	f.Add(`{"properties":{"a":{"type":"array","items":{"type":"string","anyOf":1}}}}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		out := hostSchema(json.RawMessage(in))
		if !json.Valid([]byte(in)) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("hostSchema(%s) = %s: not JSON", in, out)
		}
	})
}
