package hosts

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSymlinkFollowed: a configuration file that is a symbolic link (a
// dotfiles checkout) stays one; its target is edited and backed up.
func TestSymlinkFollowed(t *testing.T) {
	realDir, linkDir := t.TempDir(), t.TempDir()
	target := filepath.Join(realDir, "mcp.json")
	orig := []byte("{\n  \"mcpServers\": {}\n}\n")
	if err := os.WriteFile(target, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(linkDir, "mcp.json")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	c, err := File{Host: host(t, "cursor"), Path: link}.Connect(fixtureEntry, false)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v, %v", fi.Mode(), err)
	}
	if c.Backup != target+BackupSuffix || !bytes.Equal(mustRead(t, c.Backup), orig) {
		t.Fatalf("backup %q", c.Backup)
	}
	if !bytes.Contains(mustRead(t, target), []byte(EntryName)) {
		t.Fatal("the target was not edited")
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644 kept", fi.Mode())
	}
	onlyFiles(t, linkDir, "mcp.json")
}

// TestChangedMeanwhile: a file the host rewrote between reading and
// writing is not overwritten.
func TestChangedMeanwhile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude.json")
	if err := os.WriteFile(path, []byte(`{"numStartups": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := File{Host: host(t, "claude-code"), Path: path}
	c, err := f.plan(&fixtureEntry)
	if err != nil || !c.Changed {
		t.Fatalf("plan: %+v, %v", c, err)
	}
	host := []byte(`{"numStartups": 2}`)
	if err := os.WriteFile(path, host, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.write(&c); !errors.Is(err, errChanged) {
		t.Fatalf("write: %v, want errChanged", err)
	}
	if !bytes.Equal(mustRead(t, path), host) {
		t.Fatal("the host's write was lost")
	}
	noBackup(t, path)
	// Connect reads it again and keeps the host's change.
	if _, err := f.Connect(fixtureEntry, false); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, path); !bytes.Contains(got, []byte(`"numStartups": 2`)) || !bytes.Contains(got, []byte(EntryName)) {
		t.Fatalf("after connect: %s", got)
	}
}

// TestProjectFileMode: project files are created shareable.
func TestProjectFileMode(t *testing.T) {
	proj := t.TempDir()
	f, err := host(t, "vscode").File(System{OS: "linux"}, proj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Connect(fixtureEntry, false); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(proj, ".vscode", "mcp.json"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("project file: %v, %v; want mode 0644", fi, err)
	}
}

// TestDirectoryRefused: a directory where the file should be is an error,
// not a crash or a replacement.
func TestDirectoryRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := (File{Host: host(t, "cursor"), Path: path}).Connect(fixtureEntry, false); err == nil {
		t.Fatal("connected into a directory")
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Fatal("the directory was replaced")
	}
}
