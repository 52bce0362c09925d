package main

import (
	"context"
	"fmt"

	"github.com/remotemcp/remotemcp/daemon"
)

// daemonLine is what "status" says about the daemon of the data
// directory: its pid and settings page, and when its page took a free
// port because another program had the one asked for, which (issue #19
// item 1). "" when no daemon runs.
func (a *app) daemonLine(ctx context.Context) string {
	in, err := daemon.Running(ctx, a.dataDirPath())
	if err != nil {
		return ""
	}
	s := fmt.Sprintf("daemon: pid %d, settings page %s", in.PID, in.URL)
	if in.RequestedAddr != "" {
		s += fmt.Sprintf(" (%s was taken)", in.RequestedAddr)
	}
	return s
}

// movedPageNote is what "open" adds when the daemon's page is not where
// it was asked to be; "" otherwise.
func (a *app) movedPageNote(ctx context.Context) string {
	in, err := daemon.Running(ctx, a.dataDirPath())
	if err != nil || in.RequestedAddr == "" {
		return ""
	}
	return fmt.Sprintf("the settings page is on %s: %s was taken by another program when the daemon started", in.URL, in.RequestedAddr)
}
