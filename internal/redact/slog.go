package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler is a slog.Handler that redacts before it passes records on:
// the message and every value go through Text, and the value of an
// attribute whose key names a secret (token, client_secret,
// Authorization …, as classified for fields) is replaced whole. Values
// that are not strings (errors, Stringers, structs) are redacted in the
// text form a handler would print, so a URL or an error inside a struct
// is covered too; numbers, booleans, times and durations pass unchanged.
type Handler struct{ next slog.Handler }

// NewHandler returns a Handler that writes through next.
func NewHandler(next slog.Handler) *Handler { return &Handler{next: next} }

// Enabled reports whether next handles records at level l.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle redacts r and passes it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(Attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs redacts as and passes them on.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = Attr(a)
	}
	return &Handler{next: h.next.WithAttrs(red)}
}

// WithGroup passes the group on; its attributes are redacted as they come.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name)}
}

// Attr returns a with its value redacted: whole when the key names a
// secret, else through Text; groups are redacted member by member.
func Attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		members := v.Group()
		red := make([]any, len(members))
		for i, m := range members {
			red[i] = Attr(m)
		}
		return slog.Group(a.Key, red...)
	}
	var text string
	switch v.Kind() {
	case slog.KindString:
		text = v.String()
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			text = x.Error()
		case fmt.Stringer:
			text = x.String()
		case []byte:
			text = string(x)
		default:
			text = fmt.Sprintf("%+v", x)
		}
	default:
		// Numbers, booleans, times and durations hold no secret text,
		// but a secret-named one (a numeric PIN) is still hidden.
		if k := classify(a.Key); k == secretField || k == headerField {
			return slog.String(a.Key, Redacted)
		}
		return slog.Attr{Key: a.Key, Value: v}
	}
	switch classify(a.Key) {
	case secretField, headerField:
		if text != "" {
			return slog.String(a.Key, Redacted)
		}
	case numberField:
		if text != "" && !isNumber(text) {
			return slog.String(a.Key, Redacted)
		}
	}
	if r := Text(text); r != text || v.Kind() == slog.KindAny {
		return slog.String(a.Key, r)
	}
	return slog.Attr{Key: a.Key, Value: v}
}
