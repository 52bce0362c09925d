package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/hosttoken"
	"github.com/remotemcp/remotemcp/internal/clitext"
)

// dryRunToken stands for the token in a dry run's diff: a dry run creates
// none, and a real token must not be printed anyway.
const dryRunToken = "<a new token, created when you run this without --dry-run>"

// hostHTTPURL checks --http's URL: the endpoint of "remotemcp mcp --http"
// on this machine, so plain http on a loopback address, with a port, at
// the path /mcp, and nothing else (a token sent anywhere else would leak).
func hostHTTPURL(raw string) (string, error) {
	bad := func(why string) error {
		return usageErrorf("--http %q: %s; want the URL \"remotemcp mcp --http\" prints, e.g. http://127.0.0.1:8765/mcp", raw, why)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "" || u.Host == "":
		return "", bad("not an absolute http URL")
	case u.Scheme != "http":
		return "", bad("the scheme must be http (the endpoint is plain HTTP on loopback)")
	case u.User != nil:
		return "", bad("a URL with a user name or password is refused")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", bad("a query or fragment is refused")
	}
	host, port := u.Hostname(), u.Port()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", bad("only a loopback address (127.0.0.1, [::1] or localhost) is allowed: the endpoint listens on nothing else")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", bad("give the port")
	}
	if u.EscapedPath() != "/mcp" {
		return "", bad("the path must be /mcp")
	}
	return u.String(), nil
}

// runHostsConnectHTTP is "hosts connect HOST --http URL": an HTTP entry
// whose Authorization header holds a bearer token of this data directory.
// An entry that already names URL with a token that is still valid keeps
// it (running it again changes nothing); otherwise a token is created and
// the replaced entry's own token (host-…), if any, is revoked once the
// file is written. A dry run creates no token and shows a placeholder.
func (a *app) runHostsConnectHTTP(ctx context.Context, sys hosts.System, f hosts.File, rawURL string, dryRun bool) error {
	h := f.Host
	u, err := hostHTTPURL(rawURL) // checked by runHostsConnect, with the host and --project
	if err != nil {
		return err
	}
	cur, has, err := f.Entry()
	if err != nil {
		return err
	}
	dir, err := a.hostDataDir(sys)
	if err != nil {
		return err
	}
	tokens, closeStore, err := a.hostTokenAPI(ctx, dir, dryRun, "hosts: open the data directory for the bearer token")
	if err != nil {
		return err
	}
	defer closeStore()
	oldTok, oldName, oldValid := hosttoken.Valid(ctx, tokens, cur)
	var tok, created string
	switch {
	case has && oldValid && cur.URL == u:
		tok = oldTok // unchanged entry: already connected
	case dryRun:
		tok = dryRunToken
	default:
		if created, tok, err = hosttoken.CreateForHost(ctx, tokens, h.ID); err != nil {
			return err
		}
	}
	c, err := f.Connect(hosts.NewHTTPEntry(u, tok), dryRun)
	if err != nil {
		if created != "" {
			if rerr := tokens.RevokeHostToken(context.WithoutCancel(ctx), created); rerr != nil {
				a.log.Warn("hosts: revoke the token of a failed connect", "name", created, "err", rerr)
			}
		}
		return err
	}
	if err := a.printHostChange(sys, f, c, true, dryRun); err != nil {
		return err
	}
	errw := a.streams.Err
	switch {
	case dryRun && c.Changed:
		fmt.Fprintln(errw, "dry run: no token was created; the diff shows a placeholder where it would be")
	case created != "":
		fmt.Fprintf(errw, "created the token %q for it, written only into that file (the file is readable by you alone; \"remotemcp mcp token revoke %s\" revokes it)\n", created, created)
		if oldValid && oldName != created && hosttoken.IsForHost(oldName, h.ID) {
			if err := tokens.RevokeHostToken(ctx, oldName); err == nil {
				fmt.Fprintf(errw, "revoked the token %q of the entry it replaced\n", oldName)
			}
		}
	}
	if c.Changed {
		// The token lives in this data directory: the endpoint must use it.
		rm := "remotemcp"
		if arg := hosts.DataDirArg(sys, dir); arg != "" {
			rm += " --data-dir " + clitext.ShellQuote(arg)
		}
		fmt.Fprintf(errw, "the endpoint must be running for %s to connect: \"%s mcp --http %s\" (or \"%s serve --mcp-http %s\")\n", h.Name, rm, hostPortOf(u), rm, hostPortOf(u))
	}
	return nil
}

// hostPortOf is the HOST:PORT of a checked URL.
func hostPortOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}

// revokeHostToken revokes, after a write that removed or replaced it, the
// token an HTTP entry held when "hosts connect --http" made it for this
// host: nothing else uses it. A token named otherwise is the user's own
// and is left alone.
func (a *app) revokeHostToken(ctx context.Context, sys hosts.System, h hosts.Host, old hosts.Entry) {
	if _, ok := old.Bearer(); !ok {
		return
	}
	dir, err := a.hostDataDir(sys)
	if err != nil {
		return
	}
	tokens, closeStore, err := a.hostTokenAPI(ctx, dir, true, "hosts: open the data directory for the bearer token")
	if err != nil || tokens == nil {
		return
	}
	defer closeStore()
	if _, name, ok := hosttoken.Valid(ctx, tokens, old); ok && hosttoken.IsForHost(name, h.ID) {
		if err := tokens.RevokeHostToken(ctx, name); err == nil {
			fmt.Fprintf(a.streams.Err, "revoked the token %q of the entry it removed\n", name)
		}
	}
}
