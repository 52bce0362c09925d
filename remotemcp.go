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

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/manager"
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
	// OAuth provides handlers for oauth servers.
	OAuth manager.OAuthProvider
	// Elicit answers server questions. Nil: they become persistent
	// elicitation cards (Client.Cards) a person answers (R6.1).
	Elicit func(ctx context.Context, info manager.ElicitInfo, req *ElicitRequest) (*ElicitResult, error)
	// ProtocolVersion overrides the MCP revision (conformance testing of
	// the draft only); empty means the pinned 2025-11-25.
	ProtocolVersion string
	// NoStartupConnect: Start connects nothing; every server is lazy.
	NoStartupConnect bool
	// NoStart opens the store and makes the manager without starting it
	// (no connections, no reconcile loop): for one-shot CLI commands that
	// only edit the config.
	NoStart bool
}

// Client is an opened remotemcp: the store and the running manager.
type Client struct {
	Store  *store.SQLite
	Memory *store.Memory
	// Cards holds the elicitation cards (nil when Options.Elicit is set).
	Cards   *elicit.Cards
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
	hc := o.HTTPClient
	if hc == nil {
		hc = NewHTTPClient()
	}
	c := &Client{Store: st, Memory: store.NewMemory(), HTTP: hc, DataDir: dir}
	mo := manager.Options{
		Store: st, HTTPClient: hc, OAuth: o.OAuth, Logger: o.Logger,
		ClientName: "remotemcp", ClientVersion: Version,
		ProtocolVersion: o.ProtocolVersion, NoStartupConnect: o.NoStartupConnect,
		Elicit: o.Elicit,
	}
	if mo.Elicit == nil {
		cards, err := elicit.Open(ctx, st, elicit.Options{Logger: o.Logger})
		if err != nil {
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

// Close stops the manager (closing every session, which cancels calls in
// flight), then the cards and the store.
func (c *Client) Close() error {
	c.Manager.Close()
	if c.Cards != nil {
		c.Cards.Close()
	}
	return c.Store.Close()
}
