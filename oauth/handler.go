// Package oauth is remotemcp's OAuth 2.1 client for remote MCP servers, as
// the MCP Authorization spec (2025-11-25; floor 2025-06-18) and SPEC §3
// demand: protected resource metadata discovery (RFC 9728), authorization
// server metadata (RFC 8414 / OIDC), client ID metadata documents (CIMD,
// SPEC §9 A3), pre-configured clients or dynamic client registration (RFC
// 7591), the authorization code flow with PKCE S256, state, RFC 8707
// resource and RFC 9207 iss, refresh with resource, step-up on
// insufficient_scope (the demanded scopes recorded with the binding for
// the next authorization), and bindings of client ids and tokens to
// resource + issuer (R3.10).
//
// Registration recovery (issue #11): an authorization server that forgets
// its registered clients is detected at the token endpoint
// (invalid_client, unauthorized_client: the registration is dropped and
// the next authorization registers anew), and by a browser step that
// never comes back (the next interactive flow registers anew).
// LoginOptions.Reregister forces it.
//
// Options.OnExchange feeds every discovery, registration and token
// request, metadata only, to the per-server request log.
//
// An Authenticator serves every server of a process. Its Handler is the
// go-sdk auth.OAuthHandler of one session; Login, Logout and Status back the
// CLI's "auth" commands and the settings page.
//
// What it reuses: the go-sdk's WWW-Authenticate parser and metadata types
// (oauthex), and x/oauth2 for PKCE, the authorization URL and the code
// exchange. What it does itself, and why: fetching metadata (typed per-step
// errors, redirects refused, exact issuer and S256 checks, no guessed
// endpoints), dynamic registration (validated on the raw JSON), and refresh
// (x/oauth2 cannot send resource).
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/store"
)

// SecretStore is the part of store.Store the authenticator needs: the
// server config (to record a new binding) and sealed secrets (refresh
// tokens, registrations), and a lock on one secret, under which a
// refresh spends its refresh token and stores the next (LockSecret:
// SPEC §9 A11, refresh single-flight by row lock). *store.DB implements
// it.
type SecretStore interface {
	GetServer(ctx context.Context, id string) (config.Server, error)
	UpdateServer(ctx context.Context, s config.Server) error
	PutSecret(ctx context.Context, k store.SecretKey, value []byte) error
	GetSecret(ctx context.Context, k store.SecretKey) ([]byte, error)
	DeleteSecret(ctx context.Context, k store.SecretKey) error
	LockSecret(ctx context.Context, k store.SecretKey, hold time.Duration) (*store.SecretLock, error)
}

// SessionStore keeps what must never touch disk: access tokens (R3.11).
// *store.Memory implements it.
type SessionStore interface {
	Put(k store.SecretKey, v []byte, expires time.Time)
	Get(k store.SecretKey) ([]byte, bool)
	Delete(k store.SecretKey)
	DeleteServer(id string)
}

// Locker is a lock shared by every process on the data directory, so only
// one of them spends a refresh token at a time. *store.DB implements it.
type Locker interface {
	Lock(ctx context.Context, name string) (unlock func(), err error)
}

// secretLister is implemented by *store.DB; Logout uses it to find the
// secrets of bindings other than the current one.
type secretLister interface {
	ListSecrets(ctx context.Context, serverID string) ([]store.SecretKey, error)
}

// Options configure New.
type Options struct {
	// Store keeps server configs and sealed secrets. Required.
	Store SecretStore
	// Memory keeps access tokens; nil means a new store.NewMemory().
	Memory SessionStore
	// Locker serializes refreshes across processes; nil means Store when
	// it is a Locker, else a lock inside this process only.
	Locker Locker
	// HTTPClient is the base client (host permission guard, proxy, TLS).
	// The authenticator uses a copy that never follows redirects. nil
	// means http.DefaultClient.
	HTTPClient *http.Client
	// Logger receives progress and warnings; never a token, code,
	// verifier or secret. nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ClientMetadataURL returns the HTTPS URL of the client ID metadata
	// document (CIMD) configured for a server, "" if none (SPEC §9 A3).
	// When the authorization server's metadata says
	// client_id_metadata_document_supported, that URL is the client id
	// and nothing is registered; otherwise DCR or the pre-registered
	// client is used as before. nil means no server has one.
	ClientMetadataURL func(srv config.Server) string
	// OnExchange, when set, receives every HTTP request the authenticator
	// makes for a server (discovery, registration, token, refresh), with
	// metadata only (Exchange), for the per-server request log (SPEC B1).
	// It is called on the request's goroutine and must not block.
	OnExchange func(Exchange)
	// RedirectURI, when set and answering non-empty, is the redirect URI
	// of every interactive flow instead of the loopback one of the
	// server's redirect port: a gateway with a public page URL has its
	// people's browsers come back to <public URL>/mcp-oauth, wherever
	// they are (issue #23). It is registered (DCR), sent in the
	// authorization request and in the code exchange.
	RedirectURI func() string
}

// Authenticator performs OAuth for every server of one process.
type Authenticator struct {
	store  SecretStore
	mem    SessionStore
	locker Locker
	hc     *http.Client
	log    *slog.Logger
	now    func() time.Time
	cimd   func(config.Server) string
	// public is Options.RedirectURI (nil: loopback only).
	public func() string

	// flights makes concurrent 401s (or 403s) of one server share one
	// refresh or authorization (in-process half of the single flight; the
	// Locker is the cross-process half). A flight does not end because
	// the caller that started it gives up (flightGroup).
	flights flightGroup

	mu      sync.Mutex
	stepUps map[string][]time.Time // server id → recent step-up authorizations

	// scopeMu serializes updates of recorded scopes (recordScopes).
	scopeMu sync.Mutex
	// regMu makes setAwaiting's read-modify-write of a stored
	// registration atomic against the other writes of registrations in
	// this process, so it never writes back one just replaced.
	regMu sync.Mutex
}

// New returns an Authenticator. It panics if opts.Store is nil.
func New(opts Options) *Authenticator {
	if opts.Store == nil {
		panic("oauth: Options.Store is nil")
	}
	a := &Authenticator{
		store:   opts.Store,
		mem:     opts.Memory,
		locker:  opts.Locker,
		hc:      withExchangeLog(noRedirectClient(opts.HTTPClient), opts.OnExchange),
		log:     opts.Logger,
		now:     opts.Now,
		cimd:    opts.ClientMetadataURL,
		public:  opts.RedirectURI,
		stepUps: make(map[string][]time.Time),
	}
	if a.mem == nil {
		a.mem = store.NewMemory()
	}
	if a.locker == nil {
		if l, ok := opts.Store.(Locker); ok {
			a.locker = l
		} else {
			a.locker = &localLocker{}
		}
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// localLocker is the fallback Locker: a lock per name inside this process.
type localLocker struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (l *localLocker) Lock(ctx context.Context, name string) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[string]chan struct{})
	}
	ch, ok := l.m[name]
	if !ok {
		ch = make(chan struct{}, 1)
		l.m[name] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return sync.OnceFunc(func() { <-ch }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Handler returns the go-sdk auth.OAuthHandler for one session with srv
// (StreamableClientTransport.OAuthHandler), a server of kind oauth or auto.
//
// TokenSource sends the in-memory access token of the server's binding, or
// nothing. Authorize, on a 401, rediscovers (the binding may have moved),
// tries one refresh, and otherwise runs the browser flow through
// interactive — or, when interactive is nil (background work, R3.13),
// fails with an *Error wrapping ErrLoginRequired. On a 403
// insufficient_scope it steps up (at most three times per server and hour).
// Authorize errors leave the session usable (the go-sdk wraps them into the
// failed call's error; errors.As finds the *Error).
//
// A server of kind auto (SPEC §9 A2) starts out unauthenticated: before it
// has a binding, TokenSource sends nothing, and Authorize treats only a 401
// carrying a Bearer challenge (WWW-Authenticate) as the switch to OAuth —
// any other 401 or 403 fails with ErrNoChallenge or ErrForbidden without
// contacting anyone. From the first challenge on (or from the start, when
// a sign-in has recorded a binding) it behaves exactly like an oauth
// server. The config keeps kind auto; the binding that a successful
// sign-in records is what says it now uses OAuth (config.Server.UsesOAuth,
// Status.Binding).
func (a *Authenticator) Handler(srv config.Server, interactive Browser) auth.OAuthHandler {
	h := &handler{a: a, srv: srv.Clone(), browser: interactive}
	h.canonical, h.canonErr = config.CanonicalResource(srv.URL)
	if b := srv.Auth.Binding; b != nil && h.canonErr == nil && b.Resource == h.canonical && b.Issuer != "" {
		h.bound, h.hasBound = *b, true
	}
	return h
}

type handler struct {
	a         *Authenticator
	srv       config.Server
	browser   Browser
	canonical string
	canonErr  error

	mu       sync.Mutex
	bound    config.Binding
	hasBound bool
	// challenged: an auto server has answered 401 with a Bearer
	// challenge; it is an oauth server for this handler from now on.
	challenged bool
}

var _ auth.OAuthHandler = (*handler)(nil)

func (h *handler) binding() (config.Binding, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bound, h.hasBound
}

// switchedToOAuth reports whether an auto server has asked for OAuth: it
// challenged this handler, or a sign-in bound it before. Always true for
// kind oauth.
func (h *handler) switchedToOAuth() bool {
	if h.srv.Auth.Kind != config.AuthAuto {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.challenged || h.hasBound
}

func (h *handler) setChallenged() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.challenged = true
}

func (h *handler) setBinding(b config.Binding) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bound, h.hasBound = b, true
}

// TokenSource implements auth.OAuthHandler. The source never fails; see
// tokenSource.
func (h *handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return tokenSource{h}, nil
}

// Authorize implements auth.OAuthHandler. Every error it returns is
// marked ErrRefusedBeforeRun: the server answered 401 or 403, so the
// request did not run.
func (h *handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	return refused(h.handle(ctx, req, resp))
}

// handle is Authorize without the mark.
func (h *handler) handle(ctx context.Context, req *http.Request, resp *http.Response) error {
	id := h.srv.ID
	if !h.srv.Auth.Kind.OAuthCapable() {
		return &Error{Step: StepAuthorization, ServerID: id,
			Err: fmt.Errorf("%w (the server answered %d)", ErrNotOAuth, resp.StatusCode)}
	}
	if h.canonErr != nil {
		return &Error{Step: StepDiscoveryPRM, ServerID: id, Err: h.canonErr}
	}
	if !h.switchedToOAuth() {
		// Auto, not yet OAuth: only a 401 with a Bearer challenge says
		// that OAuth is what the server wants (SPEC §9 A2).
		switch {
		case resp.StatusCode == http.StatusUnauthorized && hasBearerChallenge(resp.Header):
			h.setChallenged()
			h.a.log.Info("oauth: the server asked for OAuth (auth kind auto)", "server", id)
		case resp.StatusCode == http.StatusUnauthorized:
			return &Error{Step: StepAuthorization, ServerID: id,
				Err: fmt.Errorf("%w: it answered 401 without \"WWW-Authenticate: Bearer\"; give the server a bearer token (auth kind \"bearer\"), or set auth kind \"oauth\" if it uses OAuth anyway", ErrNoChallenge)}
		default:
			return &Error{Step: StepAuthorization, ServerID: id,
				Err: fmt.Errorf("%w: the server refused an unauthenticated request with %d %s", ErrForbidden, resp.StatusCode, http.StatusText(resp.StatusCode))}
		}
	}
	ch, perr := parseChallenge(resp.Header)
	if perr != nil {
		h.a.log.Warn("oauth: unreadable WWW-Authenticate; using well-known discovery", "server", id, "error", perr)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return h.reauthorize(ctx, req, ch)
	case http.StatusForbidden:
		if ch.errorCode == "insufficient_scope" {
			return h.stepUp(ctx, ch)
		}
		why := "the server refused the request with 403 Forbidden"
		if ch.errorCode != "" {
			why += " (error=" + sanitize(ch.errorCode, 60) + ")"
		}
		return &Error{Step: StepAuthorization, ServerID: id,
			Err: fmt.Errorf("%w: %s; a new authorization would not change that", ErrForbidden, why)}
	default:
		return &Error{Step: StepAuthorization, ServerID: id,
			Err: fmt.Errorf("unexpected HTTP status %d", resp.StatusCode)}
	}
}

// sentToken is the bearer token a failed request carried, "" if none.
func sentToken(req *http.Request) string {
	v := req.Header.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return v[7:]
	}
	return ""
}

// newerToken reports whether memory holds a valid token other than the one
// the failed request sent: someone (another request's Authorize, a Login in
// this process) has already fixed things, and a retry will do.
func (h *handler) newerToken(sent string) bool {
	b, ok := h.binding()
	if !ok {
		return false
	}
	r := h.a.loadAccess(h.srv.ID, b)
	return r.valid(h.a.now()) && r.AccessToken != sent
}

func (h *handler) flightKey(kind string, extra ...string) string {
	mode := "background"
	if h.browser != nil {
		mode = "interactive"
	}
	return strings.Join(append([]string{kind, h.srv.ID, mode}, extra...), "\x00")
}

// reauthorize handles a 401: one refresh (or flow) per server at a time,
// and none at all when a newer token is already there.
func (h *handler) reauthorize(ctx context.Context, req *http.Request, ch challenge) error {
	sent := sentToken(req)
	if h.newerToken(sent) {
		return nil
	}
	v, at, err := h.a.flights.do(ctx, h.flightKey("reauth"), func(ctx context.Context) (any, error) {
		// Checked again inside the flight: a flight that just ended may
		// have produced the token this request needs.
		if h.newerToken(sent) {
			b, _ := h.binding()
			return b, nil
		}
		if b, ok := h.binding(); ok && sent != "" {
			// The server refused the token we hold: never send it again.
			if r := h.a.loadAccess(h.srv.ID, b); r != nil && r.AccessToken == sent {
				h.a.mem.Delete(secretKey(h.srv.ID, purposeAccessToken, b))
			}
		}
		srv := h.a.withStoredBinding(ctx, h.srv)
		out, err := h.a.authorize(ctx, authzRequest{srv: srv, canonical: h.canonical, ch: ch, browser: h.browser, mode: modeReauth})
		if err != nil {
			return nil, err
		}
		return out.binding, nil
	})
	if err != nil {
		return gaveUp(err, at, h.srv.ID)
	}
	h.setBinding(v.(config.Binding))
	return nil
}

// maxStepUps bounds step-up authorizations per server per stepUpWindow, so
// a server that keeps demanding scopes cannot make us loop (conformance
// auth/scope-retry-limit).
const (
	maxStepUps   = 3
	stepUpWindow = time.Hour
)

// stepUp handles a 403 insufficient_scope (R3.9). It first records the
// union of the granted and the demanded scopes with the binding
// (recordScopes), so whichever authorization comes next — this step-up,
// or the person's "auth login" when this is background work — asks for
// all of them. With a browser it then authorizes at once; without one
// (R3.13) it fails with an *InsufficientScopeError naming what is
// missing, without contacting anyone.
func (h *handler) stepUp(ctx context.Context, ch challenge) error {
	id := h.srv.ID
	demanded := slices.Clone(ch.scopes)
	sort.Strings(demanded)
	b, bound := h.binding()
	var granted []string
	if bound {
		granted = h.a.grantedScopes(ctx, id, b)
	}
	if len(demanded) > 0 && len(granted) > 0 && isSubset(demanded, granted) {
		// We already hold every scope demanded: another
		// authorization would end the same way.
		return &Error{Step: StepScope, ServerID: id,
			Err: fmt.Errorf("%w: the server demands the scopes %q, which the current token already has; a new authorization cannot fix this",
				ErrForbidden, strings.Join(demanded, " "))}
	}
	recorded := uniq(append(slices.Clone(granted), demanded...))
	if bound && len(demanded) > 0 {
		// Persisted even if the caller gives up right after: it is what
		// breaks the loop of issue #11.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		all, err := h.a.recordScopes(rctx, id, b, recorded)
		cancel()
		if err != nil {
			h.a.log.Warn("oauth: could not record the demanded scopes", "server", id, "error", err)
		} else {
			recorded = all
		}
	}
	if h.browser == nil {
		return &Error{Step: StepScope, ServerID: id, Err: &InsufficientScopeError{
			ServerID: id, Missing: without(demanded, granted), Scopes: recorded}}
	}
	v, at, err := h.a.flights.do(ctx, h.flightKey("stepup", demanded...), func(ctx context.Context) (any, error) {
		if !h.a.takeStepUp(id) {
			return nil, &Error{Step: StepScope, ServerID: id,
				Err: fmt.Errorf("%w: the server still demands more scopes (%q) after %d step-up authorizations in the last %s",
					ErrStepUpLimit, strings.Join(demanded, " "), maxStepUps, stepUpWindow)}
		}
		srv := h.a.withStoredBinding(ctx, h.srv)
		out, err := h.a.authorize(ctx, authzRequest{srv: srv, canonical: h.canonical, ch: ch, browser: h.browser, mode: modeStepUp})
		if err != nil {
			return nil, err
		}
		return out.binding, nil
	})
	if err != nil {
		return gaveUp(err, at, h.srv.ID)
	}
	h.setBinding(v.(config.Binding))
	return nil
}

// gaveUp attributes the error of a caller that stopped waiting for a
// flight to the step the flight was at (the manager reports a timeout
// with its OAuth step).
func gaveUp(err error, at Step, serverID string) error {
	if at == "" {
		return err
	}
	return stepErr(at, serverID, err)
}

func isSubset(sub, super []string) bool {
	for _, s := range sub {
		if !slices.Contains(super, s) {
			return false
		}
	}
	return true
}

// takeStepUp records a step-up for the server, or reports that the limit
// is reached.
func (a *Authenticator) takeStepUp(serverID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	recent := a.stepUps[serverID][:0]
	for _, t := range a.stepUps[serverID] {
		if now.Sub(t) < stepUpWindow {
			recent = append(recent, t)
		}
	}
	if len(recent) >= maxStepUps {
		a.stepUps[serverID] = recent
		return false
	}
	a.stepUps[serverID] = append(recent, now)
	return true
}

func (a *Authenticator) resetStepUps(serverID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.stepUps, serverID)
}

// grantedScopes are the scopes of the binding's current tokens.
func (a *Authenticator) grantedScopes(ctx context.Context, serverID string, b config.Binding) []string {
	var s []string
	if r := a.loadAccess(serverID, b); r != nil {
		s = append(s, r.Scopes...)
	}
	if r, err := a.loadRefresh(ctx, serverID, b); err == nil && r != nil {
		s = append(s, r.Scopes...)
	}
	return uniq(s)
}

// withStoredBinding returns srv with the binding currently in the store
// (another process's login may have changed it since the session began),
// as long as the stored config is still for the same URL.
func (a *Authenticator) withStoredBinding(ctx context.Context, srv config.Server) config.Server {
	cur, err := a.store.GetServer(ctx, srv.ID)
	if err != nil || cur.URL != srv.URL || !cur.Auth.Kind.OAuthCapable() {
		return srv
	}
	srv = srv.Clone()
	if cur.Auth.Binding != nil {
		b := *cur.Auth.Binding
		srv.Auth.Binding = &b
	} else {
		srv.Auth.Binding = nil
	}
	return srv
}

type mode int

const (
	modeLogin  mode = iota // explicit login: always the browser flow
	modeReauth             // 401: refresh first
	modeStepUp             // 403 insufficient_scope: browser flow with more scopes
)

// authzRequest is the input of authorize.
type authzRequest struct {
	srv       config.Server
	canonical string
	ch        challenge
	browser   Browser
	mode      mode
	prm       *resourceMeta // already discovered, or nil
	// reregister: register a new client even if one is stored (auth
	// login --reregister).
	reregister bool
	// share: LoginOptions.Share.
	share func(ctx context.Context, pf *PendingFlow) error
}

// outcome is what authorize achieved.
type outcome struct {
	binding   config.Binding
	grant     *grant
	client    *client
	refreshed bool
	// elsewhere: another process completed the flow (CompletedElsewhere)
	// and stored the grant; this is what it reported.
	elsewhere *LoginResult
}

// authorize is the core of SPEC §3: discovery, binding, refresh or the
// interactive flow, persistence and the binding update.
//
// Long: SPEC §3's steps in their order (discovery, binding, refresh,
// scopes, the interactive flow, persistence), marked with markStep as they
// start: a later step reads what an earlier one found (the binding, the
// reason a refresh failed, the persistence context that outlives the
// caller), and the function reads as the spec's list.
func (a *Authenticator) authorize(ctx context.Context, r authzRequest) (*outcome, error) {
	srv := r.srv
	id := srv.ID
	if r.browser == nil && r.mode == modeReauth && (srv.Auth.Binding == nil || srv.Auth.Binding.IsZero()) {
		// Never signed in: no refresh token can exist, and background work
		// may not start a browser flow (R3.13). Discovery would only
		// contact servers (and ask for host permissions) for nothing.
		why := "this server has not been signed in to yet"
		if srv.Auth.Kind == config.AuthAuto {
			why = "the server asks for OAuth authorization (auth kind auto) and has not been signed in to yet"
		}
		return nil, loginRequired(id, LoginNotSignedIn, why)
	}
	prm := r.prm
	if prm == nil {
		markStep(ctx, StepDiscoveryPRM)
		var err error
		if prm, err = a.discoverPRM(ctx, id, srv.URL, r.canonical, r.ch.resourceMetadata); err != nil {
			return nil, err
		}
	}
	issuer, err := chooseIssuer(prm.AuthorizationServers, srv.Auth.Binding, r.canonical)
	if err != nil {
		return nil, stepErr(StepDiscoveryPRM, id, err)
	}
	markStep(ctx, StepDiscoveryAS)
	asm, err := a.discoverAS(ctx, id, issuer)
	if err != nil {
		return nil, err
	}
	b := config.Binding{Resource: r.canonical, Issuer: issuer}
	if old := srv.Auth.Binding; old != nil && !old.IsZero() && *old != b {
		// Nothing of the old binding is used from here on (R3.10): all
		// lookups below are keyed by the new one.
		a.log.Info("oauth: binding changed; old client and tokens will not be used",
			"server", id, "old_issuer", old.Issuer, "new_issuer", b.Issuer, "old_resource", old.Resource, "new_resource", b.Resource)
	}
	// Persistence must not be cut short by a caller giving up: a rotated
	// refresh token that is not saved is lost for good.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()

	reason, code := "no refresh token is stored for this server", LoginNoRefreshToken
	if old := srv.Auth.Binding; old != nil && old.Resource == b.Resource && old.Issuer != b.Issuer {
		code = LoginIssuerChanged
		reason = fmt.Sprintf("the server now names the authorization server %s (it was %s), and tokens are never carried from one to the other", b.Issuer, old.Issuer)
	}
	if r.mode == modeReauth {
		markStep(ctx, StepRefresh)
		g, cl, err := a.tryRefresh(ctx, srv, b, prm, asm)
		switch {
		case err == nil:
			if err := a.rebind(pctx, srv, b); err != nil {
				return nil, stepErr(StepRefresh, id, err)
			}
			return &outcome{binding: b, grant: g, client: cl, refreshed: true}, nil
		case errors.Is(err, errNoRefreshToken):
		case clientRejected(err):
			reason, code = "the authorization server no longer accepts remotemcp's client ("+err.Error()+"); the next sign-in registers a new one", LoginClientRejected
		case isRefusal(err):
			reason, code = "the stored refresh token was refused ("+err.Error()+")", LoginRefreshRefused
		default:
			return nil, stepErr(StepRefresh, id, err)
		}
	}
	if r.browser == nil {
		return nil, loginRequired(id, code, reason)
	}
	var keep []string
	if r.mode == modeStepUp {
		keep = a.grantedScopes(ctx, id, b)
	}
	// What a 403 insufficient_scope taught us is asked for by every
	// authorization of the binding, a login included (R3.9, issue #11).
	keep = uniq(append(keep, a.loadRecordedScopes(ctx, id, b)...))
	scopes := selectScopes(r.ch.scopes, prm.ScopesSupported, srv.Auth.Scopes, asm.ScopesSupported, keep)
	g, cl, err := a.runFlow(ctx, flowParams{srv: srv, binding: b, prm: prm, asm: asm, scopes: scopes, browser: r.browser, reregister: r.reregister, share: r.share})
	var elsewhere *CompletedElsewhere
	if errors.As(err, &elsewhere) {
		a.log.Info("oauth: authorized by another process", "server", id, "issuer", elsewhere.Result.Binding.Issuer)
		res := elsewhere.Result
		return &outcome{binding: res.Binding, client: cl, elsewhere: &res}, nil
	}
	if err != nil {
		if r.mode == modeStepUp {
			var e *Error
			if errors.As(err, &e) && e.Step == StepAuthorization {
				e.Step = StepScope
			}
		}
		return nil, err
	}
	// Under the server's lock: a refresh in flight (holding a refresh
	// token that may be refused) finishes before the new grant is stored,
	// and a logout cannot interleave.
	markStep(ctx, StepToken)
	unlock, err := a.lockServer(pctx, id)
	if err != nil {
		return nil, stepErr(StepToken, id, fmt.Errorf("taking the server's OAuth lock: %w", err))
	}
	err = a.persist(pctx, id, b, cl.ID, g, false)
	if err == nil {
		err = a.rebind(pctx, srv, b)
	}
	unlock()
	if err != nil {
		return nil, stepErr(StepToken, id, err)
	}
	a.log.Info("oauth: authorized", "server", id, "issuer", b.Issuer, "scopes", g.Scopes, "refresh_token", g.RefreshToken != "")
	return &outcome{binding: b, grant: g, client: cl}, nil
}

// tryRefresh refreshes with the binding's stored refresh token, if the
// binding has a client and a refresh token.
func (a *Authenticator) tryRefresh(ctx context.Context, srv config.Server, b config.Binding, prm *resourceMeta, asm *oauthex.AuthServerMeta) (*grant, *client, error) {
	cl, err := a.resolveClient(ctx, srv, b, asm, false)
	if err != nil {
		return nil, nil, stepErr(StepRegistration, srv.ID, err)
	}
	if cl == nil {
		return nil, nil, errNoRefreshToken
	}
	g, err := a.refresh(ctx, srv, b, prm.Resource, asm.TokenEndpoint, cl)
	if err != nil {
		// A rejected registered client was dropped by refresh, under
		// the lock and by its id: a sign-in finishing meanwhile keeps
		// its new client.
		return nil, nil, err
	}
	return g, cl, nil
}

// isRefusal reports a token endpoint refusal (4xx with or without an error
// code) — the refresh token or client is no good, and a new authorization
// is the cure. Anything else (network, 5xx, redirect) is reported as is.
func isRefusal(err error) bool {
	var te *TokenError
	return errors.As(err, &te) && te.Status >= 400 && te.Status < 500
}

// rebind records the binding in the server's config (so the manager sees
// it, R2.4) and forgets what belonged to the previous binding.
func (a *Authenticator) rebind(ctx context.Context, srv config.Server, b config.Binding) error {
	cur, err := a.store.GetServer(ctx, srv.ID)
	if err != nil {
		return fmt.Errorf("reading server %q to record its binding: %w", srv.ID, err)
	}
	if canon, err := config.CanonicalResource(cur.URL); err != nil || canon != b.Resource || !cur.Auth.Kind.OAuthCapable() {
		// The config moved on meanwhile; its own session will bind.
		a.log.Warn("oauth: server config changed during authorization; binding not recorded", "server", srv.ID)
		return nil
	}
	if cur.Auth.Binding != nil && *cur.Auth.Binding == b {
		return nil
	}
	old := cur.Auth.Binding
	nb := b
	cur.Auth.Binding = &nb
	if err := a.store.UpdateServer(ctx, cur); err != nil {
		return fmt.Errorf("recording the binding of server %q: %w", srv.ID, err)
	}
	if old != nil && !old.IsZero() && *old != b {
		a.forget(ctx, srv.ID, *old)
	}
	return nil
}

// forget drops the client registration and tokens of one binding.
func (a *Authenticator) forget(ctx context.Context, serverID string, b config.Binding) {
	a.mem.Delete(secretKey(serverID, purposeAccessToken, b))
	for _, p := range []string{store.PurposeRefreshToken, store.PurposeRegistration, purposeScopes} {
		if err := a.store.DeleteSecret(ctx, secretKey(serverID, p, b)); err != nil && !errors.Is(err, store.ErrNotFound) {
			a.log.Warn("oauth: could not delete an old secret", "server", serverID, "purpose", p, "error", err)
		}
	}
}

// LoginResult says what Login achieved.
type LoginResult struct {
	// NotNeeded: the server answered without authentication and publishes
	// no protected resource metadata; nothing was done.
	NotNeeded bool
	// Binding is the resource + issuer the new tokens are bound to.
	Binding config.Binding
	// ClientID is the OAuth client used (configured or registered).
	ClientID string
	// Registered: the client was registered dynamically.
	Registered bool
	// Scopes are the granted scopes.
	Scopes []string
	// ExpiresAt is the access token's expiry (zero if unknown).
	ExpiresAt time.Time
	// RefreshToken: a refresh token was issued and stored.
	RefreshToken bool
}

// LoginOptions adjust one Login.
type LoginOptions struct {
	// Reregister forgets the stored dynamic client registration of the
	// binding and registers a new client (auth login --reregister), for
	// an authorization server that forgot the old one. It is refused for
	// a server with a configured client id, which has nothing to renew.
	Reregister bool
	// Share, when set, is given every authorization request's
	// PendingFlow before its browser step, so that another process (a
	// gateway replica the callback lands on) can complete it with
	// CompletePending; the Browser then returns a *CompletedElsewhere
	// and Login reports that process's result. An error abandons the
	// flow: a callback nobody could complete is not worth waiting for.
	Share func(ctx context.Context, pf *PendingFlow) error
}

// Login authorizes srv interactively (the user's explicit "Authorize",
// R3.13): it probes the MCP URL with an unauthenticated initialize (with
// the server's custom headers, as every MCP endpoint request) to get
// the 401 challenge, then runs discovery, registration, PKCE, the browser
// step through b, the code exchange, and stores the result. When the
// server answers without authentication, Login still looks for protected
// resource metadata (some servers only protect later requests) and reports
// NotNeeded when there is none. The scopes asked for are those R3.9
// selects plus those recorded by a 403 insufficient_scope
// (RecordedScopes). At most one LoginOptions is used.
func (a *Authenticator) Login(ctx context.Context, srv config.Server, b Browser, opts ...LoginOptions) (*LoginResult, error) {
	var o LoginOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if !srv.Auth.Kind.OAuthCapable() {
		return nil, &Error{Step: StepAuthorization, ServerID: srv.ID, Err: ErrNotOAuth}
	}
	if b == nil {
		return nil, &Error{Step: StepAuthorization, ServerID: srv.ID, Err: errors.New("no browser to complete the authorization")}
	}
	if o.Reregister && srv.Auth.ClientID != "" {
		return nil, &Error{Step: StepRegistration, ServerID: srv.ID,
			Err: fmt.Errorf("%w: server %s uses the configured client id %q, so there is no registration to renew; change auth.clientId instead",
				ErrNothingToReregister, srv.ID, srv.Auth.ClientID)}
	}
	canonical, err := config.CanonicalResource(srv.URL)
	if err != nil {
		return nil, &Error{Step: StepDiscoveryPRM, ServerID: srv.ID, Err: err}
	}
	srv = a.withStoredBinding(ctx, srv)
	ch, needed, err := a.probe(ctx, srv)
	if err != nil {
		return nil, stepErr(StepDiscoveryPRM, srv.ID, err)
	}
	var prm *resourceMeta
	if !needed {
		prm, err = a.discoverPRM(ctx, srv.ID, srv.URL, canonical, "")
		if errors.Is(err, ErrNoMetadata) {
			a.log.Info("oauth: the server needs no login", "server", srv.ID)
			return &LoginResult{NotNeeded: true}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	out, err := a.authorize(ctx, authzRequest{srv: srv, canonical: canonical, ch: ch, browser: b, mode: modeLogin, prm: prm, reregister: o.Reregister, share: o.Share})
	if err != nil {
		return nil, err
	}
	a.resetStepUps(srv.ID)
	if out.elsewhere != nil {
		return out.elsewhere, nil
	}
	return &LoginResult{
		Binding:      out.binding,
		ClientID:     out.client.ID,
		Registered:   out.client.Dynamic,
		Scopes:       out.grant.Scopes,
		ExpiresAt:    out.grant.Expiry,
		RefreshToken: out.grant.RefreshToken != "",
	}, nil
}

// probeBody is an unauthenticated initialize, the first request a client
// makes; its 401 carries the challenge Login needs.
const probeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"remotemcp","version":"0"}}}`

// probe POSTs an unauthenticated initialize, with the server's custom
// headers (setMCPHeaders). needed reports a 401/403.
func (a *Authenticator) probe(ctx context.Context, srv config.Server) (ch challenge, needed bool, err error) {
	pctx, cancel := context.WithTimeout(withStep(hostperm.WithPurpose(ctx, hostperm.PurposeMCP, srv.ID), StepDiscoveryPRM), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodPost, srv.URL, strings.NewReader(probeBody))
	if err != nil {
		return ch, false, err
	}
	setMCPHeaders(req, srv)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := a.hc.Do(req)
	if err != nil {
		return ch, false, fmt.Errorf("probing %s: %w", redactURL(srv.URL), err)
	}
	// Not drained: an SSE answer may stay open; closing is enough.
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		ch, perr := parseChallenge(resp.Header)
		if perr != nil {
			a.log.Warn("oauth: unreadable WWW-Authenticate; using well-known discovery", "server", srv.ID, "error", perr)
		}
		return ch, true, nil
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			a.endProbeSession(pctx, srv, sid)
		}
		return ch, false, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return ch, false, redirectError(http.MethodPost, srv.URL, resp)
	default:
		return ch, false, fmt.Errorf("the MCP URL answered an unauthenticated initialize with HTTP %d %s; check the server URL",
			resp.StatusCode, http.StatusText(resp.StatusCode))
	}
}

// setMCPHeaders puts the server's custom headers (config.Server.Headers:
// an API key a gateway wants first, say) on a request to its MCP endpoint,
// as the session layer does for every request of a session. Without them a
// server behind such a gateway refuses the probe, and sign-in could never
// start. They go to the MCP endpoint only — never to metadata,
// registration, authorization or token endpoints, which may belong to
// someone else. The config refuses the names the transport owns, and the
// callers set theirs after this, so those win anyway.
func setMCPHeaders(req *http.Request, srv config.Server) {
	for k, v := range srv.Headers {
		req.Header.Set(k, v)
	}
}

// endProbeSession politely deletes the session the probe opened, through
// the same gateway as the probe (setMCPHeaders).
func (a *Authenticator) endProbeSession(ctx context.Context, srv config.Server, sid string) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(dctx, http.MethodDelete, srv.URL, nil)
	if err != nil {
		return
	}
	setMCPHeaders(req, srv)
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := a.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// Logout forgets everything OAuth knows about a server: access tokens in
// memory, and the refresh tokens, registrations and recorded scopes of
// every binding. The
// config (and its binding) is left as it is; the next request needs a new
// login. It waits for a refresh or login of the server that is saving its
// tokens.
func (a *Authenticator) Logout(ctx context.Context, serverID string) error {
	// Under the server's lock, so that a refresh in flight cannot write
	// its tokens back after we have forgotten them.
	unlock, err := a.lockServer(ctx, serverID)
	if err != nil {
		return fmt.Errorf("oauth: logout %s: taking the server's OAuth lock: %w", serverID, err)
	}
	defer unlock()
	a.mem.DeleteServer(serverID)
	a.resetStepUps(serverID)
	var keys []store.SecretKey
	if l, ok := a.store.(secretLister); ok {
		all, err := l.ListSecrets(ctx, serverID)
		if err != nil {
			return fmt.Errorf("oauth: logout %s: %w", serverID, err)
		}
		for _, k := range all {
			if k.Purpose == store.PurposeRefreshToken || k.Purpose == store.PurposeRegistration || k.Purpose == purposeScopes {
				keys = append(keys, k)
			}
		}
	} else if srv, err := a.store.GetServer(ctx, serverID); err == nil && srv.Auth.Binding != nil {
		for _, p := range []string{store.PurposeRefreshToken, store.PurposeRegistration, purposeScopes} {
			keys = append(keys, secretKey(serverID, p, *srv.Auth.Binding))
		}
	}
	a.regMu.Lock() // a flow's setAwaiting must not write a registration back
	defer a.regMu.Unlock()
	for _, k := range keys {
		if err := a.store.DeleteSecret(ctx, k); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("oauth: logout %s: %w", serverID, err)
		}
	}
	a.log.Info("oauth: logged out", "server", serverID)
	return nil
}

// Status is what OAuth knows about a server, without any secret.
type Status struct {
	ServerID string
	// Binding is the stored binding; nil before the first authorization.
	Binding *config.Binding
	// BindingCurrent: the binding is for the server's current URL.
	BindingCurrent bool
	// ClientID is the client in use for the binding ("" if none yet).
	ClientID string
	// Registered: ClientID came from dynamic registration.
	Registered bool
	// RegisteredAt is when it was registered.
	RegisteredAt time.Time
	// HasRefreshToken: a refresh token is stored for the binding.
	HasRefreshToken bool
	// HasAccessToken: this process holds an unexpired access token.
	HasAccessToken bool
	// AccessTokenExpiry is that token's expiry (zero if unknown or none).
	AccessTokenExpiry time.Time
	// Scopes are the granted scopes as far as known.
	Scopes []string
	// RecordedScopes are the scopes a 403 insufficient_scope recorded
	// for the binding; the next authorization asks for them.
	RecordedScopes []string
	// Problem describes a failure to read the state, "" if none.
	Problem string
}

// Status reports the OAuth state of srv (the stored binding wins over
// srv's). It never returns secrets.
func (a *Authenticator) Status(ctx context.Context, srv config.Server) Status {
	st := Status{ServerID: srv.ID}
	srv = a.withStoredBinding(ctx, srv)
	if srv.Auth.Binding == nil || srv.Auth.Binding.IsZero() {
		st.ClientID = srv.Auth.ClientID
		return st
	}
	b := *srv.Auth.Binding
	st.Binding = &b
	if canon, err := config.CanonicalResource(srv.URL); err == nil && canon == b.Resource {
		st.BindingCurrent = true
	}
	if srv.Auth.ClientID != "" {
		st.ClientID = srv.Auth.ClientID
	} else if reg, err := a.loadRegistration(ctx, srv.ID, b); err != nil {
		st.Problem = err.Error()
	} else if reg != nil {
		st.ClientID, st.Registered, st.RegisteredAt = reg.ClientID, true, reg.registeredAt()
	}
	if rec, err := a.loadRefresh(ctx, srv.ID, b); err != nil {
		st.Problem = err.Error()
	} else if rec != nil {
		st.HasRefreshToken = true
		st.Scopes = rec.Scopes
		if u := a.clientMetadataURL(srv); u != "" && rec.ClientID == u {
			// The client ID metadata document URL was the client id
			// (the authorization server accepted it): nothing is
			// registered, the refresh token says which id it was.
			st.ClientID, st.Registered, st.RegisteredAt = u, false, time.Time{}
		}
	}
	st.RecordedScopes = a.loadRecordedScopes(ctx, srv.ID, b)
	if r := a.loadAccess(srv.ID, b); r.valid(a.now()) {
		st.HasAccessToken = true
		st.AccessTokenExpiry = r.Expiry
		st.Scopes = r.Scopes
	}
	return st
}
