package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/apiclient"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

// newMcpTokenCmd is "mcp token": the bearer tokens of "mcp --http" and
// "serve --mcp-http", through the local API (the daemon's, else an engine
// of this process): a running endpoint reads them on every request.
func newMcpTokenCmd(a *app) *cobra.Command {
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a bearer token for the HTTP endpoint and print it (the last line of stdout; shown only now)",
		Long: `Create a bearer token called NAME for "remotemcp mcp --http" and
"remotemcp serve --mcp-http", and print it as the last line of standard
output. Only its SHA-256 hash is stored: it cannot be shown again. Give it
to the MCP host as the header "Authorization: Bearer TOKEN".`,
		Args: argsExactly(1, "NAME"),
		RunE: a.withTokens(func(ctx context.Context, t localapi.HostTokens, args []string) error {
			nt, err := t.CreateHostToken(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.streams.Err, "created the token %q; it is shown only now (revoke it with \"remotemcp mcp token revoke %s\"):\n", args[0], args[0])
			_, err = fmt.Fprintln(a.streams.Out, nt.Token)
			return err
		}),
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the HTTP endpoint's tokens (names and creation times)",
		Args:  argsExactly(0, ""),
		RunE: a.withTokens(func(ctx context.Context, t localapi.HostTokens, _ []string) error {
			items, err := t.HostTokens(ctx)
			if err != nil {
				return err
			}
			return printList(a, items, render.HostTokens)
		}),
	}
	a.jsonFlag(list, "print a JSON array of {name, createdAt}")
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a token: a running endpoint refuses it from the next request on",
		Args:  argsExactly(1, "NAME"),
		RunE: a.withTokens(func(ctx context.Context, t localapi.HostTokens, args []string) error {
			if err := t.RevokeHostToken(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.streams.Err, "revoked the token %q\n", args[0])
			return nil
		}),
	}
	return group("token", "Manage the bearer tokens of the HTTP endpoint (mcp --http, serve --mcp-http)",
		`The HTTP endpoint refuses every request without a bearer token of this
list (401). Tokens are stored as SHA-256 hashes in the data directory.`,
		create, list, revoke)
}

// withTokens wraps a token command body: it reaches the tokens of the
// data directory and lets go of them when the body returns.
func (a *app) withTokens(fn func(ctx context.Context, t localapi.HostTokens, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		t, release, err := apiclient.Tokens(ctx, a.api(), a.dataDirPath(), false, "open the data directory")
		if err != nil {
			return err
		}
		defer release()
		return fn(ctx, t, args)
	}
}
