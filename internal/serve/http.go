package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/frontend/mcphttp"
	"github.com/remotemcp/remotemcp/hosttoken"
)

// NoTokenFlag is the hidden "mcp --http" flag that serves the endpoint
// without the bearer token check, for the official conformance suite in
// server mode: it takes only --url and cannot send a token. The CLI
// refuses it without --http and on any address that is not loopback; the
// Host and Origin checks stay.
const NoTokenFlag = "insecure-test-no-token"

// HTTP is the MCP endpoint for hosts: Frontend over Streamable HTTP,
// every request checked for a bearer token of the data directory Dir.
type HTTP struct {
	Frontend *frontend.Frontend
	Dir      string
	Log      *slog.Logger
	// Err takes where the endpoint is and what it lacks.
	Err     io.Writer
	Options frontend.HTTPOptions
	// NoToken checks no token (NoTokenFlag).
	NoToken bool
}

// Serve serves h on ln until ctx ends, and closes ln.
func (h HTTP) Serve(ctx context.Context, ln net.Listener) error {
	tokens, closeTokens, err := hosttoken.Open(ctx, h.Dir, h.Log)
	if err != nil {
		ln.Close()
		return fmt.Errorf("mcp http: %w", err)
	}
	defer closeTokens()
	fe, o, w := h.Frontend, h.Options, h.Err
	port := ln.Addr().(*net.TCPAddr).Port
	if h.NoToken {
		// Every request carries the one token here, and the suite starts
		// a session per scenario: the cap per token would be the cap in
		// all.
		if o.MaxSessionsPerToken <= 0 {
			o.MaxSessionsPerToken = frontend.DefaultMaxSessions
		}
		nh, err := mcphttp.NoTokenHandler(ctx, fe, ln, o)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--%s: %w", NoTokenFlag, err)
		}
		fmt.Fprintf(w, "remotemcp: MCP endpoint (Streamable HTTP) on %s\n", mcphttp.URL(ln))
		fmt.Fprintf(w, "remotemcp: WARNING: --%s: no bearer token is checked; for conformance tests only\n", NoTokenFlag)
		return fe.RunHTTPWith(ctx, ln, nh, o)
	}
	fmt.Fprintf(w, "remotemcp: MCP endpoint (Streamable HTTP) on %s\n", mcphttp.URL(ln))
	if list, err := tokens.List(ctx); err == nil && len(list) == 0 {
		fmt.Fprintf(w, "remotemcp: no tokens yet, so every request gets 401: run \"remotemcp hosts connect HOST --http %s\" (it writes the host's entry with a new token), or create one with \"remotemcp mcp token create NAME\"\n", mcphttp.URL(ln))
	}
	return fe.RunHTTPWith(ctx, ln, mcphttp.Handler(fe, tokens, port, o), o)
}
