package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/hosts"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// runHosts runs one command line with exactly env as its environment (no
// --data-dir unless args give it) and returns its result.
func runHosts(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb},
		func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return result{out: out.String(), err: errb.String(), code: code}
}

// goldenFile compares got with testdata/name, or rewrites it with
// -update.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// hostFileExt is the extension of host h's files.
func hostFileExt(h hosts.Host) string {
	if h.Format == hosts.FormatTOML {
		return ".toml"
	}
	return ".json"
}

// TestHostsConnectXDG (issue #19 item 3): with $XDG_CONFIG_HOME set and no
// --data-dir, the data directory is $XDG_CONFIG_HOME/remotemcp, which the
// remotemcp a host starts cannot compute (hosts drop XDG_CONFIG_HOME and
// keep HOME), so every host's entry names it with --data-dir, in the
// host's own shape: testdata/hosts-xdg/HOST (paths as $HOME, $XDG, $EXE).
func TestHostsConnectXDG(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("XDG_CONFIG_HOME moves the config directory on Linux and other Unix systems only")
	}
	for _, h := range hosts.All() {
		t.Run(h.ID, func(t *testing.T) {
			home, xdg := t.TempDir(), t.TempDir()
			exe := writeFile(t, "remotemcp", "")
			env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg}
			if r := runHosts(t, env, "hosts", "connect", h.ID, "--command", exe); r.code != exitOK {
				t.Fatal(r)
			}
			sys := hosts.System{OS: runtime.GOOS, Home: home, Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
			path, err := h.UserFile(sys)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := jsonOrTOML(filepath.Join(xdg, "remotemcp"))
			if !bytes.Contains(b, []byte(`"--data-dir", "`+want+`", "mcp"`)) {
				t.Errorf("%s lacks --data-dir %s:\n%s", path, want, b)
			}
			r := strings.NewReplacer(exe, "$EXE", xdg, "$XDG", home, "$HOME")
			goldenFile(t, filepath.Join("hosts-xdg", h.ID+hostFileExt(h)), []byte(r.Replace(string(b))))
		})
	}
}

// TestHostsDataDir: the entry carries --data-dir exactly when the
// remotemcp a host starts (with HOME, without XDG_CONFIG_HOME or
// REMOTEMCP_HOME) would not compute the data directory by itself; a
// relative directory is written absolute.
func TestHostsDataDir(t *testing.T) {
	home := t.TempDir()
	exe := writeFile(t, "remotemcp", "")
	other := t.TempDir()
	cwd := t.TempDir()
	def, ok := hosts.DefaultDataDir(hosts.System{OS: runtime.GOOS, Home: home})
	mcpOnly := []string{"mcp"}
	if !ok { // Windows: always named
		def, mcpOnly = filepath.Join(home, "AppData", "Roaming", "remotemcp"), nil
	}
	cases := []struct {
		name  string
		flags []string
		env   map[string]string
		want  []string // nil: --data-dir def
	}{
		{"default", nil, nil, mcpOnly},
		{"REMOTEMCP_HOME", nil, map[string]string{envHome: other}, []string{"--data-dir", other, "mcp"}},
		{"--data-dir", []string{"--data-dir", other}, nil, []string{"--data-dir", other, "mcp"}},
		{"--data-dir wins over REMOTEMCP_HOME", []string{"--data-dir", other}, map[string]string{envHome: cwd}, []string{"--data-dir", other, "mcp"}},
		{"--data-dir relative", []string{"--data-dir", "rel"}, nil, []string{"--data-dir", filepath.Join(cwd, "rel"), "mcp"}},
		{"REMOTEMCP_HOME relative", nil, map[string]string{envHome: "rel"}, []string{"--data-dir", filepath.Join(cwd, "rel"), "mcp"}},
		{"--data-dir is the default", []string{"--data-dir", def}, nil, mcpOnly},
		{"REMOTEMCP_HOME is the default", nil, map[string]string{envHome: def + string(filepath.Separator)}, mcpOnly},
	}
	if runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		cases = append(cases,
			struct {
				name  string
				flags []string
				env   map[string]string
				want  []string
			}{"XDG_CONFIG_HOME", nil, map[string]string{"XDG_CONFIG_HOME": other}, []string{"--data-dir", filepath.Join(other, "remotemcp"), "mcp"}},
			struct {
				name  string
				flags []string
				env   map[string]string
				want  []string
			}{"XDG_CONFIG_HOME is ~/.config", nil, map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, ".config")}, mcpOnly},
		)
	}
	t.Chdir(cwd)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HOME": home, "USERPROFILE": home, "APPDATA": filepath.Join(home, "AppData", "Roaming")}
			for k, v := range tc.env {
				env[k] = v
			}
			args := append(slices.Clone(tc.flags), "hosts", "connect", "cursor", "--command", exe)
			if r := runHosts(t, env, args...); r.code != exitOK {
				t.Fatal(r)
			}
			b, err := os.ReadFile(filepath.Join(home, ".cursor", "mcp.json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				MCPServers map[string]hosts.Entry `json:"mcpServers"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = []string{"--data-dir", def, "mcp"}
			}
			if got := doc.MCPServers[hosts.EntryName]; got.Command != exe || !slices.Equal(got.Args, want) {
				t.Fatalf("entry %+v, want %s %v", got, exe, want)
			}
		})
	}
}
