package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/netlimit"
)

// Hosts is the gateway's MCP endpoint (serve --mcp-http): a request's
// bearer token names its person (the token's owner, found by its hash),
// and the request goes to that person's front end, over their engine,
// which checks the token again against the person's own tokens. A host
// thus sees only its person's servers, and a host session belongs to the
// token that made it, as on a personal endpoint.
//
// With an OpenID issuer (HostsOptions.Issuer) hosts may sign in by OAuth
// instead (issue #22): the endpoint publishes its protected resource
// metadata (RFC 9728), its 401s name it (resource_metadata), and a bearer
// token that is not a remotemcp token is verified as the issuer's JWT
// access token for the endpoint's public URL; its verified email names
// the person, who must be a user of the gateway already.
type Hosts struct {
	g     *Gateway
	o     HostsOptions
	oauth *hostOAuth // nil: remotemcp tokens only
	log   *slog.Logger
	ctx   context.Context // the front ends' lifetime

	mu     sync.Mutex
	fronts map[string]*hostFront // by user id
	closed bool
}

// hostFront is one person's front end, made once (ready closes then).
type hostFront struct {
	ready chan struct{}
	eng   *engine.Engine
	h     http.Handler
	stop  func()
	err   error
}

// Hosts returns the gateway's MCP endpoint handler; its front ends run
// until ctx ends or Close. It refuses OAuth settings that cannot work (an
// issuer without a public URL, a URL hosts cannot use).
func (g *Gateway) Hosts(ctx context.Context, o HostsOptions) (*Hosts, error) {
	oauth, err := newHostOAuth(o)
	if err != nil {
		return nil, err
	}
	h := &Hosts{g: g, o: o, oauth: oauth, log: g.log, ctx: ctx, fronts: map[string]*hostFront{}}
	g.mu.Lock()
	g.onRemove = append(g.onRemove, h.forget)
	g.mu.Unlock()
	return h, nil
}

// PublicURL is the endpoint's URL as hosts reach it, when it has one
// (HostsOptions.PublicURL).
func (h *Hosts) PublicURL() string { return h.o.PublicURL }

// MetadataURL is the URL of the endpoint's protected resource metadata
// (RFC 9728), "" when hosts do not sign in by OAuth.
func (h *Hosts) MetadataURL() string {
	if h.oauth == nil {
		return ""
	}
	return h.oauth.metaURL
}

// Body of a refused request: hosts show it, so it says what to do.
const (
	noTokenBody  = "remotemcp gateway: this MCP endpoint needs your bearer token, sent as \"Authorization: Bearer TOKEN\". An admin creates one for you with \"remotemcp --user EMAIL mcp token create NAME\" on the gateway's host."
	badTokenBody = "remotemcp gateway: invalid_token: the bearer token is unknown or revoked; ask for a new one (\"remotemcp --user EMAIL mcp token create NAME\")."
	// noSignInBody is noTokenBody where hosts may sign in by OAuth.
	noSignInBody = "remotemcp gateway: this MCP endpoint needs you to sign in: a host that signs in by OAuth does so by itself (it learns how from %s), or it sends a remotemcp token as \"Authorization: Bearer TOKEN\", which you make on the gateway's page or an admin makes with \"remotemcp --user EMAIL mcp token create NAME\"."
)

// ServeHTTP routes a request to its person's front end.
func (h *Hosts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := frontend.BearerToken(r.Header.Get("Authorization"))
	if !ok {
		msg := noTokenBody
		if h.oauth != nil {
			msg = fmt.Sprintf(noSignInBody, h.oauth.metaURL)
		}
		h.unauthorized(w, "", msg)
		return
	}
	if h.oauth != nil && !strings.HasPrefix(tok, frontend.TokenPrefix) {
		h.serveSignedIn(w, r, tok)
		return
	}
	id, err := h.g.TokenOwner(r.Context(), tok)
	if errors.Is(err, ErrNoUser) {
		h.unauthorized(w, `error="invalid_token", error_description="the bearer token is unknown or revoked"`, badTokenBody)
		return
	}
	if err != nil {
		h.log.Warn("gateway: find the owner of a host token", "err", err)
		http.Error(w, "remotemcp gateway: the tokens could not be read; try again", http.StatusServiceUnavailable)
		return
	}
	h.serveFront(w, r, id)
}

// serveSignedIn serves a request with an OAuth access token: verified,
// its person found by their verified email, it goes to their front end
// with the identity (issuer, subject).
//
// A person who is not a user of the gateway gets 403, not 401: the token
// is valid (RFC 6750 §3.1's invalid_token is for a token that is not),
// and a 401 would only send the host to sign in again for the same
// answer; the body says who to ask. Likewise an unverified email.
func (h *Hosts) serveSignedIn(w http.ResponseWriter, r *http.Request, tok string) {
	c, err := h.oauth.verify(r.Context(), tok)
	var id string
	if err == nil {
		id, err = h.g.personOf(r.Context(), c.email)
	}
	if he := (*hostAuthError)(nil); errors.As(err, &he) {
		h.log.Info("gateway: a host's access token was refused", "status", he.status, "err", he.err)
		if he.status == http.StatusUnauthorized || he.params != "" {
			w.Header().Set("WWW-Authenticate", h.challenge(he.params))
		}
		http.Error(w, he.body, he.status)
		return
	}
	if err != nil {
		h.log.Warn("gateway: find the person of a host's access token", "err", err)
		http.Error(w, "remotemcp gateway: the people could not be read; try again", http.StatusServiceUnavailable)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), signedInKey{}, signedIn{user: id, issuer: h.oauth.issuer, claims: c}))
	h.serveFront(w, r, id)
}

// serveFront serves r by the front end of user id.
func (h *Hosts) serveFront(w http.ResponseWriter, r *http.Request, id string) {
	f, err := h.front(r.Context(), id)
	if err != nil {
		h.log.Warn("gateway: a person's front end", "user", id, "err", err)
		http.Error(w, "remotemcp gateway: your remotemcp could not be started; try again", http.StatusServiceUnavailable)
		return
	}
	f.h.ServeHTTP(w, r)
}

// front returns the front end of user id, made once over their engine
// (made again if their engine was closed and opened since).
func (h *Hosts) front(ctx context.Context, id string) (*hostFront, error) {
	eng, _, err := h.g.EngineByID(ctx, id)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errors.New("the endpoint is closing")
	}
	f, ok := h.fronts[id]
	if ok && f.eng != eng {
		// A stale front end of a closed engine (the person was removed
		// and added again): replace it.
		go f.close()
		ok = false
	}
	if !ok {
		f = &hostFront{ready: make(chan struct{}), eng: eng}
		h.fronts[id] = f
	}
	h.mu.Unlock()
	if ok {
		select {
		case <-f.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err != nil {
			return nil, f.err
		}
		return f, nil
	}
	f.err = h.start(f, eng, id)
	if f.err != nil {
		h.mu.Lock()
		if h.fronts[id] == f {
			delete(h.fronts, id)
		}
		h.mu.Unlock()
	}
	close(f.ready)
	return f, f.err
}

// start makes user id's front end over eng. Its log records name the
// user, as their engine's do: a gateway's log is everyone's, and a record
// about a person's server must say whose it is.
func (h *Hosts) start(f *hostFront, eng *engine.Engine, id string) error {
	fe, err := frontend.New(h.ctx, frontend.Options{Engine: eng, Name: h.o.Name, Version: h.o.Version, Logger: h.log.With("user", id)})
	if err != nil {
		return err
	}
	stop, err := fe.StartHTTP(h.ctx)
	if err != nil {
		return err
	}
	f.stop = stop
	var auth frontend.Authenticator
	if h.oauth != nil {
		auth = verifiedHosts{user: id}
	}
	f.h = fe.HTTPHandlerAuth(frontend.NewTokens(eng.Store), auth, h.o.HTTP)
	return nil
}

func (f *hostFront) close() {
	<-f.ready
	if f.stop != nil {
		f.stop()
	}
}

// forget stops the front end of a removed person.
func (h *Hosts) forget(id string) {
	h.mu.Lock()
	f := h.fronts[id]
	delete(h.fronts, id)
	h.mu.Unlock()
	if f != nil {
		f.close()
	}
}

// Close stops every front end (their host sessions end); call it once
// no request is in flight (after the server's shutdown).
func (h *Hosts) Close() {
	h.mu.Lock()
	h.closed = true
	all := h.fronts
	h.fronts = map[string]*hostFront{}
	h.mu.Unlock()
	for _, f := range all {
		f.close()
	}
}

// challenge is the Bearer challenge RFC 6750 §3 asks for, with params,
// and where hosts may sign in by OAuth the metadata's URL (RFC 9728
// §5.1).
func (h *Hosts) challenge(params string) string {
	ch := `Bearer realm="remotemcp"`
	if params != "" {
		ch += ", " + params
	}
	if h.oauth != nil {
		ch += `, resource_metadata="` + h.oauth.metaURL + `"`
	}
	return ch
}

// unauthorized answers 401 with the challenge.
func (h *Hosts) unauthorized(w http.ResponseWriter, params, msg string) {
	w.Header().Set("WWW-Authenticate", h.challenge(params))
	http.Error(w, msg, http.StatusUnauthorized)
}

// Serve serves the endpoint at mcphttp's path on ln until ctx ends, behind
// the loopback Host and Origin checks, with the listener's limits of a
// personal endpoint (o.MaxConns, netlimit), then ends every front end. It
// closes ln.
func (h *Hosts) Serve(ctx context.Context, ln net.Listener, path string) error {
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle(path, h)
	var public *url.URL
	if h.oauth != nil {
		for _, p := range h.oauth.metadataPaths(path) {
			mux.HandleFunc("GET "+p, h.oauth.serveMetadata)
		}
		public = h.oauth.public
	} else if h.o.PublicURL != "" {
		public, _ = url.Parse(h.o.PublicURL) // checked by Hosts
	}
	handler := daemon.GuardPublic(ln.Addr().(*net.TCPAddr).Port, public, mux)
	maxConns := h.o.HTTP.MaxConns
	if maxConns <= 0 {
		maxConns = netlimit.Cap(netlimit.MaxMCPConns)
	}
	ln = netlimit.Limit(ln, maxConns, "the MCP endpoint")
	srv := netlimit.Server(handler, netlimit.Options{ReadHeaderTimeout: h.o.HTTP.ReadHeaderTimeout, BodyReadTimeout: h.o.HTTP.ReadTimeout, IdleTimeout: h.o.HTTP.IdleTimeout})
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("gateway: serve the MCP endpoint on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway: serve the MCP endpoint on %s: %w", ln.Addr(), err)
	}
	return nil
}
