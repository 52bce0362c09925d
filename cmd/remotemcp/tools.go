package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/agent"
)

// toolRow is one tool in `tools --json`: exactly these fields.
type toolRow struct {
	Name        string             `json:"name"`
	Server      string             `json:"server"`
	Tool        string             `json:"tool"`
	Description string             `json:"description"`
	InputSchema json.RawMessage    `json:"inputSchema"`
	Effects     agent.Effects      `json:"effects"`
	Retry       agent.RetryPolicy  `json:"retry"`
	Annotations *agent.Annotations `json:"annotations"`
	// Enabled is false for a tool switched off in the server's
	// disabledTools.
	Enabled bool `json:"enabled"`
}

func rowOfTool(t agent.AgentTool, enabled bool) toolRow {
	return toolRow{Name: t.Name, Server: t.ServerID, Tool: t.ToolName, Description: t.Description,
		InputSchema: t.InputSchema, Effects: t.Effects, Retry: t.Retry, Annotations: t.Annotations, Enabled: enabled}
}

func newToolsCmd(a *app) *cobra.Command {
	var (
		serverID string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools of every enabled server, or of one",
		Long: `Connect to every enabled server, or to --server ID, and list their tools
as the agent sees them: the name mcp__SERVER__TOOL (what "call" takes) and
the first line of the description. Tools switched off with
"servers set --disable-tool" are listed as disabled.

--json prints one object per tool with exactly the fields name, server,
tool, description, inputSchema (the server's bytes, unchanged), effects,
retry, annotations (the server's hints, display only) and enabled. Every
remote tool has effects "write" and retry "never": it needs approval on
each call, whatever its annotations say.`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				return a.toolsViaDaemon(ctx, dc, serverID, asJSON)
			}
			b, err := a.bridgeFor(ctx, serverID, bridgeOptions{})
			if err != nil {
				return err
			}
			defer b.Close()
			failed := b.reportFailures(nil)

			rows := []toolRow{}
			snap := b.reg.Snapshot()
			for _, t := range snap.Tools() {
				rows = append(rows, rowOfTool(t, true))
			}
			// Switched-off tools are not in the snapshot; they come from
			// the server's catalog, named as the registry would name them.
			for _, s := range b.targets {
				if len(s.DisabledTools) == 0 || snap.Errors()[s.ID] != nil {
					continue
				}
				cat, err := b.l.m.Catalog(ctx, s.ID)
				if err != nil {
					continue
				}
				for _, t := range cat.Tools {
					if t.Tool != nil && s.ToolDisabled(t.Name) {
						rows = append(rows, rowOfTool(disabledTool(s.ID, t.Tool, t.RawInputSchema), false))
					}
				}
			}
			slices.SortFunc(rows, func(x, y toolRow) int { return strings.Compare(x.Name, y.Name) })
			if asJSON {
				err = writeToolsJSON(a.streams.Out, rows)
			} else {
				err = writeToolTable(a.streams.Out, rows)
			}
			if err == nil && failed {
				err = reported
			}
			return err
		},
	}
	cmd.Flags().StringVar(&serverID, "server", "", "only this server")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array with input schemas and annotations")
	return cmd
}

// disabledTool describes a switched-off tool the way the registry
// describes the others (every remote tool is a write tool, never retried).
func disabledTool(server string, t *mcp.Tool, raw json.RawMessage) agent.AgentTool {
	at := agent.AgentTool{Name: agent.ToolName(server, t.Name), Title: t.Title, Description: t.Description,
		InputSchema: raw, Effects: agent.EffectsWrite, Retry: agent.RetryNever, ServerID: server, ToolName: t.Name}
	if len(at.InputSchema) == 0 {
		at.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if an := t.Annotations; an != nil {
		at.Annotations = &agent.Annotations{Title: an.Title, ReadOnlyHint: an.ReadOnlyHint,
			DestructiveHint: an.DestructiveHint, IdempotentHint: an.IdempotentHint, OpenWorldHint: an.OpenWorldHint}
	}
	return at
}

// writeToolsJSON prints the rows as a JSON array, one object per line,
// with each inputSchema copied byte for byte: an encoder would re-indent
// it, and R4.1 wants the server's schema passed on unchanged.
func writeToolsJSON(w io.Writer, rows []toolRow) error {
	var buf bytes.Buffer
	buf.WriteString("[")
	for i, r := range rows {
		if i > 0 {
			buf.WriteString(",")
		}
		buf.WriteString("\n  {")
		field := func(name string, v any, comma bool) {
			buf.WriteString(`"` + name + `":`)
			if raw, ok := v.(json.RawMessage); ok {
				buf.Write(raw)
			} else {
				buf.Write(marshalNoEscape(v))
			}
			if comma {
				buf.WriteString(",")
			}
		}
		field("name", r.Name, true)
		field("server", r.Server, true)
		field("tool", r.Tool, true)
		field("description", r.Description, true)
		field("inputSchema", r.InputSchema, true)
		field("effects", r.Effects, true)
		field("retry", r.Retry, true)
		field("annotations", r.Annotations, true)
		field("enabled", r.Enabled, false)
		buf.WriteString("}")
	}
	if len(rows) > 0 {
		buf.WriteString("\n")
	}
	buf.WriteString("]\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// marshalNoEscape is json.Marshal without HTML escaping.
func marshalNoEscape(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// writeToolTable prints tools as NAME, DESCRIPTION (first line), marking
// switched-off tools.
func writeToolTable(w io.Writer, rows []toolRow) error {
	if len(rows) == 0 {
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "NAME\tDESCRIPTION")
	for _, r := range rows {
		desc := firstLine(r.Description)
		if !r.Enabled {
			desc = "(disabled) " + desc
		}
		fmt.Fprintf(tw, "%s\t%s\n", cell(r.Name), cell(desc))
	}
	return tw.Flush()
}
