package main

import (
	"io"
	"log/slog"

	"github.com/remotemcp/remotemcp/internal/redact"
)

// newLogger logs text on w (debug when verbose). Everything goes through
// redact.Handler: the message too, which a ReplaceAttr hook never sees,
// and values of any type (a *url.URL, an error inside a struct), not only
// strings and errors.
func newLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(redact.NewHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
}
