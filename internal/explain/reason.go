package explain

import (
	"fmt"
	"strings"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// ReasonTag names a failure's class, step and HTTP status: "network",
// or "auth, token, HTTP 401".
func ReasonTag(r localapi.Reason) string {
	parts := []string{string(r.Class)}
	if r.Step != "" {
		parts = append(parts, r.Step)
	}
	if r.HTTPStatus != 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d", r.HTTPStatus))
	}
	return strings.Join(parts, ", ")
}

// Reason formats why a server failed, whole: "network: …".
func Reason(r localapi.Reason) string {
	return clitext.Cell(ReasonTag(r) + ": " + redact.Text(r.Message))
}

// ReasonText formats why server s failed for text output: with verbose
// as Reason does, else as ShortReason does; cut reports that the
// library's chain was left out.
func ReasonText(s localapi.Server, verbose bool) (text string, cut bool) {
	if s.Reason == nil {
		return "", false
	}
	if verbose {
		return Reason(*s.Reason) + NextTry(s), false
	}
	msg, cut := ShortReason(s, *s.Reason)
	return clitext.Cell(ReasonTag(*s.Reason)+": "+redact.Text(msg)) + NextTry(s), cut
}

// NextTry says before when a failed server is not tried again (its
// backoff, issue #20 item 1), in local time; "" when no wait applies.
func NextTry(s localapi.Server) string {
	if s.RetryAt == nil || s.State == localapi.StateReady || s.State == localapi.StateNeedsAuth {
		return "" // a sign-in, not the clock, moves a server that needs one
	}
	return " (not tried again before " + s.RetryAt.Local().Format("15:04:05") + "; \"remotemcp connect " + s.ID + "\" tries now)"
}

// ShortReason is the reason of server s with the library's chain of
// wrapped errors cut to its innermost error, after remotemcp's words
// (the Lead of the server's state or of the reason's code in
// localapi.Table): "cannot reach URL: connection refused", "needs
// authorization: this server has not been signed in to yet". cut is
// false when the message is remotemcp's own sentence, returned whole.
func ShortReason(s localapi.Server, r localapi.Reason) (msg string, cut bool) {
	if !IsChain(r.Message) {
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
		return Innermost(r.Message), true
	}
	return lead + ": " + Innermost(r.Message), true
}
