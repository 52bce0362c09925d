package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Fuzz targets of what the client reads from the daemon: the call
// stream, the event stream and error answers. The daemon is trusted to be
// well-behaved, but the socket may hold an impostor or a broken daemon:
// whatever arrives, the client must not panic, must fail with an error
// that says what went wrong, and must not buffer without end. The seeds
// run with plain `go test`; fuzz each with
//
//	go test -run='^$' -fuzz='^FuzzCallStream$' -fuzztime=60s ./localapi/

// fuzzLimit is the line and event bound under fuzzing: small, so that
// the fuzzer reaches it.
const fuzzLimit = 256

// callSeeds are call streams: well-formed ones, the daemon's every event
// type, and broken ones.
var callSeeds = []string{
	`{"type":"result","result":{"outcome":"ok","message":"done"}}` + "\n",
	`{"type":"approval","approval":{"operationId":"op","serverId":"s","tool":"mcp__s__t","toolName":"t","arguments":{}}}` + "\n" +
		`{"type":"progress","progress":{"operationId":"op","progress":1,"total":2}}` + "\n" +
		`{"type":"question","question":{"id":"el-1","serverId":"s","message":"?","status":"pending","createdAt":"2025-01-01T00:00:00Z","updatedAt":"2025-01-01T00:00:00Z"}}` + "\n" +
		`{"type":"result","result":{"outcome":"ok"}}` + "\n",
	`{"type":"error","error":{"code":"unavailable","message":"no answer"}}` + "\n",
	`{"type":"error","error":{}}` + "\n",
	`{"type":"error"}` + "\n",
	`{"type":"result"}` + "\n",
	`{"type":"approval"}` + "\n",
	`{"type":"unknown"}` + "\n" + `{"type":"result","result":{}}`,
	"\n\r\n  \n",
	`{"type":"progress","progress":{"progress":1e999}}` + "\n",
	`{"type":"result","result":` + "\n" + `{"outcome":"ok"}}` + "\n",
	`[1,2]` + "\n",
	`null` + "\n",
	`"` + strings.Repeat("x", fuzzLimit) + `"` + "\n",
	`{"type":"result","result":{"content":[{"type":"text","text":"` + strings.Repeat("y", fuzzLimit) + `"}]}}`,
	"\xff\xfe\x00",
}

// The call stream reader returns events or an error, never loops or
// panics, and refuses a line over its bound instead of buffering it.
func FuzzCallStream(f *testing.F) {
	for _, s := range callSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cs := newCallStream(bytes.NewReader(data), fuzzLimit)
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatalf("more events (%d) than the %d bytes could hold", i, len(data))
			}
			_, err := cs.next()
			if err == nil {
				continue
			}
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			if errors.Is(err, errTooLarge) && longestLine(data) < fuzzLimit {
				t.Fatalf("a line refused as too long, but the longest is %d bytes", longestLine(data))
			}
			break
		}
	})
}

func longestLine(data []byte) int {
	n := 0
	for l := range bytes.SplitSeq(data, []byte("\n")) {
		n = max(n, len(l))
	}
	return n
}

// streamTransport answers POST /api/calls with body and every other
// request (the approval decisions) with 204.
type streamTransport struct {
	body      []byte
	decisions int
}

func (st *streamTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	if r.URL.Path == "/api/calls" {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ContentTypeNDJSON}},
			Body: io.NopCloser(bytes.NewReader(st.body)), Request: r}, nil
	}
	st.decisions++
	return &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
}

// A whole Client.Call over any call stream: a result, or an *Error with
// a code, a status and a message; every approval asked is answered.
func FuzzClientCall(f *testing.F) {
	for _, s := range callSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st := &streamTransport{body: data}
		c := NewClientWithTransport(st)
		asked := 0
		res, err := c.Call(context.Background(), CallRequest{Tool: "s/t"}, CallHandler{
			Approve:  func(ApprovalRequest) (Decision, error) { asked++; return Decision{Reason: "no"}, nil },
			Progress: func(Progress) {},
			Question: func(Card) {},
		})
		switch {
		case err == nil && res == nil:
			t.Fatal("no result and no error")
		case err != nil && res != nil:
			t.Fatalf("a result and an error: %v", err)
		case err != nil:
			e, ok := AsError(err)
			if !ok {
				t.Fatalf("not an *Error: %T %v", err, err)
			}
			if e.Code == "" || e.Status == 0 || e.Message == "" {
				t.Fatalf("an unclear error: %#v", e)
			}
		}
		if st.decisions != asked {
			t.Fatalf("%d approvals asked, %d decisions sent", asked, st.decisions)
		}
	})
}

// The event stream reader puts only events with a type and JSON data,
// each within the bound, and refuses a longer line or event.
func FuzzReadSSE(f *testing.F) {
	for _, s := range []string{
		"event: servers\ndata: []\n\n",
		": keep-alive\n\nevent: grants\ndata: {\"grants\":[],\"pending\":[]}\n\n",
		"event: cards\ndata: [\ndata: 1]\n\n",
		"event: catalog\ndata: not json\n\n",
		"event:\ndata: 1\n\n",
		"event: x\r\ndata: 1\r\n\r\n",
		"data: 1\n\n",
		"event: a\nevent: b\ndata: 1\n\n",
		"event: big\n" + strings.Repeat("data: 1\n", fuzzLimit) + "\n",
		"event: long\ndata: " + strings.Repeat("2", 2*fuzzLimit) + "\n\n",
		"event: servers\ndata: []",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := readSSE(bytes.NewReader(data), fuzzLimit, func(ev Event) {
			if ev.Type == "" || strings.ContainsAny(string(ev.Type), "\r\n") {
				t.Fatalf("event type %q", ev.Type)
			}
			if !json.Valid(ev.Data) {
				t.Fatalf("event data is not JSON: %q", ev.Data)
			}
			if len(ev.Data) > fuzzLimit {
				t.Fatalf("a %d-byte event past the %d-byte bound", len(ev.Data), fuzzLimit)
			}
		})
		if err != nil && (!errors.Is(err, errTooLarge) || err.Error() == "") {
			t.Fatalf("error %v", err)
		}
		if err == nil && longestLine(data) > fuzzLimit {
			t.Fatalf("a %d-byte line was read past the %d-byte bound", longestLine(data), fuzzLimit)
		}
	})
}

// Every error answer becomes an *Error with the answer's status, a code
// and a message, whatever its body.
func FuzzParseError(f *testing.F) {
	for _, s := range []struct {
		status int
		body   string
	}{
		{404, `{"error":{"code":"not_found","message":"no server x","field":"id"}}`},
		{409, `{"error":{"code":"permission_required","message":"m","permission":{"origin":"https://a.example"}}}`},
		{400, `{"error":{"code":"bad_request","problems":[{"field":"a","problem":"b"}]}}`},
		{502, "upstream trouble\n"},
		{500, `{"error":null}`},
		{500, `{"error":{"code":""}}`},
		{418, `{"error":{"code":7}}`},
		{401, `{"error":{"code":"x","server":{"id":"s","state":"error","reason":{"class":"network","message":"m"}}}}`},
		{599, ""},
		{200, `{}`},
	} {
		f.Add(s.status, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e := parseError(status, body)
		if e == nil {
			t.Fatal("nil error")
		}
		if e.Status != status || e.Code == "" || e.Message == "" {
			t.Fatalf("an unclear error: %#v", e)
		}
	})
}
