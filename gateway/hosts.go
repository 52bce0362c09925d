package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
type Hosts struct {
	g       *Gateway
	o       frontend.HTTPOptions
	name    string
	version string
	log     *slog.Logger
	ctx     context.Context // the front ends' lifetime

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
// until ctx ends or Close. name and version are what hosts see.
func (g *Gateway) Hosts(ctx context.Context, o frontend.HTTPOptions, name, version string) *Hosts {
	h := &Hosts{g: g, o: o, name: name, version: version, log: g.log, ctx: ctx, fronts: map[string]*hostFront{}}
	g.mu.Lock()
	g.onRemove = append(g.onRemove, h.forget)
	g.mu.Unlock()
	return h
}

// Body of a refused request: hosts show it, so it says what to do.
const (
	noTokenBody  = "remotemcp gateway: this MCP endpoint needs your bearer token, sent as \"Authorization: Bearer TOKEN\". An admin creates one for you with \"remotemcp --user EMAIL mcp token create NAME\" on the gateway's host."
	badTokenBody = "remotemcp gateway: invalid_token: the bearer token is unknown or revoked; ask for a new one (\"remotemcp --user EMAIL mcp token create NAME\")."
)

// ServeHTTP routes a request to its person's front end.
func (h *Hosts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		unauthorized(w, "", noTokenBody)
		return
	}
	id, err := h.g.TokenOwner(r.Context(), tok)
	if errors.Is(err, ErrNoUser) {
		unauthorized(w, `error="invalid_token", error_description="the bearer token is unknown or revoked"`, badTokenBody)
		return
	}
	if err != nil {
		h.log.Warn("gateway: find the owner of a host token", "err", err)
		http.Error(w, "remotemcp gateway: the tokens could not be read; try again", http.StatusServiceUnavailable)
		return
	}
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
	fe, err := frontend.New(h.ctx, frontend.Options{Engine: eng, Name: h.name, Version: h.version, Logger: h.log.With("user", id)})
	if err != nil {
		return err
	}
	stop, err := fe.StartHTTP(h.ctx)
	if err != nil {
		return err
	}
	f.stop = stop
	f.h = fe.HTTPHandlerWith(frontend.NewTokens(eng.Store), h.o)
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

// bearer extracts the token of an Authorization header (RFC 6750: the
// scheme is case-insensitive).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// unauthorized answers 401 with the challenge RFC 6750 asks for.
func unauthorized(w http.ResponseWriter, params, msg string) {
	ch := `Bearer realm="remotemcp"`
	if params != "" {
		ch += ", " + params
	}
	w.Header().Set("WWW-Authenticate", ch)
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
	handler := daemon.GuardLoopback(ln.Addr().(*net.TCPAddr).Port, mux)
	maxConns := h.o.MaxConns
	if maxConns <= 0 {
		maxConns = netlimit.Cap(netlimit.MaxMCPConns)
	}
	ln = netlimit.Limit(ln, maxConns, "the MCP endpoint")
	srv := netlimit.Server(handler, netlimit.Options{ReadHeaderTimeout: h.o.ReadHeaderTimeout, BodyReadTimeout: h.o.ReadTimeout, IdleTimeout: h.o.IdleTimeout})
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
