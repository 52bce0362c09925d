// Package hosts connects MCP hosts (Claude Desktop, Claude Code, Cursor,
// VS Code, Windsurf, Codex, Gemini CLI) to remotemcp: it writes an entry
// named "remotemcp" that launches "remotemcp mcp" (or, for an HTTP entry,
// names the endpoint of "remotemcp mcp --http" and its bearer token) into
// the host's own configuration file, in the host's format, and takes it
// out again.
//
// Hosts are data: one Host row each in a table (see All), applied by
// generic code per file format (JSON, JSONC, TOML). Every edit
//
//   - touches only the "remotemcp" entry: other entries, comments and
//     formatting keep their bytes, and the result is re-read and checked
//     before it is written;
//   - is idempotent: a file that already says what would be written is
//     left alone, with no backup;
//   - saves the previous file as FILE.remotemcp-backup (the file as it was
//     before remotemcp's latest change), only when the file changes;
//   - is atomic: a temporary file in the same directory, renamed over the
//     file, with the file's mode, owner and group kept;
//   - keeps a host's concurrent write: the file is compared with what was
//     read again right before the rename, and the edit redone on a change
//     (only the comparison and the rename remain a window);
//   - reads only regular files of at most MaxFileSize bytes (never
//     opening a FIFO or a device), and a project's file only when it
//     resolves inside the project;
//   - refuses a file it cannot parse, leaving it byte for byte unchanged.
//
// The operating system, home directory and environment are inputs
// (System), so every row's paths are testable for Linux, macOS and
// Windows on any machine.
package hosts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// EntryName is the name of remotemcp's entry in every host's file.
const EntryName = "remotemcp"

// BackupSuffix is appended to a file's path to name its backup.
const BackupSuffix = ".remotemcp-backup"

// Format is the syntax of a host's configuration file.
type Format string

// The file formats the applier knows.
const (
	// FormatJSON is strict JSON: a file with comments or trailing commas
	// is refused, since the host would not read it.
	FormatJSON Format = "json"
	// FormatJSONC is JSON with comments and trailing commas, which are
	// kept.
	FormatJSONC Format = "jsonc"
	// FormatTOML is TOML; the entry is a [SERVERSKEY.remotemcp] table,
	// edited as text.
	FormatTOML Format = "toml"
)

// Host is one row of the table: where an MCP host keeps its servers, and
// in which shape.
type Host struct {
	// ID names the host on the command line ("claude-desktop").
	ID string `json:"id"`
	// Name is the host's display name.
	Name string `json:"name"`
	// Format is the syntax of its files.
	Format Format `json:"format"`
	// ServersKey is the top-level key (JSON) or table (TOML) that maps
	// server names to entries.
	ServersKey string `json:"serversKey"`
	// EntryType, if set, is written as the entry's "type" member.
	EntryType string `json:"entryType,omitempty"`
	// User lists the user-level file's path templates per OS; the first
	// whose variable is set is the file.
	User PerOS `json:"user"`
	// Installed lists paths whose existence means the host is installed;
	// empty means the user-level file's directory.
	Installed PerOS `json:"installed"`
	// Project is the project-level file, relative to the project
	// directory and '/'-separated; empty when the host has none.
	Project string `json:"project,omitempty"`
	// ProjectNote is a caveat about the project-level file.
	ProjectNote string `json:"projectNote,omitempty"`
	// Notes are caveats about the user-level file, by GOOS.
	Notes map[string]string `json:"notes,omitempty"`
	// Docs is where the host documents its format.
	Docs string `json:"docs"`
	// Remote is the shape of an HTTP entry; nil when the host's file
	// takes none (see NoRemote).
	Remote *Remote `json:"remote,omitempty"`
	// NoRemote says, for a host without Remote, why and what to do
	// instead.
	NoRemote string `json:"noRemote,omitempty"`
}

// PerOS holds path templates for each operating system.
type PerOS struct {
	// Linux is for GOOS linux (and other Unix systems but darwin).
	Linux []string `json:"linux,omitempty"`
	// Darwin is for macOS.
	Darwin []string `json:"darwin,omitempty"`
	// Windows is for Windows.
	Windows []string `json:"windows,omitempty"`
}

// For returns the templates for GOOS goos.
func (p PerOS) For(goos string) []string {
	switch goos {
	case "darwin":
		return p.Darwin
	case "windows":
		return p.Windows
	}
	return p.Linux
}

// All returns the table, in display order.
func All() []Host { return slices.Clone(table) }

// IDs returns every host's ID, in table order.
func IDs() []string {
	ids := make([]string, len(table))
	for i, h := range table {
		ids[i] = h.ID
	}
	return ids
}

// Lookup returns the host with ID id.
func Lookup(id string) (Host, bool) {
	for _, h := range table {
		if h.ID == id {
			return h, true
		}
	}
	return Host{}, false
}

// System is the machine the paths are resolved for: its OS, the user's
// home directory and the environment.
type System struct {
	// OS is a GOOS value: "linux", "darwin", "windows".
	OS string
	// Home is the user's home directory ($HOME in templates).
	Home string
	// Env looks up an environment variable; nil means none is set.
	Env func(key string) (string, bool)
}

// Errors of path resolution.
var (
	// ErrNoProjectFile is returned for a project-level file of a host
	// that has none.
	ErrNoProjectFile = errors.New("no project-level configuration file")
	// ErrNoPath means no path template of a row could be resolved.
	ErrNoPath = errors.New("no path: the variables it needs are not set")
)

// sep is the path separator of goos.
func sep(goos string) string {
	if goos == "windows" {
		return `\`
	}
	return "/"
}

// isAbs reports whether p is an absolute path on goos.
func isAbs(goos, p string) bool {
	if goos == "windows" {
		return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, `\\`)
	}
	return strings.HasPrefix(p, "/")
}

// expand resolves one template; ok is false when its variable is unset
// or not an absolute path.
func (s System) expand(tmpl string) (string, bool) {
	parts := strings.Split(tmpl, "/")
	base := ""
	if v, ok := strings.CutPrefix(parts[0], "$"); ok {
		if v == "HOME" {
			base = s.Home
		} else if s.Env != nil {
			base, _ = s.Env(v)
		}
		if base == "" || !isAbs(s.OS, base) {
			return "", false
		}
		parts = parts[1:]
	}
	sp := sep(s.OS)
	out := strings.TrimRight(base, `/\`)
	for _, p := range parts {
		out += sp + p
	}
	if out == "" {
		return "", false
	}
	return out, true
}

// UserFile returns the path of h's user-level file on s.
func (h Host) UserFile(s System) (string, error) {
	for _, t := range h.User.For(s.OS) {
		if p, ok := s.expand(t); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("hosts: %s config on %s: %w", h.ID, s.OS, ErrNoPath)
}

// ProjectFile returns the path of h's project-level file in the project
// directory dir, or an error wrapping ErrNoProjectFile.
func (h Host) ProjectFile(s System, dir string) (string, error) {
	if h.Project == "" {
		return "", fmt.Errorf("hosts: %s: %w (it reads only its user-level file)", h.Name, ErrNoProjectFile)
	}
	return strings.TrimRight(dir, `/\`) + sep(s.OS) + strings.ReplaceAll(h.Project, "/", sep(s.OS)), nil
}

// Note returns the caveat about h's user-level file on s, if any.
func (h Host) Note(s System) string { return h.Notes[s.OS] }

// IsInstalled reports whether h looks installed on s: one of its
// Installed paths exists, or (without any) the directory of its
// user-level file does.
func (h Host) IsInstalled(s System) bool {
	marks := h.Installed.For(s.OS)
	if len(marks) == 0 {
		p, err := h.UserFile(s)
		if err != nil {
			return false
		}
		return exists(p[:strings.LastIndex(p, sep(s.OS))])
	}
	for _, t := range marks {
		if p, ok := s.expand(t); ok && exists(p) {
			return true
		}
	}
	return false
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// File is one host configuration file.
type File struct {
	// Host is the row the file belongs to.
	Host Host
	// Path is where the file is.
	Path string
	// Project marks a project-level file.
	Project bool
	// projectDir is the project directory of a file from Host.File: the
	// file must resolve inside it (checkInProject).
	projectDir string
	// hooks lets tests act between the steps of a write; nil otherwise.
	hooks *writeHooks
}

// File returns h's user-level file on s, or with projectDir set its
// project-level file there.
func (h Host) File(s System, projectDir string) (File, error) {
	if projectDir != "" {
		p, err := h.ProjectFile(s, projectDir)
		return File{Host: h, Path: p, Project: true, projectDir: projectDir}, err
	}
	p, err := h.UserFile(s)
	return File{Host: h, Path: p}, err
}

// Entry is what a host is told to run: remotemcp's absolute path and its
// arguments ("mcp", after --data-dir DIR when the host's remotemcp would
// not find the data directory by itself; see DataDirArg), or, for a host
// that connects to "remotemcp mcp --http", the endpoint's URL and the
// headers (the bearer token) to send.
type Entry struct {
	// Command is the absolute path of the remotemcp executable; empty in
	// an HTTP entry.
	Command string `json:"command,omitempty"`
	// Args are the arguments.
	Args []string `json:"args,omitempty"`
	// URL is the Streamable HTTP endpoint of an HTTP entry.
	URL string `json:"url,omitempty"`
	// Headers are sent with every request of an HTTP entry
	// ("Authorization": "Bearer TOKEN"). They are secrets: a file
	// written with them is made readable by its owner only.
	Headers map[string]string `json:"headers,omitempty"`
}

// NewEntry returns the entry that runs exe as "exe mcp", or with dataDir
// set "exe --data-dir DATADIR mcp".
func NewEntry(exe, dataDir string) Entry {
	if dataDir == "" {
		return Entry{Command: exe, Args: []string{"mcp"}}
	}
	return Entry{Command: exe, Args: []string{"--data-dir", dataDir, "mcp"}}
}

// NewHTTPEntry returns the entry that connects to the Streamable HTTP
// endpoint url with the bearer token tok.
func NewHTTPEntry(url, tok string) Entry {
	return Entry{URL: url, Headers: map[string]string{"Authorization": "Bearer " + tok}}
}

// IsHTTP reports whether e is an HTTP entry.
func (e Entry) IsHTTP() bool { return e.URL != "" }

// Bearer returns the token of e's Authorization header, if any.
func (e Entry) Bearer() (string, bool) {
	for k, v := range e.Headers {
		if strings.EqualFold(k, "Authorization") {
			scheme, tok, ok := strings.Cut(v, " ")
			if ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(tok) != "" {
				return strings.TrimSpace(tok), true
			}
		}
	}
	return "", false
}

// Remote is how a host's file names a remote (Streamable HTTP) server:
// the members of its entry besides the headers' values.
type Remote struct {
	// Type, if set, is written as the entry's "type" member ("http").
	Type string `json:"type,omitempty"`
	// URLKey is the member holding the URL ("url", "serverUrl",
	// "httpUrl").
	URLKey string `json:"urlKey"`
	// HeadersKey is the member holding the headers ("headers",
	// "http_headers").
	HeadersKey string `json:"headersKey"`
}

// ErrNoRemote is returned by Connect for an HTTP entry on a host whose
// file cannot name a remote server (Host.Remote is nil).
var ErrNoRemote = errors.New("its configuration file takes no remote (HTTP) servers")

// ErrGoRun is returned by CheckCommand for the temporary binary of "go
// run", which is deleted when it exits.
var ErrGoRun = errors.New(`this is a temporary binary built by "go run", deleted when it exits: install remotemcp (go install ./cmd/remotemcp in its checkout) and run the installed one`)

// CheckCommand refuses a command no host could run later: a relative
// path, or a "go run" binary (a path with a go-build* directory, as under
// os.TempDir()/go-build…/b001/exe/).
func CheckCommand(goos, path string) error {
	if !isAbs(goos, path) {
		return fmt.Errorf("hosts: command %q is not an absolute path", path)
	}
	for _, el := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
		if strings.HasPrefix(el, "go-build") {
			return fmt.Errorf("hosts: command %s: %w", path, ErrGoRun)
		}
	}
	return nil
}

// Status is what "hosts list" shows about one host.
type Status struct {
	// ID is the host's ID.
	ID string `json:"id"`
	// Name is its display name.
	Name string `json:"name"`
	// Installed reports whether the host looks installed (see
	// Host.IsInstalled).
	Installed bool `json:"installed"`
	// Connected reports whether the file has a "remotemcp" entry.
	Connected bool `json:"connected"`
	// File is the configuration file; empty when the host has no file of
	// the kind asked for (a project-level one).
	File string `json:"file,omitempty"`
	// Exists reports whether File exists.
	Exists bool `json:"exists"`
	// Note is a caveat about the file.
	Note string `json:"note,omitempty"`
	// Error says why File could not be read or resolved.
	Error string `json:"error,omitempty"`
}

// List returns the status of every host on s: of its user-level file, or
// with projectDir set of its project-level file there.
func List(s System, projectDir string) []Status {
	out := make([]Status, 0, len(table))
	for _, h := range table {
		st := Status{ID: h.ID, Name: h.Name, Installed: h.IsInstalled(s)}
		f, err := h.File(s, projectDir)
		switch {
		case errors.Is(err, ErrNoProjectFile):
		case err != nil:
			st.Error = err.Error()
		default:
			st.File = f.Path
			st.Note = h.Note(s)
			if projectDir != "" {
				st.Note = h.ProjectNote
			}
			st.Exists, st.Connected, err = f.Connected()
			if err != nil {
				st.Error = err.Error()
			}
		}
		out = append(out, st)
	}
	return out
}

// Connected reports whether f exists and whether it has a "remotemcp"
// entry.
func (f File) Connected() (exists, connected bool, err error) {
	data, exists, err := readFile(f)
	if err != nil || !exists {
		return exists, false, err
	}
	doc, err := codecs[f.Host.Format].decode(data)
	if err != nil {
		return true, false, f.parseError(err)
	}
	servers, err := serversOf(doc, f.Host.ServersKey)
	if err != nil {
		return true, false, f.readError(err)
	}
	_, connected = servers[EntryName]
	return true, connected, nil
}

// readFile reads f; a missing file is not an error. Only a regular file
// of at most MaxFileSize bytes is read, and a project's file only inside
// its project (safefile.go).
func readFile(f File) (data []byte, exists bool, err error) {
	if err := f.checkInProject(); err != nil {
		return nil, false, err
	}
	data, err = readRegular(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, f.readError(err)
	}
	return data, true, nil
}

// what names f in messages: "cursor config /home/u/.cursor/mcp.json".
func (f File) what() string {
	kind := "config"
	if f.Project {
		kind = "project config"
	}
	return fmt.Sprintf("%s %s %s", f.Host.ID, kind, f.Path)
}

func (f File) readError(err error) error {
	return fmt.Errorf("hosts: read %s: %w", f.what(), err)
}
