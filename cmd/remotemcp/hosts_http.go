package main

import (
	"context"
	"fmt"

	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/hosttoken"
	"github.com/remotemcp/remotemcp/internal/apiclient"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/render"
)

// hostHTTPURL checks --http's URL (hosts.CheckHTTPURL): a mistake is a
// usage error that says which URL to give.
func hostHTTPURL(raw string) (string, error) {
	u, err := hosts.CheckHTTPURL(raw)
	if err != nil {
		return "", exit.Usagef("--http %q: %s; want the URL \"remotemcp mcp --http\" prints, e.g. http://127.0.0.1:8765/mcp", raw, err)
	}
	return u, nil
}

// runHostsConnectHTTP is "hosts connect HOST --http URL": an HTTP entry
// whose Authorization header holds a bearer token of this data directory
// (hosttoken.ConnectHTTP), and its report.
func (a *app) runHostsConnectHTTP(ctx context.Context, sys hosts.System, f hosts.File, rawURL string, dryRun bool) error {
	u, err := hostHTTPURL(rawURL) // checked by runHostsConnect, with the host and --project
	if err != nil {
		return err
	}
	// Read first: a file that cannot be read leaves the data directory
	// alone.
	cur, has, err := f.Entry()
	if err != nil {
		return err
	}
	dir, err := a.hostDataDir(sys)
	if err != nil {
		return err
	}
	tokens, closeStore, err := apiclient.Tokens(ctx, a.api(), dir, dryRun, "hosts: open the data directory for the bearer token")
	if err != nil {
		return err
	}
	defer closeStore()
	var old *hosts.Entry
	if has {
		old = &cur
	}
	res, err := hosttoken.ConnectHTTP(ctx, tokens, f, old, u, dryRun, a.log)
	if err != nil {
		return err
	}
	if err := render.HostChange(a.streams.Out, a.streams.Err, sys, f, res.Change, true, dryRun); err != nil {
		return err
	}
	// The token lives in this data directory: the endpoint must use it.
	rm := "remotemcp"
	if arg := hosts.DataDirArg(sys, dir); arg != "" {
		rm += " --data-dir " + clitext.ShellQuote(arg)
	}
	render.HostToken(a.streams.Err, f.Host, res, dryRun, rm, u)
	return nil
}

// revokeHostToken revokes, after a write that removed or replaced it, the
// token an HTTP entry held when "hosts connect --http" made it for this
// host (hosttoken.RevokeReplaced).
func (a *app) revokeHostToken(ctx context.Context, sys hosts.System, h hosts.Host, old hosts.Entry) {
	if _, ok := old.Bearer(); !ok {
		return
	}
	dir, err := a.hostDataDir(sys)
	if err != nil {
		return
	}
	tokens, closeStore, err := apiclient.Tokens(ctx, a.api(), dir, true, "hosts: open the data directory for the bearer token")
	if err != nil || tokens == nil {
		return
	}
	defer closeStore()
	if name := hosttoken.RevokeReplaced(ctx, tokens, h.ID, old); name != "" {
		fmt.Fprintf(a.streams.Err, "revoked the token %q of the entry it removed\n", name)
	}
}
