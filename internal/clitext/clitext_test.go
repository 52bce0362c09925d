package clitext

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCellAndTextSanitize(t *testing.T) {
	for _, tc := range []struct{ in, cell, text string }{
		{"plain", "plain", "plain"},
		{"a\tb\nc", "a b c", "a\tb\nc"},
		{"red \x1b[31mtext", "red \uFFFD[31mtext", "red \uFFFD[31mtext"},
		{"bidi \u202eevil", "bidi \uFFFDevil", "bidi \uFFFDevil"},
		{"bell\a\r", "bell\uFFFD ", "bell\uFFFD\uFFFD"},
		{"line\u2028sep \u2066iso\u2069 \u200emark", "line\uFFFDsep \uFFFDiso\uFFFD \uFFFDmark", "line\uFFFDsep \uFFFDiso\uFFFD \uFFFDmark"},
	} {
		if got := Cell(tc.in); got != tc.cell {
			t.Errorf("Cell(%q) = %q, want %q", tc.in, got, tc.cell)
		}
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"FirstLine", FirstLine("\n  first line  \nsecond"), "first line"},
		{"FirstLine empty", FirstLine(" \n\t\n"), ""},
		{"Plural one", Plural(1, "tool", "tools"), "1 tool"},
		{"Plural many", Plural(0, "tool", "tools"), "0 tools"},
		{"OrDash", OrDash(""), "-"},
		{"OrDash kept", OrDash("x"), "x"},
		{"Clip short", Clip("héllo", 5), "héllo"},
		{"Clip cut", Clip("héllo", 2), "hé…"},
		{"YesNo", YesNo(true) + YesNo(false), "yesno"},
		{"ShellQuote plain", ShellQuote("/home/a_b/x-1.2:y@z%=,+"), "/home/a_b/x-1.2:y@z%=,+"},
		{"ShellQuote space", ShellQuote("/my dir"), "'/my dir'"},
		{"ShellQuote quote", ShellQuote("it's"), `'it'\''s'`},
		{"ShellQuote empty", ShellQuote(""), "''"},
		{"Shown", Shown("a\u200bb\tc"), "a[U+200B]b c"},
		{"Untrusted empty", Untrusted(""), ""},
		{"Untrusted", Untrusted("do\nthis"), "(from the server, untrusted) do this"},
		{"Untrusted long", Untrusted(strings.Repeat("x", 301)), "(from the server, untrusted) " + strings.Repeat("x", 300) + "…"},
		{"Indented", Indented("  old: ", "a\nb\x1b"), "  old: a\n       b\uFFFD\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestWriteKV(t *testing.T) {
	var b strings.Builder
	if err := WriteKV(&b, "id", "fx", "empty", "", "long key", "a\nb"); err != nil {
		t.Fatal(err)
	}
	if want := "id:        fx\nlong key:  a b\n"; b.String() != want {
		t.Fatalf("WriteKV:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestWriteJSON(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(*strings.Builder) error
		want  string
	}{
		{"object", func(b *strings.Builder) error { return WriteJSON(b, map[string]string{"a": "<&>"}) }, "{\n  \"a\": \"<&>\"\n}\n"},
		{"nil list", func(b *strings.Builder) error { return WriteJSON(b, NonNil[int](nil)) }, "[]\n"},
		{"lines empty", func(b *strings.Builder) error { return WriteJSONLines[int](b, nil) }, "[]\n"},
		{"lines raw kept", func(b *strings.Builder) error {
			return WriteJSONLines(b, []map[string]json.RawMessage{{"s": json.RawMessage(`{"z":1,"a":2}`)}, {"s": json.RawMessage(`3`)}})
		}, "[\n  {\"s\":{\"z\":1,\"a\":2}},\n  {\"s\":3}\n]\n"},
	} {
		var b strings.Builder
		if err := tc.write(&b); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if b.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}
