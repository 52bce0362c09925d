//go:build unix

package launch

import "syscall"

// detached runs the background daemon in its own session, so the host's
// signals to this process group do not reach it.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
