package session

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/redact"
)

// roundTripper is the per-session HTTP layer under go-sdk's transport: it
// adds the bearer header, turns refused statuses into *HTTPStatusError, and
// captures the raw bytes of tools/list results so the tools' input schemas
// reach the agent byte for byte (go-sdk decodes them into map[string]any).
type roundTripper struct {
	base http.RoundTripper
	// bearer is the static bearer token; "" for none/oauth servers.
	bearer string
	// passAuthStatuses lets 401/403 through to go-sdk, which then calls the
	// OAuthHandler; for other servers they become typed errors, because
	// go-sdk would otherwise kill the connection with an untyped string.
	passAuthStatuses bool
	raw              *rawToolSink
	// serverID labels every request for the host-permission guard, so a
	// refusal names the server and purpose (R2.2).
	serverID string
	// connID and onExchange feed the per-server request log (R5.3).
	connID     string
	onExchange func(Exchange)
}

// Exchange is one HTTP request of a session and how it ended, for the
// per-server request log (R5.3, SPEC B1). It holds no header and no body,
// so no secret: the error text is redacted as well.
type Exchange struct {
	Time         time.Time `json:"time"`
	ConnectionID string    `json:"connectionId"`
	HTTPMethod   string    `json:"httpMethod"`
	// RPCMethod is the JSON-RPC method of a POST ("" for GET/DELETE).
	RPCMethod string `json:"rpcMethod,omitempty"`
	Status    int    `json:"status,omitempty"`
	// Millis is the time until the response headers (or the failure).
	Millis float64 `json:"ms"`
	Error  string  `json:"error,omitempty"`
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if p, _ := hostperm.PurposeFrom(req.Context()); p == "" {
		req = req.WithContext(hostperm.WithPurpose(req.Context(), hostperm.PurposeMCP, rt.serverID))
	}
	rpcMethod := ""
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			rpcMethod = peekRPCMethod(body)
		}
	}
	listsTools := rt.raw != nil && rpcMethod == "tools/list"
	start := time.Now()
	if rt.bearer != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+rt.bearer)
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
	resp, err := rt.base.RoundTrip(req)
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
		return resp, nil
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "":
		// go-sdk turns a 404 on a request with a session id into
		// ErrSessionMissing, which the manager reconnects on. Without a
		// session id a 404 means a wrong endpoint path: typed below.
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
	if listsTools {
		resp.Body = &captureBody{rc: resp.Body, sink: rt.raw}
	}
	return resp, nil
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
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
// with a scan rather than a decode: this runs on every POST.
func peekRPCMethod(rc io.ReadCloser) string {
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return ""
	}
	i := bytes.Index(data, []byte(`"method"`))
	if i < 0 {
		return ""
	}
	rest := bytes.TrimLeft(data[i+len(`"method"`):], " \t\r\n")
	rest, ok := bytes.CutPrefix(rest, []byte(":"))
	if !ok {
		return ""
	}
	rest, ok = bytes.CutPrefix(bytes.TrimLeft(rest, " \t\r\n"), []byte(`"`))
	if !ok {
		return ""
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || end > 128 {
		return ""
	}
	return string(rest[:end])
}

// rawToolSink keeps the raw inputSchema of each tool of the latest
// tools/list pages, keyed by tool name.
type rawToolSink struct {
	mu    sync.Mutex
	tools map[string]json.RawMessage
}

func newRawToolSink() *rawToolSink { return &rawToolSink{tools: map[string]json.RawMessage{}} }

func (s *rawToolSink) record(tools []json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tools {
		var head struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(t, &head) == nil && head.Name != "" && head.InputSchema != nil {
			// The slice is shared with the catalog (read-only), so an idle
			// session keeps one copy of each schema, not two.
			s.tools[head.Name] = head.InputSchema
		}
	}
}

// schema returns the raw inputSchema of a tool as the server sent it.
func (s *rawToolSink) schema(name string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw, ok := s.tools[name]
	return raw, ok
}

// captureBody parses the response stream (JSON or SSE) as go-sdk reads it,
// before handing the bytes on, so the capture is recorded before go-sdk can
// return the decoded result.
type captureBody struct {
	rc   io.ReadCloser
	sink *rawToolSink
	buf  []byte
	done bool
}

const maxCapture = 16 << 20

func (c *captureBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if !c.done && n > 0 {
		c.buf = append(c.buf, p[:n]...)
		c.scan(false)
		if len(c.buf) > maxCapture {
			c.done, c.buf = true, nil
		}
	}
	if err != nil && !c.done {
		c.scan(true)
	}
	return n, err
}

func (c *captureBody) Close() error { return c.rc.Close() }

// scan extracts complete messages: SSE events end with a blank line; a
// plain JSON body is complete at EOF.
func (c *captureBody) scan(eof bool) {
	for {
		trimmed := bytes.TrimLeft(c.buf, " \r\n\t")
		if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
			if eof {
				c.take(trimmed)
				c.buf = nil
			}
			return
		}
		i := bytes.Index(c.buf, []byte("\n\n"))
		j := bytes.Index(c.buf, []byte("\r\n\r\n"))
		end, skip := i, 2
		if j >= 0 && (i < 0 || j < i) {
			end, skip = j, 4
		}
		if end < 0 {
			return
		}
		event := c.buf[:end]
		c.buf = c.buf[end+skip:]
		var data []byte
		for _, line := range bytes.Split(event, []byte("\n")) {
			line = bytes.TrimRight(line, "\r")
			if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(rest, []byte(" "))...)
				data = append(data, '\n')
			}
		}
		if len(data) > 0 {
			c.take(data)
		}
	}
}

func (c *captureBody) take(msg []byte) {
	var env struct {
		Result *struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &env) == nil && env.Result != nil {
		c.sink.record(env.Result.Tools)
	}
}
