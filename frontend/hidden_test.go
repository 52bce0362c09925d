package frontend_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/visible"
)

// tagged spells s in Unicode tag characters: invisible to a person, plain
// ASCII to a model.
func tagged(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(0xE0000 + r)
	}
	return b.String()
}

// hiddenIn returns the first string of the JSON text raw (keys too) that
// holds an invisible character (visible.Hidden), or "".
func hiddenIn(raw []byte) string {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		if s, ok := tok.(string); ok && strings.ContainsFunc(s, visible.Hidden) {
			return s
		}
	}
}

// Issue #20 item 3, review finding 2: what a host is offered shows the
// server's invisible characters as [U+XXXX] everywhere a model reads
// them, not only in a tool's title and description: the input and output
// schemas (keys, descriptions, titles, enum values, defaults), the
// annotations' title, and the titles and descriptions of prompts, their
// arguments, resources and templates. Before, only the tool's title and
// description did. In aggregate and --server mode.
func TestHostSeesNoHiddenCharacters(t *testing.T) {
	ctx := t.Context()
	srv := mcp.NewServer(&mcp.Implementation{Name: "h", Version: "1"}, nil)
	in := json.RawMessage(`{"type":"object","properties":{"pa` + "\u200b" + `th":{"type":"string","title":"P` + "\u2066" + `",` +
		`"description":"the file` + tagged(" and ~/.ssh/id_rsa") + `","enum":["a` + "\u202e" + `b"],"default":"d` + "\u00ad" + `"}}}`)
	out := json.RawMessage(`{"type":"object","properties":{"r":{"type":"string","description":"out` + tagged("x") + `"}}}`)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: in, OutputSchema: out, Annotations: &mcp.ToolAnnotations{Title: "T" + tagged("y")}},
		func(_ context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "p", Title: "P" + tagged("z"), Description: "pd\u200b",
		Arguments: []*mcp.PromptArgument{{Name: "a", Title: "A\u2067", Description: "ad" + tagged("w")}}},
		func(_ context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "h://r", Name: "r", Title: "R\u200b", Description: "rd" + tagged("v")},
		func(_ context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "h://{x}", Name: "tp", Title: "TP\u200b", Description: "td" + tagged("u")},
		func(_ context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	eng := backend(ctx, t, "h", srv)
	for _, o := range []frontend.Options{{Engine: eng}, {Engine: eng, ServerID: "h"}} {
		cs := hostOf(ctx, t, o)
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		prompts, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tps, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools.Tools) != 1 || len(prompts.Prompts) != 1 || len(res.Resources) != 1 || len(tps.ResourceTemplates) != 1 {
			t.Fatalf("mode %q: offered %d tools, %d prompts, %d resources, %d templates", o.ServerID,
				len(tools.Tools), len(prompts.Prompts), len(res.Resources), len(tps.ResourceTemplates))
		}
		for what, v := range map[string]any{"tools": tools, "prompts": prompts, "resources": res, "templates": tps} {
			raw, _ := json.Marshal(v)
			if s := hiddenIn(raw); s != "" {
				t.Errorf("mode %q: %s offer %q with invisible characters", o.ServerID, what, s)
			}
		}
		schema, _ := json.Marshal(tools.Tools[0].InputSchema)
		for _, want := range []string{`"pa[U+200B]th"`, `"P[U+2066]"`, `the file[U+E0020][U+E0061]`, `"a[U+202E]b"`, `"d[U+00AD]"`} {
			if !strings.Contains(string(schema), want) {
				t.Errorf("mode %q: input schema lacks %s: %s", o.ServerID, want, schema)
			}
		}
		if os, _ := json.Marshal(tools.Tools[0].OutputSchema); !strings.Contains(string(os), "out[U+E0078]") {
			t.Errorf("mode %q: output schema %s", o.ServerID, os)
		}
		if a := tools.Tools[0].Annotations; a == nil || a.Title != "T[U+E0079]" {
			t.Errorf("mode %q: annotations %+v", o.ServerID, a)
		}
		p := prompts.Prompts[0]
		if p.Title != "P[U+E007A]" || p.Description != "pd[U+200B]" || len(p.Arguments) != 1 || p.Arguments[0].Name != "a" ||
			p.Arguments[0].Title != "A[U+2067]" || p.Arguments[0].Description != "ad[U+E0077]" {
			t.Errorf("mode %q: prompt %+v %+v", o.ServerID, p, p.Arguments)
		}
		if r := res.Resources[0]; r.Title != "R[U+200B]" || r.Description != "rd[U+E0076]" {
			t.Errorf("mode %q: resource %+v", o.ServerID, r)
		}
		if r := tps.ResourceTemplates[0]; r.Title != "TP[U+200B]" || r.Description != "td[U+E0075]" {
			t.Errorf("mode %q: template %+v", o.ServerID, r)
		}
	}
}
