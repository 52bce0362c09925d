package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/visible"
	"github.com/remotemcp/remotemcp/localapi"
)

// Held prints held changes for a person ("tools review"): server text
// goes through clitext.Shown, Text and Cell, so it cannot move the
// cursor, fake a line of ours, or hide characters a model reads (issue
// #20 item 3 review: tag, zero-width and bidi characters are written as
// [U+XXXX]). Each change names the hash of its new definition and the
// accept command that takes exactly that one.
func Held(w io.Writer, held []localapi.HeldTool) error {
	if len(held) == 0 {
		_, err := fmt.Fprintln(w, "no tool is held: every tool's definition is the one first seen")
		return err
	}
	var b strings.Builder
	for i, h := range held {
		if i > 0 {
			b.WriteString("\n")
		}
		if h.Unpinnable != "" {
			fmt.Fprintf(&b, "%s %s: %s\n", clitext.Shown(h.ServerID), clitext.Shown(h.Tool), clitext.Shown(h.Unpinnable))
			continue
		}
		fmt.Fprintf(&b, "%s %s: held since %s; pinned %s\n", clitext.Shown(h.ServerID), clitext.Shown(h.Tool), stamp(h.Seen), stamp(h.Pinned))
		for _, c := range h.Changes {
			fmt.Fprintf(&b, "  %s %s\n", clitext.Shown(c.Path), c.Kind)
			if c.Old != "" {
				b.WriteString(clitext.Indented("    old: ", visible.ShowHidden(c.Old)))
			}
			if c.New != "" {
				b.WriteString(clitext.Indented("    new: ", visible.ShowHidden(c.New)))
			}
		}
		fmt.Fprintf(&b, "  new definition: %s\n", clitext.Cell(h.NewHash))
		fmt.Fprintf(&b, "  accept: %s\n", acceptCommand(h))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// acceptCommand is the command that accepts exactly the definition of
// h that was shown (and is refused if the server changed it again).
func acceptCommand(h localapi.HeldTool) string {
	return fmt.Sprintf("remotemcp tools accept %s %s --hash %s", shellWord(h.ServerID), shellWord(visible.ShowHidden(h.Tool)), clitext.Cell(h.NewHash))
}

// shellWord quotes s for a POSIX shell when it is not a plain word.
func shellWord(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r == '/' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(clitext.Cell(s), "'", `'\''`) + "'"
}

// changeSummary is a one-line summary of a held change, for accept.
func changeSummary(h localapi.HeldTool) string {
	const most = 4
	parts := make([]string, 0, most+1)
	for i, c := range h.Changes {
		if i == most {
			parts = append(parts, fmt.Sprintf("%d more", len(h.Changes)-most))
			break
		}
		parts = append(parts, clitext.Shown(c.Path)+" "+c.Kind)
	}
	if len(parts) == 0 {
		return "no listed change"
	}
	return strings.Join(parts, ", ")
}

// stamp is when a definition was pinned or seen, in UTC to the minute.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// Accepted prints what "tools accept" pinned: per tool its new hash and
// what changed when it was read first (shown), else the --hash given.
func Accepted(w io.Writer, res *localapi.AcceptToolsResult, shown map[string]localapi.HeldTool, hash string) error {
	if len(res.Accepted) == 0 {
		_, err := fmt.Fprintf(w, "no tool of %s is held\n", clitext.Cell(res.ServerID))
		return err
	}
	var b strings.Builder
	for _, t := range res.Accepted {
		h, ok := shown[t]
		switch {
		case ok:
			fmt.Fprintf(&b, "accepted the new definition of %s on %s: %s (%s); offered again\n", clitext.Shown(t), clitext.Cell(res.ServerID), clitext.Cell(h.NewHash), changeSummary(h))
		case hash != "":
			fmt.Fprintf(&b, "accepted the new definition of %s on %s: %s; offered again\n", clitext.Shown(t), clitext.Cell(res.ServerID), clitext.Cell(hash))
		default:
			fmt.Fprintf(&b, "accepted the new definition of %s on %s; offered again\n", clitext.Shown(t), clitext.Cell(res.ServerID))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// HeldNames prints a server's held tools: one line for the changed ones
// (sep and end surround the review command), one per tool that cannot be
// pinned, with why (never offered; nothing to review).
func HeldNames(w io.Writer, s localapi.Server, sep, end string) {
	changed := slices.DeleteFunc(slices.Clone(s.HeldTools), func(t string) bool { _, u := s.Unpinnable[t]; return u })
	if len(changed) > 0 {
		shown := make([]string, len(changed))
		for i, t := range changed {
			shown[i] = clitext.Shown(t)
		}
		fmt.Fprintf(w, "held on %s (definition changed): %s%s \"remotemcp tools review %s\"%s\n",
			clitext.Cell(s.ID), strings.Join(shown, ", "), sep, clitext.Cell(s.ID), end)
	}
	for _, t := range slices.Sorted(maps.Keys(s.Unpinnable)) {
		fmt.Fprintf(w, "not offered on %s: %s %s\n", clitext.Cell(s.ID), clitext.Shown(t), clitext.Shown(s.Unpinnable[t]))
	}
}
