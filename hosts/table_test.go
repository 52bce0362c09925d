package hosts

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// envOf is an environment holding m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestRows checks every row is complete, its templates well formed, and
// that it has its fixtures: adding a host is a row and a fixture.
func TestRows(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range All() {
		if h.ID == "" || h.Name == "" || h.ServersKey == "" || h.Docs == "" {
			t.Errorf("row %+v lacks an ID, name, servers key or docs", h)
		}
		if seen[h.ID] {
			t.Errorf("ID %s twice", h.ID)
		}
		seen[h.ID] = true
		if codecs[h.Format] == nil {
			t.Errorf("%s: no codec for format %q", h.ID, h.Format)
		}
		for _, goos := range []string{"linux", "darwin", "windows"} {
			if len(h.User.For(goos)) == 0 {
				t.Errorf("%s: no user file on %s", h.ID, goos)
			}
			for _, tmpl := range append(h.User.For(goos), h.Installed.For(goos)...) {
				if !strings.HasPrefix(tmpl, "$") || strings.Contains(tmpl, `\`) {
					t.Errorf("%s: template %q must start with $VAR and use '/'", h.ID, tmpl)
				}
			}
		}
		if strings.HasPrefix(h.Project, "/") || strings.Contains(h.Project, `\`) || strings.Contains(h.Project, "$") {
			t.Errorf("%s: project file %q must be relative and '/'-separated", h.ID, h.Project)
		}
		for _, name := range []string{"original", "after-add", "after-remove", "created"} {
			if _, err := os.Stat(filepath.Join("testdata", h.ID, name+ext(h.Format))); err != nil {
				t.Errorf("%s: fixture: %v", h.ID, err)
			}
		}
	}
	if len(IDs()) != len(table) {
		t.Errorf("IDs() = %v", IDs())
	}
}

// TestRowFieldsTagged: every field of a row has a JSON tag.
func TestRowFieldsTagged(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[Host](), reflect.TypeFor[PerOS](), reflect.TypeFor[Status](), reflect.TypeFor[Entry](), reflect.TypeFor[Remote]()} {
		for f := range typ.Fields() {
			if f.Tag.Get("json") == "" {
				t.Errorf("%s.%s has no json tag", typ.Name(), f.Name)
			}
		}
	}
}

// TestPaths pins every row's user-level file on Linux, macOS and Windows,
// with and without the variables that move it.
func TestPaths(t *testing.T) {
	systems := []System{
		{OS: "linux", Home: "/home/u"},
		{OS: "linux", Home: "/home/u", Env: envOf(map[string]string{"XDG_CONFIG_HOME": "/xdg", "CLAUDE_CONFIG_DIR": "/cc", "CODEX_HOME": "/codex/"})},
		{OS: "linux", Home: "/home/u", Env: envOf(map[string]string{"XDG_CONFIG_HOME": "relative", "CLAUDE_CONFIG_DIR": ""})},
		{OS: "darwin", Home: "/Users/u", Env: envOf(map[string]string{"XDG_CONFIG_HOME": "/xdg"})},
		{OS: "windows", Home: `C:\Users\u`, Env: envOf(map[string]string{"APPDATA": `D:\Roaming`, "CODEX_HOME": `E:\codex`})},
		{OS: "windows", Home: `C:\Users\u`},
	}
	want := map[string][]string{
		"claude-desktop": {
			"/home/u/.config/Claude/claude_desktop_config.json",
			"/xdg/Claude/claude_desktop_config.json",
			"/home/u/.config/Claude/claude_desktop_config.json",
			"/Users/u/Library/Application Support/Claude/claude_desktop_config.json",
			`D:\Roaming\Claude\claude_desktop_config.json`,
			`C:\Users\u\AppData\Roaming\Claude\claude_desktop_config.json`,
		},
		"claude-code": {
			"/home/u/.claude.json",
			"/cc/.claude.json",
			"/home/u/.claude.json",
			"/Users/u/.claude.json",
			`C:\Users\u\.claude.json`,
			`C:\Users\u\.claude.json`,
		},
		"cursor": {
			"/home/u/.cursor/mcp.json",
			"/home/u/.cursor/mcp.json",
			"/home/u/.cursor/mcp.json",
			"/Users/u/.cursor/mcp.json",
			`C:\Users\u\.cursor\mcp.json`,
			`C:\Users\u\.cursor\mcp.json`,
		},
		"vscode": {
			"/home/u/.config/Code/User/mcp.json",
			"/xdg/Code/User/mcp.json",
			"/home/u/.config/Code/User/mcp.json",
			"/Users/u/Library/Application Support/Code/User/mcp.json",
			`D:\Roaming\Code\User\mcp.json`,
			`C:\Users\u\AppData\Roaming\Code\User\mcp.json`,
		},
		"windsurf": {
			"/home/u/.codeium/windsurf/mcp_config.json",
			"/home/u/.codeium/windsurf/mcp_config.json",
			"/home/u/.codeium/windsurf/mcp_config.json",
			"/Users/u/.codeium/windsurf/mcp_config.json",
			`C:\Users\u\.codeium\windsurf\mcp_config.json`,
			`C:\Users\u\.codeium\windsurf\mcp_config.json`,
		},
		"codex": {
			"/home/u/.codex/config.toml",
			"/codex/config.toml",
			"/home/u/.codex/config.toml",
			"/Users/u/.codex/config.toml",
			`E:\codex\config.toml`,
			`C:\Users\u\.codex\config.toml`,
		},
		"gemini-cli": {
			"/home/u/.gemini/settings.json",
			"/home/u/.gemini/settings.json",
			"/home/u/.gemini/settings.json",
			"/Users/u/.gemini/settings.json",
			`C:\Users\u\.gemini\settings.json`,
			`C:\Users\u\.gemini\settings.json`,
		},
	}
	for _, h := range All() {
		paths, ok := want[h.ID]
		if !ok {
			t.Errorf("no expected paths for %s", h.ID)
			continue
		}
		for i, s := range systems {
			got, err := h.UserFile(s)
			if err != nil || got != paths[i] {
				t.Errorf("%s on system %d (%s): %q, %v; want %q", h.ID, i, s.OS, got, err, paths[i])
			}
			f, err := h.File(s, "")
			if err != nil || f.Path != paths[i] || f.Project {
				t.Errorf("%s: File = %+v, %v", h.ID, f, err)
			}
		}
	}
	if _, err := (Host{ID: "x", User: PerOS{Linux: []string{"$NOPE/x"}}}).UserFile(systems[0]); !errors.Is(err, ErrNoPath) {
		t.Errorf("unresolvable template: err = %v", err)
	}
}

// TestProjectPaths pins every row's project-level file.
func TestProjectPaths(t *testing.T) {
	want := map[string]string{
		"claude-code": ".mcp.json",
		"cursor":      ".cursor/mcp.json",
		"vscode":      ".vscode/mcp.json",
		"codex":       ".codex/config.toml",
		"gemini-cli":  ".gemini/settings.json",
	}
	for _, h := range All() {
		rel, has := want[h.ID]
		got, err := h.ProjectFile(System{OS: "linux"}, "/src/app/")
		if !has {
			if !errors.Is(err, ErrNoProjectFile) {
				t.Errorf("%s: project file %q, %v; want ErrNoProjectFile", h.ID, got, err)
			}
			if _, err := h.File(System{OS: "linux"}, "/src/app"); !errors.Is(err, ErrNoProjectFile) {
				t.Errorf("%s: File with a project: %v", h.ID, err)
			}
			continue
		}
		if err != nil || got != "/src/app/"+rel {
			t.Errorf("%s: %q, %v; want /src/app/%s", h.ID, got, err, rel)
		}
		win, err := h.ProjectFile(System{OS: "windows"}, `C:\src\app`)
		if wantWin := `C:\src\app\` + strings.ReplaceAll(rel, "/", `\`); err != nil || win != wantWin {
			t.Errorf("%s on windows: %q, %v; want %q", h.ID, win, err, wantWin)
		}
		if f, err := h.File(System{OS: "linux"}, "/src/app"); err != nil || !f.Project || f.Path != "/src/app/"+rel {
			t.Errorf("%s: File = %+v, %v", h.ID, f, err)
		}
	}
}

func TestIsInstalled(t *testing.T) {
	home := t.TempDir()
	s := System{OS: "linux", Home: home, Env: envOf(nil)}
	for _, h := range All() {
		if h.IsInstalled(s) {
			t.Errorf("%s installed in an empty home", h.ID)
		}
	}
	for _, d := range []string{".cursor", ".claude", ".config/Code/User", ".codex"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range All() {
		want := map[string]bool{"cursor": true, "claude-code": true, "vscode": true, "codex": true}[h.ID]
		if got := h.IsInstalled(s); got != want {
			t.Errorf("%s: installed = %v, want %v", h.ID, got, want)
		}
	}
	// CLAUDE_CONFIG_DIR counts for Claude Code.
	cc := t.TempDir()
	s2 := System{OS: "linux", Home: t.TempDir(), Env: envOf(map[string]string{"CLAUDE_CONFIG_DIR": cc})}
	if h := host(t, "claude-code"); !h.IsInstalled(s2) {
		t.Error("claude-code with CLAUDE_CONFIG_DIR: not installed")
	}
}

func TestList(t *testing.T) {
	home := t.TempDir()
	s := System{OS: "linux", Home: home, Env: envOf(nil)}
	write := func(rel, content string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".cursor/mcp.json", `{"mcpServers": {"remotemcp": {"command": "/x", "args": ["mcp"]}}}`)
	write(".gemini/settings.json", `{"mcpServers": `)
	write(".codex/config.toml", "model = \"x\"\n")
	got := map[string]Status{}
	for _, st := range List(s, "") {
		got[st.ID] = st
	}
	if len(got) != len(table) {
		t.Fatalf("List has %d hosts", len(got))
	}
	if c := got["cursor"]; !c.Installed || !c.Connected || !c.Exists || c.File != filepath.Join(home, ".cursor/mcp.json") || c.Error != "" {
		t.Errorf("cursor: %+v", c)
	}
	if c := got["codex"]; !c.Installed || c.Connected || !c.Exists || c.Error != "" {
		t.Errorf("codex: %+v", c)
	}
	if g := got["gemini-cli"]; g.Connected || !strings.Contains(g.Error, "not valid JSONC") {
		t.Errorf("gemini-cli: %+v", g)
	}
	if d := got["claude-desktop"]; d.Installed || d.Exists || !strings.Contains(d.Note, "no official Linux build") {
		t.Errorf("claude-desktop: %+v", d)
	}

	proj := t.TempDir()
	for _, st := range List(s, proj) {
		h := host(t, st.ID)
		switch {
		case h.Project == "" && st.File != "":
			t.Errorf("%s has no project file, got %q", st.ID, st.File)
		case h.Project != "" && st.File != filepath.Join(proj, h.Project):
			t.Errorf("%s project file %q", st.ID, st.File)
		case st.Connected || st.Exists || st.Error != "":
			t.Errorf("%s in an empty project: %+v", st.ID, st)
		}
	}
}

func TestCheckCommand(t *testing.T) {
	cases := []struct {
		goos, path string
		ok         bool
	}{
		{"linux", "/usr/local/bin/remotemcp", true},
		{"linux", "/home/u/go/bin/remotemcp", true},
		{"linux", "remotemcp", false},
		{"linux", "/tmp/go-build1234/b001/exe/remotemcp", false},
		{"darwin", "/var/folders/x/T/go-build99/b001/exe/remotemcp", false},
		{"windows", `C:\Users\u\go\bin\remotemcp.exe`, true},
		{"windows", `C:\Users\u\AppData\Local\Temp\go-build1\b001\exe\remotemcp.exe`, false},
		{"windows", `bin\remotemcp.exe`, false},
	}
	for _, c := range cases {
		err := CheckCommand(c.goos, c.path)
		if (err == nil) != c.ok {
			t.Errorf("CheckCommand(%s, %s) = %v", c.goos, c.path, err)
		}
		if strings.Contains(c.path, "go-build") && !errors.Is(err, ErrGoRun) {
			t.Errorf("%s: err %v, want ErrGoRun", c.path, err)
		}
	}
	if e := NewEntry("/x", ""); !reflect.DeepEqual(e.Args, []string{"mcp"}) {
		t.Errorf("NewEntry default: %v", e)
	}
	if e := NewEntry("/x", "/d"); !reflect.DeepEqual(e.Args, []string{"--data-dir", "/d", "mcp"}) {
		t.Errorf("NewEntry with data dir: %v", e)
	}
}
