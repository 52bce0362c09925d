package oauth

import (
	"context"
	"net/http"
	"time"

	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/redact"
)

// Exchange is one HTTP request the authenticator made for a server —
// discovery, registration, token or refresh — and how it ended, for the
// server's request log next to its MCP exchanges (SPEC B1). Like the
// session's exchanges it carries metadata only: no header, no body, and
// the URL and error text redacted (query values hidden), so never a
// token, code, verifier or client secret.
type Exchange struct {
	Time     time.Time `json:"time"`
	ServerID string    `json:"serverId"`
	// Step is the OAuth step the request belongs to (discovery-PRM for
	// the unauthenticated probe of the MCP URL too).
	Step       Step   `json:"step"`
	HTTPMethod string `json:"httpMethod"`
	// URL is redact.URL of the request URL.
	URL    string `json:"url"`
	Status int    `json:"status,omitempty"`
	// Millis is the time until the response headers (or the failure).
	Millis float64 `json:"ms"`
	Error  string  `json:"error,omitempty"`
}

type stepCtxKey struct{}

// withStep labels the requests made on ctx with the OAuth step they
// belong to, for the exchange log.
func withStep(ctx context.Context, s Step) context.Context {
	return context.WithValue(ctx, stepCtxKey{}, s)
}

// stepOf is the step a request was labelled with, or the one its host
// permission purpose implies.
func stepOf(ctx context.Context) (Step, string) {
	purpose, serverID := hostperm.PurposeFrom(ctx)
	if s, ok := ctx.Value(stepCtxKey{}).(Step); ok {
		return s, serverID
	}
	switch purpose {
	case hostperm.PurposeDiscoveryPRM, hostperm.PurposeMCP:
		return StepDiscoveryPRM, serverID
	case hostperm.PurposeDiscoveryAS:
		return StepDiscoveryAS, serverID
	case hostperm.PurposeRegistration:
		return StepRegistration, serverID
	case hostperm.PurposeToken:
		return StepToken, serverID
	}
	return StepAuthorization, serverID
}

// exchangeLogger reports every request of the authenticator's client to
// a hook. It sits outside the host permission guard, so a refused origin
// shows up too (as an error without a status).
type exchangeLogger struct {
	next http.RoundTripper
	hook func(Exchange)
}

func (l *exchangeLogger) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := l.next.RoundTrip(req)
	step, serverID := stepOf(req.Context())
	ex := Exchange{Time: start, ServerID: serverID, Step: step, HTTPMethod: req.Method,
		URL: redact.URL(req.URL.String()), Millis: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		ex.Error = redact.Text(err.Error())
	} else {
		ex.Status = resp.StatusCode
	}
	l.hook(ex)
	return resp, err
}

// withExchangeLog returns c with its transport wrapped by the hook (c
// itself when hook is nil).
func withExchangeLog(c *http.Client, hook func(Exchange)) *http.Client {
	if hook == nil {
		return c
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp := *c
	cp.Transport = &exchangeLogger{next: next, hook: hook}
	return &cp
}
