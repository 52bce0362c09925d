package cliflag

import (
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/internal/render"
	"github.com/remotemcp/remotemcp/localapi"
)

// PromptArgs checks the NAME=VALUE arguments of "remotemcp prompt"
// against the prompt: it names every missing and unknown one at once.
func PromptArgs(p localapi.Prompt, values map[string]string) error {
	var missing, unknown []string
	for _, a := range p.Arguments {
		if a.Required && strings.TrimSpace(values[a.Name]) == "" {
			m := a.Name
			if a.Description != "" {
				m += " (" + clitext.FirstLine(a.Description) + ")"
			}
			missing = append(missing, m)
		}
	}
	for k := range values {
		if !slices.ContainsFunc(p.Arguments, func(a localapi.PromptArgument) bool { return a.Name == k }) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	var probs []string
	if len(missing) > 0 {
		probs = append(probs, "missing required argument(s): "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		probs = append(probs, "unknown argument(s): "+strings.Join(unknown, ", "))
	}
	if len(probs) == 0 {
		return nil
	}
	usage := render.ArgUsage(p)
	if usage == "" {
		usage = "(no arguments)"
	}
	return exit.Usagef("%s: %s; usage: remotemcp prompt %s %s", clitext.Cell(p.Command), clitext.Cell(strings.Join(probs, "; ")), clitext.Cell(p.Command), clitext.Cell(usage))
}
