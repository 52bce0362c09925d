package manager

// Tool pinning (issue #20 item 3, "rug pull"). The first definition seen
// of each tool of a server is pinned in the store; a later listing that
// changes it holds the tool: it leaves every catalog the manager hands out
// (so the engine's tool list and the MCP front ends lose it at
// once, and go-sdk tells hosts list_changed) and a call to it is refused
// unsent, until the person accepts the new definition. The session's own
// catalog stays complete: a hold is a view, recomputed when the catalog
// or the pins change.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/remotemcp/remotemcp/pin"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// ErrToolHeld: the tool's definition changed since it was pinned and the
// person has not accepted the change, or it cannot be pinned at all
// (ErrToolUnpinnable, which is also ErrToolHeld). The call was not sent.
var ErrToolHeld = errors.New("tool is held: its definition changed since it was first seen")

// ErrToolUnpinnable: the tool's definition cannot be pinned (too large,
// too deep, duplicate keys, or over the server's pin cap), so it is never
// offered; there is nothing to review or accept. errors.Is(err,
// ErrToolHeld) holds too.
var ErrToolUnpinnable = unpinnableError{}

type unpinnableError struct{}

func (unpinnableError) Error() string {
	return "tool is not offered"
}

func (unpinnableError) Is(target error) bool { return target == ErrToolHeld }

// HeldError is the refusal of a call to a held tool whose change the
// person can review and accept (issue #20 item 3). Its text says what
// is held and why, never what to run: a surface adds that in its own
// words (WithAdvice). errors.Is(err, ErrToolHeld) holds.
type HeldError struct {
	ServerID, Tool string
	// Hash is the pin hash of the held definition, the one to accept;
	// "" when the tool is held because its pin could not be read.
	Hash string
	// Why is set when the tool is held for another reason than a
	// changed definition (its pin could not be read).
	Why string
}

// Error is WithAdvice without advice.
func (e *HeldError) Error() string { return e.WithAdvice("") }

// WithAdvice is the error's text with advice, the person's words for
// what to do, in parentheses at its end.
func (e *HeldError) WithAdvice(advice string) string {
	s := ErrToolHeld.Error()
	if e.Why != "" {
		s += ": " + e.Why
	}
	if advice != "" {
		s += " (" + advice + ")"
	}
	return s
}

// Is makes every HeldError match ErrToolHeld.
func (e *HeldError) Is(target error) bool { return target == ErrToolHeld }

// hold is why a tool is held. Unpinnable ones have no stored change to
// review: they are never offered. hash is the held definition's.
type hold struct {
	why        string
	hash       string
	unpinnable bool
	// unread: held only because the pins could not be read (the store
	// is away); nothing for a person to review, and it passes by itself.
	unread bool
}

// notOffered is the person's text for a tool held for another reason
// than a changed definition.
func (h hold) notOffered() string {
	if h.unread {
		return "is not offered while its pin cannot be read (" + h.why + "); it comes back by itself"
	}
	return unpinnableWhy(h.why)
}

// unpinnableWhy is the person's text for a tool that cannot be pinned.
func unpinnableWhy(why string) string {
	return "cannot be pinned: " + why + "; it is never offered"
}

// PinStore is what a store offers that keeps tool pins (*store.DB
// does). A manager on a store without it pins nothing.
type PinStore interface {
	PinSummaries(ctx context.Context, serverID string) (map[string]store.PinSummary, error)
	HeldTools(ctx context.Context, serverID string) ([]store.ToolPin, error)
	ApplyPins(ctx context.Context, serverID string, ops []store.PinOp) error
	AcceptHeld(ctx context.Context, serverID string, tools []string, expect map[string]string) ([]store.ToolPin, error)
}

var _ PinStore = (*store.DB)(nil)

// pinTimeout bounds the store work of one pin evaluation.
const pinTimeout = 10 * time.Second

// pinState is an entry's view of its catalog through the pins. eval
// serializes evaluations (store I/O) of the server; the other fields are
// guarded by entry.mu.
type pinState struct {
	eval sync.Mutex
	// forms are the canonical forms of the tools of formsOf, kept so that
	// a view made again (the pins changed) does not encode a large
	// catalog again. Guarded by eval.
	formsOf *session.Catalog
	forms   []toolForm
	raw     *session.Catalog // the catalog the view was made of
	gen     uint64           // pinGen when it was made
	// stale counts the pin writes of this server only; lgen is its value
	// when the view was made. A write to one server's pins makes only
	// its view again, not every server's.
	stale   atomic.Uint64
	lgen    uint64
	trusted bool // the server's trust then: a change of it makes the view again
	view    *session.Catalog
	// confirmed maps each tool of the last catalog found wholly pinned
	// (nothing held, the store answered) to its pin hash; guarded by
	// eval. While the store cannot be reached (a gateway's PostgreSQL
	// restarting), a catalog whose every tool is in it with the same hash
	// is offered as it was, instead of held (issue #23).
	confirmed map[string]string
	// held maps each held tool to why; nil when none.
	held map[string]hold
}

// toolForm is one tool's canonical definition and pin, or why it has
// none.
type toolForm struct {
	name  string
	canon []byte
	hash  string
	err   error
}

// formsLocked returns the canonical forms of raw's tools (e.ext().pins.eval
// held).
func (e *entry) formsLocked(raw *session.Catalog) []toolForm {
	if e.ext().pins.formsOf == raw {
		return e.ext().pins.forms
	}
	forms := make([]toolForm, len(raw.Tools))
	for i, t := range raw.Tools {
		forms[i].name = toolName(t)
		forms[i].canon, forms[i].hash, forms[i].err = pin.Of(Definition(t))
	}
	e.ext().pins.formsOf, e.ext().pins.forms = raw, forms
	return forms
}

// pinGen counts the pin changes the manager knows of; a view made at
// an older generation is made again.
type pinGen struct{ n atomic.Uint64 }

func (m *Manager) pinStore() PinStore {
	ps, _ := m.o.Store.(PinStore)
	return ps
}

// heldNamesLocked lists the held tools of the current view (e.mu held).
func (e *entry) heldNamesLocked() []string {
	x := e.peek()
	if x == nil || x.pins.raw == nil || x.pins.raw != e.catalog || len(x.pins.held) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(x.pins.held))
}

// unpinnableLocked maps the held tools of the current view that cannot
// be pinned to why (e.mu held); nil when none.
func (e *entry) unpinnableLocked() map[string]string {
	x := e.peek()
	if x == nil || x.pins.raw == nil || x.pins.raw != e.catalog {
		return nil
	}
	var out map[string]string
	for name, h := range x.pins.held {
		if h.unpinnable {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = h.notOffered()
		}
	}
	return out
}

// Definition is what is pinned of a session tool.
func Definition(t session.Tool) pin.Definition {
	d := pin.Definition{InputSchema: t.RawInputSchema, OutputSchema: t.RawOutputSchema}
	if t.Tool != nil {
		d.Title, d.Description = t.Title, t.Description
		if d.InputSchema == nil && t.InputSchema != nil {
			d.InputSchema, _ = json.Marshal(t.InputSchema)
		}
		if t.Annotations != nil {
			d.Annotations, _ = json.Marshal(t.Annotations)
		}
	}
	return d
}

// viewOf is raw as the agent and hosts may see it: without held tools.
// It pins tools seen for the first time, records changed definitions and
// re-pins those of a trusted server. A store that cannot be read holds
// every tool: what cannot be checked is not offered.
func (m *Manager) viewOf(ctx context.Context, e *entry, raw *session.Catalog) *session.Catalog {
	v, _ := m.view(ctx, e, raw)
	return v
}

// view is viewOf and the held tools of raw, each with why.
func (m *Manager) view(ctx context.Context, e *entry, raw *session.Catalog) (*session.Catalog, map[string]hold) {
	ps := m.pinStore()
	if ps == nil || raw == nil || e == nil {
		return raw, nil
	}
	if v, h, ok := m.pinMemo(e, raw); ok {
		return v, h
	}
	e.ext().pins.eval.Lock()
	defer e.ext().pins.eval.Unlock()
	if v, h, ok := m.pinMemo(e, raw); ok {
		return v, h
	}
	gen, lgen := m.pins.n.Load(), e.ext().pins.stale.Load()
	e.mu.Lock()
	trusted := e.conf.trusted()
	lim := e.configLocked().Limits.WithDefaults()
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pinTimeout)
	defer cancel()
	caps := pinCaps{tools: 2 * lim.MaxListItems, bytes: 2 * lim.MaxListBytes}
	forms := e.formsLocked(raw)
	held, ok := m.evaluate(ctx, ps, e.id, trusted, caps, forms, e.ext().pins.confirmed)
	if ok && len(held) == 0 {
		confirmed := make(map[string]string, len(forms))
		for _, f := range forms {
			confirmed[f.name] = f.hash
		}
		e.ext().pins.confirmed = confirmed
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	var view *session.Catalog
	switch {
	case len(held) == 0:
		view = raw
	case e.ext().pins.raw == raw && maps.Equal(e.ext().pins.held, held):
		view = e.ext().pins.view // the same view: callers comparing pointers see no change
	default:
		c := *raw
		c.Tools = slices.DeleteFunc(slices.Clone(raw.Tools), func(t session.Tool) bool {
			_, h := held[toolName(t)]
			return h
		})
		c.HeldTools = slices.Sorted(maps.Keys(held))
		for name, h := range held {
			if h.unpinnable {
				if c.Unpinnable == nil {
					c.Unpinnable = map[string]string{}
				}
				c.Unpinnable[name] = h.notOffered()
			}
		}
		view = &c
	}
	if !ok {
		// Not current: the next listing reads the store again. The view
		// is kept all the same, so that a listing that gets the same
		// answer gets the same pointer (no change to announce, no
		// re-sync of every front end on each listing).
		gen = math.MaxUint64
	}
	if e.catalog == nil {
		// The catalog left memory while the view was made (the server
		// hibernated or disconnected after a background pin read its
		// catalog): keeping the view, or the forms made above, would keep
		// that catalog in memory for the whole sleep.
		e.ext().pins.formsOf, e.ext().pins.forms = nil, nil
		return view, held
	}
	changed := e.ext().pins.raw == raw && !maps.Equal(e.ext().pins.held, held) || e.ext().pins.raw != raw && len(held) > 0
	e.ext().pins.raw, e.ext().pins.gen, e.ext().pins.lgen, e.ext().pins.view, e.ext().pins.held, e.ext().pins.trusted = raw, gen, lgen, view, held, trusted
	if changed && e.catalog == raw {
		// Status (held tools, tool count) and every listener re-read.
		m.emitLocked(e)
	}
	return view, held
}

// pinMemo returns the view made of raw at the current generation.
func (m *Manager) pinMemo(e *entry, raw *session.Catalog) (*session.Catalog, map[string]hold, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ext().pins.raw == raw && e.ext().pins.gen == m.pins.n.Load() && e.ext().pins.lgen == e.ext().pins.stale.Load() && e.ext().pins.trusted == e.conf.trusted() && e.ext().pins.view != nil {
		return e.ext().pins.view, e.ext().pins.held, true
	}
	return nil, nil, false
}

func toolName(t session.Tool) string {
	if t.Tool == nil {
		return ""
	}
	return t.Name
}

// allConfirmed reports whether every tool of forms is in confirmed with
// the same hash.
func allConfirmed(forms []toolForm, confirmed map[string]string) bool {
	if len(forms) == 0 || confirmed == nil {
		return false
	}
	for _, f := range forms {
		if h, ok := confirmed[f.name]; !ok || f.err != nil || h != f.hash {
			return false
		}
	}
	return true
}

// pinCaps bound what one server may pin (issue #20 item 3 review: a
// server renaming its tools on every listing grew the table without
// end): twice the tools and bytes one listing may bring, so a server can
// replace its whole catalog once. Pins are never pruned (that would let a
// server remove a tool and add it again as new).
type pinCaps struct {
	tools int
	bytes int64
}

// evaluate compares raw's tools with the server's pins and writes what
// changed; it returns the held tools and whether the result may be
// remembered (the store answered). It reads names, hashes and sizes of
// the pins only.
//
// Long: one pass over the pins decides every tool (first seen, same,
// changed, over the caps, unreadable) and collects the writes, so that
// the held set and what is written always agree.
func (m *Manager) evaluate(ctx context.Context, ps PinStore, id string, trusted bool, caps pinCaps, forms []toolForm, confirmed map[string]string) (map[string]hold, bool) {
	pins, err := ps.PinSummaries(ctx, id)
	if err != nil && errors.Is(err, store.ErrUnavailable) && allConfirmed(forms, confirmed) {
		// The same tools, with the same definitions, as the pins
		// answered for last time: offered as then, and not remembered,
		// so the next listing asks the store again.
		return nil, false
	}
	if err != nil {
		m.log.Warn("manager: read the tool pins; holding the server's tools", "server", id, "err", err)
		held := map[string]hold{}
		for _, f := range forms {
			held[f.name] = hold{why: err.Error(), unpinnable: true, unread: true}
		}
		return held, false
	}
	count, size := len(pins), int64(0)
	for _, p := range pins {
		size += p.Bytes + p.HeldBytes
	}
	var (
		held  map[string]hold
		ops   []store.PinOp
		over  int
		holdT = func(name string, h hold) {
			if held == nil {
				held = map[string]hold{}
			}
			held[name] = h
		}
	)
	for _, f := range forms {
		name, canon, hash, err := f.name, f.canon, f.hash, f.err
		if err != nil {
			// Refused, not offered: a definition that cannot be pinned
			// could change unseen.
			holdT(name, hold{why: err.Error(), unpinnable: true})
			continue
		}
		p, ok := pins[name]
		switch {
		case !ok && (count >= caps.tools || size+int64(len(canon)) > caps.bytes):
			// Not pinned, so not offered: what is not pinned could
			// change unseen.
			holdT(name, hold{unpinnable: true, why: fmt.Sprintf(
				"the server already has %d pinned tools (%d bytes; at most %d tools and %d bytes, twice its limits maxListItems and maxListBytes); "+
					"a server that keeps adding tool names is suspect: if it is trusted, remove it and add it again (which forgets its pins), or raise its limits",
				count, size, caps.tools, caps.bytes)})
			over++
		case !ok:
			ops = append(ops, store.PinOp{Action: store.PinFirst, Tool: name, Hash: hash, Definition: canon})
			count++
			size += int64(len(canon))
		case p.Hash == hash:
			if p.HeldHash != "" {
				ops = append(ops, store.PinOp{Action: store.PinRelease, Tool: name})
			}
		case trusted:
			ops = append(ops, store.PinOp{Action: store.PinReplace, Tool: name, Hash: hash, Definition: canon})
			m.log.Info("tool definition changed; the server is trusted, so the new definition is pinned", "server", id, "tool", name, "old", p.Hash, "new", hash)
		case p.HeldHash != hash && size-p.HeldBytes+int64(len(canon)) > caps.bytes:
			// The change cannot be recorded for review within the cap.
			holdT(name, hold{unpinnable: true, why: fmt.Sprintf(
				"its definition changed, and the change cannot be recorded: the server's pins already take %d bytes (at most %d, twice its limit maxListBytes); "+
					"raise the server's limits, or remove it and add it again (which forgets its pins)", size, caps.bytes)})
		default:
			holdT(name, hold{hash: hash})
			if p.HeldHash != hash {
				size += int64(len(canon)) - p.HeldBytes
				ops = append(ops, store.PinOp{Action: store.PinHold, Tool: name, Hash: hash, Definition: canon})
				m.log.Warn("tool definition changed; the tool is held until the change is accepted", "server", id, "tool", name, "old", p.Hash, "new", hash)
			}
		}
	}
	if over > 0 {
		m.log.Warn("manager: too many pinned tools; the server's new tools are not offered", "server", id, "tools", over, "pinned", count, "max", caps.tools)
	}
	if err := ps.ApplyPins(ctx, id, ops); err != nil {
		// The holds above stand; first-seen tools pass this once and are
		// pinned by the next listing.
		m.log.Warn("manager: store the tool pins", "server", id, "err", err)
		return held, false
	}
	return held, true
}

// heldError is the refusal of a call to a held tool, or nil.
func (m *Manager) heldError(ctx context.Context, id string, sess *session.Session, tool string) error {
	e := m.entry(id)
	if e == nil || m.pinStore() == nil {
		return nil
	}
	// The held tools of exactly the catalog of the call's session (the
	// memo may move on to a newer catalog meanwhile).
	_, heldTools := m.view(ctx, e, sess.Catalog())
	h, held := heldTools[tool]
	switch {
	case !held:
		return nil
	case h.unpinnable:
		return fmt.Errorf("%w: %s", ErrToolUnpinnable, h.notOffered())
	}
	return &HeldError{ServerID: id, Tool: tool, Hash: h.hash, Why: h.why}
}

// pinSoon makes the view of the entry's new catalog in the background,
// so that a hold is recorded (and shown) even before anyone lists.
func (m *Manager) pinSoon(e *entry) {
	if m.pinStore() == nil {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		e.mu.Lock()
		c := e.catalog
		e.mu.Unlock()
		m.viewOf(m.ctx, e, c)
	}()
}

// pinsChanged forgets every view: the pins changed (an accept here, or
// a write of another process).
func (m *Manager) pinsChanged() { m.pins.n.Add(1) }

// rePin makes the views of every server with a catalog again, so that
// listeners learn of tools that came back or left.
func (m *Manager) rePin(ctx context.Context) {
	m.mu.Lock()
	entries := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		entries = append(entries, e)
	}
	m.mu.Unlock()
	for _, e := range entries {
		m.rePinEntry(ctx, e)
	}
}

// rePinEntry makes the view of one server's catalog again.
func (m *Manager) rePinEntry(ctx context.Context, e *entry) {
	e.mu.Lock()
	c := e.catalog
	e.mu.Unlock()
	if c != nil {
		m.viewOf(ctx, e, c)
	}
}

// pinLoop follows pin writes of other processes (seen as "re-read
// everything") and of this store: views are made again.
func (m *Manager) pinLoop(changes <-chan store.Change) {
	defer m.wg.Done()
	for c := range changes {
		switch {
		case c.Namespace == store.PinNamespace && c.ServerID != "" && !c.RereadAll():
			// One server's pins: only its view is made again.
			if e := m.entry(c.ServerID); e != nil {
				e.ext().pins.stale.Add(1)
				m.rePinEntry(m.ctx, e)
			}
		case c.RereadAll() || c.Namespace == store.PinNamespace:
			m.pinsChanged()
			m.rePin(m.ctx)
		}
	}
}

// HeldChange is a tool held because its definition changed.
type HeldChange struct {
	ServerID string `json:"serverId"`
	Tool     string `json:"tool"`
	// Old is the pinned definition, New the changed one; Changes lists
	// the differences.
	Old, New         pin.Definition
	OldHash, NewHash string
	Pinned, Seen     time.Time
	Changes          []pin.Change
	// Unpinnable, when set, says why the tool cannot be pinned: it is
	// never offered, and there is no change to review or accept (Old,
	// New and the hashes are empty).
	Unpinnable string
}

// HeldChanges lists the held tools of a server, or (id "") of every
// server, with their old and new definitions and the diff.
func (m *Manager) HeldChanges(ctx context.Context, id string) (out []HeldChange, err error) {
	ps := m.pinStore()
	if ps == nil {
		return nil, nil
	}
	if id != "" {
		if _, err := m.lookup(id); err != nil {
			return nil, err
		}
	}
	pins, err := ps.HeldTools(ctx, id)
	if err != nil {
		return nil, err
	}
	out = make([]HeldChange, 0, len(pins))
	defer func() {
		if err != nil {
			return
		}
		// Tools that cannot be pinned have no stored row: they come from
		// the current views.
		out = append(out, m.unpinnable(id)...)
		slices.SortFunc(out, func(a, b HeldChange) int {
			if a.ServerID != b.ServerID {
				return strings.Compare(a.ServerID, b.ServerID)
			}
			return strings.Compare(a.Tool, b.Tool)
		})
	}()
	for _, p := range pins {
		oldDef, err1 := pin.Parse(p.Definition)
		newDef, err2 := pin.Parse(p.Held.Definition)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("read the held change of tool %q of server %q: %w", p.Tool, p.ServerID, err)
		}
		out = append(out, HeldChange{ServerID: p.ServerID, Tool: p.Tool, Old: oldDef, New: newDef,
			OldHash: p.Hash, NewHash: p.Held.Hash, Pinned: p.Pinned, Seen: p.Held.Seen, Changes: pin.Diff(oldDef, newDef)})
	}
	return out, nil
}

// AcceptTools pins the held definitions of a server's tools (every held
// one when tools is empty), so they are offered again. expect, when it
// names a tool, is the hash of the definition the person reviewed; a
// newer one is refused (store.ErrHeldChanged). It returns the tools
// accepted.
func (m *Manager) AcceptTools(ctx context.Context, id string, tools []string, expect map[string]string) ([]string, error) {
	ps := m.pinStore()
	if ps == nil {
		return nil, errors.New("this store keeps no tool pins")
	}
	e, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	accepted, err := ps.AcceptHeld(ctx, id, tools, expect)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(accepted))
	for i, p := range accepted {
		names[i] = p.Tool
		m.log.Info("tool definition accepted", "server", id, "tool", p.Tool, "pin", p.Hash)
	}
	e.ext().pins.stale.Add(1)
	m.rePinEntry(ctx, e)
	return names, nil
}

// unpinnable lists the tools of the current views (of server id, or of
// all) that cannot be pinned.
func (m *Manager) unpinnable(id string) []HeldChange {
	m.mu.Lock()
	entries := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		if id == "" || e.id == id {
			entries = append(entries, e)
		}
	}
	m.mu.Unlock()
	var out []HeldChange
	for _, e := range entries {
		e.mu.Lock()
		for name, why := range e.unpinnableLocked() {
			out = append(out, HeldChange{ServerID: e.id, Tool: name, Unpinnable: why})
		}
		e.mu.Unlock()
	}
	return out
}
