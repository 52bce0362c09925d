package visible

import "testing"

// The agent's tests (agent/visible_test.go) cover the cases in depth; these
// pin what the CLI relies on.
func TestShowHidden(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"tab\tand newline\n", "tab\tand newline\n"},
		{"zero\u200bwidth", "zero[U+200B]width"},
		{"tag\U000E0041", "tag[U+E0041]"},
		{"bidi\u202eflip", "bidi[U+202E]flip"},
	} {
		if got := ShowHidden(tc.in); got != tc.want {
			t.Errorf("ShowHidden(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if i := Index(tc.in); (i >= 0) != (tc.in != tc.want) {
			t.Errorf("Index(%q) = %d", tc.in, i)
		}
	}
}
func TestHidden(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want bool
	}{
		{'a', false}, {' ', false}, {'\t', false}, {'\n', false}, {'\r', false},
		{0x00, true}, {0x1b, true}, {0x7f, true}, {0x85, true},
		{0x200B, true}, {0x200D, true}, {0x202E, true}, {0x2060, true}, {0xFEFF, true}, {0x00AD, true},
		{0xE0041, true}, {0xE007F, true},
		{0x115F, true}, {0x1160, true}, {0x3164, true}, {0xFFA0, true}, {0x2800, true},
		{0xFE00, true}, {0xFE0F, true}, {0xE0100, true}, {0xE01EF, true}, {0x180B, true}, {0x180F, true},
		{0x0301, false}, {'é', false}, {0x2028, false}, {0x2029, false},
	} {
		if got := Hidden(tc.r); got != tc.want {
			t.Errorf("Hidden(%U) = %v, want %v", tc.r, got, tc.want)
		}
	}
}
