// Package agent is the bridge between remote MCP servers and a host agent
// (SPEC §4): each server tool becomes an [AgentTool], prompts become
// /server:prompt commands, resources feed @ search, and everything a
// server returns reaches the model as an untrusted, fenced [ContextBlock].
//
// The [Registry] is built from the manager's catalogs and rebuilt when a
// catalog commits (R4.4). Every remote tool is a write tool that is never
// retried (R4.1): each call is approved (by its caller, or through an
// [Approver]), whatever the server's annotations say, and is sent at most
// once, with one operation id from the AgentTool down to the SDK (R4.5),
// whose one record and cancellation context are the manager's
// (manager.Op). Results are validated once, by the session, and cut to a
// size budget (R4.6). Elicitation during a call is handled by package
// elicit, whose admission gate the registry uses.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/fanout"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
)

// Effects says what a tool may do to the world.
type Effects string

// Effects values. Without a per-server trust configuration every remote
// tool is EffectsWrite (R4.1); EffectsRead exists for hosts that add one.
const (
	EffectsWrite Effects = "write"
	EffectsRead  Effects = "read"
)

// RetryPolicy says whether a host may repeat a failed call on its own.
type RetryPolicy string

// RetryNever: a remote call that failed may have run; never repeat it.
const RetryNever RetryPolicy = "never"

// Annotations are the server's tool hints, kept for display only: they
// never lower approval or retry risk (R4.1).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

func annotationsOf(a *mcp.ToolAnnotations) *Annotations {
	if a == nil {
		return nil
	}
	out := &Annotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, IdempotentHint: a.IdempotentHint}
	if a.DestructiveHint != nil {
		v := *a.DestructiveHint
		out.DestructiveHint = &v
	}
	if a.OpenWorldHint != nil {
		v := *a.OpenWorldHint
		out.OpenWorldHint = &v
	}
	return out
}

func (a *Annotations) clone() *Annotations {
	if a == nil {
		return nil
	}
	c := *a
	if a.DestructiveHint != nil {
		v := *a.DestructiveHint
		c.DestructiveHint = &v
	}
	if a.OpenWorldHint != nil {
		v := *a.OpenWorldHint
		c.OpenWorldHint = &v
	}
	return &c
}

// AgentTool is one remote tool as the host offers it to the model.
type AgentTool struct {
	// Name is mcp__{serverId}__{tool}, sanitised to [A-Za-z0-9_-], at most
	// 64 characters and unique in the registry (see ToolName).
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the server's inputSchema exactly as it sent it: the
	// model provider sees $ref, $defs and unknown keywords unchanged.
	InputSchema json.RawMessage `json:"inputSchema"`
	Effects     Effects         `json:"effects"`
	Retry       RetryPolicy     `json:"retry"`
	Annotations *Annotations    `json:"annotations,omitempty"`
	ServerID    string          `json:"serverId"`
	// ToolName is the server's own name of the tool.
	ToolName string `json:"toolName"`
	// OutputSchema and Meta (_meta) are the server's bytes, Icons its
	// icons as JSON; each is absent when the server sent none. An
	// outputSchema that is not a JSON object was left out when the tool
	// was listed.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	// Title and Description show invisible characters as "[U+XXXX]"
	// (ShowHidden: tag characters, zero-width and bidi format characters),
	// so the model reads what a person sees (issue #20 item 3).
	//
	// Own is the server's own title and description when Title or
	// Description differ from them (the title taken from the annotations,
	// the description cut to Options.MaxDescription, invisible characters
	// shown): the MCP front end
	// passes the server's own to its hosts (issue #19 item 4). nil when
	// they are the same.
	Own *ToolText `json:"own,omitempty"`
}

// ToolText is a tool's title and description as its server sent them.
type ToolText struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

func (t AgentTool) clone() AgentTool {
	t.InputSchema = slices.Clone(t.InputSchema)
	t.Annotations = t.Annotations.clone()
	t.OutputSchema = slices.Clone(t.OutputSchema)
	t.Icons = slices.Clone(t.Icons)
	t.Meta = slices.Clone(t.Meta)
	if t.Own != nil {
		own := *t.Own
		t.Own = &own
	}
	return t
}

// Backend is what the registry needs from the manager; *manager.Manager
// implements it.
type Backend interface {
	Status() []manager.ServerStatus
	Subscribe(ctx context.Context) <-chan manager.Event
	Catalog(ctx context.Context, id string) (*session.Catalog, error)
	CatalogOn(id, connID string) (*session.Catalog, error)
	// CachedCatalog is a server's last good catalog without connecting
	// (nil when there is none); it never counts as ready.
	CachedCatalog(ctx context.Context, id string) (*session.Catalog, error)
	// Begin, CallOp and Cancel are the manager's one record of each call
	// (manager.Op): the registry keeps none of its own.
	Begin(ctx context.Context, operationID string) (*manager.Op, error)
	CallOp(op *manager.Op, id, tool string, args json.RawMessage, o session.CallOptions) (*mcp.CallToolResult, error)
	Cancel(operationID string)
	GetPrompt(ctx context.Context, id, name string, args map[string]string) (*mcp.GetPromptResult, error)
	ReadResource(ctx context.Context, id, uri string) (*mcp.ReadResourceResult, error)
}

var _ Backend = (*manager.Manager)(nil)

// Options configure a Registry.
type Options struct {
	Backend Backend
	// Approver decides every tool call that brings no decision of its own
	// (CallOptions.Approved, CallOptions.Approve) (required).
	Approver Approver
	// Cards, when set, queues calls behind open elicitations and
	// attributes elicitations to calls (see package elicit); it should be
	// the Cards whose Handle is the manager's Elicit callback.
	Cards *elicit.Cards
	// ResultBudget is the size budget of one tool result, prompt or
	// resource read in characters (DefaultResultBudget when zero).
	ResultBudget int
	// BinaryCost is what one binary item counts against the budget
	// (DefaultBinaryCost when zero).
	BinaryCost int
	// MaxDescription caps a tool description in characters, since it is
	// server text the model always sees (default 2048; negative: no cap).
	MaxDescription int
	// ListConcurrency bounds parallel first listings in Refresh (default 4).
	ListConcurrency int
	Logger          *slog.Logger
}

// Errors callers branch on.
var (
	// ErrCancelled: the call was cancelled through its context or Cancel.
	ErrCancelled = manager.ErrCancelled
	// ErrClosed: the registry was closed.
	ErrClosed = errors.New("agent registry closed")
	// ErrUnknownCommand: no such /server:prompt command.
	ErrUnknownCommand = errors.New("no such prompt command")
	// ErrBadMention: a resource mention is not of the form @server:URI.
	ErrBadMention = errors.New("resource mention must look like @server:URI")
)

// Registry is the host's view of all servers' capabilities. Create it with
// New, then Start; Close stops it.
type Registry struct {
	o   Options
	be  Backend
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	snap atomic.Pointer[Snapshot]
	subs *fanout.Broker[*Snapshot] // each subscriber gets the newest snapshot

	buildMu sync.Mutex // serializes syncs; guards views and gen
	views   map[string]*serverView
	gen     uint64

	opsMu   sync.Mutex // guards started and closed
	started bool
	closed  bool
}

// serverView is what the registry last saw of one server.
type serverView struct {
	enabled  bool
	disabled []string
	url      string           // the catalog's; another URL drops it (R2.4)
	catalog  *session.Catalog // last good; kept while reconnecting (R4.4)
	err      error
}

// New makes a registry with an empty snapshot.
func New(o Options) (*Registry, error) {
	if o.Backend == nil {
		return nil, errors.New("agent: Options.Backend is required")
	}
	if o.Approver == nil {
		return nil, errors.New("agent: Options.Approver is required: every remote tool call needs approval")
	}
	if o.ResultBudget <= 0 {
		o.ResultBudget = DefaultResultBudget
	}
	if o.BinaryCost <= 0 {
		o.BinaryCost = DefaultBinaryCost
	}
	if o.MaxDescription == 0 {
		o.MaxDescription = 2048
	}
	if o.ListConcurrency <= 0 {
		o.ListConcurrency = 4
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Registry{o: o, be: o.Backend, log: o.Logger, ctx: ctx, cancel: cancel,
		views: map[string]*serverView{}}
	r.subs = fanout.New[*Snapshot](1)
	r.snap.Store(buildSnapshot(0, nil, o.MaxDescription))
	return r, nil
}

// Start lists every enabled server without connecting any (R2.3; issue
// #12): connected servers by their session's catalog, the others by their
// stored catalog when there is one. Then it follows the manager's events
// and rebuilds the snapshot whenever a catalog commits or a server's
// state or disabledTools change (R4.4). Refresh lists the servers that
// have no catalog yet, connecting them. Start fails only when ctx ends.
func (r *Registry) Start(ctx context.Context) error {
	r.opsMu.Lock()
	if r.started || r.closed {
		r.opsMu.Unlock()
		return errors.New("agent: Start called twice or after Close")
	}
	r.started = true
	r.opsMu.Unlock()
	// Subscribe before the first listing so no commit in between is missed.
	events := r.be.Subscribe(r.ctx)
	r.sync(ctx, false)
	if err := ctx.Err(); err != nil {
		return err
	}
	r.wg.Add(1)
	go r.loop(events)
	return nil
}

// Close stops following the manager. Calls in flight are not cancelled:
// they belong to their callers.
func (r *Registry) Close() error {
	r.opsMu.Lock()
	if r.closed {
		r.opsMu.Unlock()
		return nil
	}
	r.closed = true
	r.opsMu.Unlock()
	r.cancel()
	r.wg.Wait()
	r.subs.Close()
	return nil
}

func (r *Registry) loop(events <-chan manager.Event) {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				return
			}
			// Events are snapshots and the broker may drop some, so each
			// batch re-reads the truth instead of trusting the event.
			fanout.Drain(events) // a closed feed ends the loop on the next turn
			r.sync(r.ctx, false)
		}
	}
}

// Refresh re-reads every server now, connecting enabled servers that have
// no catalog yet (the first capability listing of a lazy server).
func (r *Registry) Refresh(ctx context.Context) error {
	r.sync(ctx, true)
	return ctx.Err()
}

// sync brings the views in line with the manager and publishes a new
// snapshot when anything changed. It never connects unless listLazy: an
// event loop that connected would retry a failing server forever.
//
// Long: one pass over the manager's statuses under buildMu that updates
// each server's view (new, moved, disabled, ready, not ready) and sets one
// changed flag, then lists the lazy servers concurrently and publishes a
// snapshot only if anything changed; the flag and the lock span all of it.
func (r *Registry) sync(ctx context.Context, listLazy bool) {
	r.buildMu.Lock()
	defer r.buildMu.Unlock()
	statuses := r.be.Status()
	changed := false
	seen := map[string]bool{}
	var lazy []string
	for _, st := range statuses {
		seen[st.ID] = true
		v := r.views[st.ID]
		if v == nil {
			v = &serverView{}
			r.views[st.ID] = v
			changed = true
		}
		if v.enabled != st.Enabled || !slices.Equal(v.disabled, st.DisabledTools) {
			v.enabled, v.disabled = st.Enabled, slices.Clone(st.DisabledTools)
			changed = true
		}
		if v.url != st.URL {
			// The server moved: what it listed before is not its catalog.
			v.url = st.URL
			if v.catalog != nil || v.err != nil {
				v.catalog, v.err = nil, nil
				changed = true
			}
		}
		if !st.Enabled {
			if v.catalog != nil || v.err != nil {
				v.catalog, v.err = nil, nil
				changed = true
			}
			continue
		}
		if st.ConnectionID != "" {
			// Ready: read the committed catalog of exactly this connection,
			// which never connects.
			if c, err := r.be.CatalogOn(st.ID, st.ConnectionID); err == nil {
				if c != v.catalog || v.err != nil {
					v.catalog, v.err = c, nil
					changed = true
				}
			}
			continue
		}
		if listLazy {
			lazy = append(lazy, st.ID)
			continue
		}
		// Not ready: keep the last good catalog; jitter is not deletion.
		// A server never listed here shows its stored catalog, if any.
		// One with held tools is read again: an accept brings them back
		// without a connect (issue #20 item 3).
		if v.catalog == nil || len(v.catalog.HeldTools) > 0 {
			if c, err := r.be.CachedCatalog(ctx, st.ID); err == nil && c != nil && c != v.catalog {
				v.catalog, v.err = c, nil
				changed = true
			}
		}
	}
	for id := range r.views {
		if !seen[id] {
			delete(r.views, id)
			changed = true
		}
	}
	if len(lazy) > 0 {
		type res struct {
			c   *session.Catalog
			err error
		}
		out := make([]res, len(lazy))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(r.o.ListConcurrency)
		for i, id := range lazy {
			g.Go(func() error {
				out[i].c, out[i].err = r.be.Catalog(gctx, id)
				return nil
			})
		}
		_ = g.Wait()
		for i, id := range lazy {
			v := r.views[id]
			before, beforeErr := v.catalog, errText(v.err)
			switch {
			case out[i].err == nil:
				v.catalog, v.err = out[i].c, nil
			case v.catalog == nil:
				v.err = out[i].err
			}
			// The same failure again is no news: publishing it would
			// wake every subscriber (the MCP front ends re-sync on each
			// snapshot, and their re-sync lists again), a reconnect loop
			// against a server that is down or not signed in to.
			if v.catalog != before || errText(v.err) != beforeErr {
				changed = true
			}
		}
	}
	if !changed {
		return
	}
	r.gen++
	s := buildSnapshot(r.gen, r.views, r.o.MaxDescription)
	r.snap.Store(s)
	r.subs.Publish(s)
}

// Snapshot returns the current snapshot (never nil).
func (r *Registry) Snapshot() *Snapshot { return r.snap.Load() }

// Subscribe delivers each new snapshot until ctx is done or the registry
// closes. Only the newest matters, so a slow subscriber sees the latest
// and skips the ones in between.
func (r *Registry) Subscribe(ctx context.Context) <-chan *Snapshot { return r.subs.Subscribe(ctx) }

// Snapshot is an immutable view of the registry: accessors return copies.
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

// tool is the snapshot's own AgentTool of name, not a copy: read-only.
func (s *Snapshot) tool(name string) (*AgentTool, bool) {
	i, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	return &s.tools[i], true
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
		p.Arguments = slices.Clone(p.Arguments)
		p.Icons, p.Meta = slices.Clone(p.Icons), slices.Clone(p.Meta)
		out[i] = p
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

// buildSnapshot builds generation gen of the snapshot from the views:
// names for every tool, the offered tools with their text made visible,
// the disabled and held names, prompts and resources.
//
// Long: two passes that must see the same tool keys: the first collects
// every key (held and disabled tools too, so switching one never renames
// another) with the prompts and resources, assignNames names them all at
// once, and the second builds the offered tools and the lookup maps from
// those names.
func buildSnapshot(gen uint64, views map[string]*serverView, maxDesc int) *Snapshot {
	s := &Snapshot{gen: gen, byName: map[string]int{}, byTool: map[toolKey]int{},
		disabled: map[string]toolKey{}, held: map[string]toolKey{}, errs: map[string]error{}, listed: map[string]bool{}}
	ids := slices.Sorted(maps.Keys(views))
	type entry struct {
		k toolKey
		t session.Tool
	}
	var entries []entry
	var keys, disabled, held []toolKey
	unpinnable := map[toolKey]string{}
	for _, id := range ids {
		v := views[id]
		if !v.enabled {
			continue
		}
		s.servers = append(s.servers, id)
		if v.err != nil {
			s.errs[id] = v.err
		}
		c := v.catalog
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
			if slices.Contains(v.disabled, t.Name) {
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
			Name: names[e.k], Title: ShowHidden(e.t.Title), Description: ShowHidden(capText(e.t.Description, maxDesc)),
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

// errText is err's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
