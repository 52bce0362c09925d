package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/remotemcp/remotemcp/internal/redact"
)

// newLogger logs text on w (debug when verbose), secrets redacted.
func newLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr}))
}

// sensitiveKeys are parts of attribute keys whose values are never logged.
var sensitiveKeys = []string{"token", "secret", "authorization", "password", "cookie", "bearer", "apikey", "api_key", "verifier"}

// redactAttr hides the values of sensitive keys, and bearer tokens and
// secret query parameters inside strings and errors.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	k := strings.ToLower(a.Key)
	for _, s := range sensitiveKeys {
		if strings.Contains(k, s) {
			return slog.String(a.Key, "[redacted]")
		}
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if r := redact.Text(v.String()); r != v.String() {
			return slog.String(a.Key, r)
		}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, redact.Text(err.Error()))
		}
	}
	return a
}
