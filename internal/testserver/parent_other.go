//go:build !unix

package main

// parentGone is never closed where a dead parent cannot be detected
// portably (Windows does not re-parent orphans): stop the server with
// Ctrl-C or by killing it.
func parentGone() <-chan struct{} { return nil }
