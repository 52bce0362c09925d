package oidctest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
)

// JWTClient is a client whose access tokens are JWTs signed with the
// provider's keys (the example's clients get opaque ones). Their audience
// is the client id, the example's rule for every token, so a client named
// by a protected resource's URL gets access tokens for that resource.
type JWTClient struct {
	ID, Secret   string
	RedirectURIs []string
	// EmailClaims puts the person's email and email_verified in the
	// access tokens, as some providers do (Keycloak); without it a
	// resource learns them from the user info endpoint, for a token with
	// the scopes openid and email.
	EmailClaims bool
}

// AddJWTClient registers c as AddClient does (a confidential web client,
// client_secret_basic, code with PKCE), with JWT access tokens.
func (p *Provider) AddJWTClient(c JWTClient) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.clients[c.ID] = &client{secret: c.Secret, redirect: append([]string(nil), c.RedirectURIs...), jwt: true, emailClaims: c.EmailClaims}
}

// jwtClient is a client of the example whose access tokens are JWTs.
type jwtClient struct{ op.Client }

// AccessTokenType is JWT (op.Client).
func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

// GetPrivateClaimsFromScopes adds the person's email claims to the JWT
// access tokens of a client registered with EmailClaims (op.Storage);
// the example's own claims stay.
func (s *clientStore) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	c, ok := s.clients[clientID]
	s.mu.Unlock()
	if !ok || !c.emailClaims {
		return claims, nil
	}
	u := s.users.GetUserByID(userID)
	if u == nil {
		return claims, nil
	}
	if claims == nil {
		claims = map[string]any{}
	}
	claims["email"] = u.Email
	claims["email_verified"] = u.EmailVerified
	return claims, nil
}

// AccessToken signs u in for the client id as a host does (authorization
// code with PKCE, through the login form, the redirect URI answered by
// nobody) and returns the access token of the code's exchange. The client
// is confidential (secret); redirect must be registered.
func (p *Provider) AccessToken(ctx context.Context, id, secret, redirect string, u User, scopes ...string) (string, error) {
	prov, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		return "", fmt.Errorf("oidctest: discover the provider: %w", err)
	}
	conf := oauth2.Config{ClientID: id, ClientSecret: secret, Endpoint: prov.Endpoint(), RedirectURL: redirect, Scopes: scopes}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return "", err
	}
	verifier := oauth2.GenerateVerifier()
	back, err := p.SignIn(&http.Client{Jar: jar}, conf.AuthCodeURL("oidctest", oauth2.S256ChallengeOption(verifier)), u.Username, u.Password)
	if err != nil {
		return "", err
	}
	if e := back.Query().Get("error"); e != "" {
		return "", fmt.Errorf("oidctest: the provider answered %s: %s", e, back.Query().Get("error_description"))
	}
	tok, err := conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return "", fmt.Errorf("oidctest: exchange the code: %w", err)
	}
	return tok.AccessToken, nil
}
