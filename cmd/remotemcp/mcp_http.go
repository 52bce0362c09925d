package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/frontend/mcphttp"
	"github.com/remotemcp/remotemcp/hosttoken"
	"github.com/remotemcp/remotemcp/internal/clitext"
)

// mcpHTTPListen listens on addr, which must be a loopback HOST:PORT (or
// PORT alone, on 127.0.0.1): the endpoint is for hosts on this machine,
// and its bearer token is no reason to offer it to the network.
func mcpHTTPListen(flag, addr string) (net.Listener, error) {
	hp, err := loopbackAddr(addr)
	if err != nil {
		return nil, usageErrorf("%s %q: want 127.0.0.1:PORT, [::1]:PORT, localhost:PORT or PORT", flag, addr)
	}
	host, _, _ := net.SplitHostPort(hp)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, usageErrorf("%s %q: only a loopback address is allowed (127.0.0.1, [::1] or localhost): the endpoint must not be reachable from the network", flag, addr)
	}
	ln, err := net.Listen("tcp", hp)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w (another program has this port; choose another with %s)", flag, hp, err, flag)
	}
	return ln, nil
}

// sessionIdleFlagName is the flag of mcp --http and serve --mcp-http that
// ends idle host sessions (issue #20 item 2).
const sessionIdleFlagName = "session-idle"

// addSessionIdleFlag registers --session-idle on cmd into v; with names
// the flag that serves the endpoint.
func addSessionIdleFlag(cmd *cobra.Command, v *string, with string) {
	cmd.Flags().StringVar(v, sessionIdleFlagName, frontend.DefaultSessionIdle.String(), "with "+with+`: end a host session that has no open stream and no request for this long, giving back its subscriptions, e.g. 30m; "never" (or 0): never; "default": 10m`)
}

// sessionIdleFlag checks --session-idle and returns the front end's
// HTTPOptions.SessionIdle: negative for never, as --idle-timeout's never
// (or 0).
func sessionIdleFlag(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	switch v {
	case flagDefault:
		return frontend.DefaultSessionIdle, nil
	case flagNever:
		return -1, nil
	}
	d, err := parseFlagDuration(v)
	switch {
	case err != nil || d < 0:
		return 0, usageErrorf("--%s %q: give a duration such as 30m, never (or 0), or default (%s)", sessionIdleFlagName, clitext.Cell(v), frontend.DefaultSessionIdle)
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// serveMcpHTTP serves fe on ln until ctx ends, checking bearer tokens
// against the data directory dir, with the limits of o; it says where on
// w and closes ln.
func serveMcpHTTP(ctx context.Context, fe *frontend.Frontend, dir string, ln net.Listener, w io.Writer, log *slog.Logger, o frontend.HTTPOptions) error {
	tokens, closeTokens, err := hosttoken.Open(ctx, dir, log)
	if err != nil {
		ln.Close()
		return fmt.Errorf("mcp http: %w", err)
	}
	defer closeTokens()
	port := ln.Addr().(*net.TCPAddr).Port
	if noToken, _ := ctx.Value(noTokenKey{}).(bool); noToken {
		// Every request carries the one token here, and the suite starts
		// a session per scenario: the cap per token would be the cap in
		// all.
		if o.MaxSessionsPerToken <= 0 {
			o.MaxSessionsPerToken = frontend.DefaultMaxSessions
		}
		h, err := mcphttp.NoTokenHandler(ctx, fe, ln, o)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--%s: %w", insecureTestNoTokenFlag, err)
		}
		fmt.Fprintf(w, "remotemcp: MCP endpoint (Streamable HTTP) on %s\n", mcphttp.URL(ln))
		fmt.Fprintf(w, "remotemcp: WARNING: --%s: no bearer token is checked; for conformance tests only\n", insecureTestNoTokenFlag)
		return fe.RunHTTPWith(ctx, ln, h, o)
	}
	fmt.Fprintf(w, "remotemcp: MCP endpoint (Streamable HTTP) on %s\n", mcphttp.URL(ln))
	if list, err := tokens.List(ctx); err == nil && len(list) == 0 {
		fmt.Fprintf(w, "remotemcp: no tokens yet, so every request gets 401: run \"remotemcp hosts connect HOST --http %s\" (it writes the host's entry with a new token), or create one with \"remotemcp mcp token create NAME\"\n", mcphttp.URL(ln))
	}
	return fe.RunHTTPWith(ctx, ln, mcphttp.Handler(fe, tokens, port, o), o)
}

// insecureTestNoTokenFlag is the hidden "mcp --http" flag that serves the
// endpoint without the bearer token check, for the official conformance
// suite in server mode: it takes only --url and cannot send a token.
// It is refused without --http and on any address that is not loopback;
// the Host and Origin checks stay.
const insecureTestNoTokenFlag = "insecure-test-no-token"

// noTokenKey marks, in the command's context, that the endpoint is served
// without tokens (--insecure-test-no-token).
type noTokenKey struct{}

// addMcpHTTPTestFlag registers --insecure-test-no-token on cmd ("mcp"),
// hidden from --help. When it is set, cmd's run checks that --http names
// a loopback address and marks the context for serveMcpHTTP.
func addMcpHTTPTestFlag(cmd *cobra.Command) {
	var noToken bool
	cmd.Flags().BoolVar(&noToken, insecureTestNoTokenFlag, false, "TESTS ONLY: serve --http without checking bearer tokens (loopback only)")
	_ = cmd.Flags().MarkHidden(insecureTestNoTokenFlag)
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if noToken {
			addr, _ := c.Flags().GetString("http")
			if err := checkNoTokenAddr(addr); err != nil {
				return err
			}
			c.SetContext(context.WithValue(c.Context(), noTokenKey{}, true))
		}
		return run(c, args)
	}
}

// checkNoTokenAddr refuses --insecure-test-no-token unless --http names a
// literal loopback address (or localhost, or PORT alone).
func checkNoTokenAddr(addr string) error {
	if addr == "" {
		return usageErrorf("--%s needs --http 127.0.0.1:PORT", insecureTestNoTokenFlag)
	}
	hp, err := loopbackAddr(addr)
	if err == nil {
		host, _, _ := net.SplitHostPort(hp)
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return usageErrorf("--%s is refused with --http %q: only a loopback address (127.0.0.1, [::1], localhost) is allowed", insecureTestNoTokenFlag, addr)
}
