package daemon

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/localapi"
)

// The request bodies the API's handlers decode, each with the bound its
// handler gives decode. decodeBody is what decode does once it has the
// request's Content-Type and bounded body.
var requestKinds = []struct {
	name   string
	limit  int64
	decode func(contentType string, body io.Reader, limit int64) (any, error)
}{
	{"POST /api/servers", maxBody, decodeAny[localapi.AddServerRequest]},
	{"POST /api/servers/import", maxImportBody, decodeAny[localapi.ImportRequest]},
	{"PATCH /api/servers/{id}", maxBody, decodeAny[localapi.UpdateServerRequest]},
	{"POST /api/servers/{id}/tools", maxBody, decodeAny[localapi.ToolSwitch]},
	{"POST /api/servers/{id}/held-tools/accept", maxBody, decodeAny[localapi.AcceptToolsRequest]},
	{"POST /api/grants", maxBody, decodeAny[localapi.OriginRequest]},
	{"POST /api/calls", maxCallBody, decodeAny[localapi.CallRequest]},
	{"POST /api/calls/{operationId}/approval", maxBody, decodeAny[localapi.ApprovalReply]},
	{"POST /api/cards/{id}/answer", maxBody, decodeAny[localapi.Answer]},
	{"POST /api/cards/{id}/retry", maxBody, decodeAny[localapi.RetryRequest]},
	{"POST /api/prompts/get", maxBody, decodeAny[localapi.GetPromptRequest]},
	{"POST /api/resources/read", maxBody, decodeAny[localapi.ReadRequest]},
}

func decodeAny[T any](contentType string, body io.Reader, limit int64) (any, error) {
	v, err := decodeBody[T](contentType, body, limit)
	return &v, err
}

// smallLimit is the bound of the fuzz runs that check the 413 answer.
const smallLimit = 64

// Whatever body and Content-Type arrive, decoding a request never panics
// and ends in one of two ways: a *localapi.Error with CodeBadRequest and
// the status that says why (415 content type, 413 size, 400 the rest), or
// a value that encodes back to JSON the API accepts again, unchanged (so
// the Client's requests, which are such encodings, always decode).
//
//	go test -run='^$' -fuzz='^FuzzDecodeRequest$' -fuzztime=60s ./daemon/
func FuzzDecodeRequest(f *testing.F) {
	seeds := []struct {
		kind int
		ct   string
		body string
	}{
		{0, "application/json", `{"id":"docs","url":"https://mcp.example.com/mcp","auth":"bearer","token":"t0ken-value"}`},
		{0, "application/json; charset=utf-8", `{"id":"docs","url":"https://mcp.example.com/mcp","enabled":false,"scopes":["a","b"]}`},
		{0, "application/json", `{"id":"docs","urll":"typo"}`},
		{0, "text/plain", `{"id":"docs"}`},
		{0, "application/x-www-form-urlencoded", `id=docs`},
		{0, "", `{}`},
		{0, "application/json;;", `{}`},
		{1, "application/json", `{"config":"{\"mcpServers\":{\"a\":{\"url\":\"https://a.example/mcp\"}}}","env":{"K":"v"},"update":true}`},
		{2, "application/json", `{"revision":3,"name":"N","disableTools":["x"],"auth":{"kind":"oauth","scopes":["s"]},"token":null}`},
		{2, "application/json", `{"toolTimeout":"30s","enabled":true,"rebindBearer":true}`},
		{3, "application/json", `{"tool":"echo","enabled":false}`},
		{4, "application/json", `{"origin":"https://a.example","by":"cli"}`},
		{5, "application/json", `{"tool":"mcp__fx__echo","arguments":{"text":"hi"},"approved":true,"operationId":"op-1","timeout":"5s"}`},
		{5, "application/json", `{"tool":"fx/echo","arguments":[1,2,{"a":null}]}`},
		{5, "application/json", `{"tool":"fx/echo","arguments":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`},
		{6, "application/json", `{"approved":true,"reason":"fine"}`},
		{6, "application/json", `{"error":"the terminal went away"}`},
		{7, "application/json", `{"action":"accept","content":{"name":"Ada","age":30,"ok":true,"tags":["a"],"big":1e308}}`},
		{7, "application/json", `{"action":"accept","content":{"n":1e400}}`},
		{7, "application/json", `{"action":"decline"} {"action":"accept"}`},
		{7, "application/json", `{"action":"cancel"}garbage`},
		{8, "application/json", `{"confirmed":true}`},
		{8, "application/json", `{"confirmed":"yes"}`},
		{8, "application/json", ``},
		{8, "application/json", `null`},
		{9, "application/json", `{"command":"/fx:greet","arguments":{"name":"Ada"}}`},
		{10, "application/json", `{"mention":"@fx:test://readme"}`},
		{10, "application/json", "{\"mention\":\"\xff\xfe\"}"},
		{10, "application/json", `{"mention":"\ud800"}`},
		{10, "application/json", `{"__proto__":1}`},
	}
	for _, s := range seeds {
		f.Add(uint8(s.kind), false, s.ct, []byte(s.body))
	}
	f.Add(uint8(5), true, "application/json", []byte(`{"tool":"fx/echo","arguments":{"text":"`+strings.Repeat("x", 2*smallLimit)+`"}}`))
	f.Add(uint8(0), true, "application/json", []byte(`{"id":"a"}`))
	f.Fuzz(func(t *testing.T, kind uint8, small bool, ct string, body []byte) {
		k := requestKinds[int(kind)%len(requestKinds)]
		limit := k.limit
		if small {
			limit = smallLimit
		}
		v, err := k.decode(ct, http.MaxBytesReader(nil, io.NopCloser(bytes.NewReader(body)), limit), limit)
		mt, _, mterr := mime.ParseMediaType(ct)
		jsonType := mterr == nil && mt == "application/json"
		if err != nil {
			e, ok := localapi.AsError(err)
			if !ok {
				t.Fatalf("%s: not a *localapi.Error: %T %v", k.name, err, err)
			}
			if e.Code != localapi.CodeBadRequest || e.Message == "" {
				t.Fatalf("%s: an unclear error: %#v", k.name, e)
			}
			want := map[int]bool{http.StatusBadRequest: true, http.StatusRequestEntityTooLarge: int64(len(body)) > limit}
			if !jsonType {
				want = map[int]bool{http.StatusUnsupportedMediaType: true}
			}
			if !want[e.Status] {
				t.Fatalf("%s: status %d for a %d-byte body of %q (bound %d): %s", k.name, e.Status, len(body), ct, limit, e.Message)
			}
			return
		}
		if !jsonType {
			t.Fatalf("%s: decoded a body of type %q", k.name, ct)
		}
		if int64(len(body)) > limit {
			t.Fatalf("%s: decoded a %d-byte body past the bound %d", k.name, len(body), limit)
		}
		b, err := marshal(v)
		if err != nil {
			t.Fatalf("%s: decoded %#v, which does not encode: %v", k.name, v, err)
		}
		v2, err := k.decode("application/json", bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: the API refuses its own encoding %s: %v", k.name, b, err)
		}
		b2, err := marshal(v2)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("%s: encoding changed on a round trip:\n%s\n%s (%v)", k.name, b, b2, err)
		}
	})
}
