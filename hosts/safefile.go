package hosts

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Reading another program's file safely (issue #20 item 4). A host's
// configuration file is a path anyone with write access to the project
// (or a dotfiles checkout) can make into something else: a FIFO blocks
// open(2) for ever, a link to /dev/zero is endless, a link out of the
// project redirects the edit. remotemcp reads only regular files of at
// most MaxFileSize bytes, and a project's file only when it resolves
// inside the project.

// MaxFileSize is the largest host configuration file remotemcp reads.
// Real ones are kilobytes; Claude Code's ~/.claude.json, its live state,
// reaches a few MiB.
const MaxFileSize = 16 << 20

// Errors of reading a host's file, wrapped with the file's name.
var (
	// ErrNotRegular means the path names something other than a regular
	// file (a directory, a FIFO, a device, a socket): it is not read.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge means the file is over MaxFileSize bytes.
	ErrTooLarge = fmt.Errorf("larger than %d MiB", MaxFileSize>>20)
	// ErrOutsideProject means a project-level file resolves, through
	// symbolic links, to a place outside the project directory.
	ErrOutsideProject = errors.New("it resolves outside the project")
)

// fileKind names a mode's type for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}

// checkRegular refuses what is not a regular file of at most
// MaxFileSize bytes.
func checkRegular(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("it is %s, %w: remotemcp edits only regular files; move it away and run again", fileKind(fi.Mode()), ErrNotRegular)
	}
	if fi.Size() > MaxFileSize {
		return fmt.Errorf("it has %d bytes, %w: this is not a host configuration file; move it away and run again", fi.Size(), ErrTooLarge)
	}
	return nil
}

// readRegular reads path (following symbolic links) when it is a regular
// file of at most MaxFileSize bytes. It stats before it opens, so a FIFO
// or a device is never opened (opening a device can act; opening a FIFO
// waits for a writer), opens without blocking all the same in case the
// path was swapped meanwhile, checks the opened file again, and reads at
// most MaxFileSize+1 bytes in case it grows.
func readRegular(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegular(fi); err != nil {
		return nil, err
	}
	fd, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer fd.Close() // read-only: a close error loses nothing
	if fi, err = fd.Stat(); err != nil {
		return nil, err
	}
	if err := checkRegular(fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(fd, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("it grew past %d bytes while being read, %w", MaxFileSize, ErrTooLarge)
	}
	return data, nil
}

// checkInProject refuses a project-level file that resolves, through
// symbolic links in the file or its directories, outside the project
// directory: a .cursor/mcp.json linked to ~/.config/Code/User/settings.json
// would have remotemcp edit a user-level file under the project's name.
// A file of no project passes.
func (f File) checkInProject() error {
	if f.projectDir == "" {
		return nil
	}
	root, err := filepath.EvalSymlinks(f.projectDir)
	if err != nil {
		return fmt.Errorf("hosts: project directory %s: %w", f.projectDir, err)
	}
	real, err := resolveExisting(f.Path)
	if err != nil {
		return fmt.Errorf("hosts: resolve %s: %w", f.what(), err)
	}
	if !within(root, real) {
		return fmt.Errorf("hosts: %s: %w (to %s, not in the project %s): remove the symbolic link, or connect the user-level file (without --project); nothing was changed",
			f.what(), ErrOutsideProject, real, root)
	}
	return nil
}

// resolveExisting resolves the symbolic links of p, whose last elements
// may not exist yet: the deepest existing ancestor is resolved and the
// rest appended. A dangling link on the way is an error, since what it
// would create cannot be known.
func resolveExisting(p string) (string, error) {
	rest := ""
	for cur := filepath.Clean(p); ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			return "", fmt.Errorf("%s is a symbolic link to a missing target (or has one on its way): %w", cur, err)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether p is root or below it (both resolved).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
