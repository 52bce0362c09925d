package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// toolRow is one tool in `tools --json`.
type toolRow struct {
	Server      string               `json:"server"`
	Name        string               `json:"name"`
	Description string               `json:"description"`
	InputSchema json.RawMessage      `json:"inputSchema"`
	Annotations *mcp.ToolAnnotations `json:"annotations"`
	// Disabled marks a tool switched off in the server's disabledTools.
	Disabled bool `json:"disabled,omitempty"`
}

// rawSchema is the tool's input schema exactly as the server sent it.
func rawSchema(t session.Tool) json.RawMessage {
	if len(t.RawInputSchema) > 0 {
		return t.RawInputSchema
	}
	if b, err := json.Marshal(t.InputSchema); err == nil && string(b) != "null" {
		return b
	}
	return json.RawMessage(`{"type":"object"}`)
}

func newToolsCmd(a *app) *cobra.Command {
	var (
		serverID string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools of every enabled server, or of one",
		Long: `Connect (lazily) to every enabled server, or to --server ID, and list their
tools: server, name and the first line of the description. --json prints
each tool's raw input schema and annotations as the server sent them.`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			var targets []config.Server
			if serverID != "" {
				srv, err := getServer(ctx, c.Store, serverID)
				if err == nil && !srv.Enabled {
					err = fmt.Errorf("server %s is disabled; enable it with \"remotemcp servers enable %s\"", serverID, serverID)
				}
				if err != nil {
					c.Close()
					return err
				}
				targets = []config.Server{srv}
			} else {
				all, err := c.Store.ListServers(ctx)
				if err != nil && !errors.Is(err, store.ErrSealOpen) {
					c.Close()
					return fmt.Errorf("list servers: %w", err)
				}
				for _, s := range all {
					if s.Enabled {
						targets = append(targets, s)
					}
				}
			}
			ids := make([]string, len(targets))
			for i, s := range targets {
				ids[i] = s.ID
			}
			l, err := a.startManager(ctx, c, ids, 0)
			if err != nil {
				c.Close()
				return err
			}
			defer l.Close()

			switch len(targets) {
			case 0:
				fmt.Fprintln(a.streams.Err, "no enabled servers; add one with \"remotemcp servers add ID URL\"")
			case 1:
				fmt.Fprintf(a.streams.Err, "connecting to %s (%s)…\n", targets[0].ID, cell(targets[0].URL))
			default:
				fmt.Fprintf(a.streams.Err, "connecting to %s…\n", plural(len(targets), "server", "servers"))
			}
			cats := make([]*session.Catalog, len(targets))
			errs := make([]error, len(targets))
			var wg sync.WaitGroup
			for i, s := range targets {
				wg.Go(func() { cats[i], errs[i] = l.m.Catalog(ctx, s.ID) })
			}
			wg.Wait()
			if ctx.Err() != nil {
				return ctx.Err()
			}

			rows := []toolRow{}
			failed := false
			for i, s := range targets {
				if errs[i] != nil {
					failed = true
					fmt.Fprintf(a.streams.Err, "%s: ", s.ID)
					reportFailure(a.streams.Err, s, reasonOf(l.m, s.ID, errs[i]), errs[i])
					continue
				}
				for _, t := range cats[i].Tools {
					rows = append(rows, toolRow{
						Server: s.ID, Name: t.Name, Description: t.Description,
						InputSchema: rawSchema(t), Annotations: t.Annotations,
						Disabled: s.ToolDisabled(t.Name),
					})
				}
			}
			if asJSON {
				err = writeJSON(a.streams.Out, rows)
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

// writeToolTable prints tools as SERVER, TOOL, DESCRIPTION (first line).
func writeToolTable(w io.Writer, rows []toolRow) error {
	if len(rows) == 0 {
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "SERVER\tTOOL\tDESCRIPTION")
	for _, r := range rows {
		desc := firstLine(r.Description)
		if r.Disabled {
			desc = "(disabled) " + desc
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(r.Server), cell(r.Name), cell(desc))
	}
	return tw.Flush()
}

func newCallCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "call NAME [ARGS_JSON|-]",
		Short: "Call a tool once",
		Long: `Call a tool and print its result. NAME is SERVER/TOOL or mcp__SERVER__TOOL;
ARGS_JSON is a JSON object (default {}), or "-" to read it from stdin.

The text content is printed (control characters made visible), then the
structured content as JSON; --json prints the whole result exactly. The exit
status is 0 whenever the server answered, also when the tool reported an
error (isError); it is non-zero when no answer came. A call is never
re-sent: after a network failure it may or may not have run.`,
		Example: `  remotemcp call docs/search '{"query": "oauth"}'
  remotemcp call mcp__docs__search '{"query": "oauth"}' --json`,
		Args: argsRange(1, 2, "NAME [ARGS_JSON|-]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			raw := "{}"
			if len(args) == 2 {
				raw = args[1]
			}
			if raw == "-" {
				b, err := io.ReadAll(io.LimitReader(a.streams.In, maxImportSize))
				if err != nil {
					return fmt.Errorf("read the arguments from stdin: %w", err)
				}
				raw = string(b)
			}
			callArgs, err := parseArgs(raw)
			if err != nil {
				return err
			}

			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			id, tool, err := resolveToolName(ctx, c.Store, args[0])
			if err != nil {
				c.Close()
				return err
			}
			// A switched-off tool is refused before anything connects.
			if srv, err := getServer(ctx, c.Store, id); err == nil && srv.ToolDisabled(tool) {
				c.Close()
				return fmt.Errorf("tool %q of server %s is switched off; switch it on with \"remotemcp servers set %s --enable-tool %s\"", tool, id, id, tool)
			}
			l, srv, err := a.connectOne(ctx, c, id)
			if err != nil {
				return err
			}
			defer l.Close()
			if err := checkTool(ctx, l.m, id, tool); err != nil {
				return err
			}
			res, err := l.m.CallTool(ctx, id, tool, callArgs, session.CallOptions{
				Progress: func(p session.Progress) { a.printProgress(tool, p) },
			})
			if err != nil {
				if ctx.Err() != nil {
					fmt.Fprintf(a.streams.Err, "remotemcp: interrupted: %s\n", cell(err.Error()))
					return &exitError{code: exitInterrupted}
				}
				reportFailure(a.streams.Err, srv, manager.Attribute(err), err)
				return reported
			}
			if asJSON {
				return writeJSON(a.streams.Out, res)
			}
			if err := writeResult(a.streams.Out, res); err != nil {
				return err
			}
			if res.IsError {
				fmt.Fprintf(a.streams.Err, "note: tool %s reported an error (isError); the server answered, so the exit status is 0\n", cell(tool))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole result as JSON")
	return cmd
}

// parseArgs checks that raw is one JSON object.
func parseArgs(raw string) (json.RawMessage, error) {
	t := bytes.TrimSpace([]byte(raw))
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		why := "not a JSON object"
		if err != nil {
			why = err.Error()
		}
		return nil, usageErrorf(`ARGS_JSON must be one JSON object such as '{"text": "hi"}' (%s)`, why)
	}
	return json.RawMessage(t), nil
}

// resolveToolName splits SERVER/TOOL or mcp__SERVER__TOOL. Server ids may
// contain "__" themselves, so the second form is matched against the
// configured ids.
func resolveToolName(ctx context.Context, st *store.SQLite, name string) (id, tool string, err error) {
	if s, t, ok := strings.Cut(name, "/"); ok && !strings.HasPrefix(name, "mcp__") {
		if s == "" || t == "" {
			return "", "", usageErrorf("NAME %q must be SERVER/TOOL or mcp__SERVER__TOOL", name)
		}
		return s, t, nil
	}
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", usageErrorf("NAME %q must be SERVER/TOOL or mcp__SERVER__TOOL", name)
	}
	servers, err := st.ListServers(ctx)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return "", "", fmt.Errorf("list servers: %w", err)
	}
	var matches []string
	for _, s := range servers {
		if t, ok := strings.CutPrefix(rest, s.ID+"__"); ok && t != "" {
			id, tool = s.ID, t
			matches = append(matches, s.ID)
		}
	}
	switch len(matches) {
	case 0:
		guess, _, _ := strings.Cut(rest, "__")
		return "", "", errNoServer(guess)
	case 1:
		return id, tool, nil
	}
	return "", "", fmt.Errorf("%q could belong to servers %s; use the SERVER/TOOL form", name, strings.Join(matches, ", "))
}

// checkTool refuses a tool the server does not list, before anything is
// sent. A catalog whose tool listing failed is not trusted for this.
func checkTool(ctx context.Context, m *manager.Manager, id, tool string) error {
	cat, err := m.Catalog(ctx, id)
	if err != nil || cat.Errors[session.KindTools] != nil {
		return nil
	}
	var names []string
	for _, t := range cat.Tools {
		if t.Name == tool {
			return nil
		}
		names = append(names, t.Name)
	}
	have := "it has no tools"
	if len(names) > 0 {
		have = "its tools: " + cell(strings.Join(names, ", "))
	}
	return fmt.Errorf("server %s has no tool %q (%s); see \"remotemcp tools --server %s\"", id, tool, have, id)
}

// printProgress shows a progress notification of a call on stderr.
func (a *app) printProgress(tool string, p session.Progress) {
	s := fmt.Sprintf("%s: progress %g", cell(tool), p.Progress)
	if p.Total > 0 {
		s += fmt.Sprintf("/%g", p.Total)
	}
	if p.Message != "" {
		s += " " + cell(p.Message)
	}
	fmt.Fprintln(a.streams.Err, s)
}

// writeResult prints a tool result for a person: text blocks, placeholders
// for binary content, then the structured content as JSON unless a text
// block already carries the same value.
func writeResult(w io.Writer, res *mcp.CallToolResult) error {
	var texts []string
	for _, c := range res.Content {
		var s string
		switch v := c.(type) {
		case *mcp.TextContent:
			s = text(v.Text)
			texts = append(texts, v.Text)
		case *mcp.ImageContent:
			s = fmt.Sprintf("[image %s, %d bytes; use --json for the data]", cell(v.MIMEType), len(v.Data))
		case *mcp.AudioContent:
			s = fmt.Sprintf("[audio %s, %d bytes; use --json for the data]", cell(v.MIMEType), len(v.Data))
		case *mcp.ResourceLink:
			s = fmt.Sprintf("[resource link %s %s]", cell(v.URI), cell(v.Name))
		case *mcp.EmbeddedResource:
			switch r := v.Resource; {
			case r == nil:
				s = "[empty embedded resource]"
			case r.Text != "":
				s = text(r.Text)
			default:
				s = fmt.Sprintf("[resource %s, %s, %d bytes; use --json for the data]", cell(r.URI), cell(r.MIMEType), len(r.Blob))
			}
		default:
			s = fmt.Sprintf("[%T content; use --json to see it]", c)
		}
		if _, err := fmt.Fprintln(w, strings.TrimSuffix(s, "\n")); err != nil {
			return err
		}
	}
	if res.StructuredContent == nil || sameJSONAsText(res.StructuredContent, texts) {
		return nil
	}
	return writeJSON(w, res.StructuredContent)
}

// sameJSONAsText reports whether one of the text blocks is the JSON of v
// (servers usually send structured content also as text).
func sameJSONAsText(v any, texts []string) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var want any
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	for _, t := range texts {
		var got any
		if json.Unmarshal([]byte(t), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}
