package agent

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/session"
)

// HasCatalog, ToolRef and ToolRefFor answer what scanning the copying
// accessors answers.
func TestSnapshotCheapAccessors(t *testing.T) {
	tool := func(name string) session.Tool {
		return session.Tool{Tool: &mcp.Tool{Name: name}, RawInputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	views := map[string]*serverView{
		"tools":    {enabled: true, catalog: &session.Catalog{Tools: []session.Tool{tool("a"), tool("b")}}},
		"off":      {enabled: true, disabled: []string{"a"}, catalog: &session.Catalog{Tools: []session.Tool{tool("a")}}},
		"prompts":  {enabled: true, catalog: &session.Catalog{Prompts: []*mcp.Prompt{{Name: "p"}}}},
		"res":      {enabled: true, catalog: &session.Catalog{Resources: []*mcp.Resource{{URI: "file:///x", Name: "x"}}}},
		"tmpl":     {enabled: true, catalog: &session.Catalog{Templates: []*mcp.ResourceTemplate{{URITemplate: "file:///{x}", Name: "x"}}}},
		"empty":    {enabled: true, catalog: &session.Catalog{}},
		"failed":   {enabled: true, err: errors.New("down")},
		"stale":    {enabled: true, err: errors.New("down"), catalog: &session.Catalog{Tools: []session.Tool{tool("a")}}},
		"disabled": {enabled: false, catalog: &session.Catalog{Tools: []session.Tool{tool("a")}}},
	}
	s := buildSnapshot(1, views, 100)
	for id := range views {
		want := s.Errors()[id] == nil &&
			(slices.ContainsFunc(s.Tools(), func(t AgentTool) bool { return t.ServerID == id }) ||
				slices.ContainsFunc(s.Prompts(), func(p PromptCommand) bool { return p.ServerID == id }) ||
				slices.ContainsFunc(s.Resources(), func(r ResourceEntry) bool { return r.ServerID == id }))
		if got := s.HasCatalog(id); got != want {
			t.Errorf("HasCatalog(%q) = %v, want %v", id, got, want)
		}
	}
	for _, at := range s.Tools() {
		ref, ok := s.ToolRef(at.Name)
		if !ok || ref != (ToolRef{at.Name, at.ServerID, at.ToolName}) {
			t.Errorf("ToolRef(%q) = %+v, %v", at.Name, ref, ok)
		}
		ref, ok = s.ToolRefFor(at.ServerID, at.ToolName)
		if !ok || ref.Name != at.Name {
			t.Errorf("ToolRefFor(%q, %q) = %+v, %v", at.ServerID, at.ToolName, ref, ok)
		}
	}
	if _, ok := s.ToolRef(ToolName("off", "a")); ok {
		t.Error("ToolRef finds a tool switched off")
	}
	if _, ok := s.ToolRefFor("nobody", "a"); ok {
		t.Error("ToolRefFor finds a tool of an unknown server")
	}
	// The call path's own lookup copies nothing.
	name := ToolName("tools", "a")
	if n := testing.AllocsPerRun(100, func() { s.ToolRef(name); s.HasCatalog("tools") }); n != 0 {
		t.Errorf("ToolRef and HasCatalog allocate %v times", n)
	}
}
