package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/remotemcp/remotemcp/agent"
)

// interactive reports whether someone can answer questions on stdin: the
// injected stdin is a terminal (Streams.Terminal, or an *os.File on a
// character device other than the null device, which `</dev/null` and
// daemons give).
func (a *app) interactive() bool {
	if a.streams.Terminal {
		return true
	}
	f, ok := a.streams.In.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// readLine reads one line typed at a prompt, without its line ending.
// io.EOF means nobody will answer. Approval and form prompts share one
// buffered reader, so lines typed ahead are not lost between them.
func (a *app) readLine() (string, error) {
	a.inMu.Lock()
	defer a.inMu.Unlock()
	if a.in == nil {
		a.in = bufio.NewReader(io.LimitReader(a.streams.In, 1<<20))
	}
	line, err := a.in.ReadString('\n')
	if err != nil && (line == "" || err != io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// askYesNo prints question on stderr and reads the answer; only y or yes
// (any case) is a yes, and no answer is a no.
func (a *app) askYesNo(question string) bool {
	fmt.Fprintf(a.streams.Err, "%s [y/N] ", question)
	line, err := a.readLine()
	if err != nil {
		fmt.Fprintln(a.streams.Err)
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// errNoTerminal is the refusal of a call that nobody can approve.
var errNoTerminal = errors.New("every remote tool call needs approval, and stdin is not a terminal to ask on; " +
	"run the command in a terminal, or add --yes to approve this call")

// cliApprover approves the tool calls of one invocation (R4.1): --yes
// approves them, otherwise the person at the terminal is asked, and
// without a terminal the call is refused. The server's annotations are
// shown but never skip the question.
type cliApprover struct {
	a   *app
	yes bool
}

// Approve asks for one call.
func (p cliApprover) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
	if p.yes {
		return agent.Allow(), nil
	}
	if !p.a.interactive() {
		return agent.Decision{}, errNoTerminal
	}
	p.a.describeCall(req.Tool, req.Arguments)
	if p.a.askYesNo(fmt.Sprintf("Allow %s to run with %s?", cell(req.Tool.Name), clip(cell(string(req.Arguments)), 200))) {
		return agent.Allow(), nil
	}
	return agent.Deny(""), nil
}

// describeCall shows on stderr what a call would run: server, tool,
// arguments and the server's annotations (display only).
func (a *app) describeCall(t agent.AgentTool, args []byte) {
	w := a.streams.Err
	fmt.Fprintf(w, "%s wants to run:\n", cell(t.Name))
	fmt.Fprintf(w, "  server:      %s\n", cell(t.ServerID))
	fmt.Fprintf(w, "  tool:        %s\n", cell(t.ToolName))
	if d := firstLine(t.Description); d != "" {
		fmt.Fprintf(w, "  description: %s (from the server)\n", clip(cell(d), 200))
	}
	fmt.Fprintf(w, "  arguments:   %s\n", cell(string(args)))
	if h := hints(t.Annotations); h != "" {
		fmt.Fprintf(w, "  annotations: %s (the server's own hints: they do not make the call safe)\n", h)
	}
}

// hints lists the annotations a server set, e.g. "readOnlyHint,
// destructiveHint=false".
func hints(an *agent.Annotations) string {
	if an == nil {
		return ""
	}
	var h []string
	if an.Title != "" {
		h = append(h, fmt.Sprintf("title=%q", cell(an.Title)))
	}
	if an.ReadOnlyHint {
		h = append(h, "readOnlyHint")
	}
	if an.DestructiveHint != nil {
		h = append(h, fmt.Sprintf("destructiveHint=%t", *an.DestructiveHint))
	}
	if an.IdempotentHint {
		h = append(h, "idempotentHint")
	}
	if an.OpenWorldHint != nil {
		h = append(h, fmt.Sprintf("openWorldHint=%t", *an.OpenWorldHint))
	}
	return strings.Join(h, ", ")
}

// clip cuts s to n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
