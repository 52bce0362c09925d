//go:build !unix

package bench

import "time"

// cpuTime is not available without getrusage: the CPU rows then say n/a.
func cpuTime() (time.Duration, bool) { return 0, false }
