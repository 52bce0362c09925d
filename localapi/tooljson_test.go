package localapi_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/remotemcp/remotemcp/localapi"
)

// splitOracle is what encoding/json makes of an encoded tool list: each
// tool's bytes (json.RawMessage keeps them as they are), its first "name"
// member, and the rest decoded; members are matched by their exact keys,
// the last of equal keys counting, as SplitToolList does. ok is false
// when encoding/json refuses it or a tool is not an object with a string
// name.
func splitOracle(enc []byte) (*localapi.EncodedToolList, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(enc, &top) != nil || top == nil {
		return nil, false
	}
	out := &localapi.EncodedToolList{}
	var tools []json.RawMessage
	for key, dst := range map[string]any{"generation": &out.Generation, "errors": &out.Errors, "tools": &tools} {
		if v, ok := top[key]; ok && json.Unmarshal(v, dst) != nil {
			return nil, false
		}
	}
	for _, t := range tools {
		name, ok := firstName(t)
		if !ok {
			return nil, false
		}
		out.Tools = append(out.Tools, localapi.EncodedTool{Name: name, JSON: t})
	}
	return out, true
}

// firstName is the value of the first "name" member of a JSON object.
func firstName(obj []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return "", false
		}
		if key == "name" {
			var s string
			return s, json.Unmarshal(v, &s) == nil
		}
	}
	return "", false
}

func encodeList(t *testing.T, l localapi.ToolList, indent bool) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(l); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Issue #21: SplitToolList gives each tool's bytes and name as decoding
// the list does, whatever the strings hold (escaped quotes, backslashes
// before a closing quote, brackets, HTML, U+2028, invalid UTF-8).
func TestSplitToolList(t *testing.T) {
	tricky := []string{`plain`, `quote " inside`, `ends in a backslash \`, `two \\`, `\"`, `{[}]`, `<b>&amp;</b>`,
		"line\u2028sep", "bad \xff utf-8", "tab\tnew\nline", `"},{"name":"fake"`, ``}
	var l localapi.ToolList
	l.Generation = 42
	for i, s := range tricky {
		l.Tools = append(l.Tools, localapi.Tool{Name: "mcp__s__t" + s, ServerID: "s", ToolName: s, Description: s, Title: s,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","description":` + mustString(t, s) + `}},"x":[1,2.5e3,true,null,{}]}`),
			Annotations: json.RawMessage(`{"title":` + mustString(t, s) + `}`), Effects: localapi.EffectsWrite, Retry: "never",
			Own: &localapi.ToolText{Description: s}})
		if i%3 == 0 {
			l.Errors = append(l.Errors, localapi.ServerError{ServerID: s, Message: s})
		}
	}
	cases := []struct {
		name string
		enc  []byte
	}{
		{"compact", encodeList(t, l, false)},
		{"indented", encodeList(t, l, true)},
		{"empty", encodeList(t, localapi.ToolList{Tools: []localapi.Tool{}, Errors: []localapi.ServerError{}}, false)},
		{"null tools", []byte(`{"generation":3,"tools":null,"errors":null}`)},
		{"name not first, other members", []byte(`{"other":{"tools":[1]},"tools":[ {"a":"}","name":"x\"y"} , {"name":"z"} ],"generation":9}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, ok := splitOracle(tc.enc)
			if !ok {
				t.Fatalf("the oracle refuses %s", tc.enc)
			}
			got, err := localapi.SplitToolList(tc.enc)
			if err != nil {
				t.Fatal(err)
			}
			if got.Generation != want.Generation || !slices.Equal(got.Errors, want.Errors) || len(got.Tools) != len(want.Tools) {
				t.Fatalf("split %+v, want %+v", got, want)
			}
			for i := range got.Tools {
				if got.Tools[i].Name != want.Tools[i].Name || !bytes.Equal(got.Tools[i].JSON, want.Tools[i].JSON) {
					t.Errorf("tool %d: %q %s, want %q %s", i, got.Tools[i].Name, got.Tools[i].JSON, want.Tools[i].Name, want.Tools[i].JSON)
				}
			}
		})
	}
}

func mustString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What is not a tool list is refused with an error, never split wrong.
func TestSplitToolListRefuses(t *testing.T) {
	for _, enc := range []string{
		``, `[]`, `null`, `{`, `{"tools":[`, `{"tools":[{"name":"a"}`, `{"tools":[{"name":"a"},]}`, `{"tools":[{"name":"a}]}`,
		`{"tools":["a"]}`, `{"tools":[{"name":1}]}`, `{"tools":{}}`, `{"tools":[]} x`, `{"generation":"x"}`,
		`{"errors":[{"serverId":1}]}`, `{tools:[]}`, `{"tools" []}`, `{"tools":[{"name":"a"} {"name":"b"}]}`,
	} {
		if l, err := localapi.SplitToolList([]byte(enc)); err == nil {
			t.Errorf("%s split: %+v", enc, l)
		}
	}
}

// FuzzSplitToolList: whatever the bytes, SplitToolList does not panic,
// and what encoding/json reads as a tool list it splits as encoding/json
// does.
//
//	go test -run='^$' -fuzz='^FuzzSplitToolList$' -fuzztime=60s ./localapi/
func FuzzSplitToolList(f *testing.F) {
	for _, s := range []string{
		`{"generation":1,"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b\\\"","x":"\\\\"}],"errors":[]}`,
		`{"tools":[{"name":"a","s":"]}"}]}`, `{"tools":null}`, `{}`, `{"tools":[{"name":"\u00e9"}]}`, `{"tools":[{"x":[{"name":"n"}],"name":"m"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, enc []byte) {
		got, err := localapi.SplitToolList(enc)
		want, ok := splitOracle(enc)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("encoding/json reads %q as a tool list; split: %v", enc, err)
		}
		if got.Generation != want.Generation || len(got.Tools) != len(want.Tools) {
			t.Fatalf("split %+v, want %+v", got, want)
		}
		for i := range got.Tools {
			if got.Tools[i].Name != want.Tools[i].Name || !bytes.Equal(got.Tools[i].JSON, want.Tools[i].JSON) {
				t.Fatalf("tool %d: %q %s, want %q %s", i, got.Tools[i].Name, got.Tools[i].JSON, want.Tools[i].Name, want.Tools[i].JSON)
			}
		}
	})
}
