package agent

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/session"
)

// Snapshot is an immutable view of every enabled server's tools, prompts
// and resources, under the names the model sees: accessors return copies.
// The engine builds one (NewSnapshot) whenever a catalog commits or a
// server's state or disabledTools change (R4.4).
type Snapshot struct {
	gen      uint64
	tools    []AgentTool
	byName   map[string]int
	byTool   map[toolKey]int
	disabled map[string]toolKey // names of tools switched off
	held     map[string]toolKey // names of tools held by their pin
	// unpinnable maps the held names whose definition cannot be pinned
	// to why (never offered; nothing to review).
	unpinnable map[string]string
	prompts    []PromptCommand
	resources  []ResourceEntry
	servers    []string
	errs       map[string]error
	// listed holds the servers with at least one tool, prompt or resource
	// in the snapshot (see HasCatalog).
	listed map[string]bool
}

// ToolRef names one tool of a snapshot: what Tool returns, without the
// copy of the schema and annotations, for callers that only need to know
// which server and tool a name stands for.
type ToolRef struct {
	// Name is the AgentTool name; ServerID and ToolName the server's.
	Name, ServerID, ToolName string
}

// ToolRef returns the names of the tool with this AgentTool name. It
// copies nothing, so it is the cheap form of Tool for a call path.
func (s *Snapshot) ToolRef(name string) (ToolRef, bool) {
	i, ok := s.byName[name]
	if !ok {
		return ToolRef{}, false
	}
	t := &s.tools[i]
	return ToolRef{t.Name, t.ServerID, t.ToolName}, true
}

// ToolRefFor returns the names of a server's tool (the cheap form of
// ToolFor).
func (s *Snapshot) ToolRefFor(serverID, tool string) (ToolRef, bool) {
	i, ok := s.byTool[toolKey{serverID, tool}]
	if !ok {
		return ToolRef{}, false
	}
	t := &s.tools[i]
	return ToolRef{t.Name, t.ServerID, t.ToolName}, true
}

// HasCatalog reports whether the snapshot holds a catalog of the server:
// at least one of its tools (not switched off), prompts or resources, and
// no listing error. It is what scanning Tools, Prompts, Resources and
// Errors for the server tells, without copying any of them.
func (s *Snapshot) HasCatalog(serverID string) bool {
	return s.errs[serverID] == nil && s.listed[serverID]
}

// Generation increases with every rebuild.
func (s *Snapshot) Generation() uint64 { return s.gen }

// Tools returns the tools, sorted by name.
func (s *Snapshot) Tools() []AgentTool {
	out := make([]AgentTool, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.clone()
	}
	return out
}

// Tool returns the tool with this AgentTool name.
func (s *Snapshot) Tool(name string) (AgentTool, bool) {
	i, ok := s.byName[name]
	if !ok {
		return AgentTool{}, false
	}
	return s.tools[i].clone(), true
}

// ToolFor returns the AgentTool of a server's tool.
func (s *Snapshot) ToolFor(serverID, tool string) (AgentTool, bool) {
	i, ok := s.byTool[toolKey{serverID, tool}]
	if !ok {
		return AgentTool{}, false
	}
	return s.tools[i].clone(), true
}

// Prompts returns the /server:prompt commands, sorted.
func (s *Snapshot) Prompts() []PromptCommand {
	out := make([]PromptCommand, len(s.prompts))
	for i, p := range s.prompts {
		out[i] = p.clone()
	}
	return out
}

// Resources returns every resource and resource template.
func (s *Snapshot) Resources() []ResourceEntry { return slices.Clone(s.resources) }

// Servers returns the ids of the enabled servers in the snapshot.
func (s *Snapshot) Servers() []string { return slices.Clone(s.servers) }

// Errors returns, per server, why it could not be listed (servers whose
// last listing failed and that have no earlier catalog).
func (s *Snapshot) Errors() map[string]error { return maps.Clone(s.errs) }

// ServerCatalog is what a snapshot holds of one enabled server.
type ServerCatalog struct {
	ID string
	// DisabledTools are the tools the person switched off: named, so that
	// switching one never renames another, but not offered.
	DisabledTools []string
	// Catalog is the server's last good catalog (nil when it has none).
	Catalog *session.Catalog
	// Err is why the server could not be listed (nil when it could, or
	// when an earlier Catalog stands).
	Err error
}

// NewSnapshot builds generation gen of the snapshot of servers (the
// enabled ones; any order): names for every tool, the offered tools with
// their text made visible and descriptions cut to maxDescription
// characters (negative: no cap), the disabled and held names, prompts and
// resources. It keeps the catalogs' values it shares, which must not
// change.
//
// Long: two passes that must see the same tool keys: the first collects
// every key (held and disabled tools too, so switching one never renames
// another) with the prompts and resources, assignNames names them all at
// once, and the second builds the offered tools and the lookup maps from
// those names.
func NewSnapshot(gen uint64, servers []ServerCatalog, maxDescription int) *Snapshot {
	s := &Snapshot{gen: gen, byName: map[string]int{}, byTool: map[toolKey]int{},
		disabled: map[string]toolKey{}, held: map[string]toolKey{}, errs: map[string]error{}, listed: map[string]bool{}}
	servers = slices.Clone(servers)
	slices.SortFunc(servers, func(a, b ServerCatalog) int { return strings.Compare(a.ID, b.ID) })
	type entry struct {
		k toolKey
		t session.Tool
	}
	var entries []entry
	var keys, disabled, held []toolKey
	unpinnable := map[toolKey]string{}
	for _, v := range servers {
		id := v.ID
		s.servers = append(s.servers, id)
		if v.Err != nil {
			s.errs[id] = v.Err
		}
		c := v.Catalog
		if c == nil {
			continue
		}
		// Held tools (issue #20 item 3) take part in naming too, though
		// the manager left them out of the catalog, so a hold never
		// renames another tool.
		for _, name := range c.HeldTools {
			if slices.ContainsFunc(c.Tools, func(t session.Tool) bool { return t.Tool != nil && t.Name == name }) {
				continue
			}
			k := toolKey{id, name}
			keys = append(keys, k)
			held = append(held, k)
			if why, ok := c.Unpinnable[name]; ok {
				unpinnable[k] = why
			}
		}
		for _, t := range c.Tools {
			if t.Tool == nil {
				continue
			}
			k := toolKey{id, t.Name}
			// Disabled tools take part in naming, so switching one off or
			// on never renames another.
			keys = append(keys, k)
			if slices.Contains(v.DisabledTools, t.Name) {
				disabled = append(disabled, k)
				continue
			}
			entries = append(entries, entry{k, t})
		}
		for _, p := range c.Prompts {
			if p != nil {
				s.prompts = append(s.prompts, promptCommand(id, p))
				s.listed[id] = true
			}
		}
		for _, res := range c.Resources {
			if res != nil {
				s.resources = append(s.resources, resourceEntry(id, res))
				s.listed[id] = true
			}
		}
		for _, tp := range c.Templates {
			if tp != nil {
				s.resources = append(s.resources, templateEntry(id, tp))
				s.listed[id] = true
			}
		}
	}
	names := assignNames(keys)
	for _, k := range disabled {
		s.disabled[names[k]] = k
	}
	for _, k := range held {
		s.held[names[k]] = k
		if why, ok := unpinnable[k]; ok {
			if s.unpinnable == nil {
				s.unpinnable = map[string]string{}
			}
			s.unpinnable[names[k]] = why
		}
	}
	for _, e := range entries {
		at := AgentTool{
			Name: names[e.k], Title: ShowHidden(e.t.Title), Description: ShowHidden(capText(e.t.Description, maxDescription)),
			// The schemas too: their descriptions, titles, enum values,
			// defaults and keys reach the model (review finding 2). Kept
			// byte for byte unless they hide something.
			InputSchema: slices.Clone(ShowHiddenJSON(e.t.RawInputSchema)), Effects: EffectsWrite, Retry: RetryNever,
			Annotations: annotationsOf(e.t.Annotations), ServerID: e.k.server, ToolName: e.k.tool,
			OutputSchema: slices.Clone(ShowHiddenJSON(e.t.RawOutputSchema)), Icons: rawJSON(e.t.Icons), Meta: slices.Clone(e.t.RawMeta),
		}
		if at.Annotations != nil {
			at.Annotations.Title = ShowHidden(at.Annotations.Title)
			if at.Title == "" {
				at.Title = at.Annotations.Title
			}
		}
		if at.Title != e.t.Title || at.Description != e.t.Description {
			at.Own = &ToolText{Title: e.t.Title, Description: e.t.Description}
		}
		if len(at.InputSchema) == 0 {
			at.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		s.tools = append(s.tools, at)
		s.listed[at.ServerID] = true
	}
	slices.SortFunc(s.tools, func(a, b AgentTool) int { return strings.Compare(a.Name, b.Name) })
	for i, t := range s.tools {
		s.byName[t.Name] = i
		s.byTool[toolKey{t.ServerID, t.ToolName}] = i
	}
	slices.SortFunc(s.prompts, func(a, b PromptCommand) int { return strings.Compare(a.Command, b.Command) })
	return s
}

func capText(s string, n int) string {
	if n < 0 || runeLen(s) <= n {
		return s
	}
	return cutRunes(s, n) + " …[description truncated by remotemcp]"
}

// Unavailable names a tool that the snapshot knows but does not offer:
// switched off by the person, or held by its pin (issue #20 item 3).
type Unavailable struct {
	ToolRef
	// Disabled: the person switched the tool off (disabledTools).
	Disabled bool
	// Held: the server changed the tool's definition after it was first
	// seen and the person has not accepted the change. Unpinnable, when
	// set, says why the definition cannot be pinned at all (it is never
	// offered, and there is nothing to review).
	Held       bool
	Unpinnable string
}

// Unavailable reports whether name is a tool of the snapshot that is not
// offered, and why, so that a call of it can say so rather than "no such
// tool".
func (s *Snapshot) Unavailable(name string) (Unavailable, bool) {
	if k, ok := s.disabled[name]; ok {
		return Unavailable{ToolRef: ToolRef{name, k.server, k.tool}, Disabled: true}, true
	}
	if k, ok := s.held[name]; ok {
		return Unavailable{ToolRef: ToolRef{name, k.server, k.tool}, Held: true, Unpinnable: s.unpinnable[name]}, true
	}
	return Unavailable{}, false
}

// Prompt returns the /server:prompt command ("/" is added when missing).
func (s *Snapshot) Prompt(command string) (PromptCommand, bool) {
	if !strings.HasPrefix(command, "/") {
		command = "/" + command
	}
	i, ok := slices.BinarySearchFunc(s.prompts, command, func(p PromptCommand, c string) int { return strings.Compare(p.Command, c) })
	if !ok {
		return PromptCommand{}, false
	}
	return s.prompts[i].clone(), true
}
