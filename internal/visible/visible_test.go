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
