package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// HostsOptions configure the gateway's MCP endpoint (Hosts).
type HostsOptions struct {
	// HTTP are the endpoint's limits (sessions, listener).
	HTTP frontend.HTTPOptions
	// Name and Version are what hosts see.
	Name, Version string

	// Issuer, when set, lets hosts sign in by OAuth (MCP Authorization,
	// issue #22): the endpoint is a protected resource (RFC 9728) whose
	// authorization server is this OpenID provider, and a bearer token
	// that is not a remotemcp token must be a JWT access token of it for
	// PublicURL. Without it only remotemcp tokens are taken, as before.
	Issuer string
	// PublicURL is the endpoint's URL as hosts reach it (…/mcp; through
	// a proxy, its URL): the resource of the metadata, and the audience
	// every access token must name exactly. Needed with Issuer; the
	// Host check accepts its host too.
	PublicURL string
	// Scopes are the scopes hosts ask for (the metadata's
	// scopes_supported): nil is DefaultHostScopes; empty leaves them out.
	Scopes []string
	// HTTPClient talks to the provider (discovery, keys, user info); nil
	// is one with a timeout.
	HTTPClient *http.Client
	// Now is the clock tokens expire by; nil is time.Now (tests move it).
	Now func() time.Time
}

// DefaultHostScopes are what a host asks for when the options name none:
// the gateway knows people by their verified email, which a provider
// whose access tokens do not carry it tells from its user info, for an
// access token with these scopes.
var DefaultHostScopes = []string{"openid", "email"}

const (
	// wellKnownPRM is the protected resource metadata's well-known path
	// (RFC 9728 §3).
	wellKnownPRM = "/.well-known/oauth-protected-resource"
	// maxAccessToken bounds an access token: a JWT with the claims of a
	// sign-in is a few kilobytes.
	maxAccessToken = 16 << 10
	// maxEmailCache bounds the emails remembered per access token.
	maxEmailCache = 4096
	// providerWait bounds one request to the provider.
	providerWait = 30 * time.Second
)

// signingAlgs are the signatures an access token may carry: asymmetric
// ones, whose public keys the provider publishes (JWKS). "none" and the
// HMAC ones (HS256, …), whose key would be a secret shared with us, are
// refused before any key is looked at.
var signingAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// hostOAuth checks hosts' OAuth access tokens and serves the endpoint's
// protected resource metadata.
type hostOAuth struct {
	issuer   string
	resource string   // PublicURL: the resource and audience
	public   *url.URL // PublicURL, parsed
	metaURL  string   // the metadata's URL (the challenges' resource_metadata)
	meta     []byte   // the metadata document
	scopes   []string
	client   *http.Client
	now      func() time.Time

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier // once the provider is found
	userInfo string                // its user info endpoint

	emailsMu sync.Mutex
	emails   map[[32]byte]verifiedEmail // by access token hash
}

// verifiedEmail is what a provider's user info said of an access token.
type verifiedEmail struct {
	email, subject string
	verified       bool
	until          time.Time // the token's expiry
}

// newHostOAuth checks o's OAuth settings; nil when o has no Issuer.
func newHostOAuth(o HostsOptions) (*hostOAuth, error) {
	if o.Issuer == "" {
		if o.PublicURL != "" {
			if _, err := parseMCPURL(o.PublicURL); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if _, err := parseMCPURL(o.Issuer); err != nil {
		return nil, fmt.Errorf("gateway: the OpenID issuer: %w", err)
	}
	if o.PublicURL == "" {
		return nil, errors.New("gateway: hosts' OAuth needs the MCP endpoint's public URL (the audience of its access tokens)")
	}
	pub, err := parseMCPURL(o.PublicURL)
	if err != nil {
		return nil, err
	}
	scopes := o.Scopes
	if scopes == nil {
		scopes = DefaultHostScopes
	}
	a := &hostOAuth{issuer: o.Issuer, resource: o.PublicURL, public: pub, scopes: scopes,
		client: o.HTTPClient, now: o.Now, emails: map[[32]byte]verifiedEmail{}}
	if a.client == nil {
		a.client = &http.Client{Timeout: providerWait}
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.metaURL = pub.Scheme + "://" + pub.Host + wellKnownPRM + strings.TrimSuffix(pub.Path, "/")
	// RFC 9728 §2; bearer_methods_supported: the header only (RFC 6750
	// §2.1), never a form body or a query.
	doc := struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		BearerMethods        []string `json:"bearer_methods_supported"`
		Scopes               []string `json:"scopes_supported,omitempty"`
	}{o.PublicURL, []string{o.Issuer}, []string{"header"}, scopes}
	if a.meta, err = json.Marshal(doc); err != nil {
		return nil, fmt.Errorf("gateway: the protected resource metadata: %w", err)
	}
	return a, nil
}

// parseMCPURL checks a URL hosts or the gateway reach: absolute, https
// or loopback http (as MCP clients insist), no query or fragment.
func parseMCPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("gateway: %q is not a URL like https://mcp.example.com/mcp", s)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip == nil || !ip.IsLoopback()) && u.Hostname() != "localhost" {
			return nil, fmt.Errorf("gateway: %q: hosts reach a gateway over https (plain http only on loopback)", s)
		}
	default:
		return nil, fmt.Errorf("gateway: %q is not an http(s) URL", s)
	}
	return u, nil
}

// serveMetadata answers the protected resource metadata.
func (a *hostOAuth) serveMetadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(a.meta)
}

// metadataPaths are the paths the metadata is served at: the root, and
// with the endpoint's path (RFC 9728 §3.1), the public URL's and the
// listener's, which a proxy may tell apart.
func (a *hostOAuth) metadataPaths(local string) []string {
	paths := []string{wellKnownPRM}
	for _, p := range []string{a.public.Path, local} {
		if p = strings.TrimSuffix(p, "/"); p != "" && !slices.Contains(paths, wellKnownPRM+p) {
			paths = append(paths, wellKnownPRM+p)
		}
	}
	return paths
}

// hostAuthError is a refused access token: the status, the challenge's
// parameters (for a 401 or a 403 insufficient_scope), the words for the
// host, and the cause for the log.
type hostAuthError struct {
	status int
	params string
	body   string
	err    error
}

func (e *hostAuthError) Error() string { return e.body + ": " + e.err.Error() }
func (e *hostAuthError) Unwrap() error { return e.err }

// invalidToken is RFC 6750's invalid_token, with a description free of
// quotes and backslashes.
func invalidToken(desc, body string, err error) error {
	return &hostAuthError{status: http.StatusUnauthorized, params: `error="invalid_token", error_description="` + desc + `"`,
		body: "remotemcp gateway: invalid_token: " + body, err: err}
}

// hostClaims are the claims of a verified access token that name its
// person.
type hostClaims struct {
	subject string
	email   string
	expiry  time.Time
}

// verify checks raw as an access token for this gateway: a JWT signed by
// the issuer's keys (JWKS) with an asymmetric algorithm, issued by the
// issuer, naming the public URL exactly in its audience, not expired,
// with a subject; and returns its person's verified email: the token's
// email claim, else the provider's user info for that token (same
// subject). The email must be verified (email_verified true), the rule of
// the page's sign-in.
func (a *hostOAuth) verify(ctx context.Context, raw string) (hostClaims, error) {
	if len(raw) > maxAccessToken {
		return hostClaims{}, invalidToken("the access token is too long", fmt.Sprintf("the access token is longer than %d bytes", maxAccessToken), errors.New("too long"))
	}
	v, err := a.provider(ctx)
	if err != nil {
		return hostClaims{}, &hostAuthError{status: http.StatusServiceUnavailable,
			body: "remotemcp gateway: the sign-in provider " + a.issuer + " cannot be reached to check your access token; try again", err: err}
	}
	tok, err := v.Verify(oidc.ClientContext(ctx, a.client), raw)
	if expired := (*oidc.TokenExpiredError)(nil); errors.As(err, &expired) {
		return hostClaims{}, invalidToken("the access token expired", "the access token expired at "+expired.Expiry.UTC().Format(time.RFC3339)+"; your host signs in again", err)
	}
	if err != nil {
		return hostClaims{}, invalidToken("the access token is not valid for this gateway",
			fmt.Sprintf("the access token was refused (%v); it must be a JWT signed by %s for %s", err, a.issuer, a.resource), err)
	}
	if tok.Subject == "" {
		return hostClaims{}, invalidToken("the access token names no subject", "the access token names no subject (sub)", errors.New("no sub"))
	}
	var cl struct {
		Email    string    `json:"email"`
		Verified *flexBool `json:"email_verified"`
	}
	if err := tok.Claims(&cl); err != nil {
		return hostClaims{}, invalidToken("the access token claims cannot be read", "the access token's claims cannot be read", err)
	}
	c := hostClaims{subject: tok.Subject, email: cl.Email, expiry: tok.Expiry}
	verified := cl.Verified != nil && bool(*cl.Verified)
	if cl.Email == "" {
		ui, err := a.emailOf(ctx, raw, tok)
		if err != nil {
			return hostClaims{}, err
		}
		c.email, verified = ui.email, ui.verified
	}
	if c.email == "" {
		return hostClaims{}, &hostAuthError{status: http.StatusForbidden,
			body: "remotemcp gateway: the sign-in provider did not say your email address, and the gateway knows people by email: your host must ask for the scope \"email\"", err: errors.New("no email")}
	}
	if !verified {
		return hostClaims{}, &hostAuthError{status: http.StatusForbidden,
			body: "remotemcp gateway: the sign-in provider has not verified the email address " + c.email + " (email_verified), so it cannot name you on this gateway", err: errors.New("email not verified")}
	}
	return c, nil
}

// provider returns the token verifier, finding the provider (its
// discovery document, whose issuer must be Issuer exactly) the first
// time it can be reached. The lock is not held while the provider is
// asked: while it cannot be reached, each request fails after its own
// try, none waits behind another's.
func (a *hostOAuth) provider(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	a.mu.Lock()
	v := a.verifier
	a.mu.Unlock()
	if v != nil {
		return v, nil
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, a.client), providerWait)
	defer cancel()
	p, err := oidc.NewProvider(dctx, a.issuer)
	if err != nil {
		return nil, fmt.Errorf("discover the OpenID provider %s: %w", a.issuer, err)
	}
	var extra struct {
		UserInfo string `json:"userinfo_endpoint"`
	}
	if err := p.Claims(&extra); err != nil {
		return nil, fmt.Errorf("read the OpenID provider's discovery document: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.verifier == nil {
		// The key set's requests use the client, never ctx's
		// cancellation.
		a.verifier = p.VerifierContext(oidc.ClientContext(context.Background(), a.client),
			&oidc.Config{ClientID: a.resource, SupportedSigningAlgs: signingAlgs, Now: a.now})
		a.userInfo = extra.UserInfo
	}
	return a.verifier, nil
}

// emailOf is the provider's user info for the access token raw of tok,
// remembered until the token expires.
func (a *hostOAuth) emailOf(ctx context.Context, raw string, tok *oidc.IDToken) (verifiedEmail, error) {
	key := sha256.Sum256([]byte(raw))
	now := a.now()
	a.emailsMu.Lock()
	e, ok := a.emails[key]
	a.emailsMu.Unlock()
	if ok && now.Before(e.until) {
		return e, nil
	}
	e, err := a.fetchUserInfo(ctx, raw)
	if err != nil {
		return verifiedEmail{}, err
	}
	if e.subject != tok.Subject {
		return verifiedEmail{}, invalidToken("the user info is about someone else",
			"the provider's user info for this access token names another subject", fmt.Errorf("user info subject %q, token subject %q", e.subject, tok.Subject))
	}
	e.until = tok.Expiry
	a.emailsMu.Lock()
	defer a.emailsMu.Unlock()
	if len(a.emails) >= maxEmailCache {
		for k, old := range a.emails {
			if !now.Before(old.until) {
				delete(a.emails, k)
			}
		}
		for k := range a.emails {
			if len(a.emails) < maxEmailCache {
				break
			}
			delete(a.emails, k)
		}
	}
	a.emails[key] = e
	return e, nil
}

// fetchUserInfo asks the provider's user info endpoint (OpenID Connect
// Core §5.3) about the access token raw. A refusal is invalid_token (401),
// whether the provider says 401 or 403: providers answer a revoked token
// with either, and a token without the scopes too; either way a host
// that signs in again (asking for the metadata's scopes) gets one that
// works. A 403 insufficient_scope would send only the hosts that do
// step-up authorization there.
func (a *hostOAuth) fetchUserInfo(ctx context.Context, raw string) (verifiedEmail, error) {
	unavailable := func(err error) error {
		return &hostAuthError{status: http.StatusServiceUnavailable,
			body: "remotemcp gateway: the sign-in provider's user info cannot be read to learn your email address; try again", err: err}
	}
	if a.userInfo == "" {
		return verifiedEmail{}, &hostAuthError{status: http.StatusForbidden,
			body: "remotemcp gateway: the access token does not say your email address, and the sign-in provider has no user info endpoint to ask", err: errors.New("no email claim, no userinfo_endpoint")}
	}
	rctx, cancel := context.WithTimeout(ctx, providerWait)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, a.userInfo, nil)
	if err != nil {
		return verifiedEmail{}, unavailable(err)
	}
	req.Header.Set("Authorization", "Bearer "+raw)
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return verifiedEmail{}, unavailable(fmt.Errorf("user info: %w", err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return verifiedEmail{}, invalidToken("the provider refused the access token",
			"the sign-in provider's user info refused the access token (revoked, or without the scopes "+strings.Join(a.scopes, " ")+"); your host signs in again", fmt.Errorf("user info: %s", resp.Status))
	case resp.StatusCode != http.StatusOK:
		return verifiedEmail{}, unavailable(fmt.Errorf("user info: %s", resp.Status))
	case err != nil:
		return verifiedEmail{}, unavailable(fmt.Errorf("user info: %w", err))
	}
	var ui struct {
		Subject  string    `json:"sub"`
		Email    string    `json:"email"`
		Verified *flexBool `json:"email_verified"`
	}
	if err := json.Unmarshal(body, &ui); err != nil {
		return verifiedEmail{}, unavailable(fmt.Errorf("user info: %w", err))
	}
	return verifiedEmail{email: ui.Email, subject: ui.Subject, verified: ui.Verified != nil && bool(*ui.Verified)}, nil
}

// flexBool is a JSON boolean that some providers send as a string.
type flexBool bool

func (b *flexBool) UnmarshalJSON(p []byte) error {
	switch strings.Trim(string(p), `"`) {
	case "true":
		*b = true
	case "false":
		*b = false
	default:
		return fmt.Errorf("email_verified: %s is not a boolean", p)
	}
	return nil
}

// signedIn is a request whose access token Hosts verified: its person
// and claims, for their front end (verifiedHosts).
type signedIn struct {
	user   string // the person's user id
	issuer string
	claims hostClaims
}

// signedInKey carries a request's signedIn.
type signedInKey struct{}

// verifiedHosts is a person's front end's Authenticator: it takes the
// identity Hosts verified for that person; a request that reaches it
// otherwise is refused.
type verifiedHosts struct{ user string }

func (v verifiedHosts) Authenticate(w http.ResponseWriter, r *http.Request) (frontend.Identity, bool) {
	s, ok := r.Context().Value(signedInKey{}).(signedIn)
	if !ok || s.user != v.user {
		http.Error(w, "remotemcp gateway: this request's sign-in was not checked", http.StatusInternalServerError)
		return frontend.Identity{}, false
	}
	// The subject within its issuer: a refreshed access token of the
	// same sign-in continues the session.
	return frontend.Identity{Subject: s.issuer + " " + s.claims.subject, Name: s.claims.email, Expiry: s.claims.expiry}, true
}

// personOf finds the gateway user of a verified email; a *hostAuthError
// (403) when there is none.
func (g *Gateway) personOf(ctx context.Context, email string) (string, error) {
	norm, err := store.NormalizeEmail(email)
	if err != nil {
		return "", &hostAuthError{status: http.StatusForbidden, body: fmt.Sprintf("remotemcp gateway: the sign-in provider named you %q, which is no email address", email), err: err}
	}
	_, u, err := g.Engine(ctx, norm)
	if err != nil {
		if localapi.HasCode(err, localapi.CodeNotFound) {
			return "", &hostAuthError{status: http.StatusForbidden,
				body: fmt.Sprintf("remotemcp gateway: you signed in as %s, who is not a user of this gateway; ask its admins to add you (\"remotemcp users add %s\")", norm, norm),
				err:  err}
		}
		return "", err
	}
	return u.ID, nil
}
