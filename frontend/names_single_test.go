package frontend_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/frontend"
)

// Issue #20 item 3, review finding 3: MCP's name rule (SEP-986).
func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"read_file": true, "a.b-c_D9": true, strings.Repeat("x", 128): true,
		"": false, strings.Repeat("x", 129): false, "a b": false, "read\u202eelif": false, "t\u200b": false,
		"t" + "\U000E0041": false, "\u0440ead": false /* Cyrillic er */, "a/b": false, "a\x00": false, "é": false,
	} {
		if got := frontend.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

// Issue #20 item 3, review finding 3: in single-server mode a valid name
// stays the server's; any other is renamed to a valid, stable name that
// no valid name of the server takes.
func TestSingleServerNames(t *testing.T) {
	keys := []agent.NameKey{{Server: "s", Name: "ok.tool"}, {Server: "s", Name: "read\u202eelif"}, {Server: "s", Name: "read\u200belif"},
		{Server: "s", Name: ""}, {Server: "s", Name: strings.Repeat("y", 200)}, {Server: "s", Name: "a b"}}
	got := frontend.SingleServerNames(keys)
	seen := map[string]bool{}
	for _, k := range keys {
		n := got[k]
		if !frontend.ValidName(n) || len(n) > 128 || seen[n] {
			t.Errorf("%q offered as %q: invalid or taken twice", k.Name, n)
		}
		seen[n] = true
		if frontend.ValidName(k.Name) != (n == k.Name) {
			t.Errorf("%q offered as %q", k.Name, n)
		}
	}
	if n := got[keys[1]]; !strings.HasPrefix(n, "read_elif_") {
		t.Errorf("a bidi override in a name: offered as %q", n)
	}
	// A valid name that happens to equal a renamed one keeps its own name:
	// the renamed one moves.
	clash := agent.NameKey{Server: "s", Name: got[keys[1]]}
	again := frontend.SingleServerNames(append(keys, clash))
	if again[clash] != clash.Name || again[keys[1]] == clash.Name || !frontend.ValidName(again[keys[1]]) {
		t.Errorf("clash: %q and %q", again[clash], again[keys[1]])
	}
	if again[keys[2]] != got[keys[2]] {
		t.Errorf("renames are not stable: %q then %q", got[keys[2]], again[keys[2]])
	}
}

// Issue #20 item 3, review finding 3: "remotemcp mcp --server ID" offered
// the server's raw tool and prompt names, bidi overrides and tag
// characters included. Now a host is offered valid MCP names only: the
// server's own where valid, a renamed one otherwise, and the renamed tool
// and prompt work.
func TestSingleServerModeRenamesInvalidNames(t *testing.T) {
	ctx := t.Context()
	srv := mcp.NewServer(&mcp.Implementation{Name: "n", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	for _, name := range []string{"ok.tool", "read\u202eelif", "send" + "\U000E0041"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + req.Params.Name}}}, nil
		})
	}
	srv.AddPrompt(&mcp.Prompt{Name: "p\u200b"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "the prompt"}}}}, nil
	})
	eng := backend(ctx, t, "n", srv)
	cs := hostOf(ctx, t, frontend.Options{Engine: eng, ServerID: "n"})
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if !frontend.ValidName(tool.Name) {
			t.Errorf("tool offered as %q", tool.Name)
		}
	}
	if len(names) != 3 || !strings.Contains(strings.Join(names, " "), "ok.tool") {
		t.Fatalf("tools offered: %q", names)
	}
	for _, n := range names {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: n, Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.HasPrefix(resultText(res), "ran ") {
			t.Errorf("call %q: %+v %v", n, res, err)
		}
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 1 || !frontend.ValidName(prompts.Prompts[0].Name) {
		t.Fatalf("prompts offered: %+v", prompts.Prompts)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompts.Prompts[0].Name})
	if err != nil || len(pr.Messages) != 1 {
		t.Fatalf("get the renamed prompt: %+v %v", pr, err)
	}
}
