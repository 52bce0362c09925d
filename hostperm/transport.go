package hostperm

import (
	"net/http"
	"net/url"
	"sync/atomic"
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
//
// The returned RoundTripper is also a PurposeRoundTripper.
func (b *Broker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &guard{b: b, base: base}
}

// PurposeRoundTripper is a RoundTripper that can be told a request's
// purpose and server directly: RoundTripPurpose(req, p, id) does what
// RoundTrip does for req sent with WithPurpose(ctx, p, id), without a copy
// of the request, unless req's context names a purpose of its own, which
// wins. The guard of Broker.Transport implements it, so a layer above it
// that labels every request (a session) need not copy each one.
type PurposeRoundTripper interface {
	http.RoundTripper
	RoundTripPurpose(req *http.Request, purpose Purpose, serverID string) (*http.Response, error)
}

type guard struct {
	b    *Broker
	base http.RoundTripper
	// origins caches the canonical origin of the scheme and host of the
	// URLs checked (a copy-on-write map, bounded by maxCachedOrigins), so
	// the many requests to one endpoint are not parsed again each time.
	// Only successful parses are cached; grants are never cached here.
	origins atomic.Pointer[map[originKey]string]
}

type originKey struct{ scheme, host string }

const maxCachedOrigins = 64

// RoundTrip implements http.RoundTripper.
func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	purpose, serverID := PurposeFrom(req.Context())
	return g.roundTrip(req, purpose, serverID)
}

// RoundTripPurpose implements PurposeRoundTripper.
func (g *guard) RoundTripPurpose(req *http.Request, purpose Purpose, serverID string) (*http.Response, error) {
	if p, id := PurposeFrom(req.Context()); p != "" {
		purpose, serverID = p, id
	}
	return g.roundTrip(req, purpose, serverID)
}

func (g *guard) roundTrip(req *http.Request, purpose Purpose, serverID string) (*http.Response, error) {
	err := g.check(req, purpose, serverID)
	if err != nil {
		// The RoundTripper contract: the body is closed even on errors.
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return g.base.RoundTrip(req)
}

func (g *guard) check(req *http.Request, purpose Purpose, serverID string) error {
	if req.URL == nil {
		return invalid("", errNoURL)
	}
	origin, err := g.origin(req.URL)
	if err != nil {
		return err
	}
	return g.b.checkOrigin(req.Context(), origin, purpose, serverID)
}

// origin is originOfURL(u.String(), u), cached per scheme and host: the
// origin depends on nothing else when u has no user information (and
// u.String() only on the error paths).
func (g *guard) origin(u *url.URL) (string, error) {
	cacheable := u.User == nil && u.Scheme != "" && u.Host != ""
	k := originKey{u.Scheme, u.Host}
	if cacheable {
		if m := g.origins.Load(); m != nil {
			if o, ok := (*m)[k]; ok {
				return o, nil
			}
		}
	}
	o, err := originOfURL(u.String(), u)
	if err != nil || !cacheable {
		return o, err
	}
	next := map[originKey]string{k: o}
	if old := g.origins.Load(); old != nil && len(*old) < maxCachedOrigins {
		for ok, ov := range *old {
			next[ok] = ov
		}
	}
	g.origins.Store(&next) // a racing store may drop an entry: it is only a cache
	return o, nil
}

// CloseIdleConnections passes http.Client.CloseIdleConnections on to base.
func (g *guard) CloseIdleConnections() {
	if c, ok := g.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
