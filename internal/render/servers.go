package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// ServerHeader heads the table of ServerRow lines ("servers list",
// "status").
const ServerHeader = "ID\tNAME\tENABLED\tCONNECT\tAUTH\tSTATE\tTOOLS\tURL\tREASON"

// NoServers is what the server listings say of an empty list.
const NoServers = "no servers configured; add one with \"remotemcp servers add ID URL\" or \"remotemcp servers import FILE\""

// MoreReason is said on stderr when a reason shown was cut (cut of
// ServerRow or explain.ReasonText).
const MoreReason = "(run again with --verbose for the whole reason)"

// ServerRow is server s as a table row under ServerHeader. Without
// verbose its reason shows remotemcp's words and the innermost cause, and
// cut reports that the library's chain was left out.
func ServerRow(s localapi.Server, verbose bool) (row string, cut bool) {
	connect, state, tools, reason := "startup", string(s.State), "-", ""
	if !s.ConnectOnStartup {
		connect = "lazy"
	}
	if !s.Enabled {
		state = "disabled"
	}
	if s.State == localapi.StateReady || s.ToolCount > 0 {
		tools = fmt.Sprint(s.ToolCount)
	}
	if len(s.HeldTools) > 0 {
		tools += fmt.Sprintf(" +%d held", len(s.HeldTools))
	}
	if s.Reason != nil {
		reason, cut = explain.ReasonText(s, verbose)
	}
	return strings.Join([]string{clitext.Cell(s.ID), clitext.Cell(clitext.OrDash(s.Name)), clitext.YesNo(s.Enabled), connect,
		string(s.Auth.Kind), state, tools, clitext.Cell(redact.URL(s.URL)), reason}, "\t"), cut
}

// ServerDetails prints one server as "key: value" lines ("servers
// show"), with reason (explain.ReasonText) after its state. Secrets are
// never shown: a token or a header says only that it is stored.
func ServerDetails(w io.Writer, s *localapi.Server, reason string) error {
	state := string(s.State)
	if reason != "" {
		state += " (" + reason + ")"
	}
	sealed := map[bool]string{true: "(stored sealed)"}
	return clitext.WriteKV(w, "id", s.ID, "name", s.Name, "url", redact.URL(s.URL), "enabled", clitext.YesNo(s.Enabled),
		"connect", map[bool]string{true: "at startup", false: "lazily, on first use"}[s.ConnectOnStartup],
		"auth", string(s.Auth.Kind), "token", sealed[s.Auth.HasToken], "client id", s.Auth.ClientID,
		"client metadata", s.Auth.ClientMetadataURL,
		"instructions", clitext.Untrusted(s.Instructions),
		"client secret", sealed[s.Auth.HasClientSecret], "scopes", strings.Join(s.Auth.Scopes, " "),
		"headers", headerList(s.HeaderNames),
		"protocol", s.ProtocolVersion, "log level", s.LogLevel,
		"approval", approvalLine(s.Approval), "trusted", trustedLine(s.Trusted),
		"disabled tools", strings.Join(s.DisabledTools, ", "), "pinned tools", strings.Join(s.PinnedTools, ", "), "tool timeout", s.ToolTimeout, "idle timeout", idleLine(s.IdleTimeout),
		"limits", s.Limits.String(),
		"origin", fmt.Sprintf("%s (allowed: %s)", s.Origin, clitext.YesNo(s.OriginGranted)), "state", state)
}

// approvalLine says who approves the server's calls through the MCP front
// end.
func approvalLine(a config.Approval) string {
	switch a {
	case config.ApprovalAsk:
		return "ask (remotemcp asks you before every call through remotemcp mcp)"
	case config.ApprovalHost, "":
		return "host (the MCP host's approval is the approval)"
	}
	return string(a)
}

// trustedLine says whether the server's annotations reach MCP hosts.
func trustedLine(t bool) string {
	if t {
		return "yes (its tool annotations are passed to MCP hosts)"
	}
	return "no (its tool annotations are dropped)"
}

// headerList is "A, B (stored sealed)", or "" for no headers.
func headerList(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return strings.Join(names, ", ") + " (stored sealed)"
}

// idleLine shows an idle timeout in the flag's words: "0s" is never.
func idleLine(v string) string {
	if v == "0s" {
		return "never"
	}
	return v
}

// Added prints what "servers add" did: the server, and the origins its
// adding allowed.
func Added(w io.Writer, res *localapi.AddServerResult) {
	fmt.Fprintf(w, "added %s %s%s\n", res.Server.ID, clitext.Cell(redact.URL(res.Server.URL)), headersNote(res.Server.HeaderNames))
	for _, o := range res.Granted {
		fmt.Fprintf(w, "granted %s (adding a server allows its own origin)\n", clitext.Cell(o))
	}
}

// headersNote is " (headers A, B sealed)" for a server with custom
// headers, "" otherwise: names only, never a value.
func headersNote(names []string) string {
	if len(names) == 0 {
		return ""
	}
	word := "headers"
	if len(names) == 1 {
		word = "header"
	}
	return " (" + word + " " + clitext.Cell(strings.Join(names, ", ")) + " stored sealed)"
}

// Updated prints what "servers set" changed on server id: what differs
// between before and after, what the request set that cannot be compared
// (a token, header values), or that nothing changed.
func Updated(w io.Writer, id string, before, after localapi.Server, req localapi.UpdateServerRequest) {
	what := Changes(before, after)
	if p := after.Auth.RedirectPort; req.RedirectPort != nil && p != before.Auth.RedirectPort {
		what = append(what, "redirect port "+redirectPort(p))
	}
	switch ac := req.Auth; {
	case ac != nil && ac.Token != "":
		what = append(what, "bearer token")
	case ac != nil:
		what = append(what, "auth "+string(ac.Kind))
	}
	// A header given is reported as set even when its value did not
	// change: the values cannot be compared here.
	for _, n := range slices.Sorted(maps.Keys(req.Headers)) {
		what = append(what, "header "+n)
	}
	for _, n := range before.HeaderNames {
		if !slices.ContainsFunc(after.HeaderNames, func(m string) bool { return strings.EqualFold(m, n) }) {
			what = append(what, "removed header "+n)
		}
	}
	if len(what) == 0 {
		fmt.Fprintf(w, "%s: nothing changed (the settings already have these values)\n", id)
		return
	}
	fmt.Fprintf(w, "updated %s: %s\n", id, strings.Join(what, ", "))
}

// Changes names what differs between two versions of a server.
func Changes(b, a localapi.Server) []string {
	var what []string
	for _, f := range []struct {
		name     string
		old, new any
	}{
		{"url", b.URL, a.URL}, {"name", b.Name, a.Name}, {"enabled", b.Enabled, a.Enabled},
		{"connect", b.ConnectOnStartup, a.ConnectOnStartup}, {"tool timeout", b.ToolTimeout, a.ToolTimeout},
		{"idle timeout", b.IdleTimeout, a.IdleTimeout},
		{"limits", b.Limits, a.Limits}, {"protocol version", b.ProtocolVersion, a.ProtocolVersion},
		{"log level", b.LogLevel, a.LogLevel}, {"approval", b.Approval, a.Approval},
		{"trusted", b.Trusted, a.Trusted},
	} {
		if f.old != f.new {
			what = append(what, f.name)
		}
	}
	for _, t := range a.DisabledTools {
		if !slices.Contains(b.DisabledTools, t) {
			what = append(what, "disabled "+t)
		}
	}
	for _, t := range b.DisabledTools {
		if !slices.Contains(a.DisabledTools, t) {
			what = append(what, "enabled "+t)
		}
	}
	for _, t := range a.PinnedTools {
		if !slices.Contains(b.PinnedTools, t) {
			what = append(what, "pinned "+t)
		}
	}
	for _, t := range b.PinnedTools {
		if !slices.Contains(a.PinnedTools, t) {
			what = append(what, "unpinned "+t)
		}
	}
	return what
}

// redirectPort is a stored redirect port as servers set reports it.
func redirectPort(p int) string {
	if p == 0 {
		return fmt.Sprintf("default (%d)", config.DefaultRedirectPort)
	}
	return strconv.Itoa(p)
}

// Import reports every entry of an import on out, and the counts on errw.
func Import(out, errw io.Writer, res *localapi.ImportResult) {
	for _, l := range []struct {
		verb string
		list []localapi.ImportedServer
	}{{"added", res.Added}, {"updated", res.Updated}, {"unchanged", res.Unchanged}} {
		for _, s := range l.list {
			hdr := ""
			if len(s.HeaderNames) > 0 {
				hdr = ", headers " + clitext.Cell(strings.Join(s.HeaderNames, ", ")) + " stored sealed"
			}
			fmt.Fprintf(out, "%s %s %s (auth %s%s)\n", l.verb, clitext.Cell(s.ID), clitext.Cell(redact.URL(s.URL)), s.Auth, hdr)
		}
	}
	for _, s := range res.Conflicts {
		fmt.Fprintf(out, "conflict %s: %s\n", clitext.Cell(clitext.OrDash(s.ID)), clitext.Cell(s.Reason))
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(out, "skipped %s: %s\n", clitext.Cell(s.Name), clitext.Cell(s.Reason))
	}
	for _, o := range res.Granted {
		fmt.Fprintf(out, "granted %s\n", clitext.Cell(o))
	}
	fmt.Fprintf(errw, "%d added, %d updated, %d unchanged, %d conflicts, %d skipped, %s granted\n", len(res.Added), len(res.Updated),
		len(res.Unchanged), len(res.Conflicts), len(res.Skipped), clitext.Plural(len(res.Granted), "origin", "origins"))
}
