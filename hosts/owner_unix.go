//go:build unix

package hosts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// openNonblock keeps open(2) from waiting for a FIFO's writer, should the
// path turn into one between the stat and the open.
const openNonblock = syscall.O_NONBLOCK

// keepOwner gives tmp, which will replace the file described by orig, that
// file's owner and group: root editing a user's ~/.claude.json must leave
// it (and its backup) the user's. When they cannot be kept (another
// user's file, edited without root) the write is refused rather than
// handing the file to this user.
func keepOwner(tmp *os.File, orig fs.FileInfo) error {
	want, ok := orig.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	fi, err := tmp.Stat()
	if err != nil {
		return err
	}
	got, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || got.Uid == want.Uid && got.Gid == want.Gid {
		return nil
	}
	if err := tmp.Chown(int(want.Uid), int(want.Gid)); err != nil {
		return fmt.Errorf("keep the file's owner (uid %d) and group (gid %d): %w; run remotemcp as the file's owner", want.Uid, want.Gid, err)
	}
	return nil
}

// mkdirOwned makes dir and its missing parents with mode perm. When this
// process runs as root they are given the owner and group of the nearest
// directory that existed, which is returned for the file about to be
// created there (nil when not root: files are the creator's): root
// connecting a user's host (sudo with the user's HOME) must leave files
// the user, and the host running as the user, can read.
func mkdirOwned(dir string, perm fs.FileMode) (owner fs.FileInfo, err error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			owner = fi
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(d) == d {
			return nil, err
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, nil
	}
	st, ok := owner.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, nil
	}
	for _, d := range missing {
		if err := os.Lchown(d, int(st.Uid), int(st.Gid)); err != nil {
			return nil, fmt.Errorf("give %s the owner of %s: %w", d, filepath.Dir(missing[len(missing)-1]), err)
		}
	}
	return owner, nil
}
