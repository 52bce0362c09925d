package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/frontend/mcphttp"
	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/store"
)

// runGateway is Run for a gateway (--store postgres://…; SPEC §9 A11):
// the database (waiting while it cannot be reached), the people's
// engines, the daemon with the socket for admins, and the MCP endpoint
// for hosts, each person's host with their own token. Every person's
// engine is lazy: it opens at the first request for them.
//
// Long: the gateway's start-up in order, as Run's; the defers that undo
// each step run from this one function.
func (d Daemon) runGateway(ctx context.Context) error {
	if d.Demo {
		return errors.New("--demo adds a server to one person's list and does not go with --store (a gateway): add the bundled test server for a person with \"remotemcp --user EMAIL servers add …\"")
	}
	env := d.Env
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	signIn, err := d.Page.signIn(env)
	if err != nil {
		return err
	}
	if d.MCP.PublicURL != "" && d.ListenMCP == nil {
		return exit.Usagef("--mcp-public-url is the URL of the MCP endpoint: it goes with --mcp-http 127.0.0.1:PORT")
	}
	if d.Page.Listen != "" {
		d.Addr = d.Page.Listen
	}
	if err := daemon.CheckFree(d.Dir); err != nil {
		return err
	}
	if err := d.checkAddr(); err != nil {
		return err
	}
	where := store.RedactDSN(d.Store)
	fmt.Fprintf(d.Err, "remotemcp gateway: opening PostgreSQL %s\n", where)
	pg, err := store.OpenPostgres(ctx, d.Store, store.PostgresOptions{
		KeyDir: d.Dir, Options: store.Options{Logger: d.Log},
		OnWait: func(err error, in time.Duration) {
			fmt.Fprintf(d.Err, "remotemcp gateway: PostgreSQL cannot be reached yet (%v); trying again in %s (Ctrl-C stops)\n", err, in.Round(100*time.Millisecond))
		},
	})
	if err != nil {
		return fmt.Errorf("open the gateway's database: %w", err)
	}
	defer pg.Close()
	q := engine.Quotas{Servers: d.QuotaServers, Calls: d.QuotaCalls, Questions: d.QuotaQuestions}
	if q.Servers == 0 {
		q.Servers = gateway.DefaultQuotas.Servers
	}
	if q.Calls == 0 {
		q.Calls = gateway.DefaultQuotas.Calls
	}
	if q.Questions == 0 {
		q.Questions = gateway.DefaultQuotas.Questions
	}
	gw := gateway.New(gateway.Options{DB: pg, Engine: engine.Options{Logger: d.Log, Quotas: q}, Logger: d.Log})
	defer gw.Close()
	srv, err := daemon.New(daemon.Options{Gateway: gw, SignIn: signIn, DataDir: d.Dir, Addr: d.Addr,
		TLSCert: d.Page.TLSCert, TLSKey: d.Page.TLSKey, BehindProxy: d.Page.BehindProxy, Version: remotemcp.Version, Logger: d.Log})
	if err != nil {
		return err
	}
	mctx, mcancel := context.WithCancel(ctx)
	defer mcancel()
	var mcpLn net.Listener
	var hosts *gateway.Hosts
	if d.ListenMCP != nil {
		if mcpLn, err = d.ListenMCP(); err != nil {
			return err
		}
		if hosts, err = d.hosts(mctx, gw, mcpLn); err != nil {
			mcpLn.Close()
			return err
		}
	}
	if err := srv.Listen(ctx); err != nil {
		if mcpLn != nil {
			mcpLn.Close()
		}
		return listenError(d.Addr, err)
	}
	users, _ := gw.Users(ctx)
	fmt.Fprintf(d.Err, "remotemcp gateway for %d user(s); OAuth redirect URI %s/mcp-oauth; admins: \"remotemcp users …\" and \"remotemcp --user EMAIL …\" on this host\n", len(users), srv.PageURL())
	describeSignIn(d.Err, srv, signIn)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer mcancel()
	if mcpLn != nil {
		fmt.Fprintf(d.Err, "remotemcp gateway: MCP endpoint (Streamable HTTP) on %s; each host sends its person's token (\"remotemcp --user EMAIL mcp token create NAME\")\n", mcphttp.URL(mcpLn))
		if d.Page.Issuer != "" {
			fmt.Fprintf(d.Err, "remotemcp gateway: or signs in by OAuth with %s, for the resource %s (hosts find how at %s)\n", d.Page.Issuer, hosts.PublicURL(), hosts.MetadataURL())
		}
		wg.Go(func() {
			if err := hosts.Serve(mctx, mcpLn, mcphttp.Path); err != nil {
				fmt.Fprintf(d.Err, "remotemcp: --mcp-http: %v\n", err)
			}
		})
	}
	err = srv.Serve(ctx)
	if ctx.Err() != nil {
		fmt.Fprintln(d.Err, "remotemcp gateway: shutting down")
		return nil
	}
	return err
}

// describeSignIn says how people reach the gateway's page.
func describeSignIn(w io.Writer, srv *daemon.Server, si *daemon.SignIn) {
	switch {
	case si == nil:
		fmt.Fprintln(w, "remotemcp gateway: no settings page (no --oidc-issuer or --trusted-user-header): people use it through their hosts and admins")
	case si.OIDC != nil:
		fmt.Fprintf(w, "remotemcp gateway: settings page %s; people sign in with %s (redirect URI %s)\n", srv.PageURL(), si.OIDC.Issuer, srv.PageURL()+daemon.CallbackOIDC)
	default:
		fmt.Fprintf(w, "remotemcp gateway: settings page %s through the authenticating proxy (header %s from %v)\n", srv.PageURL(), si.TrustedUserHeader, si.TrustedProxies)
	}
}

// hosts is the gateway's MCP endpoint on ln: hosts sign in by OAuth with
// the page's OpenID issuer, when there is one, for the resource
// --mcp-public-url (default: ln's own URL).
func (d Daemon) hosts(ctx context.Context, gw *gateway.Gateway, ln net.Listener) (*gateway.Hosts, error) {
	o := gateway.HostsOptions{HTTP: frontend.HTTPOptions{SessionIdle: d.SessionIdle}, Name: "remotemcp", Version: remotemcp.Version,
		Issuer: d.Page.Issuer, PublicURL: d.MCP.PublicURL}
	if o.Issuer != "" && o.PublicURL == "" {
		o.PublicURL = mcphttp.URL(ln)
	}
	h, err := gw.Hosts(ctx, o)
	if err != nil {
		return nil, exit.Usagef("the MCP endpoint (--mcp-http, --mcp-public-url, --oidc-issuer): %v", err)
	}
	return h, nil
}
