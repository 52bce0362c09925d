//go:build !unix

package store

import "testing"

// runAsNobody needs setuid credentials, which only unix has; the caller
// skips Windows before it gets here.
func runAsNobody(t *testing.T) {
	t.Skip("cannot re-run the test as an unprivileged user on this platform")
}
