package agent

import "github.com/remotemcp/remotemcp/internal/visible"

// The invisible characters are package visible's (the CLI shows them too,
// without the agent).

// ShowHidden writes every character of s that shows nothing
// (visible.Hidden) as "[U+XXXX]" (visible.ShowHidden).
func ShowHidden(s string) string { return visible.ShowHidden(s) }
