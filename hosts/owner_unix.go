//go:build unix

package hosts

import (
	"fmt"
	"io/fs"
	"os"
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
