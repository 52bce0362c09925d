package hostperm

import (
	"net/http"
)

// Transport returns the guard as an http.RoundTripper over base (nil means
// http.DefaultTransport). A request whose origin has no grant never reaches
// base: RoundTrip returns the *PermissionRequiredError of Check (which
// http.Client wraps in a *url.Error; errors.As finds it) and records the
// pending approval with the purpose and server id of WithPurpose in the
// request's context.
//
// http.Client calls RoundTrip once per hop, so each redirect target is
// checked as a request of its own: a granted origin cannot lead the client
// to an ungranted one. Build every client remotemcp uses for outbound
// requests (sessions, discovery, registration, token) on this transport.
func (b *Broker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &guard{b: b, base: base}
}

type guard struct {
	b    *Broker
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	err := g.check(req)
	if err != nil {
		// The RoundTripper contract: the body is closed even on errors.
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return g.base.RoundTrip(req)
}

func (g *guard) check(req *http.Request) error {
	if req.URL == nil {
		return invalid("", errNoURL)
	}
	origin, err := originOfURL(req.URL.String(), req.URL)
	if err != nil {
		return err
	}
	purpose, serverID := PurposeFrom(req.Context())
	return g.b.checkOrigin(req.Context(), origin, purpose, serverID)
}

// CloseIdleConnections passes http.Client.CloseIdleConnections on to base.
func (g *guard) CloseIdleConnections() {
	if c, ok := g.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
