// Package render writes the local API's values (localapi) as the CLI
// shows them to a person: table rows and their headers, "key: value"
// details, the lines that report what a command did, a tool call's
// approval question, progress and result. Every text a server wrote goes
// through clitext, so it cannot move the cursor or pass for remotemcp's
// own words; --json output is localapi's values as they are
// (clitext.WriteJSON), not this package's.
package render

import (
	"fmt"
	"io"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/localapi"
)

// Notes prints remotemcp's notes about a result on w (stderr).
func Notes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(w, clitext.Cell(n))
	}
}

// Truncated notes on w (stderr) what the size budget cut of a block.
func Truncated(w io.Writer, bl localapi.ContextBlock) {
	if t := bl.Truncated; t != nil {
		fmt.Fprintf(w, "[remotemcp: output truncated: showing the first %d of %d characters]\n", t.ShownChars, t.OriginalChars)
	}
}
