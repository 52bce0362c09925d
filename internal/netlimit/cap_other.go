//go:build !unix

package netlimit

// openFileLimit: no limit this package can read.
func openFileLimit() (uint64, bool) { return 0, false }
