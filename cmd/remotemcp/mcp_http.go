package main

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/serve"
)

// mcpHTTPListen listens on addr, which must be a loopback HOST:PORT (or
// PORT alone, on 127.0.0.1): the endpoint is for hosts on this machine,
// and its bearer token is no reason to offer it to the network.
func mcpHTTPListen(flag, addr string) (net.Listener, error) {
	hp, err := loopbackAddr(addr)
	if err != nil {
		return nil, exit.Usagef("%s %q: want 127.0.0.1:PORT, [::1]:PORT, localhost:PORT or PORT", flag, addr)
	}
	host, _, _ := net.SplitHostPort(hp)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, exit.Usagef("%s %q: only a loopback address is allowed (127.0.0.1, [::1] or localhost): the endpoint must not be reachable from the network", flag, addr)
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
		return 0, exit.Usagef("--%s %q: give a duration such as 30m, never (or 0), or default (%s)", sessionIdleFlagName, clitext.Cell(v), frontend.DefaultSessionIdle)
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// addMcpHTTPTestFlag registers --insecure-test-no-token (serve.NoTokenFlag)
// on cmd ("mcp") into noToken, hidden from --help. When it is set, cmd's
// run first checks that --http names a loopback address.
func addMcpHTTPTestFlag(cmd *cobra.Command, noToken *bool) {
	cmd.Flags().BoolVar(noToken, serve.NoTokenFlag, false, "TESTS ONLY: serve --http without checking bearer tokens (loopback only)")
	_ = cmd.Flags().MarkHidden(serve.NoTokenFlag)
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if *noToken {
			addr, _ := c.Flags().GetString("http")
			if err := checkNoTokenAddr(addr); err != nil {
				return err
			}
		}
		return run(c, args)
	}
}

// checkNoTokenAddr refuses --insecure-test-no-token unless --http names a
// literal loopback address (or localhost, or PORT alone).
func checkNoTokenAddr(addr string) error {
	if addr == "" {
		return exit.Usagef("--%s needs --http 127.0.0.1:PORT", serve.NoTokenFlag)
	}
	hp, err := loopbackAddr(addr)
	if err == nil {
		host, _, _ := net.SplitHostPort(hp)
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return exit.Usagef("--%s is refused with --http %q: only a loopback address (127.0.0.1, [::1], localhost) is allowed", serve.NoTokenFlag, addr)
}
