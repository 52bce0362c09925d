package main

import (
	"bufio"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without a daemon a command serves itself the local API in memory, and
// "mcp --no-daemon" hands the engine to the front end: neither makes a
// temporary directory or a socket file anywhere, not even while it runs
// (issue #21 item 5).
func TestNoDaemonMakesNoSocket(t *testing.T) {
	c := newCLI(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	noSocket := func(when string) {
		t.Helper()
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Fatalf("%s: the temporary directory holds %v", when, left)
		}
		filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type()&fs.ModeSocket != 0 {
				t.Errorf("%s: a socket in the data directory: %s", when, p)
			}
			return nil
		})
	}
	for _, args := range [][]string{{"servers", "list"}, {"mcp", "token", "create", "one"}, {"mcp", "token", "list"}} {
		c.ok(args...)
		noSocket(strings.Join(args, " "))
	}

	// A host's session: looked at once the front end has answered.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"--data-dir", c.dir, "--no-daemon", "mcp"},
			Streams{In: inR, Out: outW, Err: io.Discard}, func(string) (string, bool) { return "", false })
		outW.Close()
	}()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	noSocket("mcp --no-daemon, running")
	inW.Close()
	go io.Copy(io.Discard, outR)
	if code := <-done; code != 0 {
		t.Fatalf("mcp --no-daemon: exit %d", code)
	}
}
