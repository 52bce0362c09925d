// Package remotemcp lets a Go program use remote MCP servers safely: it
// opens a data directory (servers, sealed tokens, host grants, question
// cards) and runs remotemcp's engine in-process, the same engine the
// daemon and the CLI run. Every method is one of [localapi.Engine]'s;
// the daemon's HTTP API and the CLI are adapters over the same calls.
//
//	c, err := remotemcp.Open(ctx, remotemcp.Options{NoStartupConnect: true})
//	defer c.Close()
//	tools, err := c.Tools(ctx, localapi.ToolsRequest{Connect: true})
//	res, err := c.Call(ctx, localapi.CallRequest{Tool: "docs/search", Arguments: args},
//		localapi.CallHandler{Approve: askThePerson})
//
// Failures a caller can branch on are *localapi.Error values with a stable
// Code (localapi.CodeNotFound, CodeLoginRequired …).
package remotemcp

import (
	"context"
	"net/http"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/localapi"
)

// Version is the remotemcp version reported in initialize.
const Version = engine.Version

// Options configure Open; the zero value uses the default data directory
// and connects the servers marked connectOnStartup.
type Options = engine.Options

// ElicitRequest and ElicitResult are go-sdk's elicitation types, and
// ElicitInfo says which server and call asked: the types of
// Options.Elicit, re-exported so embedders need not import the SDK.
type (
	ElicitRequest = engine.ElicitRequest
	ElicitResult  = engine.ElicitResult
	ElicitInfo    = engine.ElicitInfo
)

// Client is an opened remotemcp. It implements [localapi.Engine],
// [localapi.CallbackReceiver], [localapi.PinReviewer] and
// [localapi.SecretLister]; it is safe for concurrent use.
type Client struct {
	e *engine.Engine
}

var (
	_ localapi.Engine           = (*Client)(nil)
	_ localapi.CallbackReceiver = (*Client)(nil)
	_ localapi.PinReviewer      = (*Client)(nil)
	_ localapi.SecretLister     = (*Client)(nil)
	_ localapi.HostTokens       = (*Client)(nil)
)

// Open opens the data directory and starts the engine: the servers with
// connectOnStartup connect (unless Options.NoStartupConnect), every other
// server connects when a call or a listing needs it. Close releases it.
func Open(ctx context.Context, o Options) (*Client, error) {
	e, err := engine.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return &Client{e: e}, nil
}

// NewHTTPClient returns the default base HTTP client (Options.HTTPClient):
// bounded dial, TLS and header waits, but no overall Timeout (it would
// cut SSE streams).
func NewHTTPClient() *http.Client { return engine.NewHTTPClient() }
