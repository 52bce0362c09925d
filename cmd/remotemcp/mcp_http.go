package main

import (
	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/cliflag"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/serve"
)

// addSessionIdleFlag registers --session-idle on cmd into v; with names
// the flag that serves the endpoint.
func addSessionIdleFlag(cmd *cobra.Command, v *string, with string) {
	cmd.Flags().StringVar(v, cliflag.SessionIdleName, frontend.DefaultSessionIdle.String(), "with "+with+`: end a host session that has no open stream and no request for this long, giving back its subscriptions, e.g. 30m; "never" (or 0): never; "default": 10m`)
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
	if cliflag.IsLoopback(addr) {
		return nil
	}
	return exit.Usagef("--%s is refused with --http %q: only a loopback address (127.0.0.1, [::1], localhost) is allowed", serve.NoTokenFlag, addr)
}
