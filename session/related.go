package session

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Which call a server's request belongs to (issue #20 item 3, routing).
//
// In Streamable HTTP a server's request (elicitation/create,
// sampling/createMessage) rides the SSE response stream of the client's
// POST it relates to, or the standalone GET stream, which belongs to no
// request. A question or a sampling request must reach only the MCP host
// whose tool call it belongs to; one that belongs to no call reaches
// nobody. go-sdk v1.8.0's client hands a handler the request alone:
// neither its JSON-RPC id nor the stream it came on.
//
// So the transport, which sees every stream, marks each such request as
// it hands the event to go-sdk: it writes into params._meta, under
// relatedMetaKey, the session's secret and what carried it (see the
// rel* tags): the tools/call whose response stream carried it (by its
// operation id), the standalone GET stream (first opened or resumed with
// Last-Event-ID: connectionStreamKey), or another request's stream
// (a prompts/get, a resources/read, ...). The three stay apart because
// only a question on the standalone stream may be given to the server's
// one call in flight (elicit; TypeScript servers send server.elicitInput
// there): a question on another request's stream belongs to that request,
// whose host is not the caller's. The handler takes the mark off before
// anything else sees the params. A request without a valid mark (in a
// JSON body or a batch, or with a mark the server wrote itself, which
// cannot hold the secret) belongs to no call and is not the standalone
// stream's: the question is declined, the sampling request refused.

// relatedMetaKey is the _meta key of the mark.
const relatedMetaKey = "io.remotemcp/related-call"

// relatedMethods are the server requests that are marked.
var relatedMethods = [...]string{"elicitation/create", "sampling/createMessage"}

// The tags written after the secret (issue #20 item 3, review finding 1).
const (
	relCall       = "c" // followed by the call's operation id
	relStandalone = "s" // the standalone GET stream
	relOther      = "o" // another request's stream, or no call known
)

// relation is what a valid mark says.
type relation struct {
	call       string // the tools/call's operation id; "" for none
	standalone bool   // carried by the standalone GET stream
}

// relTag is the tag of the stream that carries an event: the call op's
// response stream when op is set, else the standalone stream when
// standalone is set, else another request's stream.
func relTag(op string, standalone bool) string {
	switch {
	case op != "":
		return relCall + op
	case standalone:
		return relStandalone
	}
	return relOther
}

type relatedCallKey struct{}

// connectionStreamKey marks the context given to go-sdk's Connect. go-sdk
// opens the standalone GET stream, and reopens it after a break (then
// with Last-Event-ID), with the connection's context, which keeps that
// context's values; a GET resuming a request's stream carries the
// request's context instead. So a GET with the mark is the standalone
// stream, initial or resumed.
type connectionStreamKey struct{}

func withConnectionStream(ctx context.Context) context.Context {
	return context.WithValue(ctx, connectionStreamKey{}, true)
}

// onConnectionStream reports whether req is a GET of the standalone
// stream (see connectionStreamKey).
func onConnectionStream(req *http.Request) bool {
	on, _ := req.Context().Value(connectionStreamKey{}).(bool)
	return on && req.Method == http.MethodGet
}

// RelatedCall returns the operation id (CallOptions.OperationID) of the
// tool call that the server's request being handled in ctx belongs to: the
// call whose response stream carried it. It is "" when the request came on
// the standalone stream or another request's stream, or could not be tied
// to a stream; Options.Elicit gets such a ctx.
func RelatedCall(ctx context.Context) string {
	r, _ := ctx.Value(relatedCallKey{}).(relation)
	return r.call
}

// FromStandaloneStream reports whether the server's request being
// handled in ctx came, with this session's mark, on the standalone GET
// stream: it belongs to no request. False for a call's stream, another
// request's stream (a prompts/get's, say), and a request that could not be
// tied to a stream (a JSON body, a batch, a forged mark).
func FromStandaloneStream(ctx context.Context) bool {
	r, _ := ctx.Value(relatedCallKey{}).(relation)
	return r.standalone
}

func withRelated(ctx context.Context, r relation) context.Context {
	return context.WithValue(ctx, relatedCallKey{}, r)
}

// mayNeedMark reports whether an SSE event (its raw lines) may hold a
// request to mark.
func mayNeedMark(ev []byte) bool {
	for _, m := range relatedMethods {
		if bytes.Contains(ev, []byte(m)) {
			return true
		}
	}
	return false
}

// markEvent returns the SSE event ev (its lines, each ending in '\n')
// with the request in data marked as carried by the stream tag names
// (relTag), or
// nil when data is not one marked kind of request (it then passes as it
// is and, if go-sdk takes it for one, counts as belonging to no call).
// The event's other lines stay; its data becomes one line.
func markEvent(ev, data []byte, secret, tag string) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil || msg["id"] == nil {
		return nil
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || !isRelatedMethod(method) {
		return nil
	}
	params := map[string]json.RawMessage{}
	if p := msg["params"]; len(p) > 0 && string(p) != "null" {
		if json.Unmarshal(p, &params) != nil || params == nil {
			return nil
		}
	}
	meta := map[string]json.RawMessage{}
	if m := params["_meta"]; len(m) > 0 && string(m) != "null" {
		if json.Unmarshal(m, &meta) != nil || meta == nil {
			return nil
		}
	}
	var err error
	if meta[relatedMetaKey], err = json.Marshal(secret + tag); err != nil {
		return nil
	}
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return nil
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return nil
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return nil
	}
	var b bytes.Buffer
	b.Grow(len(ev) + 64)
	for line := range bytes.Lines(ev) {
		if !bytes.HasPrefix(line, []byte("data:")) {
			b.Write(line)
		}
	}
	b.WriteString("data: ")
	b.Write(out)
	b.WriteByte('\n')
	return b.Bytes()
}

func isRelatedMethod(m string) bool {
	for _, r := range relatedMethods {
		if m == r {
			return true
		}
	}
	return false
}

// takeRelated removes the mark from meta and returns what it says;
// marked is false when there is no mark of this session's secret with a
// known tag (the request then belongs to no call and is not the
// standalone stream's).
func takeRelated(meta mcp.Meta, secret string) (r relation, marked bool) {
	v, ok := meta[relatedMetaKey]
	if !ok {
		return relation{}, false
	}
	delete(meta, relatedMetaKey)
	s, _ := v.(string)
	if len(s) < len(secret) || subtle.ConstantTimeCompare([]byte(s[:len(secret)]), []byte(secret)) != 1 {
		return relation{}, false
	}
	switch tag := s[len(secret):]; {
	case strings.HasPrefix(tag, relCall) && len(tag) > len(relCall):
		return relation{call: strings.Clone(tag[len(relCall):])}, true
	case tag == relStandalone:
		return relation{standalone: true}, true
	case tag == relOther:
		return relation{}, true
	}
	return relation{}, false
}
