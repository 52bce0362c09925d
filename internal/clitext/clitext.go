// Package clitext makes text safe and readable on a terminal: cells and
// lines that server-written text cannot use to move the cursor or pass
// for remotemcp's own words, the small words the CLI's tables use,
// tables and "key: value" lists, and the JSON every --json prints.
package clitext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/remotemcp/remotemcp/internal/visible"
)

// Cell makes text safe for one table cell or line: whitespace becomes a
// space, control characters and bidirectional overrides U+FFFD.
func Cell(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unsafeRune(r):
			return '\uFFFD'
		}
		return r
	}, s)
}

// Text makes multi-line text from a server safe for a terminal: newlines
// and tabs stay, other control characters become U+FFFD.
func Text(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unsafeRune(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// unsafeRune reports characters that could change what a terminal shows:
// control characters, line separators and bidirectional controls.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' || r == '\u200e' || r == '\u200f'
}

// Shown is Cell of server text with its hidden characters written as
// [U+XXXX] (package visible), so that a person sees what a model reads.
func Shown(s string) string { return Cell(visible.ShowHidden(s)) }

// Untrusted shows server-written text on one line, marked as the
// server's, cut to 300 characters ("" stays "").
func Untrusted(s string) string {
	if s == "" {
		return ""
	}
	r := []rune(Cell(s))
	if len(r) > 300 {
		r = append(r[:300], '…')
	}
	return "(from the server, untrusted) " + string(r)
}

// Indented prints untrusted multi-line text under a label, each further
// line indented like the first, so no line of it starts where ours do.
func Indented(label, s string) string {
	pad := strings.Repeat(" ", len(label))
	lines := strings.Split(Text(s), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = label + lines[i]
		} else {
			lines[i] = pad + lines[i]
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// FirstLine returns the first non-empty line of s, trimmed.
func FirstLine(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// Plural returns "1 tool" or "3 tools".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// OrDash returns s, or "-" when it is empty: an empty table cell would
// shift the columns a reader counts.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Clip cuts s to n runes, marking the cut.
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// YesNo is a boolean as the tables write it.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ShellQuote quotes s for a POSIX shell when it needs it, so that a
// command line printed as advice can be pasted as it is.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// NewTable returns a tab-separated table writer; call Flush when done.
func NewTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// WriteKV prints "key: value" lines, aligned, leaving out empty values;
// each value goes through Cell.
func WriteKV(w io.Writer, kv ...string) error {
	tw := NewTable(w)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", kv[i], Cell(kv[i+1]))
		}
	}
	return tw.Flush()
}

// WriteJSON writes v as indented JSON. Every --json output prints
// localapi's types: camelCase, listings as arrays, the server as "serverId".
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteJSONLines writes a JSON array, one compact element per line, so raw
// JSON inside (a tool's inputSchema) keeps the server's bytes.
func WriteJSONLines[T any](w io.Writer, items []T) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteString("[")
	for i, it := range items {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		if err := enc.Encode(it); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	if len(items) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

// NonNil makes a nil listing print as [] rather than null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
