package toollines_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/toollines"
	"github.com/remotemcp/remotemcp/localapi"
)

// lister is an EncodedToolLister of fixed bytes.
type lister []byte

func (l lister) EncodedTools(context.Context, localapi.ToolsRequest) (json.RawMessage, error) {
	return json.RawMessage(l), nil
}

// decodedLines is what `remotemcp tools --json` printed before issue
// #21, and still prints without an EncodedToolLister: the list decoded,
// sorted by name, and each tool encoded again on its own line
// (cmd/remotemcp writeJSONLines).
func decodedLines(t *testing.T, enc []byte) []byte {
	t.Helper()
	var l localapi.ToolList
	if err := json.Unmarshal(enc, &l); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(l.Tools, func(x, y localapi.Tool) int { return strings.Compare(x.Name, y.Name) })
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	b.WriteString("[")
	for i, tl := range l.Tools {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		if err := e.Encode(tl); err != nil {
			t.Fatal(err)
		}
		b.Truncate(b.Len() - 1)
	}
	if len(l.Tools) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// encoded is a tool list as the engine encodes it.
func encoded(t *testing.T, l localapi.ToolList) []byte {
	t.Helper()
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(l); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Issue #21: printing the daemon's encoding of each tool prints the same
// bytes as decoding the list and encoding every tool again, whatever the
// tools hold: invalid UTF-8 (encoded as \ufffd, which a decode turns into
// the character), U+2028, HTML characters, escapes, a list out of order.
func TestListWritesWhatDecodingWrote(t *testing.T) {
	tool := func(name, text string) localapi.Tool {
		return localapi.Tool{Name: name, ServerID: "s", ToolName: name, Title: text, Description: text,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"\ufffd <b>"}}}`),
			Annotations: json.RawMessage(`{"title":"\u003c"}`), Effects: localapi.EffectsWrite, Retry: "never",
			OutputSchema: json.RawMessage(`{"type":"object"}`), Icons: json.RawMessage(`[{"src":"https://x/i.png"}]`), Meta: json.RawMessage(`{"k":1}`),
			Own: &localapi.ToolText{Title: text}}
	}
	cases := []struct {
		name string
		list localapi.ToolList
	}{
		{"none", localapi.ToolList{Tools: []localapi.Tool{}, Errors: []localapi.ServerError{}}},
		{"plain", localapi.ToolList{Tools: []localapi.Tool{tool("mcp__s__a", "A tool."), tool("mcp__s__b", "")}}},
		{"tricky text", localapi.ToolList{Tools: []localapi.Tool{tool("mcp__s__a", "bad \xff byte"), tool("mcp__s__b", "sep\u2028<&>\"\\\t")},
			Errors: []localapi.ServerError{{ServerID: "x", Message: "down"}}}},
		{"out of order", localapi.ToolList{Tools: []localapi.Tool{tool("mcp__s__b", "b"), tool("mcp__s__a\xff", "a"), tool("mcp__s__a", "a")}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc := encoded(t, tc.list)
			l, err := toollines.List(t.Context(), lister(enc), localapi.ToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := toollines.Write(&got, l.Tools); err != nil {
				t.Fatal(err)
			}
			if want := decodedLines(t, enc); !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("printed\n%s\ndecoding and encoding printed\n%s", got.Bytes(), want)
			}
			if !slices.Equal(l.Errors, tc.list.Errors) {
				t.Fatalf("errors %v, want %v", l.Errors, tc.list.Errors)
			}
		})
	}
}

// What is not a tool list fails, and nothing is printed from it.
func TestListRefusesWhatIsNoList(t *testing.T) {
	if l, err := toollines.List(t.Context(), lister(`{"tools":[{"name":"a"}`), localapi.ToolsRequest{}); err == nil {
		t.Fatalf("a cut list split: %+v", l)
	}
}
