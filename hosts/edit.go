package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
)

// codec reads and edits one file format.
type codec interface {
	// decode parses a whole file (empty or blank: an empty document) as
	// generic values; a syntax error is a *ParseError without Path.
	decode(data []byte) (map[string]any, error)
	// edit returns data with the entry set to e, or removed when e is nil,
	// every other byte kept where the format allows. It is called only
	// when data needs the change.
	edit(h Host, data []byte, e *Entry) ([]byte, error)
}

// codecs applies each Format.
var codecs = map[Format]codec{
	FormatJSON:  jsonCodec{strict: true},
	FormatJSONC: jsonCodec{},
	FormatTOML:  tomlCodec{},
}

// ParseError is a configuration file that is not valid in its format. The
// file is left unchanged.
type ParseError struct {
	// Host is the host's ID.
	Host string
	// Path is the file.
	Path string
	// Format is the syntax expected.
	Format Format
	// Line and Column locate the error, from 1; 0 when unknown.
	Line, Column int
	// Msg says what is wrong.
	Msg string
}

// Error names the file, the place, the problem and what to do.
func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hosts: read %s config %s: not valid %s", e.Host, e.Path, strings.ToUpper(string(e.Format)))
	if e.Line > 0 {
		fmt.Fprintf(&b, " at line %d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ", column %d", e.Column)
		}
	}
	fmt.Fprintf(&b, ": %s; fix the file (the host cannot read it either) or move it away, then run again; it was left unchanged", e.Msg)
	return b.String()
}

// parseError completes a codec's *ParseError with f's names.
func (f File) parseError(err error) error {
	if pe, ok := errors.AsType[*ParseError](err); ok {
		pe.Host, pe.Path = f.Host.ID, f.Path
		return pe
	}
	return f.readError(err)
}

// serversOf returns doc's servers map (nil when absent or null).
func serversOf(doc map[string]any, key string) (map[string]any, error) {
	switch v := doc[key].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("%q is %s, not an object of servers; fix it by hand", key, kindOf(v))
	}
}

// kindOf names the kind of a decoded value.
func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// entryValue is e as it decodes from h's file.
func (h Host) entryValue(e Entry) map[string]any {
	if e.IsHTTP() {
		hdrs := make(map[string]any, len(e.Headers))
		for k, v := range e.Headers {
			hdrs[k] = v
		}
		v := map[string]any{h.Remote.URLKey: e.URL, h.Remote.HeadersKey: hdrs}
		if h.Remote.Type != "" {
			v["type"] = h.Remote.Type
		}
		return v
	}
	args := make([]any, len(e.Args))
	for i, a := range e.Args {
		args[i] = a
	}
	v := map[string]any{"command": e.Command, "args": args}
	if h.EntryType != "" {
		v["type"] = h.EntryType
	}
	return v
}

// Change is one connect or disconnect of a file, planned or done.
type Change struct {
	// Path is the file.
	Path string `json:"path"`
	// Existed reports whether the file existed.
	Existed bool `json:"existed"`
	// Changed reports whether the file needs (or got) a change; false
	// means it already said what was asked.
	Changed bool `json:"changed"`
	// Written reports whether the change was written (not for --dry-run).
	Written bool `json:"written"`
	// Backup is the backup written, if any.
	Backup string `json:"backup,omitempty"`
	// Before and After are the file's contents (Before nil: absent).
	Before, After []byte `json:"-"`
	// secret marks a change whose file holds headers (a bearer token),
	// before or after: the file and its backup get no group or other
	// permissions.
	secret bool
}

// errChanged means the file changed between reading and writing it.
var errChanged = errors.New("the file changed while remotemcp was editing it (is the host running and writing it?); run again")

// Connect sets the "remotemcp" entry of f to e, creating the file (and
// its directory) if needed. With dryRun it only plans the change.
func (f File) Connect(e Entry, dryRun bool) (Change, error) {
	switch {
	case e.IsHTTP() && e.Command != "":
		return Change{}, errors.New("hosts: connect: an entry with both a command and a URL")
	case e.IsHTTP() && f.Host.Remote == nil:
		return Change{}, fmt.Errorf("hosts: connect %s over HTTP: %w: %s", f.Host.ID, ErrNoRemote, f.Host.NoRemote)
	case !e.IsHTTP() && e.Command == "":
		return Change{}, errors.New("hosts: connect: empty command")
	}
	return f.change(&e, dryRun)
}

// Entry returns f's "remotemcp" entry as it is now: ok is false when the
// file or the entry is missing. An entry of another shape than remotemcp
// writes is returned with what could be read of it.
func (f File) Entry() (e Entry, ok bool, err error) {
	data, exists, err := readFile(f)
	if err != nil || !exists {
		return Entry{}, false, err
	}
	doc, err := codecs[f.Host.Format].decode(data)
	if err != nil {
		return Entry{}, false, f.parseError(err)
	}
	servers, err := serversOf(doc, f.Host.ServersKey)
	if err != nil {
		return Entry{}, false, f.readError(err)
	}
	cur, ok := servers[EntryName]
	if !ok {
		return Entry{}, false, nil
	}
	return f.Host.entryOf(cur), true, nil
}

// entryOf reads a decoded entry of h's file.
func (h Host) entryOf(v any) Entry {
	m, _ := v.(map[string]any)
	var e Entry
	e.Command, _ = m["command"].(string)
	if args, ok := m["args"].([]any); ok {
		for _, a := range args {
			s, _ := a.(string)
			e.Args = append(e.Args, s)
		}
	}
	if h.Remote != nil {
		e.URL, _ = m[h.Remote.URLKey].(string)
		if hdrs, ok := m[h.Remote.HeadersKey].(map[string]any); ok {
			e.Headers = map[string]string{}
			for k, v := range hdrs {
				e.Headers[k], _ = v.(string)
			}
		}
	}
	return e
}

// Disconnect removes the "remotemcp" entry of f. A missing file or entry
// is no change. With dryRun it only plans the change.
func (f File) Disconnect(dryRun bool) (Change, error) { return f.change(nil, dryRun) }

// maxAttempts bounds how often change reads a file again that the host
// keeps rewriting; then it gives up with errChanged, file untouched.
const maxAttempts = 8

// change plans and, unless dryRun, writes; a file changed meanwhile (by
// the host) is read again and the edit redone, up to maxAttempts times.
func (f File) change(e *Entry, dryRun bool) (Change, error) {
	for attempt := 1; ; attempt++ {
		c, err := f.plan(e)
		if err != nil || !c.Changed || dryRun {
			return c, err
		}
		f.step("read")
		err = f.write(&c)
		if errors.Is(err, errChanged) && attempt < maxAttempts {
			continue
		}
		return c, err
	}
}

// plan reads f and computes the change that sets (e != nil) or removes
// the entry.
func (f File) plan(e *Entry) (Change, error) {
	data, existed, err := readFile(f)
	if err != nil {
		return Change{}, err
	}
	out, changed, err := f.Host.editData(data, e)
	if _, ok := errors.AsType[*ParseError](err); ok {
		return Change{}, f.parseError(err)
	}
	if err != nil {
		return Change{}, fmt.Errorf("hosts: edit %s: %w; it was left unchanged", f.what(), err)
	}
	c := Change{Path: f.Path, Existed: existed, Changed: changed, Before: data, After: out}
	if e != nil && len(e.Headers) > 0 {
		c.secret = true
	} else if old, ok, _ := f.Entry(); ok && len(old.Headers) > 0 {
		c.secret = true // the backup will hold the old entry's token
	}
	return c, nil
}

// errEditBug marks an edit that failed its own check.
var errEditBug = errors.New("this is a bug in remotemcp: please report it")

// editData returns data with the entry set to e (nil: removed); changed
// is false when data says so already. The result is re-read: the entry
// must be e and everything else as it was, else the error wraps
// errEditBug.
func (h Host) editData(data []byte, e *Entry) (out []byte, changed bool, err error) {
	cd := codecs[h.Format]
	before, err := cd.decode(data)
	if err != nil {
		return nil, false, err
	}
	servers, err := serversOf(before, h.ServersKey)
	if err != nil {
		return nil, false, err
	}
	cur, has := servers[EntryName]
	var want map[string]any
	if e != nil {
		want = h.entryValue(*e)
	}
	if e == nil && !has || e != nil && has && reflect.DeepEqual(cur, any(want)) {
		return data, false, nil
	}
	out, err = cd.edit(h, data, e)
	if err != nil {
		return nil, false, err
	}
	after, err := cd.decode(out)
	if err != nil {
		return nil, false, fmt.Errorf("the edited file would not parse (%v): %w", err, errEditBug)
	}
	servers, err = serversOf(after, h.ServersKey)
	if err != nil {
		return nil, false, fmt.Errorf("%v: %w", err, errEditBug)
	}
	got, has := servers[EntryName]
	if want == nil && has || want != nil && !reflect.DeepEqual(got, any(want)) {
		return nil, false, fmt.Errorf("the edited entry reads back as %v: %w", got, errEditBug)
	}
	if !reflect.DeepEqual(withoutEntry(before, h.ServersKey), withoutEntry(after, h.ServersKey)) {
		return nil, false, fmt.Errorf("the edit would change other entries: %w", errEditBug)
	}
	return out, true, nil
}

// withoutEntry returns doc without our entry, and without an empty or
// null servers map.
func withoutEntry(doc map[string]any, key string) map[string]any {
	out := maps.Clone(doc)
	switch servers := out[key].(type) {
	case nil:
		delete(out, key)
	case map[string]any:
		servers = maps.Clone(servers)
		delete(servers, EntryName)
		if len(servers) == 0 {
			delete(out, key)
		} else {
			out[key] = servers
		}
	}
	return out
}

// writeHooks lets tests act between the steps of a write.
type writeHooks struct {
	// step is called after each step: "read" (the plan), "backup",
	// "temp" (the new contents written and synced), "compared" (the last
	// comparison, right before the rename).
	step func(name string)
	// window, if set, is held around the last comparison and the rename:
	// the window that remains, in which a host's write would be lost.
	window sync.Locker
}

func (f File) step(name string) {
	if f.hooks != nil && f.hooks.step != nil {
		f.hooks.step(name)
	}
}

// write writes c.After over f (through a symbolic link to its target),
// first saving c.Before as the backup, keeping the file's mode, owner and
// group. It fails with errChanged when the file is no longer c.Before:
// checked first, and again right before the rename, so that a host
// writing the file while the backup and the temporary file are written
// and synced (milliseconds) is not overwritten; what remains is the
// comparison and the renames themselves (microseconds): the backup's,
// then the file's, so that an edit given up leaves the previous backup
// in place. A file that did
// not exist is created with a hard link, which never replaces one the
// host made meanwhile.
func (f File) write(c *Change) error {
	if err := f.checkInProject(); err != nil {
		return err
	}
	target := f.Path
	if c.Existed {
		if real, err := filepath.EvalSymlinks(f.Path); err == nil {
			target = real
		}
	}
	if err := sameAs(target, c); err != nil {
		return fmt.Errorf("hosts: write %s: %w", f.what(), err)
	}
	perm, dirPerm := fs.FileMode(0o600), fs.FileMode(0o700)
	if f.Project { // meant to be shared, like the rest of the project
		perm, dirPerm = 0o644, 0o755
	}
	if c.secret {
		perm = 0o600
	}
	var (
		orig      fs.FileInfo
		backup    = target + BackupSuffix
		backupTmp string
	)
	if c.Existed {
		var err error
		if orig, err = os.Stat(target); err != nil {
			return fmt.Errorf("hosts: write %s: %w", f.what(), err)
		}
		perm = orig.Mode().Perm()
		if c.secret {
			perm &^= 0o077
		}
		// The backup is written and synced now but put in place only
		// with the file, so an edit given up keeps the previous backup.
		keep := func(tmp string) error { backupTmp = tmp; return nil }
		if err := writeAtomic(backup, c.Before, perm, orig, keep); err != nil {
			return fmt.Errorf("hosts: back up %s to %s: %w", f.what(), backup, err)
		}
		defer func() {
			if backupTmp != "" { // not put in place: the file was not changed
				os.Remove(backupTmp)
			}
		}()
	} else {
		var err error
		if orig, err = mkdirOwned(filepath.Dir(target), dirPerm); err != nil {
			return fmt.Errorf("hosts: write %s: create its directory: %w", f.what(), err)
		}
	}
	f.step("backup")
	last := func(tmp string) error {
		f.step("temp")
		if f.hooks != nil && f.hooks.window != nil {
			f.hooks.window.Lock()
			defer f.hooks.window.Unlock()
		}
		if err := sameAs(target, c); err != nil {
			return err
		}
		f.step("compared")
		if !c.Existed {
			return createNew(tmp, target)
		}
		if err := os.Rename(backupTmp, backup); err != nil {
			return fmt.Errorf("back up to %s: %w", backup, err)
		}
		backupTmp, c.Backup = "", backup
		return os.Rename(tmp, target)
	}
	if err := writeAtomic(target, c.After, perm, orig, last); err != nil {
		return fmt.Errorf("hosts: write %s: %w", f.what(), err)
	}
	c.Written = true
	return nil
}

// createNew puts tmp at target only if nothing is there: a hard link
// fails when the host created the file after the last comparison (then
// errChanged, and the edit is redone), so creating a file leaves no
// window. Where the file system has no hard links, a rename.
func createNew(tmp, target string) error {
	err := os.Link(tmp, target)
	switch {
	case err == nil:
		// The file is in place; a temporary name left behind would be
		// litter, not a failure of the edit.
		os.Remove(tmp)
		return nil
	case errors.Is(err, fs.ErrExist):
		return errChanged
	}
	return os.Rename(tmp, target)
}

// sameAs checks that target still holds c.Before (or, for a file that did
// not exist, still does not exist); errChanged otherwise.
func sameAs(target string, c *Change) error {
	if !c.Existed {
		if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
			return errChanged
		}
		return nil
	}
	cur, err := readRegular(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errChanged
	case err != nil:
		return err
	case !bytes.Equal(cur, c.Before):
		return errChanged
	}
	return nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory with mode perm (and the owner and group of orig, when the
// file existed), synced, then renamed over path. rename, if set, does the
// renaming of the temporary file tmp (after a last check); nil renames at
// once.
func writeAtomic(path string, data []byte, perm fs.FileMode, orig fs.FileInfo, rename func(tmp string) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if orig != nil {
		if err = keepOwner(tmp, orig); err != nil {
			return err
		}
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if rename == nil {
		return os.Rename(name, path)
	}
	return rename(name)
}

// Diff shows the change as a unified diff of the lines that differ, with
// two lines of context; "" when nothing changes.
func (c Change) Diff() string {
	if !c.Changed {
		return ""
	}
	a, b := lines(c.Before), lines(c.After)
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	const context = 2
	from, to := max(p-context, 0), min(s, context)
	var out strings.Builder
	old := c.Path
	if !c.Existed {
		old = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", old, c.Path)
	fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(from, len(a)-s+to-from), hunkRange(from, len(b)-s+to-from))
	for _, l := range a[from:p] {
		out.WriteString(" " + l)
	}
	for _, l := range a[p : len(a)-s] {
		out.WriteString("-" + l)
	}
	for _, l := range b[p : len(b)-s] {
		out.WriteString("+" + l)
	}
	for _, l := range a[len(a)-s : len(a)-s+to] {
		out.WriteString(" " + l)
	}
	return out.String()
}

// hunkRange is a unified diff's "start,count" for count lines from the
// 0-based line from.
func hunkRange(from, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", from)
	}
	return fmt.Sprintf("%d,%d", from+1, count)
}

// lines splits b into lines, each ending in "\n" (one is added to a last
// line without it, with a marker).
func lines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b)+"\n\\ No newline at end of file\n")
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}
