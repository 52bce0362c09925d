package hosts

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the after-* golden files in testdata")

// fixtureEntry is the entry every fixture gets: a path with a space, and
// a data directory.
var fixtureEntry = Entry{Command: "/opt/remotemcp/bin/remotemcp", Args: []string{"--data-dir", "/home/user/remotemcp data", "mcp"}}

// ext is the fixture files' extension for f.
func ext(f Format) string {
	if f == FormatTOML {
		return ".toml"
	}
	return ".json"
}

// golden compares got with testdata file name, or rewrites it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(name, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noBackup fails if path has a backup.
func noBackup(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path + BackupSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("backup %s exists (or stat failed: %v)", path+BackupSuffix, err)
	}
}

// onlyFiles fails unless dir holds exactly names (no temporary files).
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !reflect.DeepEqual(got, names) {
		t.Fatalf("%s holds %q, want %q", dir, got, names)
	}
}

// comments are JSONC comments.
var comments = regexp.MustCompile(`(?s)//[^\n]*|/\*.*?\*/`)

// TestFixtures runs every row over testdata/HOST/original: connect gives
// after-add, disconnect after-remove, with backups on change only, other
// entries and comments kept, idempotent second runs and dry runs that
// write nothing.
func TestFixtures(t *testing.T) {
	for _, h := range All() {
		t.Run(h.ID, func(t *testing.T) {
			dir := filepath.Join("testdata", h.ID)
			x := ext(h.Format)
			orig := mustRead(t, filepath.Join(dir, "original"+x))
			tmp := t.TempDir()
			name := "config" + x
			path := filepath.Join(tmp, name)
			if err := os.WriteFile(path, orig, 0o640); err != nil {
				t.Fatal(err)
			}
			f := File{Host: h, Path: path}
			if _, conn, err := f.Connected(); err != nil || conn {
				t.Fatalf("Connected before = %v, %v; want false", conn, err)
			}

			// --dry-run: the change is shown, nothing is written.
			c, err := f.Connect(fixtureEntry, true)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Changed || c.Written || c.Backup != "" || c.Diff() == "" {
				t.Fatalf("dry run: %+v, diff %q", c, c.Diff())
			}
			if !bytes.Equal(mustRead(t, path), orig) {
				t.Fatal("dry run changed the file")
			}
			onlyFiles(t, tmp, name)

			// connect
			c, err = f.Connect(fixtureEntry, false)
			if err != nil {
				t.Fatal(err)
			}
			added := mustRead(t, path)
			golden(t, filepath.Join(dir, "after-add"+x), added)
			if !c.Written || c.Backup != path+BackupSuffix || !bytes.Equal(mustRead(t, c.Backup), orig) {
				t.Fatalf("connect: %+v; want written with the original as backup", c)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
				t.Fatalf("mode after connect: %v, %v; want 0640 kept", fi.Mode(), err)
			}
			sameOthers(t, h, orig, added)
			if _, conn, err := f.Connected(); err != nil || !conn {
				t.Fatalf("Connected after connect = %v, %v", conn, err)
			}

			// a second connect changes nothing and backs nothing up
			os.Remove(c.Backup)
			c, err = f.Connect(fixtureEntry, false)
			if err != nil || c.Changed || c.Written || c.Diff() != "" {
				t.Fatalf("second connect: %+v, %v; want no change", c, err)
			}
			if !bytes.Equal(mustRead(t, path), added) {
				t.Fatal("second connect changed the file")
			}
			noBackup(t, path)

			// disconnect, dry run first
			if c, err = f.Disconnect(true); err != nil || !c.Changed || c.Written {
				t.Fatalf("disconnect dry run: %+v, %v", c, err)
			}
			if !bytes.Equal(mustRead(t, path), added) {
				t.Fatal("disconnect dry run changed the file")
			}
			noBackup(t, path)
			if c, err = f.Disconnect(false); err != nil || !c.Written {
				t.Fatalf("disconnect: %+v, %v", c, err)
			}
			removed := mustRead(t, path)
			golden(t, filepath.Join(dir, "after-remove"+x), removed)
			if !bytes.Equal(mustRead(t, c.Backup), added) {
				t.Fatal("disconnect's backup is not the file before it")
			}
			sameOthers(t, h, orig, removed)

			// a second disconnect changes nothing
			os.Remove(c.Backup)
			if c, err = f.Disconnect(false); err != nil || c.Changed {
				t.Fatalf("second disconnect: %+v, %v", c, err)
			}
			noBackup(t, path)
			onlyFiles(t, tmp, name)

			if h.Format == FormatJSONC {
				for _, cm := range comments.FindAll(orig, -1) {
					if !bytes.Contains(added, cm) || !bytes.Contains(removed, cm) {
						t.Errorf("comment %q lost", cm)
					}
				}
			}
		})
	}
}

// sameOthers checks that a and b hold the same document apart from our
// entry.
func sameOthers(t *testing.T, h Host, a, b []byte) {
	t.Helper()
	da, err := codecs[h.Format].decode(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := codecs[h.Format].decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withoutEntry(da, h.ServersKey), withoutEntry(db, h.ServersKey)) {
		t.Fatalf("other entries differ:\n%v\n%v", da, db)
	}
}

// TestFixturesCreate connects each host with no file: the file and its
// directory are created (testdata/HOST/created), with no backup.
func TestFixturesCreate(t *testing.T) {
	for _, h := range All() {
		t.Run(h.ID, func(t *testing.T) {
			x := ext(h.Format)
			path := filepath.Join(t.TempDir(), "sub", "config"+x)
			f := File{Host: h, Path: path}
			if exists, conn, err := f.Connected(); exists || conn || err != nil {
				t.Fatalf("Connected on no file = %v, %v, %v", exists, conn, err)
			}
			c, err := f.Disconnect(false)
			if err != nil || c.Changed {
				t.Fatalf("disconnect with no file: %+v, %v", c, err)
			}
			if c, err = f.Connect(fixtureEntry, true); err != nil || !c.Changed || c.Written {
				t.Fatalf("dry run: %+v, %v", c, err)
			}
			if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatal("dry run created the directory")
			}
			if c, err = f.Connect(fixtureEntry, false); err != nil || !c.Written || c.Backup != "" || c.Existed {
				t.Fatalf("connect: %+v, %v", c, err)
			}
			golden(t, filepath.Join("testdata", h.ID, "created"+x), mustRead(t, path))
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("new file mode %v, %v; want 0600", fi.Mode(), err)
			}
			onlyFiles(t, filepath.Dir(path), "config"+x)
		})
	}
}

// TestInvalidRefused: a file that does not parse is refused with its
// path and line, by connect, disconnect and dry runs, and left byte for
// byte unchanged, with no backup.
func TestInvalidRefused(t *testing.T) {
	type tc struct {
		host, file string
		line       int
	}
	cases := []tc{
		{"claude-desktop", "invalid.json", 5},
		{"claude-desktop", "comments.json", 2},
		{"claude-code", "invalid.json", 4},
		{"cursor", "invalid.json", 6},
		{"vscode", "invalid.json", 8},
		{"windsurf", "invalid.json", 4},
		{"codex", "invalid.toml", 5},
		{"gemini-cli", "invalid.json", 6},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.host] = true
		t.Run(c.host+"/"+c.file, func(t *testing.T) {
			h, _ := Lookup(c.host)
			orig := mustRead(t, filepath.Join("testdata", c.host, c.file))
			tmp := t.TempDir()
			path := filepath.Join(tmp, c.file)
			if err := os.WriteFile(path, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			f := File{Host: h, Path: path}
			for _, op := range []struct {
				name string
				do   func() (Change, error)
			}{
				{"connect", func() (Change, error) { return f.Connect(fixtureEntry, false) }},
				{"connect --dry-run", func() (Change, error) { return f.Connect(fixtureEntry, true) }},
				{"disconnect", func() (Change, error) { return f.Disconnect(false) }},
			} {
				_, err := op.do()
				pe, ok := errors.AsType[*ParseError](err)
				if !ok {
					t.Fatalf("%s: err = %v, want a *ParseError", op.name, err)
				}
				if pe.Path != path || pe.Host != c.host || pe.Line != c.line {
					t.Fatalf("%s: %+v; want path %s, host %s, line %d", op.name, pe, path, c.host, c.line)
				}
				if !bytes.Equal(mustRead(t, path), orig) {
					t.Fatalf("%s changed the file", op.name)
				}
				onlyFiles(t, tmp, c.file)
			}
			if _, _, err := f.Connected(); err == nil {
				t.Fatal("Connected read an invalid file")
			}
		})
	}
	for _, h := range All() {
		if !seen[h.ID] {
			t.Errorf("host %s has no invalid-file case", h.ID)
		}
	}
}
