package oidctest

import (
	"context"

	"github.com/zitadel/oidc/v3/pkg/op"
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
