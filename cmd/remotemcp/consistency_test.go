package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Issue #19 item 10: every bad flag value is a usage error, exit status
// 2, whichever path parses it (pflag's durations, remotemcp's own
// words, limits, ports), and nothing is changed.
func TestBadFlagValuesExitTwo(t *testing.T) {
	c := newCLI(t)
	c.ok("servers", "add", "docs", "http://127.0.0.1:1/mcp", "--lazy")
	before := c.ok("servers", "show", "docs", "--json").out
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"--tool-timeout 0: a tool call always has a time limit", []string{"servers", "set", "docs", "--tool-timeout", "0"}},
		{"--tool-timeout never: a tool call always has a time limit", []string{"servers", "set", "docs", "--tool-timeout", "never"}},
		{`--tool-timeout "soon"`, []string{"servers", "set", "docs", "--tool-timeout", "soon"}},
		{`--tool-timeout "-5s"`, []string{"servers", "set", "docs", "--tool-timeout", "-5s"}},
		{`--tool-timeout "25h"`, []string{"servers", "set", "docs", "--tool-timeout", "25h"}},
		{`--idle-timeout "soon"`, []string{"servers", "set", "docs", "--idle-timeout", "soon"}},
		{`--idle-timeout "-1m"`, []string{"servers", "set", "docs", "--idle-timeout", "-1m"}},
		{`--idle-timeout "1000h"`, []string{"servers", "set", "docs", "--idle-timeout", "1000h"}},
		{"--limit maxMessageBytes=lots", []string{"servers", "set", "docs", "--limit", "maxMessageBytes=lots"}},
		{"--limit noSuchLimit=1", []string{"servers", "set", "docs", "--limit", "noSuchLimit=1"}},
		{"--port 70000: give a TCP port", []string{"servers", "set", "docs", "--auth", "oauth", "--port", "70000"}},
		{"--port -1: give a TCP port", []string{"servers", "add", "new", "http://127.0.0.1:1/mcp", "--oauth", "--port", "-1"}},
		{`invalid argument "soon" for "--timeout"`, []string{"call", "mcp__docs__x", "{}", "--timeout", "soon"}},
		{"--timeout must be positive", []string{"call", "mcp__docs__x", "{}", "--timeout", "-1s"}},
		{`invalid argument "soon" for "--timeout"`, []string{"status", "--timeout", "soon"}},
		{"--timeout must be positive", []string{"status", "--timeout", "0"}},
		{`invalid argument "many" for "--port"`, []string{"servers", "set", "docs", "--port", "many"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c.fail(exitUsage, tc.want, tc.args...)
		})
	}
	if after := c.ok("servers", "show", "docs", "--json").out; after != before {
		t.Errorf("a refused flag changed the server:\n%s\nwas:\n%s", after, before)
	}
}

// 0 means never in --idle-timeout, as the word never does, and "servers
// show" says never; --tool-timeout refuses both (a call always has a
// limit); "default" resets either. Durations read back as the flags
// take them ("1m30s"), never as nanoseconds.
func TestTimeoutFlagsWords(t *testing.T) {
	c := newCLI(t)
	c.ok("servers", "add", "docs", "http://127.0.0.1:1/mcp", "--lazy")
	show := func() (tool, idle string) {
		var s struct {
			ToolTimeout string `json:"toolTimeout"`
			IdleTimeout string `json:"idleTimeout"`
		}
		if err := json.Unmarshal([]byte(c.ok("servers", "show", "docs", "--json").out), &s); err != nil {
			t.Fatal(err)
		}
		return s.ToolTimeout, s.IdleTimeout
	}
	for _, tc := range []struct {
		args           []string
		tool, idle     string
		showIdleInText string
	}{
		{[]string{"--tool-timeout", "90s", "--idle-timeout", "never"}, "1m30s", "0s", "never"},
		{[]string{"--idle-timeout", "0"}, "1m30s", "0s", "never"},
		{[]string{"--idle-timeout", "30m"}, "1m30s", "30m0s", "30m0s"},
		{[]string{"--tool-timeout", "default", "--idle-timeout", "default"}, "", "10m0s", "10m0s"},
	} {
		c.ok(append([]string{"servers", "set", "docs"}, tc.args...)...)
		if tool, idle := show(); tool != tc.tool || idle != tc.idle {
			t.Errorf("after %v: toolTimeout %q idleTimeout %q, want %q %q", tc.args, tool, idle, tc.tool, tc.idle)
		}
		if out := c.ok("servers", "show", "docs").out; !strings.Contains(out, "idle timeout:  "+tc.showIdleInText+"\n") && !strings.Contains(out, "idle timeout: "+tc.showIdleInText+"\n") {
			if !strings.Contains(strings.Join(strings.Fields(out), " "), "idle timeout: "+tc.showIdleInText) {
				t.Errorf("after %v: servers show lacks idle timeout %s:\n%s", tc.args, tc.showIdleInText, out)
			}
		}
	}
}

// "version --json", "connect --json" and "status [ID] --json": connect
// prints the fields status prints for the server (and its counts), and
// status with and without ids prints the same fields.
func TestJSONOfConnectStatusVersion(t *testing.T) {
	var v map[string]any
	c := newCLI(t)
	if err := json.Unmarshal([]byte(c.ok("version", "--json").out), &v); err != nil || v["version"] != c.ok("version").out[len("remotemcp "):len(c.ok("version").out)-1] {
		t.Fatalf("version --json: %v %v", v, err)
	}
	srv := testkit.StartFixture(t, fixture.Options{})
	c.ok("servers", "add", "fx", srv.URL(), "--lazy")
	var conn map[string]any
	if err := json.Unmarshal([]byte(c.ok("connect", "fx", "--json").out), &conn); err != nil {
		t.Fatal(err)
	}
	if conn["state"] != "ready" || conn["toolCount"] != float64(7) || conn["promptCount"] == nil || conn["resourceCount"] == nil || conn["resourceTemplateCount"] == nil {
		t.Errorf("connect --json: %v", conn)
	}
	keys := func(args ...string) []string {
		var rows []map[string]any
		if err := json.Unmarshal([]byte(c.ok(args...).out), &rows); err != nil || len(rows) != 1 {
			t.Fatalf("%v: %v %d rows", args, err, len(rows))
		}
		return slices.Sorted(maps.Keys(rows[0]))
	}
	all, one := keys("status", "--json"), keys("status", "fx", "--json")
	if !slices.Equal(all, one) {
		t.Errorf("status --json fields %v, status ID --json fields %v", all, one)
	}
	for _, k := range all {
		if _, ok := conn[k]; !ok {
			t.Errorf("connect --json lacks status's field %q", k)
		}
	}
}

// Errors put remotemcp's words first, with the innermost cause; the
// library's chain ("calling …: sending …: Post …: dial tcp …") shows only
// with --verbose.
func TestErrorWordsBeforeTheChain(t *testing.T) {
	c := newCLI(t)
	c.ok("servers", "add", "down", deadURL(t), "--lazy")
	for _, tc := range []struct {
		args    []string
		verbose bool
	}{
		{[]string{"connect", "down"}, false},
		{[]string{"call", "mcp__down__echo", `{"text":"hi"}`, "--yes"}, false},
		{[]string{"--verbose", "connect", "down"}, true},
		{[]string{"call", "-v", "mcp__down__echo", `{"text":"hi"}`, "--yes"}, true},
	} {
		r := c.run("", tc.args...)
		if r.code != exitFail {
			t.Fatalf("%v: %s", tc.args, r)
		}
		first := ""
		for l := range strings.SplitSeq(r.err, "\n") {
			if strings.HasPrefix(l, "remotemcp: ") {
				first = l
				break
			}
		}
		if !strings.Contains(first, "connection refused") || strings.Contains(first, "dial tcp") || strings.Contains(first, "calling \"initialize\"") {
			t.Errorf("%v: the first line is not remotemcp's words with the cause: %q\n%s", tc.args, first, r.err)
		}
		if !strings.Contains(r.err, "what to do:") {
			t.Errorf("%v: no advice:\n%s", tc.args, r.err)
		}
		if got := strings.Contains(r.err, "  cause: ") && strings.Contains(r.err, "dial tcp"); got != tc.verbose {
			t.Errorf("%v: the chain shown %v, want %v:\n%s", tc.args, got, tc.verbose, r.err)
		}
		if !tc.verbose && !strings.Contains(r.err, "--verbose") {
			t.Errorf("%v: does not say where the whole cause is:\n%s", tc.args, r.err)
		}
	}
}
