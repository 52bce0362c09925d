package localapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/remotemcp/remotemcp/localapi"
)

// scaleToolList is the encoded tool list of servers × tools tools like
// the scale benchmark's (internal/bench): a description, a small schema
// and annotations each.
func scaleToolList(tb testing.TB, servers, tools int) []byte {
	tb.Helper()
	l := localapi.ToolList{Generation: 7, Errors: []localapi.ServerError{}}
	for s := range servers {
		for i := range tools {
			id, name := fmt.Sprintf("s%04d", s), fmt.Sprintf("tool_%03d", i)
			desc := fmt.Sprintf("Tool %d of the scale benchmark: looks up a record by its key and returns the fields asked for, newest first.", i)
			l.Tools = append(l.Tools, localapi.Tool{Name: "mcp__" + id + "__" + name, ServerID: id, ToolName: name, Title: fmt.Sprintf("Tool %d", i),
				Description: desc, Effects: localapi.EffectsWrite, Retry: "never", Own: &localapi.ToolText{Description: desc},
				InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string","description":"the record key"},"fields":{"type":"array","items":{"type":"string"}},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["key"]}`),
				Annotations: json.RawMessage(fmt.Sprintf(`{"title":"Tool %d","readOnlyHint":true}`, i))})
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// BenchmarkSplitToolList: taking apart the tool list of 500 servers × 50
// tools (~16 MB) without decoding its tools, beside decoding it.
//
//	go test -run XXX -bench SplitToolList ./localapi/
func BenchmarkSplitToolList(b *testing.B) {
	enc := scaleToolList(b, 500, 50)
	b.Run("split", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := localapi.SplitToolList(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			var l localapi.ToolList
			if err := json.Unmarshal(enc, &l); err != nil {
				b.Fatal(err)
			}
		}
	})
}
