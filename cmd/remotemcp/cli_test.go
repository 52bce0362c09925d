package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Usage errors exit 2 everywhere, unknown commands included.
func TestExitCodeUsage(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{
		{"frobnicate"},
		{"servers", "frobnicate"},
		{"auth", "frobnicate"},
		{"servers", "list", "--nope"},
		{"connect"},
		{"servers", "add", "x"},
		{"call", "fx/echo", "[1]"},
		{"call", "echo"},
		{"read", "fx"},
		{"elicitations", "answer", "el-x", "maybe"},
		{"serve", "--addr", "nonsense"},
		{"servers", "set", "x"},
	} {
		if r := c.run("", args...); r.code != exitUsage {
			t.Errorf("remotemcp %s: want exit %d: %s", strings.Join(args, " "), exitUsage, r)
		}
	}
}

// `status ID` exits 3 when the server asked about is in error; without
// ids, or for a ready server, it exits 0.
func TestExitCodeStatusNotReady(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	c.ok("servers", "add", "down", deadURL(t))
	r := c.run("", "status", "down", "--timeout", "5s")
	if r.code != exitNotReady || !strings.Contains(r.out, "error") || !strings.Contains(r.err, "server down is error") {
		t.Fatalf("status down: %s", r)
	}
	if r = c.run("", "status", "fx", "down", "--timeout", "5s", "--json"); r.code != exitNotReady {
		t.Fatalf("status fx down: %s", r)
	}
	if r = c.ok("status", "fx", "--timeout", "5s"); !strings.Contains(r.out, "ready") {
		t.Fatalf("status fx: %s", r)
	}
	c.ok("status", "--timeout", "5s")
	c.fail(exitFail, "nope", "status", "nope")
}

func TestVersionEqualsVersionFlag(t *testing.T) {
	c := newCLI(t)
	v, f := c.ok("version"), c.ok("--version")
	if v.out != f.out || !strings.HasPrefix(v.out, "remotemcp ") {
		t.Fatalf("version %q, --version %q", v.out, f.out)
	}
}

// ruleID is a spec rule id such as "(R2.2)".
var ruleID = regexp.MustCompile(`\(R\d+(\.\d+)?\)`)

// No help text names a spec rule id: they belong in code and tests.
func TestHelpHasNoRuleIDs(t *testing.T) {
	c := newCLI(t)
	var walk func(cmd *cobra.Command, path []string)
	n := 0
	walk = func(cmd *cobra.Command, path []string) {
		r := c.ok(append(path, "--help")...)
		n++
		if m := ruleID.FindString(r.out + r.err); m != "" {
			t.Errorf("remotemcp %s --help shows %s:\n%s", strings.Join(path, " "), m, r.out)
		}
		for _, sub := range cmd.Commands() {
			if sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub, append(path[:len(path):len(path)], sub.Name()))
			}
		}
	}
	walk(newRootCmd(Streams{}, nil), nil)
	if n < 30 {
		t.Fatalf("walked only %d commands", n)
	}
}

// On a terminal, an answer that is not a keyword at "accept, decline or
// cancel?" is explained and asked again.
func TestQuestionPromptExplainsNonKeyword(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	r := c.runWith(runOpts{stdin: "Ada\naccept\nAda\n\n", terminal: true}, "call", "mcp__fx__ask", "--yes")
	if r.code != 0 || r.out != "hello Ada (42)\n" {
		t.Fatalf("call: %s", r)
	}
	want := "accept, decline or cancel? [accept] type accept, decline or cancel; you will be asked for each field next\naccept, decline or cancel? [accept] "
	if !strings.Contains(r.err, want) {
		t.Fatalf("the non-keyword answer is not explained:\n%s", r.err)
	}
}

// camelKey is the one key style of every --json output.
var camelKey = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// rawKeys hold servers' own JSON, whose keys are not ours.
var rawKeys = map[string]bool{"inputSchema": true, "annotations": true, "structuredContent": true, "requestedSchema": true, "arguments": true, "content": false}

// checkKeys walks v and reports keys that are not camelCase, the key
// "server" outside provenance, and zero times.
func checkKeys(t *testing.T, what string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			if !camelKey.MatchString(k) {
				t.Errorf("%s: key %q is not camelCase", what, k)
			}
			if _, prov := x["kind"]; k == "server" && !prov {
				t.Errorf("%s: key \"server\" (the server is \"serverId\")", what)
			}
			if !rawKeys[k] {
				checkKeys(t, what, sub)
			}
		}
	case []any:
		for _, sub := range x {
			checkKeys(t, what, sub)
		}
	case string:
		if strings.HasPrefix(x, "0001-01-01") {
			t.Errorf("%s: zero time %q", what, x)
		}
	}
}

// Every --json output: camelCase keys, "serverId" for the server, arrays
// for listings, no zero times.
func TestJSONShapes(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	c.ok("servers", "add", "oa", srv.URL(), "--oauth")
	for _, tc := range []struct {
		listing bool
		args    []string
	}{
		{true, []string{"servers", "list"}},
		{true, []string{"status"}},
		{false, []string{"servers", "show", "fx"}},
		{true, []string{"tools"}},
		{true, []string{"prompts"}},
		{true, []string{"resources"}},
		{true, []string{"grants", "list"}},
		{true, []string{"grants", "pending"}},
		{true, []string{"auth", "status"}},
		{true, []string{"elicitations", "list"}},
		{true, []string{"logs", "fx"}},
		{false, []string{"call", "fx/add", `{"a": 1, "b": 2}`, "--yes"}},
		{false, []string{"prompt", "/fx:greet", "name=Ada"}},
		{false, []string{"read", "@fx:test://readme"}},
	} {
		what := strings.Join(tc.args, " ") + " --json"
		r := c.ok(append(tc.args, "--json")...)
		var v any
		if err := json.Unmarshal([]byte(r.out), &v); err != nil {
			t.Errorf("%s: %v\n%s", what, err, r.out)
			continue
		}
		if _, isList := v.([]any); isList != tc.listing {
			t.Errorf("%s: listing=%v, got %T", what, tc.listing, v)
		}
		checkKeys(t, what, v)
	}
}
