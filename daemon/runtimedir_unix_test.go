//go:build unix

package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/localapi"
)

// shortTemp is a new directory for $TMPDIR, short enough for a socket
// path below it, removed when the test ends.
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// longDataDir is a data directory whose api.sock would be too long.
func longDataDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), strings.Repeat("long-directory-name-", 6))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRuntimeSocketPlaces: a data directory too long for its socket puts
// it under $XDG_RUNTIME_DIR when that is usable, else in
// $TMPDIR/remotemcp-<uid>; when that name is squatted (a symbolic link, a
// file, a directory of another user, one open to others) the daemon
// still starts, in a new directory with an unpredictable name that
// daemon.json records and Dial accepts, leaves the squatted thing as it
// was, and removes its directory when it stops (issue #20 item 5: a
// remotemcp-<uid> made by another user first stopped the daemon; the
// XDG and squatted cases failed before).
func TestRuntimeSocketPlaces(t *testing.T) {
	mine := "remotemcp-" + strconv.Itoa(os.Getuid())
	for _, c := range []struct {
		name string
		// setup prepares $TMPDIR (tmp) and returns $XDG_RUNTIME_DIR.
		setup func(t *testing.T, tmp string) (xdg string)
		// want is where the socket's top directory must be: "xdg",
		// "tmp" or "random".
		want string
	}{
		{"xdg usable", func(t *testing.T, tmp string) string { return shortTemp(t) }, "xdg"},
		{"xdg unset", func(t *testing.T, tmp string) string { return "" }, "tmp"},
		{"xdg open to others", func(t *testing.T, tmp string) string {
			x := shortTemp(t)
			os.Chmod(x, 0o755)
			return x
		}, "tmp"},
		{"xdg missing", func(t *testing.T, tmp string) string { return filepath.Join(tmp, "nope") }, "tmp"},
		{"xdg relative", func(t *testing.T, tmp string) string { return "run/user" }, "tmp"},
		{"squatted: symbolic link", func(t *testing.T, tmp string) string {
			other := filepath.Join(tmp, "attacker")
			if err := os.Mkdir(other, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, filepath.Join(tmp, mine)); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "random"},
		{"squatted: a file", func(t *testing.T, tmp string) string {
			if err := os.WriteFile(filepath.Join(tmp, mine), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "random"},
		{"squatted: mode 0777", func(t *testing.T, tmp string) string {
			p := filepath.Join(tmp, mine)
			if err := os.Mkdir(p, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o777); err != nil { // past the umask
				t.Fatal(err)
			}
			return ""
		}, "random"},
		{"squatted: another user's directory", func(t *testing.T, tmp string) string {
			if os.Getuid() != 0 {
				t.Skip("chown to another user needs root")
			}
			p := filepath.Join(tmp, mine)
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return ""
		}, "random"},
		{"xdg usable beats a squatted tmp", func(t *testing.T, tmp string) string {
			if err := os.WriteFile(filepath.Join(tmp, mine), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return shortTemp(t)
		}, "xdg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := shortTemp(t)
			t.Setenv("TMPDIR", tmp)
			xdg := c.setup(t, tmp)
			t.Setenv("XDG_RUNTIME_DIR", xdg)
			before := lstatAll(t, tmp)
			dir := longDataDir(t)
			s := newStack(t, stackOpts{dir: dir}) // Dial must accept the socket
			canon, _ := filepath.EvalSymlinks(dir)
			p := s.srv.SocketPath()
			hashDir := filepath.Dir(p)
			top := filepath.Dir(hashDir)
			if filepath.Base(p) != localapi.SocketName || filepath.Base(hashDir) != dirHash(canon) || len(p) > maxSocketPath {
				t.Fatalf("socket %s", p)
			}
			switch c.want {
			case "xdg":
				if top != filepath.Join(xdg, mine) {
					t.Fatalf("socket %s, want it in %s", p, filepath.Join(xdg, mine))
				}
			case "tmp":
				if top != filepath.Join(tmp, mine) {
					t.Fatalf("socket %s, want it in %s", p, filepath.Join(tmp, mine))
				}
			case "random":
				if filepath.Dir(top) != tmp || !strings.HasPrefix(filepath.Base(top), mine+"-") {
					t.Fatalf("socket %s, want it in a new %s/%s-*", p, tmp, mine)
				}
			}
			for _, d := range []string{top, hashDir} {
				fi, err := os.Lstat(d)
				if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
					t.Fatalf("%s: %v %v, want a 0700 directory", d, fi, err)
				}
			}
			if in, err := readInfo(canon); err != nil || in.Socket != p {
				t.Fatalf("daemon.json names %q (%v), want %s", in.Socket, err, p)
			}
			if h, err := s.c.Health(testkit.Context(t)); err != nil || !h.OK {
				t.Fatalf("health: %+v %v", h, err)
			}
			// What was squatted is as it was: nothing made in it, nothing
			// chmod-ed or removed.
			if c.want == "random" {
				for name, fi := range before {
					now, err := os.Lstat(filepath.Join(tmp, name))
					if err != nil || now.Mode() != fi.Mode() {
						t.Fatalf("%s changed: %v → %v (%v)", name, fi.Mode(), now, err)
					}
				}
				if _, err := os.Lstat(filepath.Join(tmp, "attacker", dirHash(canon))); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("a directory was made through the squatter's link: %v", err)
				}
			}
			s.close()
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the socket is left after shutdown: %v", err)
			}
			if c.want == "random" {
				if _, err := os.Lstat(top); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the unpredictable directory %s is left after shutdown: %v", top, err)
				}
			}
		})
	}
}

// lstatAll lists what is in dir, by name.
func lstatAll(t *testing.T, dir string) map[string]os.FileInfo {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]os.FileInfo{}
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fi
	}
	return out
}

// TestDialAcceptsOnlyRuntimeShapes: the socket daemon.json names must
// have one of the runtime directory's shapes for this data directory,
// with this user's uid; a random suffix is accepted only after a dash.
func TestDialAcceptsOnlyRuntimeShapes(t *testing.T) {
	dir := "/home/u/data"
	h, uid := dirHash(dir), strconv.Itoa(os.Getuid())
	for _, c := range []struct {
		p  string
		ok bool
	}{
		{"/run/user/1000/remotemcp-" + uid + "/" + h + "/api.sock", true},
		{"/tmp/remotemcp-" + uid + "/" + h + "/api.sock", true},
		{"/tmp/remotemcp-" + uid + "-123456/" + h + "/api.sock", true},
		{"/home/u/data/api.sock", true},
		{"/tmp/remotemcp-" + uid + "7/" + h + "/api.sock", false},
		{"/tmp/remotemcp-" + uid + "/" + dirHash("/other") + "/api.sock", false},
		{"/tmp/remotemcp-x/" + h + "/api.sock", false},
		{"/tmp/remotemcp-" + uid + "/" + h + "/other.sock", false},
		{"remotemcp-" + uid + "/" + h + "/api.sock", false},
	} {
		if got := isSocketOf(dir, c.p); got != c.ok {
			t.Errorf("isSocketOf(%s) = %v, want %v", c.p, got, c.ok)
		}
	}
}
