package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// Issue #19 item 10: the text output of status, servers list, servers
// show and connect gives a server's reason as remotemcp's words and the
// innermost cause; the library's chain ("calling …: sending …: Post …:
// dial tcp …") only with --verbose. --json keeps the whole message. A
// server on a closed loopback port and one that needs sign-in (the test
// authorization server), without a daemon and through one.
func TestReasonWordsBeforeTheChain(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	fx := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	c := newCLI(t)
	down := deadURL(t)
	c.ok("servers", "add", "down", down, "--lazy")
	c.ok("servers", "add", "docs", fx.URL(), "--oauth", "--lazy")

	// want is what a server's reason says without --verbose; chain is a
	// part of the library's chain, shown only with --verbose.
	servers := []struct{ id, want, chain string }{
		{"down", "network: cannot reach " + down + ": connection refused", "dial tcp"},
		{"docs", "auth, authorization: needs authorization: this server has not been signed in to yet", `calling "initialize"`},
	}
	// line returns the line of out that names server id.
	line := func(out, id string) string {
		for l := range strings.SplitSeq(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && (f[0] == id || len(f) > 1 && f[0] == "id:" && f[1] == id) {
				return l
			}
		}
		return ""
	}
	check := func(what string, r result, verbose bool, text func(id string) string) {
		t.Helper()
		for _, s := range servers {
			got := text(s.id)
			if !verbose && (!strings.Contains(got, s.want) || strings.Contains(got, s.chain) || strings.Contains(got, "rejected by transport")) {
				t.Errorf("%s: %s's reason is not remotemcp's words with the cause, want %q in %q\n%s", what, s.id, s.want, got, r)
			}
			if verbose && !strings.Contains(got, s.chain) {
				t.Errorf("%s: %s's reason lacks the chain (%q) with --verbose: %q\n%s", what, s.id, s.chain, got, r)
			}
		}
		if said := strings.Contains(r.err, "--verbose"); said == verbose {
			t.Errorf("%s: says where the whole reason is %v, want %v\n%s", what, said, !verbose, r)
		}
	}
	statusJSON := func() {
		t.Helper()
		var rows []localapi.Server
		r := c.ok("status", "--json")
		if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
			t.Fatal(err)
		}
		for _, s := range rows {
			if s.Reason == nil || !strings.Contains(s.Reason.Message, map[string]string{"down": "dial tcp", "docs": `calling "initialize"`}[s.ID]) {
				t.Errorf("status --json: %s's reason is not the whole message: %+v", s.ID, s.Reason)
			}
		}
		if strings.Contains(r.err, "--verbose") {
			t.Errorf("status --json points at --verbose: %s", r)
		}
	}

	// Without a daemon: status connects, and shows the reasons.
	for _, verbose := range []bool{false, true} {
		args := []string{"status", "--timeout", "30s"}
		if verbose {
			args = append(args, "-v")
		}
		r := c.ok(args...)
		check(strings.Join(args, " "), r, verbose, func(id string) string { return line(r.out, id) })
	}
	statusJSON()
	// connect: the first line is remotemcp's words with the cause.
	for _, tc := range []struct {
		args    []string
		verbose bool
	}{
		{[]string{"connect", "docs"}, false},
		{[]string{"connect", "docs", "--verbose"}, true},
	} {
		r := c.run("", tc.args...)
		var first string
		for l := range strings.SplitSeq(r.err, "\n") {
			if strings.HasPrefix(l, "remotemcp: ") {
				first = l
				break
			}
		}
		if r.code != exitFail || !strings.Contains(first, "this server has not been signed in to yet") || strings.Contains(first, `calling "initialize"`) {
			t.Errorf("%v: the first line is not remotemcp's words with the cause: %q\n%s", tc.args, first, r)
		}
		if got := strings.Contains(r.err, "  cause: ") && strings.Contains(r.err, `calling "initialize"`); got != tc.verbose {
			t.Errorf("%v: the chain shown %v, want %v\n%s", tc.args, got, tc.verbose, r)
		}
	}

	// Through a daemon: the reasons of its connections, in status,
	// servers list and servers show.
	startServe(t, c)
	for _, id := range []string{"down", "docs"} {
		c.run("", "connect", id)
	}
	for _, verbose := range []bool{false, true} {
		for _, args := range [][]string{{"status"}, {"servers", "list"}} {
			if verbose {
				args = append([]string{"--verbose"}, args...)
			}
			r := c.ok(args...)
			check(strings.Join(args, " "), r, verbose, func(id string) string { return line(r.out, id) })
		}
		var all result
		for _, id := range []string{"down", "docs"} {
			args := []string{"servers", "show", id}
			if verbose {
				args = append(args, "-v")
			}
			r := c.ok(args...)
			all.out += r.out
			all.err += r.err
		}
		check("servers show", all, verbose, func(id string) string {
			for l := range strings.SplitSeq(all.out, "\n") {
				if strings.HasPrefix(l, "state:") && strings.Contains(l, map[string]string{"down": "network", "docs": "auth"}[id]) {
					return l
				}
			}
			return ""
		})
	}
	statusJSON()
}

// Issue #19 item 10: "serve --addr X" with X taken ends its message at
// remotemcp's words and the system's error ("bind: address already in
// use"); the chain ("listen tcp X: …") only with --verbose.
func TestServeAddrTakenWordsBeforeTheChain(t *testing.T) {
	c := newCLI(t)
	taken := holdPort(t)
	for _, verbose := range []bool{false, true} {
		args := []string{"serve", "--addr", taken}
		if verbose {
			args = append(args, "--verbose")
		}
		r := c.fail(exitFail, "another program has this port", args...)
		var first string
		for l := range strings.SplitSeq(r.err, "\n") {
			if strings.HasPrefix(l, "remotemcp: ") {
				first = l
			}
		}
		if !strings.HasSuffix(first, "any free port): bind: address already in use") || strings.Contains(first, "listen tcp") {
			t.Errorf("%v: the message is not remotemcp's words with the cause: %q\n%s", args, first, r)
		}
		wantCause := "  cause: listen tcp " + taken + ": bind: address already in use"
		if got := strings.Contains(r.err, wantCause); got != verbose {
			t.Errorf("%v: the chain shown %v, want %v\n%s", args, got, verbose, r)
		}
		if !verbose && !strings.Contains(r.err, "--verbose") {
			t.Errorf("%v: does not say where the whole cause is\n%s", args, r)
		}
	}
}
