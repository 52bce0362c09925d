package session

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/redact"
)

// A session's HTTP layer is a stack of RoundTrippers under go-sdk's
// StreamableClientTransport, one job each, built by stack.build. From the
// top (what http.Client calls) to the network:
//
//	headerTransport   the server's configured headers   (when it has any)
//	oauth2.Transport  its static bearer token            (bearer servers)
//	deleteLimit       bounds the DELETE that ends a session
//	statusTransport   refused statuses become *HTTPStatusError
//	limitTransport    bounds response bodies, records raw tools and schemas
//	streamWatch       hears how the standalone stream fares
//	exchangeLog       one Exchange per request for the request log (R5.3)
//	purposeTransport  labels the request for the host-permission guard
//	base              the shared transport (in production hostperm's guard)
//
// The order matters:
//   - The header layers come first: they are the only ones that copy the
//     request, and every layer below, the log included, sees the request
//     as it goes on the wire. The bearer is set after the configured
//     headers, so it is the Authorization sent (the config refuses that
//     name among the headers anyway, SPEC §9 A2).
//   - deleteLimit is above the log, so a DELETE cut short is logged with
//     the error it ended with.
//   - statusTransport is above limitTransport: only a response go-sdk reads
//     as an answer (2xx) is bounded; a refused one is drained and closed.
//   - limitTransport, streamWatch and exchangeLog see the response as the
//     server sent it, and the log's time stops at the response headers, not
//     after our own work on the body.
//   - purposeTransport is last: the guard decides whether a request may
//     leave at all, and the log above it records its refusals too.
type stack struct {
	// serverID labels every request for the host-permission guard, so a
	// refusal names the server and purpose (R2.2).
	serverID string
	// headers are the server's custom headers (config.Server.Headers).
	headers map[string]string
	// bearer is the static bearer token; "" for none/oauth servers.
	bearer string
	// passAuth: see statusTransport.PassAuth.
	passAuth bool
	// lim bounds every response body (issue #10); raw and elicit receive
	// the raw tools and question schemas (elicit is nil when the client
	// does not elicit).
	lim    *limiter
	raw    *rawToolSink
	elicit *rawElicitSink
	// onTrouble and onOpen: see streamWatch.
	onTrouble func(error)
	onOpen    func(bool)
	// connID and onExchange feed the per-server request log; nil
	// onExchange leaves the log layer out.
	connID     string
	onExchange func(Exchange)
}

// build stacks the layers over base (see stack).
func (c stack) build(base http.RoundTripper) http.RoundTripper {
	guard, _ := base.(hostperm.PurposeRoundTripper)
	var rt http.RoundTripper = &purposeTransport{Base: base, guard: guard, serverID: c.serverID}
	if c.onExchange != nil {
		rt = &exchangeLog{Base: rt, connID: c.connID, onExchange: c.onExchange}
	}
	rt = &streamWatch{Base: rt, onTrouble: c.onTrouble, onOpen: c.onOpen}
	rt = &limitTransport{Base: rt, lim: c.lim, raw: c.raw, elicit: c.elicit}
	rt = &statusTransport{Base: rt, PassAuth: c.passAuth}
	rt = &deleteLimit{Base: rt, Timeout: deleteTimeout}
	if c.bearer != "" {
		rt = &oauth2.Transport{Base: rt, Source: oauth2.StaticTokenSource(&oauth2.Token{AccessToken: c.bearer, TokenType: "Bearer"})}
	}
	if len(c.headers) > 0 {
		rt = &headerTransport{Base: rt, Headers: c.headers}
	}
	return rt
}

// headerTransport sets the server's configured headers on every request.
// They go only to the MCP endpoint: this stack is the session's own, and
// OAuth's requests (discovery, token) have clients of their own.
type headerTransport struct {
	Base    http.RoundTripper
	Headers map[string]string
}

// RoundTrip implements http.RoundTripper.
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper must not change its request
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	return t.Base.RoundTrip(req)
}

// deleteTimeout bounds the DELETE that ends a session.
const deleteTimeout = 1500 * time.Millisecond

// deleteLimit bounds the DELETE that ends a session by Timeout. Ending a
// session is a courtesy to the server; a server that waits for its own
// handlers before answering must not hold a disconnect up for go-sdk's
// full 5 s. Other requests pass untouched.
type deleteLimit struct {
	Base    http.RoundTripper
	Timeout time.Duration
}

// RoundTrip implements http.RoundTripper.
func (t *deleteLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodDelete {
		return t.Base.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.Timeout)
	resp, err := t.Base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	// The body is read after RoundTrip returns: the timeout's context
	// lives until it is closed.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

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

// statusTransport turns the statuses of a POST that go-sdk cannot act on
// into a typed *HTTPStatusError (go-sdk only gives a string, and would end
// the connection with it), and marks the request of a POST the server
// answered 404 with our session id (SPEC §9 A5). GET (the standalone
// stream) and DELETE statuses are go-sdk's business: a 405 on GET means
// "no stream", a 404 on either means the session is missing.
type statusTransport struct {
	Base http.RoundTripper
	// PassAuth lets 401/403 through to go-sdk, which then calls the
	// OAuthHandler; for other servers they become typed errors.
	PassAuth bool
}

// RoundTrip implements http.RoundTripper.
func (t *statusTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	code := resp.StatusCode
	switch {
	case code == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "":
		// go-sdk turns a 404 on a request with a session id into
		// ErrSessionMissing, which the manager reconnects on. Without a
		// session id a 404 means a wrong endpoint path: typed below.
		// When this POST carried the request itself, the request never
		// ran (SPEC §9 A5): say so to the request's caller.
		if slot := requestSlotFrom(req.Context()); slot != nil && carriesRequest(req) {
			slot.sessionMissing.Store(true)
		}
		return resp, nil
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && t.PassAuth:
		return resp, nil
	case code >= 400 && code != http.StatusUnauthorized && code != http.StatusForbidden && isJSON(resp.Header.Get("Content-Type")):
		// A JSON body on an error status is a JSON-RPC error (e.g. -32022
		// "unsupported protocol version"): go-sdk reads it, and the
		// server's own message beats a bare status.
		return resp, nil
	case code >= 300:
		e := &HTTPStatusError{
			StatusCode:      code,
			RPCMethod:       rpcMethodOf(req), // read only here, on a refusal
			WWWAuthenticate: resp.Header.Values("WWW-Authenticate"),
			RetryAfter:      resp.Header.Get("Retry-After"),
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, e
	}
	return resp, nil
}

// carriesRequest reports whether a POST made under a request's slot
// carried the request itself: a JSON-RPC request, not a notification. The
// slot travels with every POST made under the request's context, and
// go-sdk sends a call's notifications/cancelled under it too (on its own
// goroutine, after the cancel, when the call may have run): a 404 on that
// one proves nothing about the call. The request itself may go out twice
// (go-sdk sends it again after an OAuth refresh), so it is told by its
// body, not by being the slot's first POST. The body's copy is read only
// here, on a 404.
func carriesRequest(req *http.Request) bool {
	m := rpcMethodOf(req)
	return m != "" && !strings.HasPrefix(m, "notifications/")
}

// limitTransport bounds every response body go-sdk reads as an answer
// (issue #10): a POST's 2xx body, JSON or SSE, and the standalone GET
// stream. The same pass records what the raw sinks keep: the raw tools of
// a tools/list result, and the schemas of the server's questions on any
// SSE stream. Nothing else reads a body a second time.
type limitTransport struct {
	Base   http.RoundTripper
	lim    *limiter
	raw    *rawToolSink
	elicit *rawElicitSink // nil when the client does not elicit
}

// RoundTrip implements http.RoundTripper.
func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	sse := isSSE(resp.Header.Get("Content-Type"))
	switch {
	case req.Method == http.MethodGet && resp.StatusCode == http.StatusOK && sse:
		t.lim.wrapStream(req, resp, capture{elicit: t.elicit})
	case req.Method == http.MethodPost && resp.StatusCode < 300:
		meter := listMeterFrom(req.Context())
		var cp capture
		if meter != nil && meter.method == "tools/list" {
			// The listing says what it lists (listAll), so the body
			// need not be read for its method.
			cp.sink = t.raw
		}
		if sse {
			// A server's question rides the stream of the request it
			// belongs to (a tools/call), or the standalone GET stream.
			cp.elicit = t.elicit
		}
		t.lim.wrapPOST(req, resp, meter, cp)
	}
	return resp, nil
}

// streamWatch tells the session how its standalone stream (the GET that
// carries the server's notifications) fares, which go-sdk does not:
// onOpen hears its answer (true for 200, false for 405: the server offers
// none), onTrouble that it cannot be kept (standaloneTrouble).
type streamWatch struct {
	Base      http.RoundTripper
	onTrouble func(error)
	onOpen    func(bool)
}

// RoundTrip implements http.RoundTripper.
func (t *streamWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(req)
	if !isStandalone(req) {
		return resp, err
	}
	if trouble := standaloneTrouble(req, resp, err); trouble != nil {
		t.onTrouble(trouble)
	}
	if err == nil {
		switch resp.StatusCode {
		case http.StatusOK:
			t.onOpen(true)
		case http.StatusMethodNotAllowed:
			t.onOpen(false)
		}
	}
	return resp, err
}

// exchangeLog reports every request of the session, as it went on the
// wire, to onExchange for the per-server request log (R5.3): its method,
// status or redacted error, and the time until the response headers.
type exchangeLog struct {
	Base       http.RoundTripper
	connID     string
	onExchange func(Exchange)
}

// RoundTrip implements http.RoundTripper.
func (t *exchangeLog) RoundTrip(req *http.Request) (*http.Response, error) {
	rpcMethod := postMethod(req) // the one read of a POST's body copy, if any
	start := time.Now()
	resp, err := t.Base.RoundTrip(req)
	ex := Exchange{Time: start, ConnectionID: t.connID, HTTPMethod: req.Method, RPCMethod: rpcMethod,
		Millis: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		ex.Error = redact.Text(err.Error())
	} else {
		ex.Status = resp.StatusCode
	}
	t.onExchange(ex)
	return resp, err
}

// purposeTransport labels every request as the server's MCP traffic
// (hostperm.PurposeMCP) for the host-permission guard, so a refusal names
// the server and the purpose (R2.2); a request whose context names a
// purpose of its own keeps it. When Base is the guard it is told directly
// (guard), which costs no copy of the request.
type purposeTransport struct {
	Base     http.RoundTripper
	guard    hostperm.PurposeRoundTripper // Base, when it is one; else nil
	serverID string
}

// RoundTrip implements http.RoundTripper.
func (t *purposeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.guard != nil {
		return t.guard.RoundTripPurpose(req, hostperm.PurposeMCP, t.serverID)
	}
	if p, _ := hostperm.PurposeFrom(req.Context()); p == "" {
		req = req.WithContext(hostperm.WithPurpose(req.Context(), hostperm.PurposeMCP, t.serverID))
	}
	return t.Base.RoundTrip(req)
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

func isJSON(ct string) bool { return mediaType(ct) == "application/json" }

func isSSE(ct string) bool { return mediaType(ct) == "text/event-stream" }

func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}
