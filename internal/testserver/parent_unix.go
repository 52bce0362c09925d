//go:build unix

package main

import (
	"os"
	"time"
)

// parentPoll is how often the parent is checked.
const parentPoll = 500 * time.Millisecond

// parentGone is closed when the process that started us exits: the
// kernel then re-parents us (to init or a subreaper), so os.Getppid
// changes. This is what stops the compiled child of `go run … &` when the
// job is killed: go run itself dies, and without this check its child
// would keep the port (issue #8 item 7). Polling needs no cgo, no prctl
// and works on every Unix; the cost is one system call per interval.
// A process started by init (ppid 1) has no parent to lose: never closed.
func parentGone() <-chan struct{} {
	start := os.Getppid()
	if start <= 1 {
		return nil
	}
	ch := make(chan struct{})
	go func() {
		t := time.NewTicker(parentPoll)
		defer t.Stop()
		for range t.C {
			if os.Getppid() != start {
				close(ch)
				return
			}
		}
	}()
	return ch
}
