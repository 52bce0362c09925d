package localapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// Client is the typed client of the local API: every Engine method over
// HTTP, one route each, on the daemon's Unix socket (or the in-process
// socket of one command; package daemon's Dial and InProcess make both).
// It sends no credential: on the socket, access is the file permissions.
// Errors the daemon answers are *Error with Status set. Safe for
// concurrent use.
type Client struct {
	hc *http.Client
	// holds is the resource subscriptions' hold stream (hold.go).
	holds holds
}

var _ Engine = (*Client)(nil)

// base is the URL every request goes to; the transport dials the socket
// whatever the host says.
const base = "http://local.remotemcp"

// NewClientWithTransport returns a client whose requests go through rt,
// which must deliver them to the local API whatever the URL's host (a
// transport that dials one socket). The client never follows redirects
// and sets no overall timeout: a tool call may take minutes, so bound
// each call with its context.
func NewClientWithTransport(rt http.RoundTripper) *Client {
	return &Client{hc: &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// CloseIdleConnections closes the idle connections of the transport.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// request sends one request and returns the response of a 2xx answer;
// any other answer is read into an *Error.
func (c *Client) request(ctx context.Context, method, path string, query url.Values, in any) (*http.Response, error) {
	return c.requestHeader(ctx, method, path, query, in, nil)
}

// requestHeader is request with extra headers.
func (c *Client) requestHeader(ctx context.Context, method, path string, query url.Values, in any, hdr http.Header) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("local API %s %s: encode the request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	u := base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("local API %s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp, nil
}

// do sends one request; out (a pointer, or nil) receives the JSON answer.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := c.request(ctx, method, path, query, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(&capReader{r: resp.Body, n: maxAnswer}).Decode(out); err != nil {
		return fmt.Errorf("local API %s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}

// Bounds of what the client reads from the daemon. They are far above
// what a working daemon sends (a tool result is cut to its size budget,
// arguments are at most 4 MiB, a catalog of hundreds of tools is a few
// MiB), and they keep a broken or impostor peer from making the client
// buffer without end.
const (
	// maxAnswer bounds one JSON answer.
	maxAnswer = 64 << 20
	// maxErrorBody bounds an error answer.
	maxErrorBody = 1 << 20
	// maxStreamLine bounds one line of the call stream and one event of
	// the event stream.
	maxStreamLine = 64 << 20
	// maxEventTypes bounds how many event types wait undelivered: the
	// daemon sends four, each carrying the whole current list.
	maxEventTypes = 32
)

// errTooLarge marks an answer, line or event over its bound.
var errTooLarge = errors.New("larger than the client accepts")

// capReader reads at most n bytes of r, then fails with errTooLarge
// rather than ending quietly (a cut answer must not decode as a shorter
// one).
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, fmt.Errorf("the answer is %w (%d bytes)", errTooLarge, maxAnswer)
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

// get and send return a fresh T decoded from the answer.
func get[T any](ctx context.Context, c *Client, path string, query url.Values) (*T, error) {
	out := new(T)
	if err := c.do(ctx, http.MethodGet, path, query, nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

func send[T any](ctx context.Context, c *Client, method, path string, in any) (*T, error) {
	out := new(T)
	if err := c.do(ctx, method, path, nil, in, out); err != nil {
		return nil, err
	}
	return out, nil
}

// list is get for listings: a nil answer becomes an empty slice.
func list[T any](ctx context.Context, c *Client, path string, query url.Values) ([]T, error) {
	out, err := get[[]T](ctx, c, path, query)
	if err != nil {
		return nil, err
	}
	if *out == nil {
		return []T{}, nil
	}
	return *out, nil
}

// readError reads an error answer: {"error": Error}, or a status alone.
func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return parseError(resp.StatusCode, b)
}

// parseError is the *Error of an error answer's status and body: the
// API's own {"error": {"code": …}} with the status set, or, for any other
// body (a proxy's page, a cut or malformed answer), the status's code and
// a message that names the status. Never nil, never without a code.
func parseError(status int, body []byte) *Error {
	var eb ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		eb.Error.Status = status
		if eb.Error.Message == "" {
			eb.Error.Message = fmt.Sprintf("the local API answered HTTP %d (%s)", status, eb.Error.Code)
		}
		return eb.Error
	}
	return &Error{Status: status, Code: CodeOf(status),
		Message: fmt.Sprintf("the local API answered HTTP %d %s", status, http.StatusText(status))}
}

func serverPath(id string, rest ...string) string {
	p := "/api/servers/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

func serverQuery(id string) url.Values {
	if id == "" {
		return nil
	}
	return url.Values{"serverId": {id}}
}

// Health reports the engine behind the API.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	return get[Health](ctx, c, "/api/health", nil)
}

// LoginURL asks the daemon for a one-time login URL of the settings page
// (`remotemcp open`). An in-process API has no page: CodeNotFound.
func (c *Client) LoginURL(ctx context.Context) (*LoginURL, error) {
	return send[LoginURL](ctx, c, http.MethodPost, "/api/login-url", nil)
}

// Servers lists every server.
func (c *Client) Servers(ctx context.Context) ([]Server, error) {
	return list[Server](ctx, c, "/api/servers", nil)
}

// Server returns one server.
func (c *Client) Server(ctx context.Context, id string) (*Server, error) {
	return get[Server](ctx, c, serverPath(id), nil)
}

// AddServer adds a server and grants its own origin.
func (c *Client) AddServer(ctx context.Context, req AddServerRequest) (*AddServerResult, error) {
	return send[AddServerResult](ctx, c, http.MethodPost, "/api/servers", req)
}

// Import imports another client's MCP config.
func (c *Client) Import(ctx context.Context, req ImportRequest) (*ImportResult, error) {
	return send[ImportResult](ctx, c, http.MethodPost, "/api/servers/import", req)
}

// UpdateServer edits a server.
func (c *Client) UpdateServer(ctx context.Context, id string, req UpdateServerRequest) (*UpdateServerResult, error) {
	return send[UpdateServerResult](ctx, c, http.MethodPatch, serverPath(id), req)
}

// RemoveServer removes a server with its secrets and sign-in state.
func (c *Client) RemoveServer(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, serverPath(id), nil, nil, nil)
}

// SetEnabled enables or disables a server.
func (c *Client) SetEnabled(ctx context.Context, id string, enabled bool) (*Server, error) {
	action := "disable"
	if enabled {
		action = "enable"
	}
	return send[Server](ctx, c, http.MethodPost, serverPath(id, action), nil)
}

// SetTool enables or disables one tool of a server for agents.
func (c *Client) SetTool(ctx context.Context, id, tool string, enabled bool) (*Server, error) {
	return send[Server](ctx, c, http.MethodPost, serverPath(id, "tools"), ToolSwitch{Tool: tool, Enabled: enabled})
}

// Connect connects a server and waits for the outcome.
func (c *Client) Connect(ctx context.Context, id string) (*Server, error) {
	return send[Server](ctx, c, http.MethodPost, serverPath(id, "connect"), nil)
}

// Disconnect disconnects a server.
func (c *Client) Disconnect(ctx context.Context, id string) (*Server, error) {
	return send[Server](ctx, c, http.MethodPost, serverPath(id, "disconnect"), nil)
}

// Log returns a server's request log.
func (c *Client) Log(ctx context.Context, id string) ([]LogEntry, error) {
	return list[LogEntry](ctx, c, serverPath(id, "log"), nil)
}

// Authorize starts a sign-in flow. Without options (or with the zero
// value) the request has no body, as the settings page sends it.
func (c *Client) Authorize(ctx context.Context, id string, opts ...AuthorizeOptions) (*AuthFlow, error) {
	var body any
	if len(opts) > 0 && opts[0] != (AuthorizeOptions{}) {
		body = opts[0]
	}
	return send[AuthFlow](ctx, c, http.MethodPost, serverPath(id, "authorize"), body)
}

// Authorization returns a server's latest sign-in flow.
func (c *Client) Authorization(ctx context.Context, id string) (*AuthFlow, error) {
	return get[AuthFlow](ctx, c, serverPath(id, "authorize"), nil)
}

// WaitAuthorization waits until a server's sign-in flow ends.
func (c *Client) WaitAuthorization(ctx context.Context, id string) (*AuthFlow, error) {
	return get[AuthFlow](ctx, c, serverPath(id, "authorize", "wait"), nil)
}

// Logout forgets a server's tokens and ends its sessions.
func (c *Client) Logout(ctx context.Context, id string) (*LogoutResult, error) {
	return send[LogoutResult](ctx, c, http.MethodPost, serverPath(id, "logout"), nil)
}

// AuthStatus reports every server's sign-in, or the named ones.
func (c *Client) AuthStatus(ctx context.Context, ids ...string) ([]AuthStatus, error) {
	var q url.Values
	if len(ids) > 0 {
		q = url.Values{"serverId": ids}
	}
	return list[AuthStatus](ctx, c, "/api/auth", q)
}

// Grants lists the origins the person allowed.
func (c *Client) Grants(ctx context.Context) ([]Grant, error) {
	return list[Grant](ctx, c, "/api/grants", nil)
}

// Pending lists the refused requests waiting for the person.
func (c *Client) Pending(ctx context.Context) ([]Pending, error) {
	return list[Pending](ctx, c, "/api/pending", nil)
}

// Grant allows an origin; by names the user action (ByCLI …).
func (c *Client) Grant(ctx context.Context, origin, by string) error {
	return c.do(ctx, http.MethodPost, "/api/grants", nil, OriginRequest{Origin: origin, By: By(by)}, nil)
}

// Revoke removes an origin's grant.
func (c *Client) Revoke(ctx context.Context, origin string) error {
	return c.do(ctx, http.MethodPost, "/api/grants/revoke", nil, OriginRequest{Origin: origin}, nil)
}

// DismissPending drops an origin's pending approvals without granting it.
func (c *Client) DismissPending(ctx context.Context, origin string) error {
	return c.do(ctx, http.MethodPost, "/api/pending/dismiss", nil, OriginRequest{Origin: origin}, nil)
}

// Tools lists the agent's tools.
func (c *Client) Tools(ctx context.Context, req ToolsRequest) (*ToolList, error) {
	return get[ToolList](ctx, c, "/api/tools", toolsQuery(req))
}

// EncodedTools reads the tool list as the daemon sent it, without
// decoding it (EncodedToolLister; SplitToolList takes it apart).
func (c *Client) EncodedTools(ctx context.Context, req ToolsRequest) (json.RawMessage, error) {
	resp, err := c.request(ctx, http.MethodGet, "/api/tools", toolsQuery(req), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	// Sized by the answer's length when the daemon sends it: the list
	// can be many MB, and growing a buffer to it costs copies.
	buf := bytes.NewBuffer(make([]byte, 0, min(max(resp.ContentLength, 0), maxAnswer)+bytes.MinRead))
	if _, err := buf.ReadFrom(&capReader{r: resp.Body, n: maxAnswer}); err != nil {
		return nil, fmt.Errorf("local API GET /api/tools: unreadable answer: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), " \t\r\n"), nil
}

func toolsQuery(req ToolsRequest) url.Values {
	q := serverQuery(req.ServerID)
	if req.Connect {
		if q == nil {
			q = url.Values{}
		}
		q.Set("connect", "1")
	}
	return q
}

// CancelCall cancels a call by its operation id.
func (c *Client) CancelCall(ctx context.Context, operationID string) error {
	return c.do(ctx, http.MethodPost, "/api/calls/"+url.PathEscape(operationID)+"/cancel", nil, nil, nil)
}

// Cards lists the server questions, newest first.
func (c *Client) Cards(ctx context.Context) ([]Card, error) {
	return list[Card](ctx, c, "/api/cards", nil)
}

// Card returns one server question.
func (c *Client) Card(ctx context.Context, id string) (*Card, error) {
	return get[Card](ctx, c, "/api/cards/"+url.PathEscape(id), nil)
}

// Answer answers a pending question.
func (c *Client) Answer(ctx context.Context, cardID string, a Answer) error {
	return c.do(ctx, http.MethodPost, "/api/cards/"+url.PathEscape(cardID)+"/answer", nil, a, nil)
}

// Retry re-sends the call of an interrupted question once.
func (c *Client) Retry(ctx context.Context, cardID string, confirmed bool) (*ToolResult, error) {
	return send[ToolResult](ctx, c, http.MethodPost, "/api/cards/"+url.PathEscape(cardID)+"/retry", RetryRequest{Confirmed: confirmed})
}

// Prompts lists the prompts of one server, or of all ("").
func (c *Client) Prompts(ctx context.Context, serverID string) ([]Prompt, error) {
	return list[Prompt](ctx, c, "/api/prompts", serverQuery(serverID))
}

// GetPrompt gets a prompt's messages.
func (c *Client) GetPrompt(ctx context.Context, req GetPromptRequest) (*PromptResult, error) {
	return send[PromptResult](ctx, c, http.MethodPost, "/api/prompts/get", req)
}

// Resources lists or searches resources and templates.
func (c *Client) Resources(ctx context.Context, req ResourcesRequest) ([]Resource, error) {
	q := serverQuery(req.ServerID)
	if q == nil {
		q = url.Values{}
	}
	if req.Query != "" {
		q.Set("q", req.Query)
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	return list[Resource](ctx, c, "/api/resources", q)
}

// ReadResource reads a resource.
func (c *Client) ReadResource(ctx context.Context, req ReadRequest) (*ReadResult, error) {
	return send[ReadResult](ctx, c, http.MethodPost, "/api/resources/read", req)
}

// Complete asks a server for completion values of an argument.
func (c *Client) Complete(ctx context.Context, req CompleteRequest) (*CompleteResult, error) {
	return send[CompleteResult](ctx, c, http.MethodPost, "/api/complete", req)
}

// SubscribeResource subscribes to updates of a server's resource, held by
// this client's hold stream (hold.go): the daemon gives it back when the
// stream ends, should this process end without giving it back itself.
func (c *Client) SubscribeResource(ctx context.Context, req ResourceSubscription) error {
	return c.holds.subscribe(ctx, c, req)
}

// UnsubscribeResource gives back one subscription of a server's resource,
// naming the stream that held it.
func (c *Client) UnsubscribeResource(ctx context.Context, req ResourceSubscription) error {
	return c.holds.unsubscribe(ctx, c, req)
}

// SetLogLevel asks servers for log messages at a level.
func (c *Client) SetLogLevel(ctx context.Context, req LogLevelRequest) error {
	return c.do(ctx, http.MethodPost, "/api/log-level", nil, req, nil)
}

// Call runs one tool call over the call stream of POST /api/calls: h
// hears the approval request (its decision is posted back at once; a nil
// Approve denies), progress and questions in the order the engine sent
// them, and Call returns the result. Ending ctx ends the request, which
// cancels the call. A stream line over 64 MiB fails the call
// (CodeUnavailable) rather than being buffered.
//
// Long: one loop over the call stream with one case per event type
// (approval, progress, question, sampling, result, error); the cases
// share the request's context, the sampling goroutines' WaitGroup and
// the stream, and the switch lists every event a caller can hear.
func (c *Client) Call(ctx context.Context, req CallRequest, h CallHandler) (*ToolResult, error) {
	q := url.Values{}
	if h.Approve == nil {
		q.Set("ask", "0") // nobody to ask: the engine denies without asking
	}
	if h.Sample != nil {
		q.Set("sample", "1") // the caller answers the server's sampling requests
	}
	// The sampling answers end with the call.
	var sampling sync.WaitGroup
	defer sampling.Wait()
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	resp, err := c.request(ctx, http.MethodPost, "/api/calls", q, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	cs := newCallStream(resp.Body, maxStreamLine)
	for {
		ev, err := cs.next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("tool call: %w", ctx.Err())
			}
			return nil, &Error{Status: http.StatusBadGateway, Code: CodeUnavailable,
				Message: fmt.Sprintf("the local API ended the call stream without a result (%v); the call may have run", err)}
		}
		switch ev.Type {
		case CallEventApproval:
			if ev.Approval == nil {
				continue
			}
			var reply ApprovalReply // nil Approve: denied
			if h.Approve != nil {
				d, err := h.Approve(*ev.Approval)
				if err != nil {
					reply.Error = err.Error()
				}
				reply.Decision = d
			}
			path := "/api/calls/" + url.PathEscape(ev.Approval.OperationID) + "/approval"
			if err := c.do(ctx, http.MethodPost, path, nil, reply, nil); err != nil {
				return nil, fmt.Errorf("tool call: send the decision: %w", err)
			}
		case CallEventProgress:
			if ev.Progress != nil && h.Progress != nil {
				h.Progress(*ev.Progress)
			}
		case CallEventQuestion:
			if ev.Question != nil && h.Question != nil {
				h.Question(*ev.Question)
			}
		case CallEventSampling:
			if ev.Sampling == nil || h.Sample == nil {
				continue
			}
			// Answered aside: the model may take a while, and the stream
			// (progress, the result) keeps flowing meanwhile.
			sr := *ev.Sampling
			sampling.Go(func() {
				var reply SamplingReply
				res, err := h.Sample(sctx, sr)
				if err != nil {
					reply.Error = err.Error()
				} else {
					reply.Result = res
				}
				path := "/api/calls/" + url.PathEscape(sr.OperationID) + "/sampling/" + url.PathEscape(sr.ID)
				_ = c.do(sctx, http.MethodPost, path, nil, reply, nil)
			})
		case CallEventResult:
			if ev.Result == nil {
				return nil, &Error{Status: http.StatusBadGateway, Code: CodeInternal, Message: "the local API sent an empty result"}
			}
			return ev.Result, nil
		case CallEventError:
			// An error event always becomes an error a person can read,
			// however little of it arrived.
			if ev.Error == nil {
				ev.Error = &Error{}
			}
			if ev.Error.Code == "" {
				ev.Error.Code = CodeInternal
			}
			if ev.Error.Message == "" {
				ev.Error.Message = "the tool call failed (the local API gave no reason)"
			}
			ev.Error.Status = StatusOf(ev.Error.Code)
			return nil, ev.Error
		}
	}
}

// callStream reads a call stream: one CallEvent per line, each line at
// most limit bytes (a longer one ends the stream with an error instead
// of being buffered), blank lines skipped.
type callStream struct {
	sc    *bufio.Scanner
	lines *lineSplit
	limit int
}

func newCallStream(r io.Reader, limit int) *callStream {
	sc, lines := newLineScanner(r, limit)
	return &callStream{sc: sc, lines: lines, limit: limit}
}

// newLineScanner scans r by lines of at most limit bytes (a longer one
// fails with bufio.ErrTooLong once limit bytes are buffered), looking
// at each byte for the line's end once.
func newLineScanner(r io.Reader, limit int) (*bufio.Scanner, *lineSplit) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, limit)), limit)
	ls := &lineSplit{}
	sc.Split(ls.split)
	return sc, ls
}

// lineSplit is bufio.ScanLines that remembers how far it has looked. The
// Scanner hands its split function everything buffered since the last
// line after every read; ScanLines searches all of it again each time,
// so a line arriving in n reads costs O(n²) (seconds of CPU for a line
// near maxStreamLine sent in 32 KiB writes). lineSplit searches only
// the bytes it has not seen, and counts them in examined.
type lineSplit struct {
	looked   int   // bytes of the current line's data already searched
	examined int64 // bytes searched in all
}

func (l *lineSplit) split(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if l.looked > len(data) { // never: the Scanner only adds to data until a line is taken
		l.looked = 0
	}
	if i := bytes.IndexByte(data[l.looked:], '\n'); i >= 0 {
		l.examined += int64(i + 1)
		i += l.looked
		l.looked = 0
		return i + 1, dropCR(data[:i]), nil
	}
	l.examined += int64(len(data) - l.looked)
	l.looked = len(data)
	if atEOF && len(data) > 0 {
		// The last line, without a newline.
		l.looked = 0
		return len(data), dropCR(data), nil
	}
	return 0, nil, nil
}

// dropCR drops a line's terminal \r, as bufio.ScanLines does.
func dropCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

// next returns the next event; at the end of the stream the error is
// io.ErrUnexpectedEOF (a stream ends with its result or error event, so
// running out is never the normal end).
func (cs *callStream) next() (CallEvent, error) {
	for cs.sc.Scan() {
		line := bytes.TrimSpace(cs.sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev CallEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return CallEvent{}, fmt.Errorf("unreadable line: %w", err)
		}
		return ev, nil
	}
	if err := cs.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return CallEvent{}, fmt.Errorf("a line is %w (%d bytes)", errTooLarge, cs.limit)
		}
		return CallEvent{}, err
	}
	return CallEvent{}, io.ErrUnexpectedEOF
}

// Subscribe follows GET /api/events until ctx ends or the daemon goes
// away; then the channel is closed. A slow reader misses intermediate
// events, never the newest of each type. A line or an event over 64 MiB
// ends the stream (the channel closes) rather than being buffered; an
// event whose data is not JSON is skipped.
func (c *Client) Subscribe(ctx context.Context) (<-chan Event, error) {
	resp, err := c.request(ctx, http.MethodGet, "/api/events", nil, nil)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, ContentTypeSSE) {
		resp.Body.Close()
		return nil, fmt.Errorf("local API GET /api/events: content type %q, want %s", ct, ContentTypeSSE)
	}
	q := newEventQueue()
	go func() {
		defer resp.Body.Close()
		defer q.close()
		// An error ends the stream as the daemon going away does: the
		// channel closes, and the caller subscribes again if it wants.
		_ = readSSE(resp.Body, maxStreamLine, q.put)
	}()
	out := make(chan Event)
	go q.deliver(ctx, out, resp.Body)
	return out, nil
}

// readSSE reads Server-Sent Events (one data line each, as the daemon
// writes them) until the stream ends, and returns why it ended: nil at
// its end, or an error for a line or an event (its data lines together)
// over limit bytes, which is refused rather than buffered. Only events
// whose data is valid JSON are put: Event.Data is a json.RawMessage, and
// a consumer re-encoding one must not fail on it.
func readSSE(r io.Reader, limit int, put func(Event)) error {
	sc, _ := newLineScanner(r, limit)
	var typ EventType
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if typ != "" && data != nil && json.Valid(data) {
				put(Event{Type: typ, Data: json.RawMessage(data)})
			}
			typ, data = "", nil
		case bytes.HasPrefix(line, []byte("event:")):
			typ = EventType(strings.TrimSpace(string(line[len("event:"):])))
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if len(data)+1+len(d) > limit {
				return fmt.Errorf("event stream: an event is %w (%d bytes)", errTooLarge, limit)
			}
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, d...)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("event stream: a line is %w (%d bytes)", errTooLarge, limit)
		}
		return fmt.Errorf("event stream: %w", err)
	}
	return nil
}

// eventQueue keeps the newest undelivered event of each type, in the
// order the types first arrived.
type eventQueue struct {
	mu      sync.Mutex
	pending map[EventType]Event
	order   []EventType
	wake    chan struct{}
	done    chan struct{}
}

func newEventQueue() *eventQueue {
	return &eventQueue{pending: map[EventType]Event{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// put queues ev in place of an undelivered event of its type. A new type
// beyond maxEventTypes waiting is dropped: the daemon sends a handful of
// types, and a stream of ever new ones must not grow the queue.
func (q *eventQueue) put(ev Event) {
	q.mu.Lock()
	if _, ok := q.pending[ev.Type]; !ok {
		if len(q.order) >= maxEventTypes {
			q.mu.Unlock()
			return
		}
		q.order = append(q.order, ev.Type)
	}
	if old, ok := q.pending[ev.Type]; ok && ev.Type == EventNotices {
		// Notices are news: an undelivered batch is joined, not replaced.
		ev.Data = joinNotices(old.Data, ev.Data)
	}
	q.pending[ev.Type] = ev
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *eventQueue) close() { close(q.done) }

func (q *eventQueue) empty() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order) == 0
}

func (q *eventQueue) next() (Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) == 0 {
		return Event{}, false
	}
	t := q.order[0]
	q.order = q.order[1:]
	ev := q.pending[t]
	delete(q.pending, t)
	return ev, true
}

// deliver sends the queued events to out until ctx ends or the stream
// ended and everything was delivered; it closes body when ctx ends, so
// the reader stops.
func (q *eventQueue) deliver(ctx context.Context, out chan<- Event, body io.Closer) {
	defer close(out)
	for {
		if ev, ok := q.next(); ok {
			select {
			case out <- ev:
				continue
			case <-ctx.Done():
				body.Close()
				return
			}
		}
		select {
		case <-q.wake:
		case <-q.done:
			// The stream ended: deliver what is left, then stop.
			if q.empty() {
				return
			}
		case <-ctx.Done():
			body.Close()
			return
		}
	}
}

// joinNotices appends the notices of b to those of a, keeping the newest
// MaxNoticeBacklog; data that does not parse leaves b alone.
func joinNotices(a, b json.RawMessage) json.RawMessage {
	var x, y []json.RawMessage
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return b
	}
	all := append(x, y...)
	if len(all) > MaxNoticeBacklog {
		all = all[len(all)-MaxNoticeBacklog:]
	}
	out, err := json.Marshal(all)
	if err != nil {
		return b
	}
	return out
}
