package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// jsonFlag adds --json to cmd; one command runs per invocation.
func (a *app) jsonFlag(cmd *cobra.Command, help string) *cobra.Command {
	cmd.Flags().BoolVar(&a.asJSON, "json", false, help)
	return cmd
}

// printList prints items as a JSON array with --json, else as a table of
// header and row(item) lines; an empty list says empty on stderr.
func printList[T any](a *app, items []T, empty, header string, row func(T) string) error {
	if a.asJSON {
		return clitext.WriteJSON(a.streams.Out, clitext.NonNil(items))
	}
	if len(items) == 0 {
		if empty != "" {
			fmt.Fprintln(a.streams.Err, empty)
		}
		return nil
	}
	tw := clitext.NewTable(a.streams.Out)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		fmt.Fprintln(tw, row(it))
	}
	return tw.Flush()
}

// printOne prints v as JSON with --json, else with text.
func (a *app) printOne(v any, plain func(w io.Writer) error) error {
	if a.asJSON {
		return clitext.WriteJSON(a.streams.Out, v)
	}
	return plain(a.streams.Out)
}

// printNotes prints remotemcp's notes on stderr.
func printNotes(a *app, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(a.streams.Err, clitext.Cell(n))
	}
}

// truncated notes on stderr what the size budget cut of a block.
func truncated(a *app, bl localapi.ContextBlock) {
	if t := bl.Truncated; t != nil {
		fmt.Fprintf(a.streams.Err, "[remotemcp: output truncated: showing the first %d of %d characters]\n", t.ShownChars, t.OriginalChars)
	}
}

// printServers prints servers as the listing commands do.
// Without --verbose a reason shows remotemcp's words and the innermost
// cause, and stderr says where the whole one is.
func (a *app) printServers(servers []localapi.Server) error {
	cut := false
	defer func() {
		if cut && !a.asJSON {
			fmt.Fprintln(a.streams.Err, "(run again with --verbose for the whole reason)")
		}
	}()
	return printList(a, servers, "no servers configured; add one with \"remotemcp servers add ID URL\" or \"remotemcp servers import FILE\"",
		"ID\tNAME\tENABLED\tCONNECT\tAUTH\tSTATE\tTOOLS\tURL\tREASON", func(s localapi.Server) string {
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
				var short bool
				reason, short = a.reasonText(s)
				cut = cut || short
			}
			return strings.Join([]string{clitext.Cell(s.ID), clitext.Cell(clitext.OrDash(s.Name)), clitext.YesNo(s.Enabled), connect,
				string(s.Auth.Kind), state, tools, clitext.Cell(redact.URL(s.URL)), reason}, "\t")
		})
}

// reasonTag names a failure's class, step and HTTP status: "network",
// or "auth, token, HTTP 401".
func reasonTag(r localapi.Reason) string {
	parts := []string{string(r.Class)}
	if r.Step != "" {
		parts = append(parts, r.Step)
	}
	if r.HTTPStatus != 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d", r.HTTPStatus))
	}
	return strings.Join(parts, ", ")
}

// describeReason formats why a server failed: "network: …".
func describeReason(r localapi.Reason) string {
	return clitext.Cell(reasonTag(r) + ": " + redact.Text(r.Message))
}

// reasonText formats why server s failed for text output: with --verbose
// as describeReason does, else as shortReason does; cut reports that the
// library's chain was left out.
func (a *app) reasonText(s localapi.Server) (text string, cut bool) {
	if s.Reason == nil {
		return "", false
	}
	if a.verbose {
		return describeReason(*s.Reason) + nextTry(s), false
	}
	msg, cut := shortReason(s, *s.Reason)
	return clitext.Cell(reasonTag(*s.Reason)+": "+redact.Text(msg)) + nextTry(s), cut
}

// nextTry says before when a failed server is not tried again (its
// backoff, issue #20 item 1), in local time; "" when no wait applies.
func nextTry(s localapi.Server) string {
	if s.RetryAt == nil || s.State == localapi.StateReady || s.State == localapi.StateNeedsAuth {
		return "" // a sign-in, not the clock, moves a server that needs one
	}
	return " (not tried again before " + s.RetryAt.Local().Format("15:04:05") + "; \"remotemcp connect " + s.ID + "\" tries now)"
}

// shortReason is the reason of server s with the library's chain of
// wrapped errors cut to its innermost error, after remotemcp's words
// (the Lead of the server's state or of the reason's code in
// localapi.Table): "cannot reach URL: connection refused", "needs
// authorization: this server has not been signed in to yet". cut is
// false when the message is remotemcp's own sentence, returned whole.
func shortReason(s localapi.Server, r localapi.Reason) (msg string, cut bool) {
	if !isChain(r.Message) {
		return r.Message, false
	}
	lead := localapi.Table.States[s.State].Lead
	if lead == "" {
		w, _ := localapi.Table.ReasonWords(r, string(s.Auth.Kind))
		if lead = w.Lead; strings.Contains(lead, "{url}") && s.URL == "" {
			lead = ""
		}
		lead = localapi.Fill(lead, map[string]string{"url": redact.URL(s.URL)})
	}
	if lead == "" {
		return innermost(r.Message), true
	}
	return lead + ": " + innermost(r.Message), true
}

// explain adds to an engine error the server's state and what the person
// can do, unless the message says it already.
func explain(w io.Writer, e *localapi.Error) {
	if s := e.Server; s != nil && s.Reason != nil {
		fmt.Fprintf(w, "  server %s: %s (%s)\n", clitext.Cell(s.ID), s.State, reasonTag(*s.Reason))
	}
	if h := hint(e); h != "" {
		if _, cmd, _ := strings.Cut(h, "\""); cmd == "" || !strings.Contains(e.Message, strings.SplitN(cmd, "\"", 2)[0]) {
			fmt.Fprintf(w, "  what to do: %s\n", h)
		}
	}
	if e.NotSent {
		fmt.Fprintln(w, "  nothing was sent to the server")
	}
}

// hint says what the person can do about an engine error, from the
// error's code and the server's state and reason, in the words of
// localapi.Table (the page's come from there too).
func hint(e *localapi.Error) string {
	t := localapi.Table
	if p := e.Permission; p != nil {
		return localapi.Fill(t.Reasons[localapi.ReasonPermission].CLI, map[string]string{"origin": p.Origin})
	}
	var s localapi.Server
	var r localapi.Reason
	if e.Server != nil {
		s = *e.Server
		if s.Reason != nil {
			r = *s.Reason
		}
	}
	vars := map[string]string{"id": s.ID, "url": clitext.Cell(redact.URL(s.URL))}
	switch {
	case e.Code == localapi.CodeLoginRequired || s.State == localapi.StateNeedsAuth:
		return localapi.Fill(t.States[localapi.StateNeedsAuth].CLI, vars)
	case e.Code == localapi.CodeNotFound || s.ID == "":
		return ""
	}
	if localapi.WordsCode(r) == localapi.ReasonPermission {
		return "" // without the origin, the advice cannot name it
	}
	w, _ := t.ReasonWords(r, string(s.Auth.Kind))
	return localapi.Fill(w.CLI, vars)
}
