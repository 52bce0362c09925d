// Package remotemcp wires the embedded defaults — data directory, SQLite
// store with its key file, in-memory token store, HTTP client and the
// connection manager — for programs that embed remotemcp.
//
//	c, err := remotemcp.Open(ctx, remotemcp.Options{})
//	defer c.Close()
//	res, err := c.Manager.CallTool(ctx, "docs", "search", args, session.CallOptions{})
package remotemcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/store"
)

// Version is the remotemcp version reported in initialize.
const Version = "0.1.0"

// Options configure Open. The zero value uses the default data directory.
type Options struct {
	// DataDir overrides $REMOTEMCP_HOME and the user config directory.
	DataDir string
	Logger  *slog.Logger
	// HTTPClient is the base client for all outbound traffic; it must not
	// set Timeout. Nil uses a client with sane dial/TLS timeouts.
	HTTPClient *http.Client
	// OAuth overrides the OAuth provider of oauth servers. Nil: the
	// Client's own Authenticator, non-interactive (R3.13: background work
	// never starts a browser flow; the user runs "auth login").
	OAuth manager.OAuthProvider
	// Elicit answers server questions. Nil declines them, unless Cards is
	// set.
	Elicit func(ctx context.Context, info manager.ElicitInfo, req *ElicitRequest) (*ElicitResult, error)
	// Cards turns server questions into persistent elicitation cards
	// (Client.Cards) a person answers (R6.1). Opening the cards closes
	// every card left pending in the data directory as interrupted
	// (R6.2), so only the one process that owns the conversation with
	// the person (the daemon, or an embedding agent) should set it.
	Cards bool
	// ProtocolVersion overrides the MCP revision (conformance testing of
	// the draft only); empty means the pinned 2025-11-25.
	ProtocolVersion string
	// NoStartupConnect: Start connects nothing; every server is lazy.
	NoStartupConnect bool
	// AskHost puts an origin without a grant to the person at once (see
	// hostperm.Options.Ask); nil leaves a pending approval (R2.2).
	AskHost func(ctx context.Context, refused hostperm.PermissionRequiredError) bool
	// NoStart opens the store and makes the manager without starting it
	// (no connections, no reconcile loop): for one-shot CLI commands that
	// only edit the config.
	NoStart bool
}

// Client is an opened remotemcp: the store and the running manager.
type Client struct {
	Store  *store.SQLite
	Memory *store.Memory
	// Cards holds the elicitation cards (nil unless Options.Cards).
	Cards *elicit.Cards
	// OAuth performs logins, refreshes and step-ups for oauth servers.
	OAuth *oauth.Authenticator
	// Hosts is the host permission broker every outbound request passes
	// (R2.2): HTTP is guarded by it.
	Hosts   *hostperm.Broker
	Manager *manager.Manager
	HTTP    *http.Client
	DataDir string
}

// NewHTTPClient returns the default base HTTP client: bounded dial, TLS
// and header waits, but no overall Timeout (it would cut SSE streams).
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSHandshakeTimeout = 15 * time.Second
	tr.ResponseHeaderTimeout = 0 // tool calls may legitimately take minutes
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr}
}

// Open opens the data directory and starts the manager (unless NoStart).
func Open(ctx context.Context, o Options) (*Client, error) {
	dir, err := store.DataDir(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("remotemcp: data directory: %w", err)
	}
	st, err := store.Open(ctx, dir, store.Options{Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	base := o.HTTPClient
	if base == nil {
		base = NewHTTPClient()
	}
	hosts := hostperm.New(st, hostperm.Options{Ask: o.AskHost})
	// One guard for everything: MCP endpoints, metadata, registration,
	// token requests (R2.2). A copy, so the caller's client is unchanged.
	hc := *base
	hc.Transport = hosts.Transport(base.Transport)
	c := &Client{Store: st, Memory: store.NewMemory(), HTTP: &hc, Hosts: hosts, DataDir: dir}
	c.OAuth = oauth.New(oauth.Options{Store: st, Memory: c.Memory, HTTPClient: c.HTTP, Logger: o.Logger})
	provider := o.OAuth
	if provider == nil {
		provider = OAuthProvider(c.OAuth, nil)
	}
	mo := manager.Options{
		Store: st, HTTPClient: c.HTTP, OAuth: provider, Logger: o.Logger,
		ClientName: "remotemcp", ClientVersion: Version,
		ProtocolVersion: o.ProtocolVersion, NoStartupConnect: o.NoStartupConnect,
		Elicit: o.Elicit,
	}
	if mo.Elicit == nil && o.Cards {
		cards, err := elicit.Open(ctx, st, elicit.Options{Logger: o.Logger})
		if err != nil {
			hosts.Close()
			st.Close()
			return nil, fmt.Errorf("remotemcp: elicitation cards: %w", err)
		}
		c.Cards = cards
		mo.Elicit = cards.Handle
	}
	c.Manager = manager.New(mo)
	if !o.NoStart {
		if err := c.Manager.Start(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// OAuthProvider adapts an Authenticator to the manager. interactive nil
// means background handlers: a 401 the refresh token cannot fix becomes a
// "login required" error (R3.13); a Browser makes every handler able to
// run the full flow (the conformance client, which plays the browser).
func OAuthProvider(a *oauth.Authenticator, interactive oauth.Browser) manager.OAuthProvider {
	return providerFunc(func(srv config.Server) auth.OAuthHandler { return a.Handler(srv, interactive) })
}

type providerFunc func(config.Server) auth.OAuthHandler

func (f providerFunc) Handler(srv config.Server) auth.OAuthHandler { return f(srv) }

// Close stops the manager (closing every session, which cancels calls in
// flight), then the cards and the store.
func (c *Client) Close() error {
	c.Manager.Close()
	if c.Cards != nil {
		c.Cards.Close()
	}
	c.Hosts.Close()
	return c.Store.Close()
}
