package localapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/remotemcp/remotemcp/internal/visible"
)

// MaxArgumentsShown bounds, in characters, the arguments an approval
// question quotes; longer ones are cut with a marker that says how much is
// shown (the call still sends them all).
const MaxArgumentsShown = 2000

// MaxDescriptionShown bounds, in characters, the server's description an
// approval question quotes.
const MaxDescriptionShown = 300

// Question is the approval question in remotemcp's words, the same on
// every surface that asks it (a question to an MCP host, a card on the
// page and in "remotemcp elicitations"). remotemcp's own facts come first,
// each on its own line, and the server's description last, fenced, so no
// description can push the facts down or pass for one (issue #20 item 3):
//
//	remotemcp asks before sending a tool call (approval: ask). The lines up to the server's description are remotemcp's own.
//	Server: fx ("Fixture")
//	Tool: "echo"
//	Arguments: {"text":"hi"}
//	Accept sends this call once; decline or cancel sends nothing.
//
//	The server's description of the tool (its own words, not remotemcp's):
//	> Echoes the text back.
//
// Server is the server id, then its name when it has another one. Tool is
// the server's tool name, quoted. Arguments are the call's JSON, compact,
// with every invisible character (format characters, controls, line and
// paragraph separators) written as a JSON \u escape, so the line shows
// the same JSON value visibly; past MaxArgumentsShown characters they are
// cut with " …[remotemcp cut the arguments here: N of M characters
// shown, but all are sent: decline unless you know the rest]". The
// description block is left out when the server gave none; otherwise it
// is one paragraph (line breaks become spaces) of at most
// MaxDescriptionShown characters (cut with "…"), with control and format
// characters removed, after "> ".
func (ar ApprovalRequest) Question() string {
	var b strings.Builder
	b.WriteString("remotemcp asks before sending a tool call (approval: ask). The lines up to the server's description are remotemcp's own.\n")
	b.WriteString("Server: " + ar.ServerID)
	if name := oneLine(ar.ServerName, 200); name != "" && name != ar.ServerID {
		fmt.Fprintf(&b, " (%q)", name)
	}
	fmt.Fprintf(&b, "\nTool: %q\n", ar.ToolName)
	b.WriteString("Arguments: " + ShownArguments(ar.Arguments) + "\n")
	b.WriteString("Accept sends this call once; decline or cancel sends nothing.")
	if d := ShownDescription(ar.Description); d != "" {
		b.WriteString("\n\nThe server's description of the tool (its own words, not remotemcp's):\n> " + d)
	}
	return b.String()
}

// ShownDescription is a tool description as an approval question shows
// it: one paragraph of at most MaxDescriptionShown characters, without
// control or format characters (see Question).
func ShownDescription(d string) string { return oneLine(d, MaxDescriptionShown) }

// oneLine is s as one paragraph of at most max characters: invalid UTF-8
// dropped, every run of whitespace (line breaks included) one space,
// invisible characters (visible.Hidden) removed, trimmed, cut with "…".
func oneLine(s string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "") {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case visible.Hidden(r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if utf8.RuneCountInString(out) <= max {
		return out
	}
	return cutChars(out, max-1) + "…"
}

// ShownArguments is a call's arguments as an approval question shows
// them: compact JSON with invisible characters escaped, cut past
// MaxArgumentsShown characters with a marker (see Question). Arguments
// that are not JSON are shown as a JSON string of their text.
func ShownArguments(args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	if json.Valid(args) && json.Compact(&buf, args) == nil {
		args = buf.Bytes()
	} else {
		q, _ := json.Marshal(strings.ToValidUTF8(string(args), "\uFFFD")) // a string always marshals
		args = q
	}
	shown := escapeHidden(string(args))
	n := utf8.RuneCountInString(shown)
	if n <= MaxArgumentsShown {
		return shown
	}
	return fmt.Sprintf("%s …[remotemcp cut the arguments here: %d of %d characters shown, but all are sent: decline unless you know the rest]", cutChars(shown, MaxArgumentsShown), MaxArgumentsShown, n)
}

// escapeHidden writes every invisible character of valid JSON text as a
// \u escape (a surrogate pair above U+FFFF), which keeps it the same JSON
// value: such characters can only sit inside strings. Line and paragraph
// separators are escaped too, since they break lines where they are
// shown.
func escapeHidden(s string) string {
	var b strings.Builder
	for _, r := range s {
		if !visible.Hidden(r) && r != '\u2028' && r != '\u2029' {
			b.WriteRune(r)
			continue
		}
		if r > 0xFFFF {
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// cutChars is the first n characters of s.
func cutChars(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// ServerQuestion is a server's question (elicitation) as remotemcp puts
// it to an MCP host: a label in remotemcp's words that names the server,
// then the server's message with each line quoted, so that a message
// cannot pass for remotemcp's own text, an approval question included
// (issue #20 item 3):
//
//	Question from MCP server "fx" (its own words below, not remotemcp's):
//	> Which branch?
//	> (main or dev)
//
// Line breaks of every kind (\r\n, \r, NEL, U+2028, U+2029) start a new
// quoted line; control and format characters are removed; an empty
// message is "> (no text)".
func ServerQuestion(serverID, message string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Question from MCP server %q (its own words below, not remotemcp's):\n> ", serverID)
	start, text := b.Len(), false
	prev := rune(0)
	for _, r := range strings.ToValidUTF8(message, "") {
		switch {
		case r == '\n' && prev == '\r':
			// The second half of a \r\n.
		case r == '\n' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029':
			b.WriteString("\n> ")
		case r == '\t' || r == '\v' || r == '\f':
			b.WriteByte(' ')
		case visible.Hidden(r):
		default:
			b.WriteRune(r)
			text = text || !unicode.IsSpace(r)
		}
		prev = r
	}
	if !text {
		return b.String()[:start] + "(no text)"
	}
	return b.String()
}
