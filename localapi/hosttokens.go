package localapi

import (
	"context"
	"net/http"
	"time"
)

// HostToken is a bearer token of the MCP endpoint served over HTTP
// ("remotemcp mcp --http", "serve --mcp-http") as it is listed: its name
// and creation time, never the token or its hash.
type HostToken struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// NewHostToken is a token just created: the one time Token is shown.
type NewHostToken struct {
	HostToken
	Token string `json:"token"`
}

// HostTokenRequest names a token (create, revoke) or carries one to check.
type HostTokenRequest struct {
	Name  string `json:"name,omitempty"`
	Token string `json:"token,omitempty"`
}

// HostTokens manage the endpoint's bearer tokens. The engine implements it
// beside Engine; [Client] implements it over the API. It is an interface
// of its own so that engines that keep no tokens (test fakes) need not.
type HostTokens interface {
	// HostTokens lists the tokens by name.
	HostTokens(ctx context.Context) ([]HostToken, error)
	// CreateHostToken creates a token called name: CodeConflict when
	// that name is taken, CodeBadRequest for a name that is not allowed.
	CreateHostToken(ctx context.Context, name string) (*NewHostToken, error)
	// RevokeHostToken removes the token called name (CodeNotFound when
	// there is none); a running endpoint refuses it from its next request.
	RevokeHostToken(ctx context.Context, name string) error
	// CheckHostToken returns the token tok is, CodeNotFound when it is
	// not a valid token.
	CheckHostToken(ctx context.Context, tok string) (*HostToken, error)
}

// HostTokens lists the endpoint's bearer tokens.
func (c *Client) HostTokens(ctx context.Context) ([]HostToken, error) {
	return list[HostToken](ctx, c, "/api/host-tokens", nil)
}

// CreateHostToken creates the bearer token called name.
func (c *Client) CreateHostToken(ctx context.Context, name string) (*NewHostToken, error) {
	var out NewHostToken
	if err := c.do(ctx, http.MethodPost, "/api/host-tokens", nil, HostTokenRequest{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RevokeHostToken revokes the bearer token called name.
func (c *Client) RevokeHostToken(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPost, "/api/host-tokens/revoke", nil, HostTokenRequest{Name: name}, nil)
}

// CheckHostToken reports which token tok is.
func (c *Client) CheckHostToken(ctx context.Context, tok string) (*HostToken, error) {
	var out HostToken
	if err := c.do(ctx, http.MethodPost, "/api/host-tokens/check", nil, HostTokenRequest{Token: tok}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
