package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/internal/advice"
	"github.com/remotemcp/remotemcp/localapi"
)

// The tool list. The registry publishes an immutable snapshot with a new
// generation whenever any input of the list changes (a catalog, a held or
// accepted tool, a tool switched off, a server added, removed or
// disabled), so the list of every enabled server is a function of the
// generation: it is encoded once per generation and kept (catalogCache).
// Live updates (the catalog topic) and EncodedTools send those bytes; with
// 500 servers × 50 tools, converting and encoding the list on every
// listing cost most of a `remotemcp tools --json` (issue #21).

// Tools lists the agent's tools (mcp__server__tool; disabled tools left
// out) with their raw inputSchema bytes. With req.Connect the servers
// (lazy ones too) are connected and listed afresh; without it the known
// catalogs are used. Servers that could not be listed are in Errors.
func (c *Engine) Tools(ctx context.Context, req localapi.ToolsRequest) (*localapi.ToolList, error) {
	if err := c.readyToList(ctx, req); err != nil {
		return nil, err
	}
	l := c.toolList(req.ServerID)
	return &l, nil
}

// EncodedTools is Tools encoded as the local API sends it
// (localapi.EncodedToolLister): the daemon answers with these bytes
// instead of encoding the list on every request. The list of every
// enabled server comes from the encoding kept for the registry's
// generation; one server's list is encoded per call. The bytes are the
// caller's own.
func (c *Engine) EncodedTools(ctx context.Context, req localapi.ToolsRequest) (json.RawMessage, error) {
	if err := c.readyToList(ctx, req); err != nil {
		return nil, err
	}
	if req.ServerID != "" {
		enc, err := marshal(c.toolList(req.ServerID))
		return enc, fail(err)
	}
	enc, err := c.catalog.encoded(c)
	if err != nil {
		return nil, fail(err)
	}
	// A copy: the kept bytes are shared by every listing and subscriber.
	return bytes.Clone(enc), nil
}

// readyToList is what a listing does before it reads the snapshot: the
// engine runs, a named server exists, and with req.Connect the servers
// (lazy ones too) are connected and listed afresh.
func (c *Engine) readyToList(ctx context.Context, req localapi.ToolsRequest) error {
	if err := c.errNotRunning(); err != nil {
		return err
	}
	if req.ServerID != "" {
		if _, err := c.serverView(ctx, req.ServerID); err != nil {
			return fail(err)
		}
	}
	if req.Connect {
		rctx, cancel := context.WithTimeout(ctx, connectWait)
		err := c.reg.Refresh(c.want(rctx, req.ServerID))
		cancel()
		if err != nil && ctx.Err() != nil {
			return fail(ctx.Err())
		}
	}
	return nil
}

// want is a refresh context that may connect the server id, or every
// enabled server when id is "".
func (c *Engine) want(ctx context.Context, id string) context.Context {
	if id == "" {
		return withWantAll(ctx)
	}
	return withWant(ctx, id)
}

// toolList converts the registry's snapshot (only one server's tools when
// serverID is set).
func (c *Engine) toolList(serverID string) localapi.ToolList {
	return toolListOf(c.reg.Snapshot(), serverID)
}

// toolListOf converts one snapshot.
func toolListOf(snap *agent.Snapshot, serverID string) localapi.ToolList {
	out := localapi.ToolList{Generation: snap.Generation(), Tools: []localapi.Tool{}, Errors: []localapi.ServerError{}}
	for _, t := range snap.Tools() {
		if serverID != "" && t.ServerID != serverID {
			continue
		}
		out.Tools = append(out.Tools, toolOf(t))
	}
	errs := snap.Errors()
	for _, id := range slices.Sorted(maps.Keys(errs)) {
		if serverID != "" && id != serverID || errors.Is(errs[id], errNotWanted) {
			continue
		}
		out.Errors = append(out.Errors, localapi.ServerError{ServerID: id, Message: advice.Text(errs[id])})
	}
	return out
}

func toolOf(t agent.AgentTool) localapi.Tool {
	lt := localapi.Tool{Name: t.Name, ServerID: t.ServerID, ToolName: t.ToolName, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, Effects: localapi.Effects(t.Effects), Retry: localapi.RetryPolicy(t.Retry),
		OutputSchema: t.OutputSchema, Icons: t.Icons, Meta: t.Meta, Own: toolTextOf(t.Own)}
	if t.Annotations != nil {
		lt.Annotations, _ = json.Marshal(t.Annotations)
	}
	return lt
}

// catalogCache is the encoded tool list of every enabled server at the
// latest registry generation.
type catalogCache struct {
	mu  sync.Mutex
	gen uint64
	enc json.RawMessage
}

// encoded returns the tool list of the registry's current snapshot,
// encoded once per generation. The bytes are shared: read only.
func (cc *catalogCache) encoded(c *Engine) (json.RawMessage, error) {
	snap := c.reg.Snapshot()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.enc != nil && snap.Generation() == cc.gen {
		return cc.enc, nil
	}
	enc, err := marshal(toolListOf(snap, ""))
	if err != nil {
		return nil, err
	}
	if cc.enc == nil || snap.Generation() > cc.gen {
		// A listing that read an older snapshot does not replace a newer one.
		cc.gen, cc.enc = snap.Generation(), enc
	}
	return enc, nil
}
