package redact

import (
	"regexp"
	"testing"
)

func TestText(t *testing.T) {
	cases := map[string]string{
		`Post "https://x/mcp?access_token=abc123": refused (Bearer eyJhbG.c.d)`: `Post "https://x/mcp?access_token=[redacted]": refused (Bearer [redacted])`,
		"https://cb/?code=XYZ&state=S":                                          "https://cb/?code=[redacted]&state=S",
		"https://h/mcp?key=sk-live-1":                                           "https://h/mcp?key=[redacted]",
		"nothing secret here: 503":                                              "nothing secret here: 503",
		"client_secret=hunter2, token=t":                                        "client_secret=[redacted], token=[redacted]",
	}
	for in, want := range cases {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzText: whatever the input, no bearer value survives and redaction is
// idempotent.
func FuzzText(f *testing.F) {
	f.Add("Bearer abc")
	f.Add("?token=x&code=y")
	f.Add("BeArer )")
	f.Fuzz(func(t *testing.T, s string) {
		out := Text(s)
		for _, m := range bearerValue.FindAllStringSubmatch(out, -1) {
			if m[1] != "[redacted]" {
				t.Fatalf("bearer value kept: %q → %q", s, out)
			}
		}
		if Text(out) != out {
			t.Fatalf("not idempotent: %q", s)
		}
	})
}

var bearerValue = regexp.MustCompile(`(?i)bearer\s+([^\s&"',;)]+)`)
