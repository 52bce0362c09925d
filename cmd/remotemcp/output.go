package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/manager"
)

// writeJSON writes v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns a tab-separated table writer; call Flush when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// cell makes text from a server or a config safe for one table cell or
// one line on a terminal: whitespace becomes a space, control characters
// (escape sequences included) and bidirectional overrides become U+FFFD.
func cell(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unsafeRune(r):
			return '\uFFFD'
		}
		return r
	}, s)
}

// text makes multi-line text from a server safe for a terminal: newlines
// and tabs stay, other control characters become U+FFFD.
func text(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unsafeRune(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// unsafeRune reports characters that could change what a terminal shows:
// control characters, line separators and bidirectional controls.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' ||
		r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' || r == '\u200e' || r == '\u200f'
}

// firstLine returns the first non-empty line of s, trimmed.
func firstLine(s string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// plural returns "1 tool" or "3 tools".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// serverRow is one server in `servers list` and `status`, as JSON: exactly
// these fields.
type serverRow struct {
	ID               string          `json:"id"`
	Name             string          `json:"name"`
	URL              string          `json:"url"`
	Enabled          bool            `json:"enabled"`
	ConnectOnStartup bool            `json:"connectOnStartup"`
	Auth             string          `json:"auth"`
	State            manager.State   `json:"state"`
	Reason           *manager.Reason `json:"reason"`
	ToolCount        int             `json:"toolCount"`
}

// rowOfConfig is a stored server that this process has not connected.
func rowOfConfig(s config.Server) serverRow {
	return serverRow{
		ID: s.ID, Name: s.Name, URL: s.URL, Enabled: s.Enabled,
		ConnectOnStartup: s.ConnectOnStartup, Auth: authKind(s.Auth.Kind),
		State: manager.StateDisconnected,
	}
}

// rowOfStatus is a server's live status.
func rowOfStatus(s manager.ServerStatus) serverRow {
	return serverRow{
		ID: s.ID, Name: s.Name, URL: s.URL, Enabled: s.Enabled,
		ConnectOnStartup: s.ConnectOnStartup, Auth: authKind(config.AuthKind(s.Auth)),
		State: s.State, Reason: s.Reason, ToolCount: s.ToolCount,
	}
}

func authKind(k config.AuthKind) string {
	if k == "" {
		return string(config.AuthNone)
	}
	return string(k)
}

// writeServerTable prints servers as a table. Without live state (servers
// list), STATE and TOOLS show "-": nothing was connected to find out.
func writeServerTable(w io.Writer, rows []serverRow, live bool) error {
	tw := newTable(w)
	reasons := false
	for _, r := range rows {
		reasons = reasons || r.Reason != nil
	}
	header := "ID\tNAME\tENABLED\tCONNECT\tAUTH\tSTATE\tTOOLS\tURL"
	if reasons {
		header += "\tREASON"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		enabled, connect := "yes", "startup"
		if !r.Enabled {
			enabled = "no"
		}
		if !r.ConnectOnStartup {
			connect = "lazy"
		}
		state, tools := "-", "-"
		if live {
			state = string(r.State)
			if r.State == manager.StateReady || r.ToolCount > 0 {
				tools = fmt.Sprint(r.ToolCount)
			}
		}
		if !r.Enabled {
			state = "disabled"
		}
		line := strings.Join([]string{cell(r.ID), cell(orDash(r.Name)), enabled, connect, r.Auth, state, tools, cell(r.URL)}, "\t")
		if reasons {
			line += "\t"
			if r.Reason != nil {
				line += cell(r.Reason.String())
			}
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// describeReason formats an attributed failure: "error (network): …", or
// "error (auth, token, HTTP 401): …".
func describeReason(r manager.Reason) string {
	parts := []string{string(r.Class)}
	if r.Step != "" {
		parts = append(parts, r.Step)
	}
	if r.HTTPStatus != 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d", r.HTTPStatus))
	}
	return fmt.Sprintf("error (%s): %s", strings.Join(parts, ", "), cell(r.Message))
}

// reasonOf is the manager's attribution of a server's failure: the
// reason it recorded, else err attributed now.
func reasonOf(m *manager.Manager, id string, err error) manager.Reason {
	if m != nil {
		if st, serr := m.ServerStatusOf(id); serr == nil && st.Reason != nil && st.State == manager.StateError {
			return *st.Reason
		}
	}
	return manager.Attribute(err)
}

// reportFailure prints an attributed failure of server srv and what to do
// about it, on w (stderr).
func reportFailure(w io.Writer, srv config.Server, r manager.Reason, err error) {
	fmt.Fprintf(w, "%s\n", describeReason(r))
	if h := hint(srv, r, err); h != "" {
		fmt.Fprintf(w, "  what to do: %s\n", h)
	}
}

// hint says what the user can do about a failure.
func hint(srv config.Server, r manager.Reason, err error) string {
	id := srv.ID
	switch {
	case errors.Is(err, manager.ErrNoOAuth):
		return fmt.Sprintf("OAuth sign-in is not available in this CLI yet; if the server accepts a static token, use \"remotemcp servers set %s --bearer-env VAR\"", id)
	case errors.Is(err, manager.ErrDisabled):
		return fmt.Sprintf("enable it with \"remotemcp servers enable %s\"", id)
	case errors.Is(err, manager.ErrToolDisabled):
		return fmt.Sprintf("switch the tool on with \"remotemcp servers set %s --enable-tool TOOL\"", id)
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && r.Class == manager.ClassProtocol {
		return fmt.Sprintf("the server refused the request; check the tool name and the arguments against its input schema (\"remotemcp tools --server %s --json\")", id)
	}
	switch r.Class {
	case manager.ClassNetwork:
		return fmt.Sprintf("check that %s is the right URL and that the server is up and reachable from here (change it with \"remotemcp servers set %s --url URL\")", cell(srv.URL), id)
	case manager.ClassTLS:
		return "the server's TLS certificate was not accepted; check the host name in the URL, or the system's certificate store"
	case manager.ClassTimeout:
		return "the server did not answer in time; check that it is up, then try again"
	case manager.ClassCanceled:
		return "the operation was interrupted; run the command again"
	case manager.ClassAuth:
		if srv.Auth.Kind == config.AuthBearer {
			return fmt.Sprintf("the server refused the bearer token; give a valid one with \"remotemcp servers set %s --bearer-env VAR\" (or --bearer-stdin)", id)
		}
		if srv.Auth.Kind == config.AuthNone {
			return fmt.Sprintf("the server wants credentials; if it accepts a static token, use \"remotemcp servers set %s --bearer-env VAR\"", id)
		}
		return "the authorization failed at the step named above; check the server's OAuth settings"
	case manager.ClassHTTP:
		switch {
		case r.HTTPStatus == http.StatusNotFound:
			return fmt.Sprintf("check the URL's path: MCP endpoints are often at /mcp (change it with \"remotemcp servers set %s --url URL\")", id)
		case r.HTTPStatus == http.StatusMethodNotAllowed || r.HTTPStatus == http.StatusNotAcceptable || r.HTTPStatus == http.StatusUnsupportedMediaType:
			return "the URL does not look like a Streamable HTTP MCP endpoint (the legacy SSE transport is not supported); check the URL"
		case r.HTTPStatus == http.StatusTooManyRequests:
			return "the server is rate limiting; wait and try again"
		case r.HTTPStatus >= 500:
			return "the server failed; try again later or contact its operator"
		}
		return "check the URL and the server's documentation"
	case manager.ClassProtocol:
		return "the server's answers do not follow the MCP protocol; check that the URL is the server's Streamable HTTP MCP endpoint"
	case manager.ClassConfig:
		return fmt.Sprintf("check the configuration with \"remotemcp servers show %s\"", id)
	}
	return "run the command again with --verbose for details"
}
