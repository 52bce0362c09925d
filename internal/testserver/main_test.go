package main

import (
	"os"
	"testing"
)

// TestMain lets a test run this binary as the test server itself (no
// go build needed): with TESTSERVER_MAIN=1 it is main() with the
// arguments in TESTSERVER_ARGS, one per line.
func TestMain(m *testing.M) {
	if os.Getenv("TESTSERVER_MAIN") == "1" {
		os.Args = []string{"testserver"}
		if a := os.Getenv("TESTSERVER_ARGS"); a != "" {
			os.Args = append(os.Args, splitLines(a)...)
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '\n' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
