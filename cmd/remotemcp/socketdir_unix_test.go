//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Issue #20 item 5, end to end: with a data directory too long for its
// socket, no $XDG_RUNTIME_DIR, and $TMPDIR/remotemcp-<uid> squatted (open
// to everyone, as another user could have made it), "remotemcp mcp"
// starts a daemon whose socket is in a directory with an unpredictable
// name, finds it through daemon.json, and so do a second host and
// "status". Before, the daemon refused to start (another user's
// directory) or used the open one.
func TestSquattedSocketDirFoundByCLIAndMcp(t *testing.T) {
	for _, c := range []struct {
		name  string
		squat func(t *testing.T, p string)
	}{
		{"open to everyone", func(t *testing.T, p string) {
			if err := os.Chmod(p, 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"another user's", func(t *testing.T, p string) {
			if os.Getuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp, err := os.MkdirTemp("/tmp", "sq")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			squat := filepath.Join(tmp, "remotemcp-"+strconv.Itoa(os.Getuid()))
			if err := os.Mkdir(squat, 0o700); err != nil {
				t.Fatal(err)
			}
			c.squat(t, squat)
			t.Setenv("TMPDIR", tmp)
			t.Setenv("XDG_RUNTIME_DIR", "")
			squattedStart(t, tmp, squat)
		})
	}
}

// squattedStart is TestSquattedSocketDirFoundByCLIAndMcp once squat is
// taken.
func squattedStart(t *testing.T, tmp, squat string) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.dir = filepath.Join(c.dir, strings.Repeat("a-long-data-directory-", 5))
	c.ok("servers", "add", "fx", f.URL())

	cs, leave := stdioHost(t, c, "mcp")
	callEcho(t, cs, "fx__echo")
	in, err := daemon.Running(t.Context(), c.dir)
	if err != nil {
		t.Fatalf("the daemon is not found: %v", err)
	}
	if top := filepath.Dir(filepath.Dir(in.Socket)); filepath.Dir(top) != tmp || !strings.HasPrefix(filepath.Base(top), filepath.Base(squat)+"-") {
		t.Fatalf("socket %s, want it in a new %s-* directory", in.Socket, squat)
	}
	if ents, err := os.ReadDir(squat); err != nil || len(ents) != 0 {
		t.Fatalf("something was made in the squatted directory: %v %v", ents, err)
	}
	cs2, leave2 := stdioHost(t, c, "mcp")
	callEcho(t, cs2, "fx__echo")
	if r := leave2(); r.code != exitOK || strings.Contains(r.err, "started the daemon") {
		t.Fatalf("a second host did not use the daemon: %s", r)
	}
	if r := c.ok("status"); !strings.Contains(r.out+r.err, "daemon: pid "+strconv.Itoa(in.PID)) {
		t.Fatalf("status does not find the daemon:\n%s", r)
	}
	if r := leave(); r.code != exitOK {
		t.Fatalf("first host: %s", r)
	}
}
