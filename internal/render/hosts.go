package render

import (
	"fmt"
	"io"
	"net/url"
	"runtime"
	"strings"

	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/hosttoken"
	"github.com/remotemcp/remotemcp/internal/clitext"
)

// HostsHelp lists the hosts table for this OS, for "hosts --help": id,
// user-level file, project file, then the notes.
func HostsHelp() string {
	var b strings.Builder
	tw := clitext.NewTable(&b)
	for _, h := range hosts.All() {
		ts := h.User.For(runtime.GOOS)
		file := strings.Replace(ts[len(ts)-1], "$HOME", "~", 1)
		proj := h.Project
		if proj == "" {
			proj = "(none)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t--project: %s\n", h.ID, file, proj)
	}
	tw.Flush()
	for _, h := range hosts.All() {
		for _, n := range []string{h.Notes[runtime.GOOS], h.ProjectNote} {
			if n != "" {
				fmt.Fprintf(&b, "\nNote: %s.", n)
			}
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Hosts prints "hosts list": the table on out, notes and errors on errw.
func Hosts(out, errw io.Writer, list []hosts.Status) error {
	tw := clitext.NewTable(out)
	fmt.Fprintln(tw, "HOST\tINSTALLED\tCONNECTED\tFILE")
	for _, st := range list {
		conn := clitext.YesNo(st.Connected)
		switch {
		case st.Error != "":
			conn = "?"
		case st.File == "":
			conn = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", st.ID, clitext.YesNo(st.Installed), conn, clitext.Cell(clitext.OrDash(st.File)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, st := range list {
		if st.Note != "" {
			fmt.Fprintf(errw, "note: %s: %s\n", st.ID, clitext.Cell(st.Note))
		}
		if st.Error != "" {
			fmt.Fprintf(errw, "remotemcp: %s\n", clitext.Cell(st.Error))
		}
	}
	return nil
}

// HostChange reports a connect (connect) or disconnect of file f on sys:
// the diff of a dry run (tokens redacted), else what was done on out and
// what to do next on errw.
func HostChange(out, errw io.Writer, sys hosts.System, f hosts.File, c hosts.Change, connect, dryRun bool) error {
	h := f.Host
	var err error
	switch {
	case !c.Changed && connect:
		_, err = fmt.Fprintf(out, "%s is already connected: %s (unchanged)\n", h.ID, clitext.Cell(c.Path))
	case !c.Changed:
		_, err = fmt.Fprintf(out, "%s is not connected: %s (unchanged)\n", h.ID, clitext.Cell(c.Path))
	case dryRun:
		_, err = fmt.Fprint(out, clitext.Text(hosttoken.Redact(c.Diff())))
		fmt.Fprintf(errw, "dry run: %s not written\n", clitext.Cell(c.Path))
	default:
		verb := "disconnected"
		if connect {
			verb = "connected"
		}
		line := fmt.Sprintf("%s %s: %s", verb, h.ID, c.Path)
		if c.Backup != "" {
			line += fmt.Sprintf(" (previous version: %s)", c.Backup)
		}
		_, err = fmt.Fprintln(out, clitext.Cell(line))
		fmt.Fprintf(errw, "restart %s (or reload its MCP servers) to apply it\n", h.Name)
	}
	if connect && c.Changed {
		if !f.Project && !h.IsInstalled(sys) {
			fmt.Fprintf(errw, "note: %s does not look installed here; the file is ready for when it is\n", h.Name)
		}
		note := h.Note(sys)
		if f.Project {
			note = h.ProjectNote
		}
		if note != "" {
			fmt.Fprintf(errw, "note: %s\n", note)
		}
	}
	return err
}

// HostToken says on w (stderr), after HostChange, what an HTTP entry for
// the endpoint u did with tokens, and what serves the endpoint: rm is the
// command line that reaches the data directory holding the token.
func HostToken(w io.Writer, h hosts.Host, res hosttoken.Connected, dryRun bool, rm, u string) {
	switch {
	case dryRun && res.Change.Changed:
		fmt.Fprintln(w, "dry run: no token was created; the diff shows a placeholder where it would be")
	case res.Created != "":
		fmt.Fprintf(w, "created the token %q for it, written only into that file (the file is readable by you alone; \"remotemcp mcp token revoke %s\" revokes it)\n", res.Created, res.Created)
		if res.Revoked != "" {
			fmt.Fprintf(w, "revoked the token %q of the entry it replaced\n", res.Revoked)
		}
	}
	if res.Change.Changed {
		fmt.Fprintf(w, "the endpoint must be running for %s to connect: \"%s mcp --http %s\" (or \"%s serve --mcp-http %s\")\n", h.Name, rm, hostPort(u), rm, hostPort(u))
	}
}

// hostPort is the HOST:PORT of a checked URL.
func hostPort(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}
