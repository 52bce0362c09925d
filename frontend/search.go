package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/toolsearch"
)

// Tool offering modes (Options.Tools; remotemcp mcp --tools).
const (
	// ToolsAll offers every tool.
	ToolsAll = "all"
	// ToolsSearch offers a search tool and the pinned tools; a search
	// adds the tools it found to the host's list (list_changed), so the
	// host approves and calls each by its own name.
	ToolsSearch = "search"
	// ToolsAuto is ToolsAll up to Options.SearchThreshold tools, and
	// ToolsSearch above.
	ToolsAuto = "auto"
)

// Modes are the valid Options.Tools values.
var Modes = []string{ToolsAuto, ToolsAll, ToolsSearch}

// DefaultSearchThreshold is the tool count above which ToolsAuto
// searches.
const DefaultSearchThreshold = 40

// SearchToolName is the search tool's name; RemotemcpSearchToolName
// replaces it when a server's own tool already has that name (single-
// server mode keeps the server's names).
const (
	SearchToolName          = "search_tools"
	RemotemcpSearchToolName = "remotemcp_search_tools"
)

// Bounds of search mode: results per search, and tools found by searches
// kept in the host's list (the oldest found go first).
const (
	defaultSearchResults = 5
	maxSearchResults     = 10
	maxFound             = 50
)

// searchTool is one offered tool as the search sees it.
type searchTool struct {
	server string
	tool   *mcp.Tool
	offer  offer
	pinned bool
}

// searchState is the tool-search side of the front end (under syncMu).
type searchState struct {
	active bool                   // search mode is on
	name   string                 // the search tool's offered name
	all    map[string]*searchTool // every offerable tool by offered name
	index  *toolsearch.Index
	docs   []string // index position → offered name
	found  []string // found by searches, oldest first
}

// searching reports whether n offerable tools are offered by search.
func (f *Frontend) searching(n int) bool {
	switch f.o.Tools {
	case ToolsSearch:
		return true
	case ToolsAll:
		return false
	}
	th := f.o.SearchThreshold
	if th <= 0 {
		th = DefaultSearchThreshold
	}
	return n > th
}

// offerTools offers all (every offerable tool, by offered name) in the
// current mode: all of them, or the search tool, the pinned tools and
// those found by searches. Called under syncMu.
func (f *Frontend) offerTools(all map[string]*searchTool) {
	s := &f.search
	s.all = all
	s.active = f.searching(len(all))
	if !s.active {
		s.index, s.docs, s.found = nil, nil, nil
		want := make(map[string]offer, len(all))
		for name, t := range all {
			want[name] = t.offer
		}
		apply(f.tools, want, f.removeTools)
		return
	}
	s.name = SearchToolName
	if _, taken := all[SearchToolName]; taken {
		s.name = RemotemcpSearchToolName
	}
	names := slices.Sorted(maps.Keys(all))
	docs := make([]toolsearch.Doc, 0, len(names))
	for _, name := range names {
		t := all[name].tool
		docs = append(docs, toolsearch.Doc{Server: all[name].server, Name: name, Title: t.Title, Description: t.Description, Params: params(t.InputSchema)})
	}
	s.index, s.docs = toolsearch.New(docs), names
	s.found = slices.DeleteFunc(s.found, func(n string) bool { return all[n] == nil })
	f.applySearch()
}

// applySearch brings the offered tools in line with search mode. Called
// under syncMu.
func (f *Frontend) applySearch() {
	s := &f.search
	want := map[string]offer{}
	for name, t := range s.all {
		if t.pinned || slices.Contains(s.found, name) {
			want[name] = t.offer
		}
	}
	st := &mcp.Tool{
		Name:  s.name,
		Title: "Search the tools of remotemcp's MCP servers",
		Description: fmt.Sprintf("Searches the %d tools of the MCP servers remotemcp serves, by what a task needs "+
			"(e.g. \"create an issue in the tracker about the login crash\"), and adds the best matches to your tool list "+
			"so you can call them by name. Returns their names, descriptions and input schemas.", len(s.all)),
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"what the tool should do, in a few words"},` +
			fmt.Sprintf(`"limit":{"type":"integer","minimum":1,"maximum":%d,"description":"how many tools to find (default %d)"}},`, maxSearchResults, defaultSearchResults) +
			`"required":["query"]}`),
	}
	enc, _ := encodeLikeGoSDK(st)
	sig := string(enc)
	want[s.name] = offer{sig: sig, add: func() { f.addTool(st, sig, f.searchTools) }}
	apply(f.tools, want, f.removeTools)
}

// searchTools is the search tool's handler: it ranks the tools for the
// query, adds the found ones to the host's list and describes them.
func (f *Frontend) searchTools(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || strings.TrimSpace(in.Query) == "" {
		return errorResult(`give the search a query: {"query": "what the tool should do"}`), nil
	}
	if in.Limit <= 0 {
		in.Limit = defaultSearchResults
	}
	in.Limit = min(in.Limit, maxSearchResults)
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	s := &f.search
	if !s.active || s.index == nil {
		return errorResult("tool search is not active: every tool is already in your list"), nil
	}
	type found struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	var out []found
	for _, r := range s.index.Search(in.Query, in.Limit) {
		name := s.docs[r.Doc]
		t := s.all[name]
		schema, _ := t.tool.InputSchema.(json.RawMessage)
		out = append(out, found{Name: name, Description: t.tool.Description, InputSchema: schema})
		s.found = append(slices.DeleteFunc(s.found, func(n string) bool { return n == name }), name)
	}
	if len(s.found) > maxFound {
		s.found = s.found[len(s.found)-maxFound:]
	}
	f.applySearch()
	if len(out) == 0 {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("No tool matches %q; try other words.", in.Query)}},
			StructuredContent: map[string]any{"tools": []found{}}}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d tool(s); they are now in your tool list, to call by name:\n", len(out))
	for _, t := range out {
		fmt.Fprintf(&b, "- %s: %s\n", t.Name, firstLine(t.Description))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: map[string]any{"tools": out}}, nil
}

// params are the parameter names and descriptions of an input schema.
func params(schema any) []toolsearch.Param {
	raw, ok := schema.(json.RawMessage)
	if !ok {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	out := make([]toolsearch.Param, 0, len(s.Properties))
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		out = append(out, toolsearch.Param{Name: name, Description: s.Properties[name].Description})
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(line) > 200 {
		line = strings.ToValidUTF8(line[:200], "") + " …"
	}
	return line
}
