package daemon

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// SignIn says how people sign in to a gateway's settings page (SPEC §9
// A11, issue #22): with OpenID Connect (OIDC), or through an
// authenticating proxy in front of the page (TrustedUserHeader). Exactly
// one of the two is set.
//
// Who may sign in: the people an admin added ("remotemcp users add
// EMAIL"), and the Admins, who are added at their first sign-in. Anyone
// else the provider or proxy vouches for is refused: the provider decides
// who someone is, the gateway who may use it, so a provider that lets the
// whole world sign in (a public Google or Microsoft client) opens no
// gateway to strangers.
type SignIn struct {
	// OIDC signs people in with an OpenID provider: authorization code
	// with PKCE, state and nonce; the page's redirect URI is
	// <PublicURL>/oidc/callback.
	OIDC *OIDC
	// TrustedUserHeader names the request header in which an
	// authenticating proxy sends the email of the person it signed in.
	// The header counts only on connections from TrustedProxies; every
	// other request for the page is refused (403), so nobody can name
	// themselves by sending the header past the proxy.
	TrustedUserHeader string
	TrustedProxies    []netip.Prefix
	// Admins are the emails of the people who may sign in without being
	// added first (--admin).
	Admins []string
	// PublicURL is the page's URL as people's browsers reach it, such as
	// https://mcp.example.com when a proxy on this host forwards to the
	// page's loopback port; "" means the page's own http://127.0.0.1:PORT.
	// Host and Origin checks accept its host and origin; an https URL
	// makes the page's cookies Secure.
	PublicURL string
}

// OIDC is the page's OpenID Connect client.
type OIDC struct {
	// Issuer is the provider's issuer URL (its discovery document is
	// Issuer + "/.well-known/openid-configuration").
	Issuer string
	// ClientID and ClientSecret are the gateway's client at the
	// provider, registered with the redirect URI <PublicURL>/oidc/callback.
	ClientID, ClientSecret string
	// HTTPClient talks to the provider; nil means one with a timeout.
	HTTPClient *http.Client
}

const (
	// signInTTL is how long a sign-in started on the page may take.
	signInTTL = 10 * time.Minute
	// maxPendingSignIns bounds the sign-ins started and not finished.
	maxPendingSignIns = 1024
	// maxGatewaySessions bounds a gateway page's live sessions.
	maxGatewaySessions = 10000
	// CallbackOIDC is the page's redirect URI path at the OpenID provider.
	CallbackOIDC = "/oidc/callback"
	// loginOIDC starts a sign-in.
	loginOIDC = "/oidc/login"
	// providerTimeout bounds one request to the OpenID provider.
	providerTimeout = 30 * time.Second
)

// signIn is Options.SignIn at work.
type signIn struct {
	o       SignIn
	public  *url.URL // PublicURL, parsed; nil: the listener's
	admins  map[string]bool
	proxies []netip.Prefix
	oidc    *oidcClient
}

// newSignIn checks o.
func newSignIn(o SignIn) (*signIn, error) {
	if (o.OIDC == nil) == (o.TrustedUserHeader == "") {
		return nil, errors.New("daemon: sign-in needs exactly one of OpenID Connect (--oidc-issuer) and a trusted proxy's header (--trusted-user-header)")
	}
	si := &signIn{o: o, admins: map[string]bool{}}
	for _, a := range o.Admins {
		e := normalEmail(a)
		if !strings.Contains(e, "@") {
			return nil, fmt.Errorf("daemon: admin %q is not an email address", a)
		}
		si.admins[e] = true
	}
	if o.PublicURL != "" {
		u, err := parsePublicURL(o.PublicURL)
		if err != nil {
			return nil, err
		}
		si.public = u
	}
	if o.TrustedUserHeader != "" {
		if len(o.TrustedProxies) == 0 {
			return nil, errors.New("daemon: --trusted-user-header needs --trusted-proxy CIDR (the proxy's addresses): the header counts only from there")
		}
		for _, p := range o.TrustedProxies {
			si.proxies = append(si.proxies, p.Masked())
		}
	}
	if o.OIDC != nil {
		c, err := newOIDCClient(*o.OIDC)
		if err != nil {
			return nil, err
		}
		si.oidc = c
	}
	return si, nil
}

// parsePublicURL checks a public URL: http(s), a host, no path, query or
// fragment; a default port is dropped (browsers send Host without it).
func parsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	if err != nil {
		return nil, fmt.Errorf("daemon: public URL %q: %w", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("daemon: public URL %q: want http(s)://HOST[:PORT] with nothing after it", s)
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "https" && p == "443") || (u.Scheme == "http" && p == "80") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return &url.URL{Scheme: u.Scheme, Host: host}, nil
}

// normalEmail is an email as a gateway looks people up: trimmed, lower
// case.
func normalEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

// fromProxy reports whether r came over a connection from a trusted
// proxy.
func (si *signIn) fromProxy(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, p := range si.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// oidcClient is the page's OpenID Connect client: the provider's
// configuration, found once (and again after a failure), and the
// sign-ins under way.
type oidcClient struct {
	o      OIDC
	client *http.Client

	mu      sync.Mutex
	prov    *oidc.Provider
	pending map[[32]byte]pendingSignIn // by the hash of the state
	now     func() time.Time
}

// pendingSignIn is a sign-in sent to the provider: the PKCE verifier and
// the nonce its answer must match.
type pendingSignIn struct {
	verifier, nonce string
	exp             time.Time
}

func (p pendingSignIn) expiry() time.Time { return p.exp }

func newOIDCClient(o OIDC) (*oidcClient, error) {
	u, err := url.Parse(o.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("daemon: OpenID issuer %q: want an http(s) URL", o.Issuer)
	}
	if o.ClientID == "" {
		return nil, errors.New("daemon: OpenID Connect needs the gateway's client id (--oidc-client-id)")
	}
	c := o.HTTPClient
	if c == nil {
		c = &http.Client{Timeout: providerTimeout}
	}
	return &oidcClient{o: o, client: c, pending: map[[32]byte]pendingSignIn{}, now: time.Now}, nil
}

// ctx carries the client go-oidc and oauth2 use to reach the provider.
func (c *oidcClient) ctx(ctx context.Context) context.Context {
	return context.WithValue(oidc.ClientContext(ctx, c.client), oauth2.HTTPClient, c.client)
}

// provider returns the provider's configuration, discovering it the first
// time: a provider down when the gateway starts is found once it is up.
func (c *oidcClient) provider(ctx context.Context) (*oidc.Provider, error) {
	c.mu.Lock()
	p := c.prov
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := oidc.NewProvider(c.ctx(ctx), c.o.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discover the OpenID provider %s: %w", c.o.Issuer, err)
	}
	c.mu.Lock()
	if c.prov == nil {
		c.prov = p
	}
	p = c.prov
	c.mu.Unlock()
	return p, nil
}

func (c *oidcClient) config(p *oidc.Provider, redirect string) *oauth2.Config {
	return &oauth2.Config{ClientID: c.o.ClientID, ClientSecret: c.o.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "email"}}
}

// start begins a sign-in: the state (which the browser keeps in a cookie
// too) and the provider's authorization URL.
func (c *oidcClient) start(ctx context.Context, redirect string) (state, authURL string, err error) {
	p, err := c.provider(ctx)
	if err != nil {
		return "", "", err
	}
	state = randomToken()
	ps := pendingSignIn{verifier: oauth2.GenerateVerifier(), nonce: rand.Text()}
	c.mu.Lock()
	now := c.now()
	ps.exp = now.Add(signInTTL)
	expireOld(c.pending, now, maxPendingSignIns-1, pendingSignIn.expiry)
	c.pending[sha256.Sum256([]byte(state))] = ps
	c.mu.Unlock()
	return state, c.config(p, redirect).AuthCodeURL(state, oidc.Nonce(ps.nonce), oauth2.S256ChallengeOption(ps.verifier)), nil
}

// take removes and returns the sign-in of state, if it is live.
func (c *oidcClient) take(state string) (pendingSignIn, bool) {
	h := sha256.Sum256([]byte(state))
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pending[h]
	delete(c.pending, h)
	return ps, ok && c.now().Before(ps.exp)
}

// signInError is a refused sign-in: the status and the words for the
// person; the cause goes to the log.
type signInError struct {
	status int
	msg    string
	err    error
}

func (e *signInError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *signInError) Unwrap() error { return e.err }

func refused(status int, msg string, err error) error {
	return &signInError{status: status, msg: msg, err: err}
}

// finish redeems the provider's code for the sign-in ps and returns the
// email of the person it signed in: the ID token must verify (the
// provider's signature, issuer, audience = our client id, expiry) and
// carry the sign-in's nonce, and the email must be verified by the
// provider (from the ID token, else from its user info for the same
// subject).
func (c *oidcClient) finish(ctx context.Context, redirect, code string, ps pendingSignIn) (string, error) {
	p, err := c.provider(ctx)
	if err != nil {
		return "", refused(http.StatusBadGateway, "The sign-in provider cannot be reached", err)
	}
	ctx = c.ctx(ctx)
	tok, err := c.config(p, redirect).Exchange(ctx, code, oauth2.VerifierOption(ps.verifier))
	if err != nil {
		status := http.StatusBadGateway
		if re := (*oauth2.RetrieveError)(nil); errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			status = http.StatusBadRequest
		}
		return "", refused(status, "The sign-in provider did not accept this sign-in's code (a code works once, for the sign-in that asked for it)", fmt.Errorf("exchange the code: %w", err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", refused(http.StatusBadGateway, "The sign-in provider sent no ID token", errors.New("no id_token in the token response"))
	}
	idt, err := p.VerifierContext(ctx, &oidc.Config{ClientID: c.o.ClientID}).Verify(ctx, raw)
	if err != nil {
		return "", refused(http.StatusBadRequest, "The sign-in provider's ID token did not check out", fmt.Errorf("verify the ID token: %w", err))
	}
	if idt.Nonce != ps.nonce {
		return "", refused(http.StatusBadRequest, "The ID token belongs to another sign-in", errors.New("the ID token's nonce is not this sign-in's"))
	}
	var cl emailClaims
	if err := idt.Claims(&cl); err != nil {
		return "", refused(http.StatusBadRequest, "The ID token's claims cannot be read", err)
	}
	if cl.Email == "" {
		ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return "", refused(http.StatusBadGateway, "The sign-in provider's user info cannot be read", fmt.Errorf("user info: %w", err))
		}
		if ui.Subject != idt.Subject {
			return "", refused(http.StatusBadRequest, "The sign-in provider's user info is about someone else", fmt.Errorf("user info subject %q, ID token subject %q", ui.Subject, idt.Subject))
		}
		if err := ui.Claims(&cl); err != nil {
			return "", refused(http.StatusBadRequest, "The user info's claims cannot be read", err)
		}
	}
	if cl.Email == "" {
		return "", refused(http.StatusForbidden, "The sign-in provider did not say your email address (the gateway knows people by email: the client must be allowed the \"email\" scope)", errors.New("no email claim"))
	}
	if cl.Verified == nil || !bool(*cl.Verified) {
		return "", refused(http.StatusForbidden, "The sign-in provider has not verified the email address "+cl.Email+" (email_verified), so it cannot name you on this gateway", errors.New("email not verified"))
	}
	return normalEmail(cl.Email), nil
}

// emailClaims are the claims that name a person.
type emailClaims struct {
	Email    string    `json:"email"`
	Verified *flexBool `json:"email_verified"`
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
