package render

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// Table is how a listing prints as text: a header line, one row per item
// (cells separated by tabs, aligned on output), and what stderr says of
// an empty list ("" says nothing).
type Table[T any] struct {
	Header string
	Row    func(T) string
	Empty  string
}

// Write prints items as the table on out, or Empty on errw when there
// are none.
func (t Table[T]) Write(out, errw io.Writer, items []T) error {
	if len(items) == 0 {
		if t.Empty != "" {
			fmt.Fprintln(errw, t.Empty)
		}
		return nil
	}
	tw := clitext.NewTable(out)
	fmt.Fprintln(tw, t.Header)
	for _, it := range items {
		fmt.Fprintln(tw, t.Row(it))
	}
	return tw.Flush()
}

// Servers is the table of "servers list" and "status"; *cut becomes
// true when a reason shown was cut (ServerRow), to say MoreReason after.
func Servers(verbose bool, cut *bool) Table[localapi.Server] {
	return Table[localapi.Server]{Header: ServerHeader, Empty: NoServers, Row: func(s localapi.Server) string {
		row, short := ServerRow(s, verbose)
		*cut = *cut || short
		return row
	}}
}

// Tools is the table of "tools": the name "call" takes, and the first
// line of the server's description.
var Tools = Table[localapi.Tool]{Header: "NAME\tDESCRIPTION", Row: func(t localapi.Tool) string {
	return clitext.Cell(t.Name) + "\t" + clitext.Cell(clitext.FirstLine(t.Description))
}}

// Prompts is the table of "prompts": the command "prompt" takes, its
// arguments (ArgUsage) and the first line of its description.
var Prompts = Table[localapi.Prompt]{Header: "COMMAND\tARGUMENTS\tDESCRIPTION", Row: func(p localapi.Prompt) string {
	return clitext.Cell(p.Command) + "\t" + clitext.Cell(clitext.OrDash(ArgUsage(p))) + "\t" + clitext.Cell(clitext.FirstLine(p.Description))
}}

// ArgUsage is "name=VALUE [style=VALUE]": required arguments first.
func ArgUsage(p localapi.Prompt) string {
	var req, opt []string
	for _, a := range p.Arguments {
		if a.Required {
			req = append(req, a.Name+"=VALUE")
		} else {
			opt = append(opt, "["+a.Name+"=VALUE]")
		}
	}
	return strings.Join(append(req, opt...), " ")
}

// Resources is the table of "resources": the mention "read" takes, and
// what the server says of it.
var Resources = Table[localapi.Resource]{Header: "MENTION\tKIND\tNAME\tMIME\tDESCRIPTION", Row: func(r localapi.Resource) string {
	kind, name := "resource", cmp.Or(r.Title, r.Name)
	if r.Template {
		kind = "template"
	}
	return strings.Join([]string{clitext.Cell(r.Mention()), kind, clitext.Cell(clitext.OrDash(name)), clitext.Cell(clitext.OrDash(r.MIMEType)), clitext.Cell(clitext.FirstLine(r.Description))}, "\t")
}}

// Log is the table of "logs", in the settings page's words (app.js
// requestCell): the REQUEST column carries the entry's kind, OAuth step
// and log level as tags, then the log message, the OAuth request's URL,
// the JSON-RPC method, or what a request without one is for.
var Log = Table[localapi.LogEntry]{Header: "TIME\tCONN\tHTTP\tREQUEST\tSTATUS\tMS\tERROR", Row: logRow, Empty: "no exchanges recorded yet"}

func logRow(x localapi.LogEntry) string {
	var req []string
	for _, tag := range []string{string(x.Kind), x.Step, x.Level} {
		if tag != "" {
			req = append(req, "["+tag+"]")
		}
	}
	switch {
	case x.Message != "":
		req = append(req, x.Message)
	case x.URL != "":
		req = append(req, redact.URL(x.URL))
	}
	switch {
	case x.RPCMethod != "":
		req = append(req, x.RPCMethod)
	case x.Kind == "" && x.Step == "" && x.HTTPMethod == http.MethodGet:
		req = append(req, "event stream")
	case x.Kind == "" && x.Step == "" && x.HTTPMethod == http.MethodDelete:
		req = append(req, "end of session")
	}
	status, ms := "-", "-"
	if x.Status != 0 {
		status = fmt.Sprint(x.Status)
	}
	// A log message is no request: it has no duration to show.
	if x.Kind != "log" {
		ms = fmt.Sprintf("%.1f", x.Millis)
	}
	return strings.Join([]string{x.Time.Local().Format(time.TimeOnly), clitext.Cell(clitext.OrDash(x.ConnectionID)), clitext.OrDash(x.HTTPMethod),
		clitext.Cell(clitext.OrDash(strings.Join(req, " "))), status, ms, clitext.Cell(clitext.OrDash(x.Error))}, "\t")
}

// Cards is the table of "elicitations list".
var Cards = Table[localapi.Card]{Header: "ID\tSTATUS\tSERVER\tTOOL\tCREATED\tMESSAGE",
	Empty: "no questions are waiting for an answer, and no call was interrupted",
	Row: func(c localapi.Card) string {
		return strings.Join([]string{clitext.Cell(c.ID), string(c.Status), clitext.Cell(c.ServerID), clitext.Cell(clitext.OrDash(c.Tool)),
			c.Created.Local().Format(time.DateTime), clitext.Clip(clitext.Cell(cardWords(c)), 80)}, "\t")
	}}

// cardWords says who asks (issue #20 item 3): remotemcp's own approval
// question by the call's arguments, a server's question as its words, so
// that a server cannot pass for remotemcp in the list.
func cardWords(c localapi.Card) string {
	if c.Kind == localapi.CardApproval {
		return "remotemcp asks before sending, arguments " + localapi.ShownArguments(c.Arguments)
	}
	return "the server's words: " + c.Message
}

// Grants is the table of "grants list".
var Grants = Table[localapi.Grant]{Header: "ORIGIN\tGRANTED\tBY", Row: func(g localapi.Grant) string {
	return clitext.Cell(g.Origin) + "\t" + g.GrantedAt.Format(time.RFC3339) + "\t" + clitext.Cell(string(g.By))
}}

// Pending is the table of "grants pending".
var Pending = Table[localapi.Pending]{Header: "ORIGIN\tPURPOSE\tSERVER\tCOUNT\tSINCE", Row: func(x localapi.Pending) string {
	return fmt.Sprintf("%s\t%s\t%s\t%d\t%s", clitext.Cell(x.Origin), x.Purpose, clitext.Cell(clitext.OrDash(x.ServerID)), x.Count, x.FirstSeen.Format(time.RFC3339))
}}

// HostTokens is the table of "mcp token list".
var HostTokens = Table[localapi.HostToken]{Header: "NAME\tCREATED", Empty: "no tokens: create one with \"remotemcp mcp token create NAME\"",
	Row: func(i localapi.HostToken) string {
		return clitext.Cell(i.Name) + "\t" + i.CreatedAt.Local().Format(time.DateTime)
	}}

// Users is the table of "users list" on a gateway.
var Users = Table[localapi.User]{Header: "EMAIL\tID\tSERVERS\tADDED", Empty: "no users yet: add one with \"remotemcp users add EMAIL\"", Row: func(u localapi.User) string {
	return clitext.Cell(u.Email) + "\t" + clitext.Cell(u.ID) + "\t" + fmt.Sprint(u.Servers) + "\t" + u.Created.Format("2006-01-02 15:04 MST")
}}

// SharedServers is the table of "servers list --shared" on a gateway.
var SharedServers = Table[localapi.SharedServer]{Header: "ID\tURL\tAUTH",
	Empty: "no shared servers: an admin shares one with \"remotemcp servers add ID URL --shared\"",
	Row: func(s localapi.SharedServer) string {
		return clitext.Cell(s.ID) + "\t" + clitext.Cell(s.URL) + "\t" + string(s.Auth)
	}}
