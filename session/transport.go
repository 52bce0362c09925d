package session

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/redact"
)

// roundTripper is the per-session HTTP layer under go-sdk's transport: it
// adds the bearer header, turns refused statuses into *HTTPStatusError, and
// captures the raw bytes of tools/list results so the tools' input schemas
// reach the agent byte for byte (go-sdk decodes them into map[string]any).
type roundTripper struct {
	base http.RoundTripper
	// guard is base when it is the host permission guard, which is then
	// told each request's purpose directly (no copy of the request).
	guard hostperm.PurposeRoundTripper
	// bearer is the static bearer token; "" for none/oauth servers.
	bearer string
	// headers are the server's custom headers (config.Server.Headers).
	headers map[string]string
	// passAuthStatuses lets 401/403 through to go-sdk, which then calls the
	// OAuthHandler; for other servers they become typed errors, because
	// go-sdk would otherwise kill the connection with an untyped string.
	passAuthStatuses bool
	raw              *rawToolSink
	// elicit receives the raw schemas of elicitation/create requests
	// from every SSE stream; nil when the client does not elicit.
	elicit *rawElicitSink
	// serverID labels every request for the host-permission guard, so a
	// refusal names the server and purpose (R2.2).
	serverID string
	// connID and onExchange feed the per-server request log (R5.3).
	connID     string
	onExchange func(Exchange)
	// lim bounds every response body (issue #10); nil in unit tests of
	// the capture alone.
	lim *limiter
	// onStreamTrouble hears that the standalone stream cannot be kept.
	onStreamTrouble func(error)
	// onStreamOpen hears the standalone stream's answer: true for 200,
	// false for 405 (the server offers none).
	onStreamOpen func(bool)
}

// Exchange is one HTTP request of a session and how it ended, for the
// per-server request log (R5.3, SPEC B1). It holds no header and no body,
// so no secret: the error text is redacted as well.
type Exchange struct {
	// Time is when the request was sent (or the message arrived); JSON
	// "at", in UTC (MarshalJSON), like every time of the local API.
	Time         time.Time `json:"at"`
	ConnectionID string    `json:"connectionId"`
	HTTPMethod   string    `json:"httpMethod"`
	// RPCMethod is the JSON-RPC method of a POST ("" for GET/DELETE).
	RPCMethod string `json:"rpcMethod,omitempty"`
	Status    int    `json:"status,omitempty"`
	// Millis is the time until the response headers (or the failure).
	Millis float64 `json:"ms"`
	Error  string  `json:"error,omitempty"`
	// Kind is "oauth" for a request of a sign-in or refresh (discovery,
	// registration, token), "" for the MCP endpoint's; Step and URL
	// (redacted) say which OAuth request it was.
	Kind string `json:"kind,omitempty"`
	Step string `json:"step,omitempty"`
	URL  string `json:"url,omitempty"`
	// Level and Message are a server log message's (Kind "log"):
	// notifications/message, bounded and redacted.
	Level   string `json:"level,omitempty"`
	Message string `json:"message,omitempty"`
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.guard == nil {
		if p, _ := hostperm.PurposeFrom(req.Context()); p == "" {
			req = req.WithContext(hostperm.WithPurpose(req.Context(), hostperm.PurposeMCP, rt.serverID))
		}
	}
	rpcMethod := ""
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			rpcMethod = peekRPCMethod(body)
		}
	}
	listsTools := rt.raw != nil && rpcMethod == "tools/list"
	var start time.Time
	if rt.onExchange != nil {
		start = time.Now()
	}
	if rt.bearer != "" || len(rt.headers) > 0 {
		req = req.Clone(req.Context())
		// The configured headers go only here, to the MCP endpoint; the
		// config refuses the names the transport owns (SPEC §9 A2).
		for k, v := range rt.headers {
			req.Header.Set(k, v)
		}
		if rt.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+rt.bearer)
		}
	}
	var cancelDelete context.CancelFunc
	if req.Method == http.MethodDelete {
		// Ending a session is a courtesy to the server; a server that
		// waits for its own handlers before answering must not hold a
		// disconnect up for go-sdk's full 5 s.
		var ctx context.Context
		ctx, cancelDelete = context.WithTimeout(req.Context(), deleteTimeout)
		req = req.WithContext(ctx)
	}
	var resp *http.Response
	var err error
	if rt.guard != nil {
		// The guard is told the purpose (unless the request's context
		// names one) instead of reading it from a copy of the request.
		resp, err = rt.guard.RoundTripPurpose(req, hostperm.PurposeMCP, rt.serverID)
	} else {
		resp, err = rt.base.RoundTrip(req)
	}
	if rt.onExchange != nil {
		ex := Exchange{Time: start, ConnectionID: rt.connID, HTTPMethod: req.Method, RPCMethod: rpcMethod,
			Millis: float64(time.Since(start).Microseconds()) / 1000}
		if err != nil {
			ex.Error = redact.Text(err.Error())
		} else {
			ex.Status = resp.StatusCode
		}
		rt.onExchange(ex)
	}
	if rt.onStreamTrouble != nil {
		if trouble := standaloneTrouble(req, resp, err); trouble != nil {
			rt.onStreamTrouble(trouble)
		}
	}
	if rt.onStreamOpen != nil && err == nil && isStandalone(req) {
		switch resp.StatusCode {
		case http.StatusOK:
			rt.onStreamOpen(true)
		case http.StatusMethodNotAllowed:
			rt.onStreamOpen(false)
		}
	}
	if cancelDelete != nil {
		if err != nil {
			cancelDelete()
		} else {
			resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancelDelete}
		}
	}
	if err != nil {
		return nil, err
	}
	if req.Method != http.MethodPost {
		// GET (standalone SSE) and DELETE statuses are go-sdk's business:
		// a 405 on GET means "no stream", a 404 means session missing.
		if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK && isSSE(resp.Header.Get("Content-Type")) {
			switch {
			case rt.lim != nil:
				rt.lim.wrapStream(req, resp, capture{elicit: rt.elicit})
			case rt.elicit != nil:
				resp.Body = &captureBody{rc: resp.Body, elicit: rt.elicit}
			}
		}
		return resp, nil
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "":
		// go-sdk turns a 404 on a request with a session id into
		// ErrSessionMissing, which the manager reconnects on. Without a
		// session id a 404 means a wrong endpoint path: typed below.
		// This POST carried the request itself, so the request never
		// ran (SPEC §9 A5): say so to the request's caller.
		if slot := requestSlotFrom(req.Context()); slot != nil {
			slot.sessionMissing.Store(true)
		}
		return resp, nil
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && rt.passAuthStatuses:
		return resp, nil
	case code >= 400 && code != http.StatusUnauthorized && code != http.StatusForbidden && isJSON(resp.Header.Get("Content-Type")):
		// A JSON body on an error status is a JSON-RPC error (e.g. -32022
		// "unsupported protocol version"): go-sdk reads it, and the
		// server's own message beats a bare status.
		return resp, nil
	case code >= 300:
		e := &HTTPStatusError{
			StatusCode:      code,
			RPCMethod:       rpcMethod,
			WWWAuthenticate: resp.Header.Values("WWW-Authenticate"),
			RetryAfter:      resp.Header.Get("Retry-After"),
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, e
	}
	var cp capture
	if listsTools {
		cp.sink = rt.raw
	}
	sse := isSSE(resp.Header.Get("Content-Type"))
	if sse {
		// A server's question rides the stream of the request it
		// belongs to (a tools/call), or the standalone GET stream.
		cp.elicit = rt.elicit
	}
	if rt.lim != nil {
		rt.lim.wrapPOST(req, resp, cp)
		if sse {
			return resp, nil // the framer captures as it hands events on
		}
	}
	if cp.sink != nil || cp.elicit != nil {
		resp.Body = &captureBody{rc: resp.Body, sink: cp.sink, elicit: cp.elicit}
	}
	return resp, nil
}

func isJSON(ct string) bool { return mediaType(ct) == "application/json" }

func isSSE(ct string) bool { return mediaType(ct) == "text/event-stream" }

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// deleteTimeout bounds the DELETE that ends a session.
const deleteTimeout = 1500 * time.Millisecond

// cancelOnClose releases a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// peekRPCMethod finds the JSON-RPC method in a request body (a copy)
// with a scan rather than a decode: this runs on every POST. The method
// is found in the first peekSize bytes of every message go-sdk writes
// (it comes before the params), so only those are read, into a pooled
// buffer; a body where the prefix does not decide it is read whole (up
// to 1 MiB), as before.
func peekRPCMethod(rc io.ReadCloser) string {
	defer rc.Close()
	buf := peekBufs.Get().(*[peekSize]byte)
	defer peekBufs.Put(buf) // method never refers to buf: see rpcMethodName
	n, err := io.ReadFull(rc, buf[:])
	complete := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !complete {
		return ""
	}
	if m, decided := scanRPCMethod(buf[:n], complete); decided {
		return rpcMethodName(m)
	}
	rest, err := io.ReadAll(io.LimitReader(rc, 1<<20-peekSize))
	if err != nil {
		return ""
	}
	data := append(buf[:n:n], rest...) // a copy: buf goes back to the pool
	m, _ := scanRPCMethod(data, true)
	return rpcMethodName(m)
}

const peekSize = 512

var peekBufs = sync.Pool{New: func() any { return new([peekSize]byte) }}

// scanRPCMethod finds the value of the first "method" member in data, a
// prefix of the body (all of it when complete). decided is false when
// more of the body could change the answer.
func scanRPCMethod(data []byte, complete bool) (method []byte, decided bool) {
	i := bytes.Index(data, []byte(`"method"`))
	if i < 0 {
		return nil, complete
	}
	rest := bytes.TrimLeft(data[i+len(`"method"`):], " \t\r\n")
	if len(rest) == 0 {
		return nil, complete
	}
	rest, ok := bytes.CutPrefix(rest, []byte(":"))
	if !ok {
		return nil, true
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) == 0 {
		return nil, complete
	}
	rest, ok = bytes.CutPrefix(rest, []byte(`"`))
	if !ok {
		return nil, true
	}
	end := bytes.IndexByte(rest, '"')
	switch {
	case end > 128 || end < 0 && len(rest) > 128:
		return nil, true
	case end < 0:
		return nil, complete
	}
	return rest[:end], true
}

// rpcMethodName returns m as a string, without allocating for the
// methods a client sends.
func rpcMethodName(m []byte) string {
	switch string(m) {
	case "":
		return ""
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/initialized":
		return "notifications/initialized"
	case "initialize":
		return "initialize"
	case "ping":
		return "ping"
	case "prompts/get":
		return "prompts/get"
	case "prompts/list":
		return "prompts/list"
	case "resources/read":
		return "resources/read"
	case "resources/list":
		return "resources/list"
	case "resources/templates/list":
		return "resources/templates/list"
	case "logging/setLevel":
		return "logging/setLevel"
	case "completion/complete":
		return "completion/complete"
	}
	return string(m)
}

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

// schema returns the raw inputSchema of a tool as the server sent it.
func (s *rawToolSink) schema(name string) (json.RawMessage, bool) {
	r, ok := s.tool(name)
	return r.input, ok
}

// tool returns the raw parts of a tool as the server sent them.
func (s *rawToolSink) tool(name string) (rawTool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.tools[name]
	return r, ok
}

// captureBody parses the response stream (JSON or SSE) as go-sdk reads it,
// before handing the bytes on, so a capture is recorded before go-sdk can
// act on the decoded message: the raw tools of a tools/list result (sink)
// and the raw requestedSchema of elicitation/create requests (elicit).
// Either may be nil. The bytes go-sdk reads are never changed.
//
// SSE is parsed line by line (any of \n, \r\n line ends; an empty line
// ends an event), so the cost is linear in the stream and a long-lived
// stream holds at most one event; an event over maxCapture is skipped. A
// plain JSON body is one message, complete at EOF.
type captureBody struct {
	rc     io.ReadCloser
	sink   *rawToolSink
	elicit *rawElicitSink

	mode     int    // captureUnknown, captureJSON or captureSSE
	buf      []byte // JSON: the body so far; SSE: the current partial line
	data     []byte // SSE: the data of the current event
	skipLine bool   // SSE: dropping an oversized line up to its end
	skipData bool   // SSE: dropping an oversized event up to its end
	done     bool
}

const (
	captureUnknown = iota
	captureJSON
	captureSSE
)

const maxCapture = 16 << 20

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if !c.done && n > 0 {
		c.feed(p[:n])
	}
	if err != nil && !c.done {
		c.finish()
	}
	return n, err
}

func (c *captureBody) Close() error { return c.rc.Close() }

func (c *captureBody) feed(b []byte) {
	if c.mode == captureUnknown {
		t := bytes.TrimLeft(b, " \r\n\t")
		switch {
		case len(t) == 0:
			return
		case t[0] == '{' || t[0] == '[':
			c.mode = captureJSON
		default:
			c.mode = captureSSE
		}
		b = t
	}
	if c.mode == captureJSON {
		c.buf = append(c.buf, b...)
		if len(c.buf) > maxCapture {
			c.done, c.buf = true, nil
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !c.skipLine {
				c.buf = append(c.buf, b...)
				if len(c.buf) > maxCapture {
					c.buf, c.skipLine, c.skipData = c.buf[:0], true, true
				}
			}
			return
		}
		if c.skipLine {
			c.skipLine = false
		} else {
			c.buf = append(c.buf, b[:i]...)
			c.line(bytes.TrimSuffix(c.buf, []byte("\r")))
		}
		c.buf = c.buf[:0]
		b = b[i+1:]
	}
}

// line handles one complete SSE line.
func (c *captureBody) line(l []byte) {
	if len(l) == 0 { // end of event
		if len(c.data) > 0 && !c.skipData {
			c.take(c.data[:len(c.data)-1]) // without the last '\n'
		}
		c.data, c.skipData = c.data[:0], false
		return
	}
	rest, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok || c.skipData {
		return
	}
	rest = bytes.TrimPrefix(rest, []byte(" "))
	if len(c.data)+len(rest) > maxCapture {
		c.data, c.skipData = c.data[:0], true
		return
	}
	c.data = append(c.data, rest...)
	c.data = append(c.data, '\n')
}

// finish handles the end of the body: a JSON body is complete, and an
// unterminated last SSE event still counts (go-sdk dispatches it too).
func (c *captureBody) finish() {
	switch c.mode {
	case captureJSON:
		c.take(c.buf)
	case captureSSE:
		if !c.skipLine && len(c.buf) > 0 {
			c.line(bytes.TrimSuffix(c.buf, []byte("\r")))
		}
		c.line(nil)
	}
	c.done, c.buf, c.data = true, nil, nil
}

func (c *captureBody) take(msg []byte) { capture{sink: c.sink, elicit: c.elicit}.take(msg) }

// capture records what a message carries for the raw sinks: the raw tools
// of a tools/list result (sink) and the raw requestedSchema of an
// elicitation/create request (elicit). Either may be nil. The limiter's
// SSE framer uses it on each event it hands on, so an SSE stream is parsed
// once; captureBody uses it for the rest.
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
