//go:build !unix

package store

import "os"

// Without flock the lock only excludes within this process: other
// processes on the same data directory are not excluded on this platform.
func tryLockFile(*os.File) (bool, error) { return true, nil }

func unlockFile(*os.File) {}
