//go:build !unix

package store

// firstNotWritable cannot tell without access(2); notWritable then names
// the data directory.
func firstNotWritable(string) (string, bool) { return "", false }

func isReadOnlyFS(error) bool { return false }
