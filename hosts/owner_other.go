//go:build !unix

package hosts

import (
	"io/fs"
	"os"
)

// openNonblock: Windows has no FIFOs in the file system to wait on.
const openNonblock = 0

// keepOwner: on Windows a file's owner and ACL come from its directory,
// which the replacement shares.
func keepOwner(*os.File, fs.FileInfo) error { return nil }

// mkdirOwned makes dir and its missing parents; on Windows they inherit
// their owner from their parent.
func mkdirOwned(dir string, perm fs.FileMode) (fs.FileInfo, error) {
	return nil, os.MkdirAll(dir, perm)
}
