package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

type wrapped struct{ Endpoint string }

func TestHandler(t *testing.T) {
	u, _ := url.Parse("https://h/mcp?secret=S1&jwt=J1&page=2")
	for _, c := range []struct {
		name string
		log  func(*slog.Logger)
		want []string // must appear
	}{
		{"message", func(l *slog.Logger) { l.Info("GET https://h/mcp?secret=S1 with Bearer S2") }, []string{"secret=[redacted]", "Bearer [redacted]"}},
		{"string value", func(l *slog.Logger) { l.Info("m", "url", "https://h/?jwt=S1&page=2") }, []string{"page=2"}},
		{"secret key", func(l *slog.Logger) { l.Info("m", "Authorization", "S1", "client_secret", "S2", "pin", 1234) }, []string{"Authorization=[redacted]", "pin=[redacted]"}},
		{"error", func(l *slog.Logger) { l.Info("m", "err", errors.New(`Post "https://h/?token=S1": EOF`)) }, []string{"token=[redacted]"}},
		{"stringer", func(l *slog.Logger) { l.Info("m", "u", u) }, []string{"page=2"}},
		{"struct", func(l *slog.Logger) { l.Info("m", "w", wrapped{"https://h/?sig=S1"}) }, []string{"sig=[redacted]"}},
		{"group", func(l *slog.Logger) { l.Info("m", slog.Group("auth", "token", "S1", "n", 3)) }, []string{"auth.n=3"}},
		{"with attrs", func(l *slog.Logger) { l.With("session", "S1").WithGroup("g").Info("m", "x", "Basic dXNlcjpTMQ==") }, []string{"session=[redacted]"}},
		{"status code", func(l *slog.Logger) { l.Info("m", "code", "404", "count", 2) }, []string{"code=404", "count=2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			c.log(slog.New(NewHandler(slog.NewTextHandler(&buf, nil))))
			out := buf.String()
			for _, s := range []string{"S1", "S2", "1234", "dXNlcjpTMQ"} {
				if strings.Contains(out, s) {
					t.Errorf("%q in log: %s", s, out)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("%q not in log: %s", w, out)
				}
			}
		})
	}
}
