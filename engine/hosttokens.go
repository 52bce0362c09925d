package engine

import (
	"context"

	"github.com/remotemcp/remotemcp/hosttoken"
	"github.com/remotemcp/remotemcp/localapi"
)

// The engine keeps the bearer tokens of the MCP endpoint over HTTP in its
// store and serves them as localapi.HostTokens (issue #21 item 7).

var _ localapi.HostTokens = (*Engine)(nil)

// HostTokens lists the endpoint's bearer tokens.
func (c *Engine) HostTokens(ctx context.Context) ([]localapi.HostToken, error) {
	return hosttoken.New(c.Store).HostTokens(ctx)
}

// CreateHostToken creates the bearer token called name.
func (c *Engine) CreateHostToken(ctx context.Context, name string) (*localapi.NewHostToken, error) {
	return hosttoken.New(c.Store).CreateHostToken(ctx, name)
}

// RevokeHostToken revokes the bearer token called name.
func (c *Engine) RevokeHostToken(ctx context.Context, name string) error {
	return hosttoken.New(c.Store).RevokeHostToken(ctx, name)
}

// CheckHostToken reports which bearer token tok is.
func (c *Engine) CheckHostToken(ctx context.Context, tok string) (*localapi.HostToken, error) {
	return hosttoken.New(c.Store).CheckHostToken(ctx, tok)
}
