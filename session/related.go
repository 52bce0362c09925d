package session

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
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
// relatedMetaKey, the session's secret and the operation id of the
// tools/call whose response stream carried it (nothing after the secret
// for the standalone stream or another request's stream). The handler
// takes the mark off before anything else sees the params. A request
// without a valid mark (in a JSON body or a batch, or with a mark the
// server wrote itself, which cannot hold the secret) belongs to no call:
// the question is declined, the sampling request refused.

// relatedMetaKey is the _meta key of the mark.
const relatedMetaKey = "io.remotemcp/related-call"

// relatedMethods are the server requests that are marked.
var relatedMethods = [...]string{"elicitation/create", "sampling/createMessage"}

type relatedCallKey struct{}

// RelatedCall returns the operation id (CallOptions.OperationID) of the
// tool call that the server's request being handled in ctx belongs to: the
// call whose response stream carried it. It is "" when the request came on
// the standalone stream or another request's stream, or could not be tied
// to a stream; Options.Elicit gets such a ctx.
func RelatedCall(ctx context.Context) string {
	op, _ := ctx.Value(relatedCallKey{}).(string)
	return op
}

func withRelatedCall(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, relatedCallKey{}, op)
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
// with the request in data marked as carried by the stream of call, or
// nil when data is not one marked kind of request (it then passes as it
// is and, if go-sdk takes it for one, counts as belonging to no call).
// The event's other lines stay; its data becomes one line.
func markEvent(ev, data []byte, secret, call string) []byte {
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
	if meta[relatedMetaKey], err = json.Marshal(secret + call); err != nil {
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

// takeRelated removes the mark from meta and returns the call it names;
// marked is false when there is no mark of this session's secret (the
// request then belongs to no call).
func takeRelated(meta mcp.Meta, secret string) (call string, marked bool) {
	v, ok := meta[relatedMetaKey]
	if !ok {
		return "", false
	}
	delete(meta, relatedMetaKey)
	s, _ := v.(string)
	if len(s) < len(secret) || subtle.ConstantTimeCompare([]byte(s[:len(secret)]), []byte(secret)) != 1 {
		return "", false
	}
	return strings.Clone(s[len(secret):]), true
}
