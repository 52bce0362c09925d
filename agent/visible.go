package agent

import "github.com/remotemcp/remotemcp/internal/visible"

// The invisible characters are package visible's (the CLI shows them too,
// without the agent).

// Hidden reports whether r shows nothing (visible.Hidden).
func Hidden(r rune) bool { return visible.Hidden(r) }

// ShowHidden writes every Hidden character of s as "[U+XXXX]"
// (visible.ShowHidden).
func ShowHidden(s string) string { return visible.ShowHidden(s) }

// indexHidden is the byte index of s's first Hidden character, or -1.
func indexHidden(s string) int { return visible.Index(s) }
