package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/localapi"
)

// Messages prints a prompt's messages on out under their roles; notes go
// to errw.
func Messages(out, errw io.Writer, res *localapi.PromptResult) {
	for _, bl := range res.Blocks {
		fmt.Fprintf(out, "[%s]\n%s\n", clitext.Cell(clitext.OrDash(bl.Role)), strings.TrimSuffix(clitext.Text(bl.Text), "\n"))
	}
	Notes(errw, res.Notes)
}

// Contents prints a resource's contents on out: text as it is, binary
// content summarised; what was cut and notes go to errw.
func Contents(out, errw io.Writer, res *localapi.ReadResult) error {
	for _, bl := range res.Blocks {
		s := clitext.Text(bl.Text)
		if bl.Binary() {
			s = fmt.Sprintf("%s %s (not shown; use --json for the data)", clitext.Cell(bl.Text), clitext.Cell(bl.Provenance.URI))
		}
		if _, err := fmt.Fprintln(out, strings.TrimSuffix(s, "\n")); err != nil {
			return err
		}
		Truncated(errw, bl)
	}
	Notes(errw, res.Notes)
	return nil
}

// Connected is what "connect --json" prints: the server as "status
// --json" shows it, and the counts the text line gives.
type Connected struct {
	localapi.Server
	PromptCount           int `json:"promptCount"`
	ResourceCount         int `json:"resourceCount"`
	ResourceTemplateCount int `json:"resourceTemplateCount"`
	// prompts and resources say whether the counts were read.
	prompts, resources bool
}

// Count adds what the server offers to c: its prompts, and its
// resources and templates (nil when they could not be listed).
func (c *Connected) Count(prompts []localapi.Prompt, promptsOK bool, resources []localapi.Resource, resourcesOK bool) {
	c.prompts, c.resources = promptsOK, resourcesOK
	c.PromptCount = len(prompts)
	for _, x := range resources {
		if x.Template {
			c.ResourceTemplateCount++
		} else {
			c.ResourceCount++
		}
	}
}

// Write prints "ready: 3 tools, 1 prompt, 2 resources".
func (c *Connected) Write(w io.Writer) error {
	what := clitext.Plural(c.ToolCount, "tool", "tools")
	if c.prompts {
		what += ", " + clitext.Plural(c.PromptCount, "prompt", "prompts")
	}
	if c.resources {
		what += ", " + clitext.Plural(c.ResourceCount, "resource", "resources")
		if c.ResourceTemplateCount > 0 {
			what += " (and " + clitext.Plural(c.ResourceTemplateCount, "resource template", "resource templates") + ")"
		}
	}
	_, err := fmt.Fprintf(w, "ready: %s\n", what)
	return err
}
