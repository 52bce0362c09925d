// Package ask puts questions to the person at the terminal: yes or no,
// and a server's question (elicitation) field by field; where nobody can
// answer here, it prints the command that answers from another shell.
// Questions are read from stdin and asked on stderr, so that stdout keeps
// the results alone.
package ask

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// Terminal is the person at one invocation's stdin and stderr. Every
// prompt reads through one buffered reader, so that a line typed ahead is
// not lost between two prompts; its methods are safe for concurrent use.
type Terminal struct {
	In  io.Reader
	Err io.Writer
	// Forced marks In as an interactive terminal whatever its type.
	Forced bool

	mu sync.Mutex
	r  *bufio.Reader

	formMu sync.Mutex // one question at a time
}

// Interactive reports whether stdin is a terminal (Forced, or a
// character device other than /dev/null).
func (t *Terminal) Interactive() bool {
	if t.Forced {
		return true
	}
	f, ok := t.In.(*os.File)
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

// Line reads one trimmed line from stdin (io.EOF: nobody will answer),
// at most 1 MiB in all.
func (t *Terminal) Line() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.r == nil {
		t.r = bufio.NewReader(io.LimitReader(t.In, 1<<20))
	}
	line, err := t.r.ReadString('\n')
	if err != nil && (line == "" || err != io.EOF) {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// YesNo prints question on stderr and reads the answer; only y or yes
// (any case) is a yes, and no answer is a no.
func (t *Terminal) YesNo(question string) bool {
	fmt.Fprintf(t.Err, "%s [y/N] ", question)
	line, err := t.Line()
	if err != nil {
		fmt.Fprintln(t.Err)
		return false
	}
	return slices.Contains([]string{"y", "yes"}, strings.ToLower(line))
}

// Answerer takes the person's answer to a question (the local API's
// Answer).
type Answerer interface {
	Answer(ctx context.Context, id string, a localapi.Answer) error
}

// Question answers a server's question at the terminal: accept, decline
// or cancel, then each field in the form's order; fields the engine
// refuses are asked again; the end of input cancels. One question is
// asked at a time.
func (t *Terminal) Question(ctx context.Context, e Answerer, card localapi.Card) {
	t.formMu.Lock()
	defer t.formMu.Unlock()
	w := t.Err
	fmt.Fprintf(w, "\nserver %s asks (its own words): %s\n", clitext.Cell(card.ServerID), clitext.Text(card.Message))
	action, ok := t.action()
	if !ok {
		fmt.Fprintln(w, "no answer (end of input): cancelling the question")
		action = "cancel"
	}
	ans := localapi.Answer{Action: localapi.Action(action)}
	var fields []localapi.Field
	if card.Form != nil && action == "accept" {
		ans.Content, fields = map[string]any{}, card.Form.Fields
	}
	for ctx.Err() == nil {
		for _, f := range fields {
			v, ok := t.field(f)
			if !ok {
				fmt.Fprintln(w, "no answer (end of input): cancelling the question")
				ans = localapi.Answer{Action: "cancel"}
				fields = nil
				break
			}
			if v == nil {
				delete(ans.Content, f.Name)
			} else {
				ans.Content[f.Name] = v
			}
		}
		if ctx.Err() != nil {
			return
		}
		err := e.Answer(ctx, card.ID, ans)
		le, _ := localapi.AsError(err)
		if err == nil || le == nil || len(le.Problems) == 0 || ans.Action != "accept" {
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(w, "question %s: your answer was not used: %s\n", card.ID, clitext.Cell(redact.Text(err.Error())))
			}
			return
		}
		for _, p := range le.Problems {
			fmt.Fprintf(w, "  %s: %s\n", clitext.Cell(p.Field), clitext.Cell(p.Problem))
		}
		fields = slices.DeleteFunc(slices.Clone(card.Form.Fields), func(f localapi.Field) bool {
			return !slices.ContainsFunc(le.Problems, func(p localapi.FieldProblem) bool { return p.Field == f.Name })
		})
		if len(fields) == 0 {
			return
		}
		fmt.Fprintln(w, "please answer again:")
	}
}

// action asks accept, decline or cancel, explaining any other answer;
// ok is false at the end of input.
func (t *Terminal) action() (string, bool) {
	for {
		fmt.Fprint(t.Err, "accept, decline or cancel? [accept] ")
		line, err := t.Line()
		if err != nil {
			return "", false
		}
		switch strings.ToLower(line) {
		case "", "a", "accept", "y", "yes":
			return "accept", true
		case "d", "decline", "n", "no":
			return "decline", true
		case "c", "cancel":
			return "cancel", true
		}
		fmt.Fprintln(t.Err, "type accept, decline or cancel; you will be asked for each field next")
	}
}

// field asks one field. An empty line leaves the field out (a required
// one without a default is asked again); a list is comma-separated; the
// engine converts and checks the rest.
func (t *Terminal) field(f localapi.Field) (any, bool) {
	for {
		prompt := "  " + FieldLabel(f)
		if f.Default != nil {
			d, _ := json.Marshal(f.Default)
			prompt += fmt.Sprintf(" [%s]", clitext.Cell(string(d)))
		}
		fmt.Fprint(t.Err, prompt+": ")
		line, err := t.Line()
		if err != nil {
			return nil, false
		}
		switch {
		case line == "" && f.Required && f.Default == nil:
			fmt.Fprintf(t.Err, "  %s is required\n", clitext.Cell(f.Name))
			continue
		case line == "":
			return nil, true
		}
		if f.Type == "array" {
			items := []any{}
			for v := range strings.SplitSeq(line, ",") {
				if v = strings.TrimSpace(v); v != "" {
					items = append(items, v)
				}
			}
			return items, true
		}
		return line, true
	}
}

// FieldLabel describes a form field: name, type, required or default,
// choices, and the server's description.
func FieldLabel(f localapi.Field) string {
	attrs := []string{f.Type}
	if f.Type == "array" {
		attrs[0] = "list"
	}
	if f.Required {
		attrs = append(attrs, "required")
	}
	if f.Default != nil {
		d, _ := json.Marshal(f.Default)
		attrs = append(attrs, "default "+string(d))
	}
	if len(f.Enum) > 0 {
		attrs = append(attrs, map[bool]string{true: "any", false: "one"}[f.Type == "array"]+" of "+strings.Join(f.Enum, ", "))
	}
	if f.Format != "" {
		attrs = append(attrs, f.Format)
	}
	s := fmt.Sprintf("%s (%s)", f.Name, strings.Join(attrs, ", "))
	if f.Title != "" {
		s += ": " + f.Title
	}
	if f.Description != "" {
		s += " — " + f.Description
	}
	return clitext.Cell(s)
}

// ExampleAnswer is an accept answer with a placeholder for every required
// field without a default.
func ExampleAnswer(form *localapi.Form) string {
	var parts []string
	for _, f := range form.Fields {
		if !f.Required || f.Default != nil {
			continue
		}
		v := map[string]string{"string": `"…"`, "boolean": "true", "array": `["…"]`}[f.Type]
		switch {
		case len(f.Enum) > 0 && f.Type == "array":
			v = fmt.Sprintf("[%q]", f.Enum[0])
		case len(f.Enum) > 0:
			v = fmt.Sprintf("%q", f.Enum[0])
		case v == "":
			v = "0"
		}
		parts = append(parts, fmt.Sprintf("%q: %s", f.Name, v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
