//go:build !unix

package launch

import "syscall"

// detached: nothing to set on this system.
func detached() *syscall.SysProcAttr { return nil }
