package hosttoken

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/localapi"
)

// The tokens "remotemcp hosts connect HOST --http" writes into a host's
// entry.

// HostPrefix starts the names of the tokens made for hosts: "host-cursor",
// then "host-cursor-2" … when that one exists.
const HostPrefix = "host-"

// Valid reports whether e's bearer token is a valid token of t (nil: none
// is), and its name.
func Valid(ctx context.Context, t localapi.HostTokens, e hosts.Entry) (tok, name string, ok bool) {
	if t == nil {
		return "", "", false
	}
	tok, ok = e.Bearer()
	if !ok {
		return "", "", false
	}
	info, err := t.CheckHostToken(ctx, tok)
	if err != nil {
		return "", "", false
	}
	return tok, info.Name, true
}

// CreateForHost creates the token of host id: host-ID, or host-ID-N with
// the first N from 2 whose name is free.
func CreateForHost(ctx context.Context, t localapi.HostTokens, id string) (name, tok string, err error) {
	for n := 1; n < 100; n++ {
		name = HostPrefix + id
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		nt, err := t.CreateHostToken(ctx, name)
		switch {
		case localapi.HasCode(err, localapi.CodeConflict):
			continue
		case err != nil:
			return name, "", err
		}
		return name, nt.Token, nil
	}
	return "", "", fmt.Errorf("hosts: create a token for %s: %s-2 … -99 are all taken: revoke some (\"remotemcp mcp token list\")", id, HostPrefix+id)
}

// IsForHost reports whether name is a token CreateForHost made for host
// id: only those are revoked with the entry that held them.
func IsForHost(name, id string) bool {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(HostPrefix+id) + `(-[0-9]+)?$`).MatchString(name)
}

// inText matches a remotemcp bearer token in a text.
var inText = regexp.MustCompile(frontend.TokenPrefix + `[A-Za-z0-9_-]{16,}`)

// Redact hides remotemcp bearer tokens in s (a dry run's diff of a file
// that holds one).
func Redact(s string) string {
	return inText.ReplaceAllString(s, frontend.TokenPrefix+"[redacted]")
}

// DryRunToken stands for the token in a dry run's diff: a dry run
// creates none, and a real token must not be printed anyway.
const DryRunToken = "<a new token, created when you run this without --dry-run>"

// Connected is what ConnectHTTP did.
type Connected struct {
	Change hosts.Change
	// Created names the token made for the entry ("" when the entry kept
	// its own, or in a dry run).
	Created string
	// Revoked names the token of the replaced entry, made for this host
	// and revoked once the file was written ("" for none).
	Revoked string
}

// ConnectHTTP writes f's HTTP entry for the endpoint u ("hosts connect
// HOST --http URL"; u checked with hosts.CheckHTTPURL), its Authorization
// header holding a bearer token of t (nil: the data directory keeps no
// tokens yet, in a dry run); cur is f's entry now (File.Entry), nil for
// none. An entry that already names u with a token that is still valid
// keeps it, and running it again changes nothing; otherwise a token is
// created (DryRunToken in a dry run), and once the file is written the
// replaced entry's own token (host-…) is revoked. A token created for a
// write that failed is revoked again; log (nil: none) says when that
// fails.
func ConnectHTTP(ctx context.Context, t localapi.HostTokens, f hosts.File, cur *hosts.Entry, u string, dryRun bool, log *slog.Logger) (Connected, error) {
	var oldTok, oldName string
	var oldValid bool
	if cur != nil {
		oldTok, oldName, oldValid = Valid(ctx, t, *cur)
	}
	var tok string
	var out Connected
	var err error
	switch {
	case oldValid && cur.URL == u:
		tok = oldTok // unchanged entry: already connected
	case dryRun:
		tok = DryRunToken
	default:
		if out.Created, tok, err = CreateForHost(ctx, t, f.Host.ID); err != nil {
			return Connected{}, err
		}
	}
	if out.Change, err = f.Connect(hosts.NewHTTPEntry(u, tok), dryRun); err != nil {
		if out.Created != "" {
			if rerr := t.RevokeHostToken(context.WithoutCancel(ctx), out.Created); rerr != nil && log != nil {
				log.Warn("hosts: revoke the token of a failed connect", "name", out.Created, "err", rerr)
			}
		}
		return Connected{}, err
	}
	if out.Created != "" && oldValid && oldName != out.Created && IsForHost(oldName, f.Host.ID) {
		if err := t.RevokeHostToken(ctx, oldName); err == nil {
			out.Revoked = oldName
		}
	}
	return out, nil
}

// RevokeReplaced revokes, after a write that removed or replaced it, the
// token that old, an HTTP entry, held when "hosts connect --http" made it
// for host id: nothing else uses it. A token named otherwise is the
// user's own and is left alone. It returns the name of the token revoked,
// "" for none.
func RevokeReplaced(ctx context.Context, t localapi.HostTokens, id string, old hosts.Entry) string {
	if _, name, ok := Valid(ctx, t, old); ok && IsForHost(name, id) {
		if err := t.RevokeHostToken(ctx, name); err == nil {
			return name
		}
	}
	return ""
}
