package main

import (
	"context"
	"os"
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/daemon"
)

// The test binary is not remotemcp, so "a daemon started in the
// background" runs serve in-process instead: from the command that
// started it until that command releases its engine (or its context
// ends), so that no daemon outlives its test's data directory. Tests that
// want a daemon of their own use startServe.
func init() {
	spawnDaemon = func(ctx context.Context, args []string, logf *os.File) (int, <-chan struct{}, func(), error) {
		// Tests never take the real 7717: the default becomes a free port.
		if i := slices.Index(args, "--addr"); i >= 0 && i+1 < len(args) && args[i+1] == daemon.DefaultAddr {
			args = slices.Clone(args)
			args[i+1] = "127.0.0.1:0"
		}
		// startDaemon closes logf once the daemon answers; the daemon
		// keeps writing to its own handle.
		out, err := os.OpenFile(logf.Name(), os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return 0, nil, nil, err
		}
		dctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer out.Close()
			run(dctx, args, Streams{In: strings.NewReader(""), Out: out, Err: out}, func(string) (string, bool) { return "", false })
		}()
		return os.Getpid(), done, func() { cancel(); <-done }, nil
	}
}
