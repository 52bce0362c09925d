package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// interactive reports whether stdin is a terminal (Streams.Terminal, or a
// character device other than /dev/null).
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

// readLine reads one trimmed line from stdin (io.EOF: nobody will answer);
// all prompts share one buffered reader.
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
	return strings.TrimSpace(line), nil
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
	return slices.Contains([]string{"y", "yes"}, strings.ToLower(line))
}

// askQuestion answers a server's question at the terminal: accept, decline
// or cancel, then each field in the form's order; fields the engine
// refuses are asked again; the end of input cancels.
func (a *app) askQuestion(ctx context.Context, e Engine, card localapi.Card) {
	w := a.streams.Err
	fmt.Fprintf(w, "\nserver %s asks (its own words): %s\n", clitext.Cell(card.ServerID), clitext.Text(card.Message))
	action, ok := a.askAction()
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
			v, ok := a.askField(f)
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

// askAction asks accept, decline or cancel, explaining any other answer;
// ok is false at the end of input.
func (a *app) askAction() (string, bool) {
	for {
		fmt.Fprint(a.streams.Err, "accept, decline or cancel? [accept] ")
		line, err := a.readLine()
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
		fmt.Fprintln(a.streams.Err, "type accept, decline or cancel; you will be asked for each field next")
	}
}

// askField asks one field. An empty line leaves the field out (a required
// one without a default is asked again); a list is comma-separated; the
// engine converts and checks the rest.
func (a *app) askField(f localapi.Field) (any, bool) {
	for {
		prompt := "  " + fieldLabel(f)
		if f.Default != nil {
			d, _ := json.Marshal(f.Default)
			prompt += fmt.Sprintf(" [%s]", clitext.Cell(string(d)))
		}
		fmt.Fprint(a.streams.Err, prompt+": ")
		line, err := a.readLine()
		if err != nil {
			return nil, false
		}
		switch {
		case line == "" && f.Required && f.Default == nil:
			fmt.Fprintf(a.streams.Err, "  %s is required\n", clitext.Cell(f.Name))
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

// fieldLabel describes a form field: name, type, required or default,
// choices, and the server's description.
func fieldLabel(f localapi.Field) string {
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

// exampleAnswer is an accept answer with a placeholder for every required
// field without a default.
func exampleAnswer(form *localapi.Form) string {
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

// selfCommand is how another shell reaches this data directory.
func (a *app) selfCommand() string {
	if a.dataDir != "" {
		return "remotemcp --data-dir " + clitext.ShellQuote(a.dataDir)
	}
	return "remotemcp"
}
