package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/store"
)

// cli runs remotemcp commands in-process against one data directory, each
// through a fresh root command (as a new process would).
type cli struct {
	t   *testing.T
	dir string
	env map[string]string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	return &cli{t: t, dir: t.TempDir(), env: map[string]string{}}
}

// result is what one command printed and its exit status.
type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.out, r.err)
}

// run runs one command line with stdin as its standard input.
func (c *cli) run(stdin string, args ...string) result {
	c.t.Helper()
	return c.runWith(runOpts{stdin: stdin}, args...)
}

// runOpts control one invocation.
type runOpts struct {
	ctx   context.Context // default: the test's context
	stdin string
	// terminal makes stdin an interactive terminal (Streams.Terminal):
	// questions are asked and read from stdin.
	terminal bool
}

// runWith runs one command line as o says.
func (c *cli) runWith(o runOpts, args ...string) result {
	ctx := o.ctx
	if ctx == nil {
		ctx = c.t.Context()
	}
	var out, errb bytes.Buffer
	env := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
	code := run(ctx, append([]string{"--data-dir", c.dir}, args...),
		Streams{In: strings.NewReader(o.stdin), Out: &out, Err: &errb, Terminal: o.terminal}, env)
	return result{out: out.String(), err: errb.String(), code: code}
}

// start runs a command in the background, as another process would; the
// channel gets its result.
func (c *cli) start(o runOpts, args ...string) <-chan result {
	ch := make(chan result, 1)
	go func() { ch <- c.runWith(o, args...) }()
	return ch
}

// wait returns the result of a command started with start.
func wait(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the command did not finish")
		return result{}
	}
}

// toolFields are the fields a `tools --json` object may have.
var toolFields = []string{"_meta", "annotations", "description", "effects", "icons", "inputSchema", "name", "outputSchema", "own", "retry", "serverId", "title", "toolName"}

// toolsJSON parses `tools --json` into name → field → raw value, checking
// that every object has only toolFields, and the required ones.
func toolsJSON(t *testing.T, out string) map[string]map[string]json.RawMessage {
	t.Helper()
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("tools --json: %v\n%s", err, out)
	}
	byName := map[string]map[string]json.RawMessage{}
	for _, r := range rows {
		for k := range r {
			if !slices.Contains(toolFields, k) {
				t.Fatalf("tools --json object has field %q, want only %v", k, toolFields)
			}
		}
		for _, k := range []string{"name", "serverId", "toolName", "inputSchema", "effects", "retry"} {
			if r[k] == nil {
				t.Fatalf("tools --json object lacks %q: %v", k, slices.Sorted(maps.Keys(r)))
			}
		}
		var name string
		json.Unmarshal(r["name"], &name)
		byName[name] = r
	}
	return byName
}

// ok runs a command that must succeed.
func (c *cli) ok(args ...string) result {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != 0 {
		c.t.Fatalf("remotemcp %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// fail runs a command that must fail with exit status code, and checks
// that stderr contains want.
func (c *cli) fail(code int, want string, args ...string) result {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != code {
		c.t.Fatalf("remotemcp %s: want exit %d: %s", strings.Join(args, " "), code, r)
	}
	if !strings.Contains(r.err, want) {
		c.t.Fatalf("remotemcp %s: stderr lacks %q: %s", strings.Join(args, " "), want, r)
	}
	return r
}

// dbFiles are the database files whose bytes tests compare and search.
var dbFiles = []string{store.DBFileName, store.DBFileName + "-wal"}

// dbContains reports whether any database file holds secret in its raw
// bytes.
func (c *cli) dbContains(secret string) bool {
	c.t.Helper()
	for _, name := range dbFiles {
		b, err := os.ReadFile(filepath.Join(c.dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			return true
		}
	}
	return false
}

// writeFile writes a file in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
