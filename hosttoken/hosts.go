package hosttoken

import (
	"context"
	"fmt"
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
