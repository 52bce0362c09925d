package session

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
)

// FuzzValidateCatalog: the catalog validators never panic on any listing
// go-sdk can decode, and what they accept has unique, well-formed names.
func FuzzValidateCatalog(f *testing.F) {
	f.Add(uint8(0), []byte(`[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{}}]`))
	f.Add(uint8(0), []byte(`[{"name":"a","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{}}]`))
	f.Add(uint8(0), []byte(`[null,{"name":"\u0000"}]`))
	f.Add(uint8(1), []byte(`[{"name":"p","arguments":[{"name":"x","required":true},{"name":"x"}]}]`))
	f.Add(uint8(2), []byte(`[{"uri":"file:///a","name":"a"},{"uri":"::","name":"b"}]`))
	f.Add(uint8(3), []byte(`[{"uriTemplate":"items://{id}","name":"t"},{"uriTemplate":"","name":""}]`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		names := map[string]bool{}
		unique := func(n string) {
			if names[n] {
				t.Fatalf("accepted %q twice", n)
			}
			names[n] = true
			if validName("x", n) != nil {
				t.Fatalf("accepted a bad name %q", n)
			}
		}
		switch kind % 4 {
		case 0:
			var v []*mcp.Tool
			if json.Unmarshal(data, &v) == nil && validateTools(v) == nil {
				for _, x := range v {
					unique(x.Name)
				}
			}
		case 1:
			var v []*mcp.Prompt
			if json.Unmarshal(data, &v) == nil && validatePrompts(v) == nil {
				for _, x := range v {
					unique(x.Name)
				}
			}
		case 2:
			var v []*mcp.Resource
			if json.Unmarshal(data, &v) == nil {
				validateResources(v)
			}
		case 3:
			var v []*mcp.ResourceTemplate
			if json.Unmarshal(data, &v) == nil {
				validateTemplates(v)
			}
		}
	})
}

// FuzzValidateResults: the result validators never panic, and an accepted
// tool result has no null or unknown content.
func FuzzValidateResults(f *testing.F) {
	f.Add(uint8(0), []byte(`{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"}]}`))
	f.Add(uint8(0), []byte(`{"content":[{"type":"resource","resource":{"uri":"a://b","text":"x"}}],"structuredContent":{"a":1}}`))
	f.Add(uint8(0), []byte(`{"content":[null]}`))
	f.Add(uint8(1), []byte(`{"messages":[{"role":"user","content":{"type":"text","text":"x"}},{"role":"system","content":{"type":"text","text":"y"}}]}`))
	f.Add(uint8(2), []byte(`{"contents":[{"uri":"file:///a","text":"x"},{"uri":"","blob":"AA=="}]}`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		switch kind % 3 {
		case 0:
			var r mcp.CallToolResult
			if json.Unmarshal(data, &r) == nil && ValidateCallResult(&r) == nil {
				for i, c := range r.Content {
					if c == nil {
						t.Fatalf("accepted a null content[%d]", i)
					}
				}
			}
		case 1:
			var r mcp.GetPromptResult
			if json.Unmarshal(data, &r) == nil && ValidatePromptResult(&r) == nil {
				for _, m := range r.Messages {
					if m.Role != "user" && m.Role != "assistant" {
						t.Fatalf("accepted role %q", m.Role)
					}
				}
			}
		case 2:
			var r mcp.ReadResourceResult
			if json.Unmarshal(data, &r) == nil {
				ValidateReadResult(&r)
			}
		}
	})
}

// sseEvents is a reference reading of an SSE stream as the framer must
// pass it on: lines end at "\n" (trailing "\r"s dropped, as go-sdk does), an empty line
// ends an event, and an unterminated last event still counts.
func sseEvents(body []byte) []string {
	var events []string
	var cur []string
	lines := strings.Split(string(body), "\n")
	for i, l := range lines {
		if i == len(lines)-1 && l == "" {
			break
		}
		l = strings.TrimRight(l, "\r")
		if l == "" {
			if len(cur) > 0 {
				events = append(events, strings.Join(cur, "\n")+"\n")
			}
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		events = append(events, strings.Join(cur, "\n")+"\n")
	}
	return events
}

// readAllBy reads r to its end in reads of at most size bytes (io.ReadAll
// when size is 0).
func readAllBy(r io.Reader, size int) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	var out []byte
	p := make([]byte, size)
	for {
		n, err := r.Read(p)
		out = append(out, p[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// FuzzSSEFramer: the limiter's SSE framer passes every event within the
// limits through unchanged and in order, never hands on an event over
// maxMessageBytes, and ends a call's stream with one error response.
func FuzzSSEFramer(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"a\":1}\n\n"), uint8(3), uint16(64), true)
	f.Add([]byte("data: x\r\n\r\ndata: y\n\ndata: z"), uint8(1), uint16(8), false)
	f.Add([]byte("data: "+strings.Repeat("A", 300)+"\n\ndata: ok\n\n"), uint8(7), uint16(100), false)
	f.Add([]byte("data: "+strings.Repeat("A", 300)+"\n\ndata: ok\n\n"), uint8(7), uint16(100), true)
	f.Add([]byte("\n\n\n\r\r\n: comment\nid: 7\nretry: 10\n\n"), uint8(2), uint16(16), true)
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8, maxMsg uint16, call bool) {
		lim := config.Limits{MaxMessageBytes: int64(maxMsg) + 1, MaxStreamEvents: 1000, MaxStreamBytes: 1 << 20,
			EventsPerSecond: 1_000_000, BytesPerSecond: 1 << 30}
		l := newLimiter("fz", lim, nil)
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call"}`))
		b := &sseBody{l: l, rc: io.NopCloser(&chunkReader{data: body, n: int(chunk%16) + 1}), req: req, call: call}
		// chunk's high bits pick how go-sdk reads: all at once, or in
		// small reads that leave events partly read between fills.
		out, err := readAllBy(b, int(chunk/16)*5)
		b.Close()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		got := sseEvents(out)
		var want []string
		for _, ev := range sseEvents(body) {
			if int64(len(ev)) <= lim.MaxMessageBytes {
				want = append(want, ev)
			}
		}
		if l.hits.Load() == 0 {
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("events changed:\n got %q\nwant %q", got, want)
			}
		} else if call {
			last := got[len(got)-1]
			if !strings.Contains(last, `"code":-32042`) || !bytes.HasSuffix(out, []byte("\n\n")) {
				t.Fatalf("a call's stream over a limit did not end with the error response: %q", last)
			}
			got = got[:len(got)-1]
		}
		// Whatever was handed on is, in order, events of the input.
		j := 0
		for _, ev := range got {
			for j < len(want) && want[j] != ev {
				j++
			}
			if j == len(want) {
				t.Fatalf("event %q was not in the input (or out of order)", ev)
			}
			j++
		}
		if l.mem.used != 0 {
			t.Fatalf("%d bytes of the memory budget still held after Close", l.mem.used)
		}
	})
}

// peekRPCMethodWhole is the reference reading of peekRPCMethod: the first
// "method" member of the whole body (up to 1 MiB).
func peekRPCMethodWhole(data []byte) string {
	if len(data) > 1<<20 {
		data = data[:1<<20]
	}
	m, _ := scanRPCMethod(data, true)
	return string(m)
}

// FuzzPeekRPCMethod: reading a prefix of the body finds what reading all
// of it finds.
func FuzzPeekRPCMethod(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`), uint16(0))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method" : "x"}`), uint16(500))
	f.Add([]byte(`{"method"`), uint16(503))
	f.Add([]byte(`{"a":"b", "method": "`+strings.Repeat("m", 200)+`"}`), uint16(400))
	f.Fuzz(func(t *testing.T, body []byte, pad uint16) {
		// pad shifts the member across the prefix's end.
		data := append(bytes.Repeat([]byte(" "), int(pad%1100)), body...)
		got := peekRPCMethod(io.NopCloser(bytes.NewReader(data)))
		if want := peekRPCMethodWhole(data); got != want {
			t.Fatalf("peekRPCMethod = %q, want %q", got, want)
		}
	})
}
