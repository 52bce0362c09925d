package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

// newAuthCmd is "remotemcp auth": OAuth sign-in for oauth servers.
func newAuthCmd(a *app) *cobra.Command {
	return group("auth", "Sign in to OAuth servers, sign out, show what is known", "",
		newAuthLoginCmd(a), newAuthLogoutCmd(a), newAuthStatusCmd(a))
}

func newAuthLoginCmd(a *app) *cobra.Command {
	var (
		noBrowser  bool
		reregister bool
		port       int
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "login ID",
		Short: "Authorize remotemcp for an OAuth server in the browser",
		Long: `Run the OAuth 2.1 flow for server ID: print the authorization URL on its
own line and open it in the browser (unless --no-browser), receive the
redirect on http://127.0.0.1:PORT/mcp-oauth, then connect and report the
tools. Access tokens stay in memory (the daemon's, when one runs).

The scopes asked for include any the server demanded with 403
insufficient_scope since the last sign-in. An authorization server that
forgot remotemcp's registered client (it restarted) shows an error such as
invalid_client and never comes back: the next login then registers a new
client by itself; --reregister forces that now.`,
		Args: argsExactly(1, "ID"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			id := args[0]
			s, err := e.Server(ctx, id)
			if err != nil {
				return err
			}
			if k := s.Auth.Kind; k != "oauth" && k != "auto" {
				return fmt.Errorf("server %s uses %s auth, not OAuth; switch it with \"remotemcp servers set %s --auth oauth\"", id, k, id)
			}
			if port != 0 && port != s.Auth.RedirectPort {
				// The port alone: the client id and secret, scopes and
				// client metadata URL stay (servers set ID --port P).
				if _, err := e.UpdateServer(ctx, id, localapi.UpdateServerRequest{RedirectPort: &port}); err != nil {
					return fmt.Errorf("remember the redirect port: %w", err)
				}
			}
			wctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			fmt.Fprintf(a.streams.Err, "signing in to %s (%s)…\n", id, clitext.Cell(redact.URL(s.URL)))
			flow, err := e.Authorize(wctx, id, localapi.AuthorizeOptions{Reregister: reregister})
			if err != nil {
				return err
			}
			if flow.Phase == localapi.PhaseStarting || flow.Phase == localapi.PhaseWaiting {
				if flow.AuthorizationURL != "" {
					fmt.Fprintln(a.streams.Err, "open this URL in a browser to authorize remotemcp:")
					a.browse(ctx, flow.AuthorizationURL, noBrowser)
					fmt.Fprintf(a.streams.Err, "waiting for the browser to return to %s …\n", clitext.OrDash(flow.RedirectURI))
				}
				if flow, err = e.WaitAuthorization(wctx, id); err != nil {
					if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
						var st *localapi.AuthStatus
						if list, err := e.AuthStatus(ctx, id); err == nil && len(list) == 1 {
							st = &list[0]
						}
						return render.LoginTimeout(id, timeout, st)
					}
					return err
				}
			}
			if err := render.Login(a.streams.Err, id, flow); err != nil {
				return err
			}
			return a.connectAndReport(ctx, e, id)
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&noBrowser, "no-browser", false, "only print the authorization URL; do not start a browser")
	f.IntVar(&port, "port", 0, "loopback port of the redirect URI http://127.0.0.1:PORT/mcp-oauth (remembered; default: the daemon's settings page port, else 7717 when free, else a free port)")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the browser")
	f.BoolVar(&reregister, "reregister", false, "register a new OAuth client first (when the authorization server forgot the old registration)")
	return cmd
}

func newAuthLogoutCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "logout ID",
		Short: "Forget the server's OAuth tokens and client registration, and end its sessions",
		Args:  argsExactly(1, "ID"),
		RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
			res, err := e.Logout(ctx, args[0])
			if err != nil {
				return err
			}
			return render.Logout(a.streams.Out, res)
		}),
	}
}

func newAuthStatusCmd(a *app) *cobra.Command {
	return a.jsonFlag(&cobra.Command{
		Use:   "status [ID...]",
		Short: "Show what remotemcp knows about each server's sign-in (no secrets)",
		Long: `Show every server's sign-in state, or the named ones'. --json prints an
array (serverId, kind, signedIn, hasAccessToken, hasRefreshToken, binding,
clientId, scopes …).`,
		RunE: a.do(func(ctx context.Context, e Engine, ids []string) error {
			list, err := e.AuthStatus(ctx, ids...)
			if err != nil {
				return err
			}
			return a.printOne(clitext.NonNil(list), func(w io.Writer) error {
				render.AuthStatuses(w, a.streams.Err, list, a.verbose)
				return nil
			})
		}),
	}, "print a JSON array")
}

func newGrantsCmd(a *app) *cobra.Command {
	list := a.jsonFlag(&cobra.Command{
		Use:   "list",
		Short: "List the origins remotemcp may contact",
		Long: `List the granted origins; --json prints an array (origin, grantedAt, by).
Requests waiting for a decision: "remotemcp grants pending".`,
		Args: argsExactly(0, ""),
		RunE: a.do(func(ctx context.Context, e Engine, _ []string) error {
			grants, err := e.Grants(ctx)
			if err != nil {
				return err
			}
			if p, err := e.Pending(ctx); err == nil && len(p) > 0 {
				fmt.Fprintf(a.streams.Err, "%s waiting: see \"remotemcp grants pending\"\n", clitext.Plural(len(p), "request is", "requests are"))
			}
			return printList(a, grants, render.Grants)
		}),
	}, "print a JSON array of grants")
	pending := a.jsonFlag(&cobra.Command{
		Use:   "pending",
		Short: "List refused requests waiting for your approval",
		Long: `List origins remotemcp was refused to contact; --json prints an array
(origin, purpose, serverId, firstSeenAt, lastSeenAt, count).`,
		Args: argsExactly(0, ""),
		RunE: a.do(func(ctx context.Context, e Engine, _ []string) error {
			p, err := e.Pending(ctx)
			if err != nil {
				return err
			}
			return printList(a, p, render.Pending)
		}),
	}, "print a JSON array")
	origin := func(use, short, done string, fn func(ctx context.Context, e Engine, origin string) error) *cobra.Command {
		return &cobra.Command{
			Use: use + " ORIGIN", Short: short, Args: argsExactly(1, "ORIGIN"),
			RunE: a.do(func(ctx context.Context, e Engine, args []string) error {
				if err := fn(ctx, e, args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(a.streams.Out, "%s %s\n", done, args[0])
				return err
			}),
		}
	}
	return group("grants", "Origins remotemcp may contact, and refused requests waiting for approval",
		`remotemcp contacts only origins you allowed. Adding or importing a server
allows its own; an authorization server found later waits as a pending
approval until you approve it here or on the settings page.`,
		list, pending,
		origin("approve", "Allow remotemcp to contact ORIGIN (scheme://host[:port])", "granted",
			func(ctx context.Context, e Engine, o string) error { return e.Grant(ctx, o, byCLI) }),
		origin("revoke", "Stop remotemcp from contacting ORIGIN", "revoked",
			func(ctx context.Context, e Engine, o string) error { return e.Revoke(ctx, o) }),
		origin("dismiss", "Forget the refused requests to ORIGIN without allowing it", "dismissed",
			func(ctx context.Context, e Engine, o string) error { return e.DismissPending(ctx, o) }),
	)
}
