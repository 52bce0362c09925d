package session

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw sinks keep parts of what a server sends as its bytes, which
// go-sdk decodes into maps (losing key order and exact numbers). The
// session's limit layer records them as it hands each message to go-sdk,
// in the one pass that also bounds it (limitTransport, sseBody, jsonBody),
// so a capture is in place before go-sdk acts on the decoded message.

// rawToolSink keeps the raw inputSchema, outputSchema and _meta of each
// tool of the latest tools/list pages, keyed by tool name.
type rawToolSink struct {
	mu    sync.Mutex
	tools map[string]rawTool
}

// rawTool is what of one tool is kept as the server's bytes: its schemas
// and its _meta (issue #19 item 4: whole definitions reach the hosts).
type rawTool struct {
	input, output, meta json.RawMessage
}

func newRawToolSink() *rawToolSink { return &rawToolSink{tools: map[string]rawTool{}} }

func (s *rawToolSink) record(tools []json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tools {
		var head struct {
			Name         string          `json:"name"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
			Meta         json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(t, &head) == nil && head.Name != "" && head.InputSchema != nil {
			// The slices are shared with the catalog (read-only), so an
			// idle session keeps one copy of each schema, not two.
			s.tools[head.Name] = rawTool{input: head.InputSchema, output: head.OutputSchema, meta: head.Meta}
		}
	}
}

// tool returns the raw parts of a tool as the server sent them.
func (s *rawToolSink) tool(name string) (rawTool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tools[name]
	return r, ok
}

// capture records what a message carries for the raw sinks: the raw tools
// of a tools/list result (sink) and the raw requestedSchema of an
// elicitation/create request (elicit). Either may be nil. The limiter's
// SSE framer uses it on each event it hands on and jsonBody on a whole
// JSON body, so every body is read once.
type capture struct {
	sink   *rawToolSink
	elicit *rawElicitSink
}

// wanted reports whether an event (its raw lines) may hold something to
// record, so that its data is only extracted when it might.
func (c capture) wanted(ev []byte) bool {
	return c.sink != nil || c.elicit != nil && bytes.Contains(ev, []byte(`"elicitation/create"`))
}

func (c capture) take(msg []byte) {
	if c.sink != nil {
		var env struct {
			Result *struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &env) == nil && env.Result != nil {
			c.sink.record(env.Result.Tools)
		}
	}
	if c.elicit != nil && bytes.Contains(msg, []byte(`"elicitation/create"`)) {
		c.elicit.recordMessage(msg)
	}
}

// rawElicitSink keeps the raw requestedSchema of the latest
// elicitation/create requests of a session, so the question reaches the
// person with its fields in the server's order (issue #8 item 16): go-sdk
// decodes the schema into a map[string]any, which has no order. Entries are
// keyed by the schema's canonical JSON (decoded and re-encoded, as the
// handler sees it), so the raw bytes used are always the same schema that
// go-sdk validated and passed on.
type rawElicitSink struct {
	mu      sync.Mutex
	entries []rawElicit // oldest first, at most maxRawElicit
}

type rawElicit struct {
	key string
	raw json.RawMessage
}

const (
	// maxRawElicit bounds the schemas held for questions not yet handled.
	maxRawElicit = 16
	// maxRawElicitSchema is the largest schema kept: above elicit's
	// default MaxSchemaBytes (64 KiB), so its order survives a raised limit.
	maxRawElicitSchema = 256 << 10
)

func newRawElicitSink() *rawElicitSink { return &rawElicitSink{} }

// recordMessage records the schema of an elicitation/create request; msg
// is one JSON-RPC message or a batch.
func (s *rawElicitSink) recordMessage(msg []byte) {
	msgs := []json.RawMessage{msg}
	if t := bytes.TrimLeft(msg, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		if json.Unmarshal(msg, &msgs) != nil {
			return
		}
	}
	for _, m := range msgs {
		var req struct {
			Method string `json:"method"`
			Params struct {
				RequestedSchema json.RawMessage `json:"requestedSchema"`
			} `json:"params"`
		}
		if json.Unmarshal(m, &req) != nil || req.Method != "elicitation/create" {
			continue
		}
		raw := req.Params.RequestedSchema
		if len(raw) == 0 || len(raw) > maxRawElicitSchema || string(raw) == "null" {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		key, err := json.Marshal(v)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if len(s.entries) == maxRawElicit {
			s.entries = slices.Delete(s.entries, 0, 1)
		}
		s.entries = append(s.entries, rawElicit{string(key), slices.Clone(raw)})
		s.mu.Unlock()
	}
}

// take returns (and forgets) the raw bytes of the newest recorded schema
// equal to schema, the decoded form go-sdk hands to the handler.
func (s *rawElicitSink) take(schema any) (json.RawMessage, bool) {
	key, err := json.Marshal(schema)
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.entries) - 1; i >= 0; i-- {
		if s.entries[i].key == string(key) {
			raw := s.entries[i].raw
			s.entries = slices.Delete(s.entries, i, i+1)
			return raw, true
		}
	}
	return nil, false
}

// withRawSchema returns req with its RequestedSchema replaced by the raw
// bytes the server sent (a json.RawMessage, properties in the server's
// order), when the transport captured them; otherwise req unchanged.
// go-sdk has already validated the schema these bytes encode.
func withRawSchema(req *mcp.ElicitRequest, sink *rawElicitSink) *mcp.ElicitRequest {
	if req == nil || req.Params == nil || req.Params.RequestedSchema == nil || sink == nil {
		return req
	}
	raw, ok := sink.take(req.Params.RequestedSchema)
	if !ok {
		return req
	}
	p := *req.Params
	p.RequestedSchema = raw
	r := *req
	r.Params = &p
	return &r
}
