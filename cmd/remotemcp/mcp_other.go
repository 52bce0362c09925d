//go:build !unix

package main

import "syscall"

// detached: nothing to set on this system.
func detached() *syscall.SysProcAttr { return nil }
