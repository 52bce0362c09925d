package hosts

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fixtureHTTPEntry is the HTTP entry every fixture gets.
var fixtureHTTPEntry = NewHTTPEntry("http://127.0.0.1:8765/mcp", "rmcp_FIXTURE-token")

// TestFixturesHTTP writes an HTTP entry ("hosts connect HOST --http URL")
// into each host's files in the host's own shape for remote servers:
// testdata/HOST/http-created (no file before) and http-after-add (over
// original); the token makes the file and its backup owner-only; a
// second connect changes nothing; the entry reads back; disconnect gives
// after-remove. A host whose file takes no remote servers refuses, and
// names the stdio alternative.
func TestFixturesHTTP(t *testing.T) {
	for _, h := range All() {
		t.Run(h.ID, func(t *testing.T) {
			dir := filepath.Join("testdata", h.ID)
			x := ext(h.Format)
			orig := mustRead(t, filepath.Join(dir, "original"+x))
			tmp := t.TempDir()
			path := filepath.Join(tmp, "config"+x)
			if err := os.WriteFile(path, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			f := File{Host: h, Path: path}
			if h.Remote == nil {
				_, err := f.Connect(fixtureHTTPEntry, false)
				if !errors.Is(err, ErrNoRemote) || h.NoRemote == "" {
					t.Fatalf("connect over HTTP: %v, want ErrNoRemote with a note", err)
				}
				if !bytes.Equal(mustRead(t, path), orig) {
					t.Fatal("a refused connect changed the file")
				}
				onlyFiles(t, tmp, "config"+x)
				return
			}

			// dry run: nothing written
			if c, err := f.Connect(fixtureHTTPEntry, true); err != nil || !c.Changed || c.Written {
				t.Fatalf("dry run: %+v, %v", c, err)
			}
			onlyFiles(t, tmp, "config"+x)

			c, err := f.Connect(fixtureHTTPEntry, false)
			if err != nil {
				t.Fatal(err)
			}
			added := mustRead(t, path)
			golden(t, filepath.Join(dir, "http-after-add"+x), added)
			sameOthers(t, h, orig, added)
			for _, p := range []string{path, c.Backup} {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
					t.Fatalf("%s: mode %v, %v; want 0600 (it holds a token)", p, fi.Mode(), err)
				}
			}
			if got, ok, err := f.Entry(); err != nil || !ok || !reflect.DeepEqual(got, fixtureHTTPEntry) {
				t.Fatalf("Entry() = %+v, %v, %v", got, ok, err)
			}
			os.Remove(c.Backup)
			if c, err := f.Connect(fixtureHTTPEntry, false); err != nil || c.Changed {
				t.Fatalf("second connect: %+v, %v; want no change", c, err)
			}
			noBackup(t, path)

			// stdio over HTTP and back: the entry is replaced as a whole
			if _, err := f.Connect(fixtureEntry, false); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "after-add"+x), mustRead(t, path))
			if fi, _ := os.Stat(path + BackupSuffix); fi == nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the backup holding the token is not 0600: %v", fi)
			}
			if _, err := f.Connect(fixtureHTTPEntry, false); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mustRead(t, path), added) {
				t.Fatal("HTTP over stdio differs from HTTP over the original")
			}

			if _, err := f.Disconnect(false); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "after-remove"+x), mustRead(t, path))

			// no file before: created owner-only, as a user file is anyway
			np := filepath.Join(t.TempDir(), "sub", "config"+x)
			if _, err := (File{Host: h, Path: np}).Connect(fixtureHTTPEntry, false); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join(dir, "http-created"+x), mustRead(t, np))

			// a project file holding a token is owner-only too
			pp := filepath.Join(t.TempDir(), "proj"+x)
			if _, err := (File{Host: h, Path: pp, Project: true}).Connect(fixtureHTTPEntry, false); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(pp); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("project file with a token: mode %v, %v; want 0600", fi.Mode(), err)
			}
		})
	}
}

// TestEntryOfOtherShapes: Entry reads what is there, including an entry
// remotemcp did not write; a missing file or entry is not an error.
func TestEntryOfOtherShapes(t *testing.T) {
	h := host(t, "cursor")
	path := filepath.Join(t.TempDir(), "mcp.json")
	f := File{Host: h, Path: path}
	if _, ok, err := f.Entry(); ok || err != nil {
		t.Fatalf("no file: %v, %v", ok, err)
	}
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"remotemcp": {"url": "http://127.0.0.1:1/mcp", "headers": {"authorization": "bearer  abc "}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	e, ok, err := f.Entry()
	if err != nil || !ok || !e.IsHTTP() {
		t.Fatalf("Entry() = %+v, %v, %v", e, ok, err)
	}
	if tok, ok := e.Bearer(); !ok || tok != "abc" {
		t.Fatalf("Bearer() = %q, %v", tok, ok)
	}
	if _, ok := NewEntry("/x", "").Bearer(); ok {
		t.Fatal("a stdio entry has a bearer token")
	}
	if _, err := f.Connect(Entry{Command: "/x", URL: "http://127.0.0.1:1/mcp"}, true); err == nil {
		t.Fatal("an entry with a command and a URL was accepted")
	}
	if _, err := os.Stat(path + BackupSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("backup written")
	}
}

// TestDataDirArg: the entry names the data directory unless the host's
// remotemcp, which gets HOME but not XDG_CONFIG_HOME or REMOTEMCP_HOME,
// would compute it by itself; on Windows always.
func TestDataDirArg(t *testing.T) {
	xdg := envOf(map[string]string{"XDG_CONFIG_HOME": "/xdg", "APPDATA": `D:\Roaming`})
	cases := []struct {
		name string
		sys  System
		dir  string
		want string
	}{
		{"linux default", System{OS: "linux", Home: "/home/u"}, "/home/u/.config/remotemcp", ""},
		{"linux default, trailing slash", System{OS: "linux", Home: "/home/u/"}, "/home/u/.config/remotemcp/", ""},
		{"linux XDG_CONFIG_HOME", System{OS: "linux", Home: "/home/u", Env: xdg}, "/xdg/remotemcp", "/xdg/remotemcp"},
		{"linux XDG_CONFIG_HOME is ~/.config", System{OS: "linux", Home: "/home/u", Env: xdg}, "/home/u/.config/remotemcp", ""},
		{"linux other", System{OS: "linux", Home: "/home/u"}, "/srv/rm", "/srv/rm"},
		{"linux no home", System{OS: "linux"}, "/home/u/.config/remotemcp", "/home/u/.config/remotemcp"},
		{"freebsd default", System{OS: "freebsd", Home: "/home/u"}, "/home/u/.config/remotemcp", ""},
		{"darwin default", System{OS: "darwin", Home: "/Users/u", Env: xdg}, "/Users/u/Library/Application Support/remotemcp", ""},
		{"darwin ~/.config", System{OS: "darwin", Home: "/Users/u"}, "/Users/u/.config/remotemcp", "/Users/u/.config/remotemcp"},
		{"windows always", System{OS: "windows", Home: `C:\Users\u`, Env: xdg}, `D:\Roaming\remotemcp`, `D:\Roaming\remotemcp`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DataDirArg(tc.sys, tc.dir); got != tc.want {
				t.Fatalf("DataDirArg(%q) = %q, want %q", tc.dir, got, tc.want)
			}
		})
	}
}

// TestConfigDir is os.UserConfigDir for a given system.
func TestConfigDir(t *testing.T) {
	for _, tc := range []struct {
		sys  System
		want string
		ok   bool
	}{
		{System{OS: "linux", Home: "/home/u"}, "/home/u/.config", true},
		{System{OS: "linux", Home: "/home/u", Env: envOf(map[string]string{"XDG_CONFIG_HOME": "/x/"})}, "/x", true},
		{System{OS: "linux", Home: "/home/u", Env: envOf(map[string]string{"XDG_CONFIG_HOME": "rel"})}, "", false},
		{System{OS: "linux", Home: "/home/u", Env: envOf(map[string]string{"XDG_CONFIG_HOME": ""})}, "/home/u/.config", true},
		{System{OS: "darwin", Home: "/Users/u"}, "/Users/u/Library/Application Support", true},
		{System{OS: "windows", Home: `C:\Users\u`, Env: envOf(map[string]string{"APPDATA": `C:\Users\u\AppData\Roaming`})}, `C:\Users\u\AppData\Roaming`, true},
		{System{OS: "windows", Home: `C:\Users\u`}, "", false},
	} {
		if got, ok := tc.sys.ConfigDir(); got != tc.want || ok != tc.ok {
			t.Errorf("%+v: ConfigDir() = %q, %v; want %q, %v", tc.sys, got, ok, tc.want, tc.ok)
		}
	}
}
