package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/oauth"
)

// newAuthCmd is "remotemcp auth": OAuth sign-in for oauth servers (SPEC §3).
func newAuthCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Sign in to OAuth servers, sign out, show what is known",
		Args:  noSubcommand,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAuthLoginCmd(a), newAuthLogoutCmd(a), newAuthStatusCmd(a))
	return cmd
}

func newAuthLoginCmd(a *app) *cobra.Command {
	var (
		noBrowser bool
		port      int
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "login ID",
		Short: "Authorize remotemcp for an OAuth server in the browser",
		Long: `Run the OAuth 2.1 authorization code flow for server ID: discover its
authorization server, register a client if none is configured, open the
authorization page in the system browser (or, with --no-browser, print its
URL alone on a line of stdout), receive the redirect on
http://127.0.0.1:PORT/mcp-oauth, exchange the code, then connect and report
the tools. Refresh tokens are stored sealed; access tokens stay in memory.`,
		Args: argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, id := cmd.Context(), args[0]
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				// The daemon serves /mcp-oauth and keeps the access token.
				return a.loginViaDaemon(ctx, dc, id, noBrowser, timeout)
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			srv, err := getServer(ctx, c.Store, id)
			if err != nil {
				c.Close()
				return err
			}
			if srv.Auth.Kind != config.AuthOAuth {
				c.Close()
				return fmt.Errorf("server %s uses %s auth, not OAuth; re-add it with \"remotemcp servers add %s URL --oauth\"", id, srv.Auth.Kind, id)
			}
			if cmd.Flags().Changed("port") && port != srv.Auth.RedirectPort {
				// Remembered, so the registered redirect URI keeps working.
				srv.Auth.RedirectPort = port
				if err := c.Store.UpdateServer(ctx, srv); err != nil {
					c.Close()
					return fmt.Errorf("save the redirect port: %w", err)
				}
			}
			p := srv.Auth.RedirectPort
			if p == 0 {
				p = config.DefaultRedirectPort
			}
			open := func(u string) error {
				// The browser leaves through no client of ours: check the
				// authorization server's origin here (R2.2).
				if err := c.Hosts.Check(ctx, u, hostperm.PurposeAuthorization, id); err != nil {
					return err
				}
				if noBrowser {
					fmt.Fprintln(a.streams.Err, "open this URL in a browser to authorize remotemcp:")
					fmt.Fprintln(a.streams.Out, u)
				} else if err := a.openBrowser(u); err != nil {
					fmt.Fprintf(a.streams.Err, "could not start a browser (%v); open this URL yourself:\n", err)
					fmt.Fprintln(a.streams.Out, u)
				} else {
					fmt.Fprintln(a.streams.Err, "opened the authorization page in your browser")
				}
				fmt.Fprintf(a.streams.Err, "waiting for the browser to return to %s …\n", oauth.RedirectURI(p))
				return nil
			}
			lctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			fmt.Fprintf(a.streams.Err, "signing in to %s (%s)…\n", id, cell(srv.URL))
			res, err := c.OAuth.Login(lctx, srv, oauth.ListenLoopbackBrowser(p, open))
			if err != nil {
				c.Close()
				if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
					return fmt.Errorf("sign-in to %s timed out after %s waiting for the browser; run \"remotemcp auth login %s\" again", id, timeout, id)
				}
				return fmt.Errorf("sign-in to %s failed: %w", id, err)
			}
			if res.NotNeeded {
				fmt.Fprintf(a.streams.Err, "%s answered without authentication; no sign-in needed\n", id)
			} else {
				how := "configured client"
				if res.Registered {
					how = "registered client"
				}
				refresh := "no refresh token (you will sign in again when the access token expires)"
				if res.RefreshToken {
					refresh = "refresh token stored sealed"
				}
				fmt.Fprintf(a.streams.Err, "signed in: issuer %s, %s, scopes [%s], %s\n",
					res.Binding.Issuer, how, strings.Join(res.Scopes, " "), refresh)
			}
			return a.connectAndReport(ctx, c, id)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&noBrowser, "no-browser", false, "print the authorization URL instead of opening a browser")
	f.IntVar(&port, "port", config.DefaultRedirectPort, "loopback port of the redirect URI http://127.0.0.1:PORT/mcp-oauth (remembered)")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the browser")
	return cmd
}

// openBrowser asks the desktop to open u. A URL carrying secrets (a login
// token, an OAuth state and PKCE challenge) must not appear on a command
// line, which every user of the machine can read in /proc: the browser is
// pointed at a 0600 file in the data directory that redirects to u.
func (a *app) openBrowser(u string) error {
	dir, err := a.dataDirPath()
	if err != nil {
		return err
	}
	page, err := writeRedirectPage(dir, u)
	if err != nil {
		return err
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", page)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", page)
	default:
		cmd = exec.Command("xdg-open", page)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap; the browser outlives us
	return nil
}

// redirectPageTTL is how long a redirect page may stay: long enough for a
// browser to start, and its secrets are short-lived or single-use anyway.
const redirectPageTTL = 10 * time.Minute

// writeRedirectPage writes a 0600 HTML page that sends the browser on to
// u, and removes the ones left from earlier runs.
func writeRedirectPage(dir, u string) (string, error) {
	pages := filepath.Join(dir, "open")
	if err := os.MkdirAll(pages, 0o700); err != nil {
		return "", err
	}
	if old, err := os.ReadDir(pages); err == nil {
		for _, e := range old {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > redirectPageTTL {
				os.Remove(filepath.Join(pages, e.Name()))
			}
		}
	}
	f, err := os.CreateTemp(pages, "open-*.html")
	if err != nil {
		return "", err
	}
	esc := html.EscapeString(u)
	_, err = fmt.Fprintf(f, "<!doctype html><meta charset=utf-8><meta name=referrer content=no-referrer>"+
		"<meta http-equiv=refresh content=\"0;url=%s\"><title>remotemcp</title><a href=\"%s\">Continue</a>\n", esc, esc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func newAuthLogoutCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "logout ID",
		Short: "Forget the server's OAuth tokens and client registration",
		Args:  argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, id := cmd.Context(), args[0]
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				// The daemon holds the access token in memory: it must
				// forget it too.
				if err := dc.OAuthLogout(ctx, id); err != nil {
					return fmt.Errorf("sign out of %s: %w", id, err)
				}
				fmt.Fprintf(a.streams.Err, "signed out of %s through the daemon: tokens and registration forgotten\n", id)
				return nil
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := getServer(ctx, c.Store, id); err != nil {
				return err
			}
			if err := c.OAuth.Logout(ctx, id); err != nil {
				return fmt.Errorf("sign out of %s: %w", id, err)
			}
			fmt.Fprintf(a.streams.Err, "signed out of %s: tokens and registration forgotten\n", id)
			return nil
		},
	}
}

func newAuthStatusCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status ID",
		Short: "Show what remotemcp knows about a server's OAuth state (no secrets)",
		Args:  argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, id := cmd.Context(), args[0]
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			srv, err := getServer(ctx, c.Store, id)
			if err != nil {
				return err
			}
			st := c.OAuth.Status(ctx, srv)
			if asJSON {
				enc := json.NewEncoder(a.streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printAuthStatus(a, srv, st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printAuthStatus(a *app, srv config.Server, st oauth.Status) {
	w := a.streams.Out
	fmt.Fprintf(w, "server:         %s (%s)\n", srv.ID, cell(srv.URL))
	if srv.Auth.Kind != config.AuthOAuth {
		fmt.Fprintf(w, "auth:           %s (not OAuth)\n", srv.Auth.Kind)
		return
	}
	if st.Binding == nil {
		fmt.Fprintf(w, "signed in:      no (run \"remotemcp auth login %s\")\n", srv.ID)
	} else {
		cur := "yes"
		if !st.BindingCurrent {
			cur = "no: the server's URL changed since; sign in again"
		}
		fmt.Fprintf(w, "issuer:         %s\nresource:       %s\nbinding current: %s\n", st.Binding.Issuer, st.Binding.Resource, cur)
	}
	if st.ClientID != "" {
		how := "configured"
		if st.Registered {
			how = "registered " + st.RegisteredAt.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "client id:      %s (%s)\n", cell(st.ClientID), how)
	}
	fmt.Fprintf(w, "refresh token:  %s\n", yesNo(st.HasRefreshToken))
	if len(st.Scopes) > 0 {
		fmt.Fprintf(w, "scopes:         %s\n", strings.Join(st.Scopes, " "))
	}
	if st.Problem != "" {
		fmt.Fprintf(w, "problem:        %s\n", st.Problem)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
