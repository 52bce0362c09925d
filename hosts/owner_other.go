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
