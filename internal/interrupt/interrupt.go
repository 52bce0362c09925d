// Package interrupt turns SIGINT and SIGTERM into the cancellation of a
// command's context, and a second one into an immediate exit.
package interrupt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Context returns a context that the first SIGINT or SIGTERM
// cancels, so that the command stops cleanly; a second one ends the
// process at once with the shell's status for that signal (130 for
// SIGINT, 143 for SIGTERM), whatever the command is stuck in: a step
// blocked in a system call never sees its context (issue #20 item 4: a
// "hosts connect" blocked in open(2) survived SIGTERM). One goroutine
// watches both; stop ends it and restores the default handling.
//
// signal.NotifyContext with context.AfterFunc(ctx, stop) leaves a gap:
// between the first signal and the AfterFunc's stop, a second one goes to
// NotifyContext's buffered channel, which no one reads any more.
func Context(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for first := true; ; first = false {
			select {
			case <-quit:
				return
			case sig := <-ch:
				if first {
					cancel()
					continue
				}
				fmt.Fprintf(stderr, "remotemcp: %v again: exiting now\n", sig)
				os.Exit(128 + signalNumber(sig))
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(quit)
		<-done
		cancel()
	}
}

// signalNumber is sig's number (SIGINT 2, SIGTERM 15).
func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 2
}
