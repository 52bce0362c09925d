package main

import (
	"io"
	"log/slog"
	"strings"

	"github.com/remotemcp/remotemcp/internal/redact"
)

// newLogger returns the logger of one invocation: text on stderr, warnings
// and errors only unless verbose, with secrets redacted from every
// attribute.
func newLogger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr}))
}

// sensitiveKeys are parts of attribute keys whose values are never logged.
var sensitiveKeys = []string{"token", "secret", "authorization", "password", "cookie", "bearer", "apikey", "api_key", "verifier"}

// redactAttr is a slog ReplaceAttr that hides secrets: the whole value of a
// sensitive key, and bearer tokens or secret query parameters inside any
// string or error value.
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
		if r := redactText(v.String()); r != v.String() {
			return slog.String(a.Key, r)
		}
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, redactText(err.Error()))
		}
	}
	return a
}

// redactText replaces bearer tokens and secret query parameters in s.
func redactText(s string) string { return redact.Text(s) }
