//go:build unix

package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// access(2) modes; the syscall package does not name them on every unix.
const (
	accessW = 0x2
	accessX = 0x1
)

// firstNotWritable returns the first of dir and the existing files of
// writablePaths that this user cannot write (dir: create files in), or ""
// if all can be written. known is always true: access(2) answers for the
// real user, which is the user remotemcp runs as.
func firstNotWritable(dir string) (path string, known bool) {
	if syscall.Access(dir, accessW|accessX) != nil {
		return dir, true
	}
	for _, name := range writablePaths {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if syscall.Access(p, accessW) != nil {
			return p, true
		}
	}
	return "", true
}

func isReadOnlyFS(err error) bool { return errors.Is(err, syscall.EROFS) }
