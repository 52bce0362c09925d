package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/hosts"
)

// hostsCLI is a cli whose home directory is a fresh temporary one, with
// a stand-in remotemcp program for --command.
type hostsCLI struct {
	*cli
	home string
	exe  string
}

func newHostsCLI(t *testing.T) *hostsCLI {
	t.Helper()
	c := newCLI(t)
	home := t.TempDir()
	c.env["HOME"] = home
	c.env["USERPROFILE"] = home
	exe := writeFile(t, "remotemcp", "#!/bin/sh\n")
	return &hostsCLI{cli: c, home: home, exe: exe}
}

// system is the hosts.System the commands see.
func (c *hostsCLI) system() hosts.System {
	return hosts.System{OS: runtime.GOOS, Home: c.home, Env: func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }}
}

// file is host id's user-level file.
func (c *hostsCLI) file(id string) string {
	c.t.Helper()
	h, _ := hosts.Lookup(id)
	p, err := h.UserFile(c.system())
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// list runs hosts list --json.
func (c *hostsCLI) list(args ...string) map[string]hosts.Status {
	c.t.Helper()
	r := c.ok(append([]string{"hosts", "list", "--json"}, args...)...)
	var sts []hosts.Status
	if err := json.Unmarshal([]byte(r.out), &sts); err != nil {
		c.t.Fatalf("hosts list --json: %v\n%s", err, r.out)
	}
	m := map[string]hosts.Status{}
	for _, s := range sts {
		m[s.ID] = s
	}
	return m
}

func TestHostsList(t *testing.T) {
	c := newHostsCLI(t)
	r := c.ok("hosts", "list")
	for _, id := range hosts.IDs() {
		if !strings.Contains(r.out, id) || !strings.Contains(r.out, c.file(id)) {
			t.Errorf("hosts list lacks %s or its file:\n%s", id, r.out)
		}
	}
	sts := c.list()
	if len(sts) != len(hosts.IDs()) {
		t.Fatalf("hosts list --json: %d hosts", len(sts))
	}
	for id, s := range sts {
		if s.Installed || s.Connected || s.Exists || s.File != c.file(id) {
			t.Errorf("%s in an empty home: %+v", id, s)
		}
	}
	// --project lists project files; hosts without one have none.
	proj := t.TempDir()
	for id, s := range c.list("--project=" + proj) {
		h, _ := hosts.Lookup(id)
		if (h.Project == "") != (s.File == "") || s.File != "" && !strings.HasPrefix(s.File, proj) {
			t.Errorf("%s: project file %q", id, s.File)
		}
	}
}

// TestHostsConnect connects and disconnects every host through the CLI:
// the file is created where the host reads it, with this data directory;
// a second run changes nothing.
func TestHostsConnect(t *testing.T) {
	for _, id := range hosts.IDs() {
		t.Run(id, func(t *testing.T) {
			c := newHostsCLI(t)
			path := c.file(id)
			r := c.ok("hosts", "connect", id, "--command", c.exe)
			if !strings.Contains(r.out, "connected "+id+": "+path) {
				t.Fatalf("connect: %s", r)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{c.exe, "--data-dir", c.dir, "mcp", hosts.EntryName} {
				if !bytes.Contains(b, []byte(jsonOrTOML(want))) {
					t.Errorf("%s lacks %q:\n%s", path, want, b)
				}
			}
			if s := c.list()[id]; !s.Connected || !s.Exists {
				t.Errorf("list after connect: %+v", s)
			}

			r = c.ok("hosts", "connect", id, "--command", c.exe)
			if !strings.Contains(r.out, "already connected") {
				t.Fatalf("second connect: %s", r)
			}
			if _, err := os.Stat(path + hosts.BackupSuffix); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a backup of a file remotemcp created: %v", err)
			}

			r = c.ok("hosts", "disconnect", id)
			if !strings.Contains(r.out, "disconnected "+id) || !strings.Contains(r.out, path+hosts.BackupSuffix) {
				t.Fatalf("disconnect: %s", r)
			}
			if after, _ := os.ReadFile(path + hosts.BackupSuffix); !bytes.Equal(after, b) {
				t.Fatal("the backup is not the file before disconnect")
			}
			if s := c.list()[id]; s.Connected {
				t.Errorf("list after disconnect: %+v", s)
			}
			r = c.ok("hosts", "disconnect", id)
			if !strings.Contains(r.out, "is not connected") {
				t.Fatalf("second disconnect: %s", r)
			}
		})
	}
}

// jsonOrTOML escapes s as both formats write it (backslashes doubled).
func jsonOrTOML(s string) string { return strings.ReplaceAll(s, `\`, `\\`) }

// TestHostsKeepOthers: an existing file keeps its other entries and
// comments; the previous version is the backup.
func TestHostsKeepOthers(t *testing.T) {
	c := newHostsCLI(t)
	path := c.file("vscode")
	orig := "{\n\t// mine\n\t\"servers\": {\n\t\t\"other\": {\"type\": \"http\", \"url\": \"https://example.com/mcp\"},\n\t},\n}\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	c.ok("hosts", "connect", "vscode", "--command", c.exe)
	got, _ := os.ReadFile(path)
	for _, want := range []string{"// mine", `"other": {"type": "http", "url": "https://example.com/mcp"},`, `"type": "stdio"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("file lacks %q:\n%s", want, got)
		}
	}
	if b, _ := os.ReadFile(path + hosts.BackupSuffix); string(b) != orig {
		t.Errorf("backup = %q", b)
	}
	c.ok("hosts", "disconnect", "vscode")
	if got, _ := os.ReadFile(path); string(got) != orig {
		t.Errorf("after disconnect:\n%s\nwant the original:\n%s", got, orig)
	}
}

// TestHostsDryRun: --dry-run prints a diff and writes nothing.
func TestHostsDryRun(t *testing.T) {
	c := newHostsCLI(t)
	path := c.file("codex")
	orig := "model = \"o3\"\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	r := c.ok("hosts", "connect", "codex", "--dry-run", "--command", c.exe)
	if !strings.Contains(r.out, "+[mcp_servers.remotemcp]") || !strings.Contains(r.out, "--- "+path) || !strings.Contains(r.err, "not written") {
		t.Fatalf("dry run: %s", r)
	}
	c.ok("hosts", "disconnect", "codex", "--dry-run")
	if b, _ := os.ReadFile(path); string(b) != orig {
		t.Fatalf("dry run wrote: %q", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("dry run left files: %v", ents)
	}
	// a dry run on no file creates nothing
	c.ok("hosts", "connect", "cursor", "--dry-run", "--command", c.exe)
	if _, err := os.Stat(filepath.Dir(c.file("cursor"))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("dry run created the directory: %v", err)
	}
}

// TestHostsInvalidFile: a file that does not parse is refused, named with
// its line, and left byte for byte.
func TestHostsInvalidFile(t *testing.T) {
	c := newHostsCLI(t)
	path := c.file("cursor")
	orig := "{\n  \"mcpServers\": {\n    \"a\": {\"command\": 'x'}\n  }\n}\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"hosts", "connect", "cursor", "--command", c.exe},
		{"hosts", "connect", "cursor", "--command", c.exe, "--dry-run"},
		{"hosts", "disconnect", "cursor"},
	} {
		r := c.fail(exitFail, path, args...)
		if !strings.Contains(r.err, "line 3") || !strings.Contains(r.err, "left unchanged") {
			t.Errorf("%v: %s", args, r)
		}
		if b, _ := os.ReadFile(path); string(b) != orig {
			t.Fatalf("%v changed the file", args)
		}
	}
	if _, err := os.Stat(path + hosts.BackupSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("backup written for a refused file")
	}
	r := c.ok("hosts", "list")
	if !strings.Contains(r.err, path) {
		t.Errorf("hosts list does not report the invalid file: %s", r)
	}
}

func TestHostsProject(t *testing.T) {
	c := newHostsCLI(t)
	proj := t.TempDir()
	c.ok("hosts", "connect", "vscode", "--project="+proj, "--command", c.exe)
	b, err := os.ReadFile(filepath.Join(proj, ".vscode", "mcp.json"))
	if err != nil || !strings.Contains(string(b), `"servers"`) {
		t.Fatalf("project file: %s, %v", b, err)
	}
	if _, err := os.Stat(c.file("vscode")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("--project wrote the user-level file")
	}
	if s := c.list("--project=" + proj)["vscode"]; !s.Connected {
		t.Errorf("list --project: %+v", s)
	}
	c.fail(exitUsage, "no project-level configuration file", "hosts", "connect", "claude-desktop", "--project="+proj, "--command", c.exe)
	c.fail(exitUsage, "not a directory", "hosts", "connect", "vscode", "--project="+filepath.Join(proj, "nope"), "--command", c.exe)
}

func TestHostsUsage(t *testing.T) {
	c := newHostsCLI(t)
	c.fail(exitUsage, "unknown host \"nope\": choose one of claude-desktop", "hosts", "connect", "nope", "--command", c.exe)
	c.fail(exitUsage, "usage: remotemcp hosts connect HOST", "hosts", "connect")
	c.fail(exitUsage, "absolute path", "hosts", "connect", "cursor", "--command", "remotemcp")
	c.fail(exitUsage, "not a program file", "hosts", "connect", "cursor", "--command", c.home)
}

// TestHostsRefusesGoRun: without --command the entry is this program,
// here a test binary built under go-build: refused, nothing written.
func TestHostsRefusesGoRun(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	if hosts.CheckCommand(runtime.GOOS, exe) == nil {
		t.Skipf("the test binary %s is not in a go-build directory", exe)
	}
	c := newHostsCLI(t)
	c.fail(exitFail, "go install", "hosts", "connect", "cursor")
	if _, err := os.Stat(filepath.Dir(c.file("cursor"))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a refused connect created files")
	}
}
