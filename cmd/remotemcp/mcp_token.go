package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/store"
)

// newMcpTokenCmd is "mcp token": the bearer tokens of "mcp --http" and
// "serve --mcp-http". They live in the store directly (no daemon needed):
// a running endpoint reads them on every request.
func newMcpTokenCmd(a *app) *cobra.Command {
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a bearer token for the HTTP endpoint and print it (the last line of stdout; shown only now)",
		Long: `Create a bearer token called NAME for "remotemcp mcp --http" and
"remotemcp serve --mcp-http", and print it as the last line of standard
output. Only its SHA-256 hash is stored: it cannot be shown again. Give it
to the MCP host as the header "Authorization: Bearer TOKEN".`,
		Args: argsExactly(1, "NAME"),
		RunE: a.withTokens(func(ctx context.Context, t *frontend.Tokens, args []string) error {
			tok, err := t.Create(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.streams.Err, "created the token %q; it is shown only now (revoke it with \"remotemcp mcp token revoke %s\"):\n", args[0], args[0])
			_, err = fmt.Fprintln(a.streams.Out, tok)
			return err
		}),
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the HTTP endpoint's tokens (names and creation times)",
		Args:  argsExactly(0, ""),
		RunE: a.withTokens(func(ctx context.Context, t *frontend.Tokens, _ []string) error {
			items, err := t.List(ctx)
			if err != nil {
				return err
			}
			return printList(a, items, "no tokens: create one with \"remotemcp mcp token create NAME\"", "NAME\tCREATED",
				func(i frontend.TokenInfo) string {
					return cell(i.Name) + "\t" + i.Created.Local().Format(time.DateTime)
				})
		}),
	}
	a.jsonFlag(list, "print a JSON array of {name, createdAt}")
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a token: a running endpoint refuses it from the next request on",
		Args:  argsExactly(1, "NAME"),
		RunE: a.withTokens(func(ctx context.Context, t *frontend.Tokens, args []string) error {
			if err := t.Revoke(ctx, args[0]); err != nil {
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

// withTokens wraps a token command body: it opens the store of the data
// directory and closes it when the body returns.
func (a *app) withTokens(fn func(ctx context.Context, t *frontend.Tokens, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		st, err := store.Open(ctx, a.dataDirPath(), store.Options{Logger: a.log})
		if err != nil {
			return fmt.Errorf("open the data directory: %w", err)
		}
		defer st.Close()
		return fn(ctx, frontend.NewTokens(st), args)
	}
}
