package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/store"
)

// Token endpoint client authentication methods remotemcp can perform.
const (
	authNone   = "none"
	authBasic  = "client_secret_basic"
	authPost   = "client_secret_post"
	maxIDChars = 255 // client_id length bound (R2.11)
)

// CallbackPath is the path of the loopback redirect URI (SPEC §7).
const CallbackPath = "/mcp-oauth"

// RedirectURI is the fixed loopback redirect URI for port (RFC 8252 §7.3):
// http://127.0.0.1:<port>/mcp-oauth. Port 0 means config.DefaultRedirectPort.
func RedirectURI(port int) string {
	if port == 0 {
		port = config.DefaultRedirectPort
	}
	return "http://127.0.0.1:" + strconv.Itoa(port) + CallbackPath
}

// redirectURI is the redirect URI of srv's interactive flows: the public
// one (Options.RedirectURI) when there is one, else the loopback one of
// its redirect port.
func (a *Authenticator) redirectURI(srv config.Server) string {
	if a.public != nil {
		if u := a.public(); u != "" {
			return u
		}
	}
	return RedirectURI(srv.Auth.RedirectPort)
}

// isLoopbackRedirect reports whether a redirect URI is http on a
// loopback IP address (RFC 8252 §7.3).
func isLoopbackRedirect(redirect string) bool {
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// client is the OAuth client used with one binding.
type client struct {
	ID         string
	Secret     string
	AuthMethod string // authNone, authBasic or authPost
	Dynamic    bool   // obtained by dynamic registration (and stored)
	CIMD       bool   // ID is the URL of a client ID metadata document (SPEC §9 A3)
}

// registration is the sealed record of a dynamic registration
// (store.PurposeRegistration, keyed by the binding).
type registration struct {
	ClientID        string `json:"client_id"`
	ClientSecret    string `json:"client_secret,omitempty"`
	AuthMethod      string `json:"token_endpoint_auth_method"`
	RedirectURI     string `json:"redirect_uri"`
	RedirectPort    int    `json:"redirect_port"`
	SecretExpiresAt int64  `json:"client_secret_expires_at,omitempty"` // unix seconds; 0 never
	RegisteredAt    int64  `json:"registered_at"`                      // unix seconds
	// AwaitingSince is set (unix seconds) while a browser step with this
	// client waits for its callback, and cleared when one arrives. Found
	// set by the next interactive flow, it means the browser never came
	// back — what an authorization server that forgot the client looks
	// like (it shows invalid_client and never redirects, RFC 6749
	// §4.1.2.1) — so that flow registers a new client.
	AwaitingSince int64 `json:"awaiting_since,omitempty"`
	// Pending is a client registered for a sign-in that has not finished
	// (one whose redirect URI the registered client lacks, or one after
	// a browser step that never came back, or auth login --reregister).
	// The client above stays the one in use, for refreshes above all: the
	// stored refresh token was issued to it, and a sign-in that is
	// abandoned must not cost it. The code exchange of a sign-in with the
	// pending client makes it the one in use (promote, when the grant is
	// stored); until then the next sign-in may use it (same redirect URI,
	// callback came back) or replace it. A pending record has no Pending.
	Pending *registration `json:"pending,omitempty"`
}

// client is the registration as the client to use.
func (r *registration) client() *client {
	return &client{ID: r.ClientID, Secret: r.ClientSecret, AuthMethod: r.AuthMethod, Dynamic: true}
}

// usable reports whether the registration's client can be used at now:
// its secret, if it has one that expires, has not expired.
func (r *registration) usable(now time.Time) bool {
	return r != nil && (r.SecretExpiresAt == 0 || now.Unix() < r.SecretExpiresAt)
}

func secretKey(serverID, purpose string, b config.Binding) store.SecretKey {
	return store.SecretKey{ServerID: serverID, Purpose: purpose, Binding: b}
}

// loadRegistration reads the stored registration of a binding; nil when
// there is none or it cannot be used any more.
func (a *Authenticator) loadRegistration(ctx context.Context, serverID string, b config.Binding) (*registration, error) {
	raw, err := a.store.GetSecret(ctx, secretKey(serverID, store.PurposeRegistration, b))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r registration
	if err := json.Unmarshal(raw, &r); err != nil || r.ClientID == "" {
		// A record we cannot read is as good as none: register again.
		a.log.Warn("oauth: discarding unreadable stored registration", "server", serverID)
		return nil, nil
	}
	if r.Pending != nil && (r.Pending.ClientID == "" || r.Pending.Pending != nil) {
		r.Pending = nil
	}
	return &r, nil
}

// saveRegistration stores the registration record of a binding. The
// caller holds regMu.
func (a *Authenticator) saveRegistration(ctx context.Context, serverID string, b config.Binding, r *registration) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return a.store.PutSecret(ctx, secretKey(serverID, store.PurposeRegistration, b), raw)
}

// resolveClient returns the client for a binding: the configured client
// ID metadata document URL when the authorization server accepts one
// (SPEC §9 A3), else the configured client id (R3.3), else the stored
// dynamic registration, or a new one (when register is true). A
// configured client id is bound too (R3.10): once the server is bound to
// an issuer, the id is never sent to a different one. A CIMD URL is not:
// it names a document any authorization server may fetch.
//
// A refresh (register false) uses the registration in use whatever its
// redirect URI: the token endpoint does not see one, and the stored
// refresh token was issued to that client.
//
// When register is true (an interactive flow follows with the redirect
// URI of srv.Auth.RedirectPort), the client is the registration in use,
// else the pending one (registration.Pending), provided it has the
// flow's redirect URI and its last browser step came back (AwaitingSince
// unset); else a new client is registered. The new client is pending
// while a registration in use exists: it replaces that one only when its
// code exchange succeeds (promote), so a sign-in started and never
// finished never costs the refresh token of the client in use. fresh
// (auth login --reregister) registers a new client whatever is stored.
func (a *Authenticator) resolveClient(ctx context.Context, srv config.Server, b config.Binding, asm *oauthex.AuthServerMeta, register bool) (*client, error) {
	return a.resolveFlowClient(ctx, srv, b, asm, register, false)
}

// resolveFlowClient is resolveClient with fresh (see there).
//
// Long: the client choice in its order of precedence (client ID metadata
// document, configured client id, the registration in use, the pending
// one, a new registration saved before use), each case a return; the
// precedence is the function, and splitting it would scatter it.
func (a *Authenticator) resolveFlowClient(ctx context.Context, srv config.Server, b config.Binding, asm *oauthex.AuthServerMeta, register, fresh bool) (*client, error) {
	port := srv.Auth.RedirectPort
	if u := a.clientMetadataURL(srv); u != "" {
		if err := checkClientMetadataURL(u); err != nil {
			return nil, err
		}
		if asm.ClientIDMetadataDocumentSupported {
			return &client{ID: u, AuthMethod: authNone, CIMD: true}, nil
		}
		a.log.Debug("oauth: the authorization server does not accept client ID metadata documents; using the configured or a registered client",
			"server", srv.ID, "issuer", asm.Issuer)
	}
	if srv.Auth.ClientID != "" {
		if old := srv.Auth.Binding; old != nil && old.Issuer != "" && old.Issuer != b.Issuer {
			return nil, fmt.Errorf("%w: the server now names authorization server %s, but the configured clientId was used with %s; register a client with the new server, set auth.clientId (and clientSecret) to it and remove auth.binding",
				ErrClientMismatch, b.Issuer, old.Issuer)
		}
		c := &client{ID: srv.Auth.ClientID, Secret: srv.Auth.ClientSecret, AuthMethod: authNone}
		if c.Secret != "" {
			c.AuthMethod = pickSecretMethod(asm.TokenEndpointAuthMethodsSupported)
		}
		return c, nil
	}
	reg, err := a.loadRegistration(ctx, srv.ID, b)
	if err != nil {
		return nil, err
	}
	now := a.now()
	if !register {
		if reg.usable(now) {
			return reg.client(), nil
		}
		return nil, nil
	}
	redirect := a.redirectURI(srv)
	// fits reports whether an interactive flow can use r, and logs why
	// not.
	fits := func(r *registration) bool {
		switch {
		case !r.usable(now):
			return false
		case r.RedirectURI != redirect:
			// The daemon's page moved to a free port, or the person
			// chose another with --port: an authorization server that
			// checks redirect URIs exactly would refuse this one.
			a.log.Info("oauth: a registered client has another redirect URI",
				"server", srv.ID, "issuer", b.Issuer, "client_id", r.ClientID, "registered", r.RedirectURI, "redirect_uri", redirect)
			return false
		case r.AwaitingSince != 0:
			a.log.Warn("oauth: the last sign-in with a registered client never came back from the authorization server, which may have forgotten it",
				"server", srv.ID, "issuer", b.Issuer, "client_id", r.ClientID, "waiting_since", time.Unix(r.AwaitingSince, 0).UTC())
			return false
		}
		return true
	}
	if !fresh && reg != nil {
		if fits(reg) {
			return reg.client(), nil
		}
		if reg.Pending != nil && fits(reg.Pending) {
			return reg.Pending.client(), nil
		}
	}
	if asm.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("%w: %s offers no dynamic client registration (no registration_endpoint) and no auth.clientId is configured; register remotemcp with that server (redirect URI %s) and set auth.clientId",
			ErrNoRegistration, asm.Issuer, redirect)
	}
	a.log.Info("oauth: registering a new client", "server", srv.ID, "issuer", b.Issuer, "redirect_uri", redirect)
	nr, err := a.register(ctx, srv.ID, asm.RegistrationEndpoint, port, redirect)
	if err != nil {
		return nil, err
	}
	// Persist before use, sealed under the binding, so a crash after the
	// authorization cannot leave tokens whose client nobody remembers:
	// as the registration in use when there is none that can be used,
	// else as the pending one.
	a.regMu.Lock()
	cur, err := a.loadRegistration(ctx, srv.ID, b)
	pending := err == nil && cur.usable(now)
	if err == nil {
		rec := nr
		if pending {
			cur.Pending = nr
			rec = cur
		}
		err = a.saveRegistration(ctx, srv.ID, b, rec)
	}
	a.regMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("saving the registration: %w", err)
	}
	a.log.Info("oauth: registered client", "server", srv.ID, "issuer", b.Issuer, "client_id", nr.ClientID, "pending", pending)
	return nr.client(), nil
}

// pickSecretMethod chooses how a client with a secret authenticates:
// client_secret_basic (the RFC 8414 default when nothing is advertised, and
// the method every server must support, RFC 6749 §2.3.1), else
// client_secret_post when that is all the server lists.
func pickSecretMethod(supported []string) string {
	if len(supported) == 0 || slices.Contains(supported, authBasic) {
		return authBasic
	}
	if slices.Contains(supported, authPost) {
		return authPost
	}
	return authBasic
}

// register performs RFC 7591 dynamic client registration as a public
// client with the flow's redirect URI: a native application with the
// loopback one, a web application with a gateway's public one (OpenID
// Connect Registration §2: native clients use loopback or custom
// schemes, web clients their site). The request is sent with the
// no-redirect client and the answer is validated on the raw JSON
// (validateRegistration) before anything of it is used or stored; that is
// why oauthex.RegisterClient, which decodes first and follows redirects,
// is not used here.
func (a *Authenticator) register(ctx context.Context, serverID, endpoint string, port int, redirect string) (*registration, error) {
	appType := "native"
	if !isLoopbackRedirect(redirect) {
		appType = "web"
	}
	meta := oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{redirect},
		TokenEndpointAuthMethod: authNone,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              "remotemcp",
		ApplicationType:         appType,
	}
	payload, err := json.Marshal(&meta)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(withStep(hostperm.WithPurpose(ctx, hostperm.PurposeRegistration, serverID), StepRegistration), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.do(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.status == http.StatusCreated || resp.status == http.StatusOK:
	case resp.status == http.StatusBadRequest:
		if obj, err := parseObject(resp.body); err == nil {
			code, _, _ := obj.str("error")
			desc, _, _ := obj.str("error_description")
			return nil, fmt.Errorf("%w: %s refused the registration: %s %s", ErrBadRegistration,
				redactURL(endpoint), sanitize(code, 60), sanitize(desc, 200))
		}
		return nil, statusError(http.MethodPost, endpoint, resp.status)
	default:
		return nil, statusError(http.MethodPost, endpoint, resp.status)
	}
	reg, err := validateRegistration(resp.body, redirect)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", redactURL(endpoint), err)
	}
	reg.RedirectPort = port
	reg.RegisteredAt = a.now().Unix()
	return reg, nil
}

// validateRegistration checks a registration response on its raw JSON
// (R2.11): a JSON object; client_id present, a string, non-empty, at most
// 255 characters, printable ASCII (RFC 6749 Appendix A.1 VSCHAR, so no
// control characters); client_secret, when present, a VSCHAR string;
// token_endpoint_auth_method one remotemcp can perform; redirect_uris, when
// echoed, still containing ours.
func validateRegistration(body []byte, redirectURI string) (*registration, error) {
	obj, err := parseObject(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRegistration, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadRegistration}, args...)...)
	}
	raw, present := obj["client_id"]
	if !present || isNull(raw) {
		return nil, bad("client_id is missing")
	}
	id, _, err := obj.str("client_id")
	if err != nil {
		return nil, bad("%v", err)
	}
	switch {
	case id == "":
		return nil, bad("client_id is empty")
	case len(id) > maxIDChars:
		return nil, bad("client_id is %d characters long; the limit is %d", len(id), maxIDChars)
	case !vschar(id):
		return nil, bad("client_id contains control or non-ASCII characters")
	}
	secret, _, err := obj.str("client_secret")
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(secret) > 4096 || !vschar(secret) {
		return nil, bad("client_secret is too long or contains control or non-ASCII characters")
	}
	method, ok, err := obj.str("token_endpoint_auth_method")
	if err != nil {
		return nil, bad("%v", err)
	}
	if !ok {
		// RFC 7591 §2: the default is client_secret_basic; without a
		// secret that cannot be meant, so we are the public client we
		// asked to be.
		method = authNone
		if secret != "" {
			method = authBasic
		}
	}
	switch method {
	case authNone:
	case authBasic, authPost:
		if secret == "" {
			return nil, bad("token_endpoint_auth_method is %s but no client_secret was issued", method)
		}
	default:
		return nil, bad("token_endpoint_auth_method %q is not supported (remotemcp can use none, client_secret_basic or client_secret_post)", sanitize(method, 60))
	}
	expires, _, err := obj.integer("client_secret_expires_at")
	if err != nil {
		return nil, bad("%v", err)
	}
	if uris, ok, err := obj.strList("redirect_uris"); err != nil {
		return nil, bad("%v", err)
	} else if ok && !slices.Contains(uris, redirectURI) {
		return nil, bad("redirect_uris does not contain %s", redirectURI)
	}
	return &registration{
		ClientID:        id,
		ClientSecret:    secret,
		AuthMethod:      method,
		RedirectURI:     redirectURI,
		SecretExpiresAt: expires,
	}, nil
}

// vschar reports whether s is made of RFC 6749 VSCHAR (%x20-7E) only.
func vschar(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// dropClient forgets the registered client clientID of a binding ("": the
// one in use), after the token endpoint rejected it. When that is the
// registration in use, a pending one takes its place (the rejected
// client's refresh token is of no use any more); when it is the pending
// one, the registration in use stays. A missing one is no error.
func (a *Authenticator) dropClient(ctx context.Context, serverID string, b config.Binding, clientID string) error {
	a.regMu.Lock()
	defer a.regMu.Unlock()
	reg, err := a.loadRegistration(ctx, serverID, b)
	if err != nil {
		return err
	}
	switch {
	case reg == nil:
		return nil
	case clientID == "" || reg.ClientID == clientID:
		if reg.Pending != nil {
			return a.saveRegistration(ctx, serverID, b, reg.Pending)
		}
	case reg.Pending != nil && reg.Pending.ClientID == clientID:
		reg.Pending = nil
		return a.saveRegistration(ctx, serverID, b, reg)
	default:
		return nil
	}
	err = a.store.DeleteSecret(ctx, secretKey(serverID, store.PurposeRegistration, b))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// promote makes the pending registered client clientID the one in use,
// once a code exchange with it has succeeded; the caller then stores the
// grant it obtained. Anything else (clientID already in use, a configured
// client) changes nothing.
func (a *Authenticator) promote(ctx context.Context, serverID string, b config.Binding, clientID string) error {
	a.regMu.Lock()
	defer a.regMu.Unlock()
	reg, err := a.loadRegistration(ctx, serverID, b)
	if err != nil || reg == nil || reg.Pending == nil || reg.Pending.ClientID != clientID || reg.ClientID == clientID {
		return err
	}
	next := reg.Pending
	next.AwaitingSince = 0 // the authorization server knows it: it issued a code
	if err := a.saveRegistration(ctx, serverID, b, next); err != nil {
		return fmt.Errorf("saving the registration: %w", err)
	}
	a.log.Info("oauth: the newly registered client is now in use", "server", serverID, "issuer", b.Issuer, "client_id", clientID, "replaced", reg.ClientID)
	return nil
}

// setAwaiting records (on) or clears (off) that a browser step with the
// registered client clientID (in use or pending) is waiting for its
// callback. It changes the stored registration only while clientID is
// still in it: a flow that registered anew meanwhile wins. Failures are
// logged, not returned: the mark only decides whether the next flow
// registers again.
func (a *Authenticator) setAwaiting(ctx context.Context, serverID string, b config.Binding, clientID string, on bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	a.regMu.Lock()
	defer a.regMu.Unlock()
	reg, err := a.loadRegistration(ctx, serverID, b)
	if err != nil || reg == nil {
		return
	}
	r := reg
	if r.ClientID != clientID {
		r = reg.Pending
	}
	if r == nil || r.ClientID != clientID || (r.AwaitingSince != 0) == on {
		return
	}
	r.AwaitingSince = 0
	if on {
		r.AwaitingSince = a.now().Unix()
	}
	if err := a.saveRegistration(ctx, serverID, b, reg); err != nil {
		a.log.Warn("oauth: could not update the stored registration", "server", serverID, "error", err)
	}
}

// clientMetadataURL is the server's configured CIMD URL, "" if none.
func (a *Authenticator) clientMetadataURL(srv config.Server) string {
	if a.cimd == nil {
		return ""
	}
	return a.cimd(srv)
}

// checkClientMetadataURL checks a configured CIMD URL: the client ID
// metadata document spec requires https and a path (the URL is the
// client id, and an origin alone cannot name a document); no fragment or
// user information, which could not be an identifier.
func checkClientMetadataURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%w: %q is not an absolute URL", ErrBadClientMetadataURL, sanitize(raw, 200))
	case u.Scheme != "https":
		return fmt.Errorf("%w: %s must use https", ErrBadClientMetadataURL, redactURL(raw))
	case u.Path == "" || u.Path == "/":
		return fmt.Errorf("%w: %s has no path naming the document", ErrBadClientMetadataURL, redactURL(raw))
	case u.User != nil || u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("%w: %s must not carry user information or a fragment", ErrBadClientMetadataURL, redactURL(raw))
	case len(raw) > config.MaxURLLength:
		return fmt.Errorf("%w: it is %d bytes long", ErrBadClientMetadataURL, len(raw))
	}
	return nil
}

// registeredAt is when the client was registered (zero if unknown), for Status.
func (r *registration) registeredAt() time.Time {
	if r == nil || r.RegisteredAt == 0 {
		return time.Time{}
	}
	return time.Unix(r.RegisteredAt, 0)
}
