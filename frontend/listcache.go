package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host's tools/list is answered from encoded pages kept per generation
// of the offered tools (issue #21): go-sdk encodes every tool of a page,
// schemas included, on every listing, and with 500 servers × 50 tools a
// listing spent most of its time there. go-sdk still picks the page (its
// order, its cursors); only the encoding is kept. A page is reused only
// when it holds the very same tools (go-sdk's tools are never modified
// once added: a change is a new *mcp.Tool), so a catalog change can never
// be answered with a stale page; every change of the offered tools also
// drops the kept pages, so they do not outlive it in memory.

// maxListPages bounds the pages kept: the pages of one listing of a very
// large catalog, and no more (a host could ask for any cursor).
const maxListPages = 64

// listCache holds the encoded tools/list pages of one generation.
type listCache struct {
	mu    sync.Mutex
	gen   uint64 // bumped by every change of the offered tools
	pages map[string]*listPage
	off   atomic.Bool // tests: answer as go-sdk alone does
}

// listPage is one encoded page and what it was encoded from.
type listPage struct {
	gen   uint64
	tools []*mcp.Tool
	next  string
	ttl   int
	scope string
	raw   json.RawMessage
}

// changed drops the kept pages: the offered tools change.
func (c *listCache) changed() {
	c.mu.Lock()
	c.gen++
	c.pages = nil
	c.mu.Unlock()
}

// generation is the current generation, read before go-sdk builds a page.
func (c *listCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// page returns the kept encoding of res (the page of cursor), encoding
// and keeping it when there is none yet.
func (c *listCache) page(gen uint64, cursor string, res *mcp.ListToolsResult) (json.RawMessage, bool) {
	c.mu.Lock()
	p := c.pages[cursor]
	c.mu.Unlock()
	if p != nil && p.gen == gen && p.next == res.NextCursor && p.ttl == res.TTLMs && p.scope == res.CacheScope && slices.Equal(p.tools, res.Tools) {
		return p.raw, true
	}
	raw, err := encodeLikeGoSDK(res)
	if err != nil {
		return nil, false
	}
	p = &listPage{gen: gen, tools: slices.Clone(res.Tools), next: res.NextCursor, ttl: res.TTLMs, scope: res.CacheScope, raw: raw}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return raw, true // the tools changed meanwhile: not kept
	}
	if c.pages == nil || len(c.pages) >= maxListPages {
		c.pages = map[string]*listPage{}
	}
	c.pages[cursor] = p
	return raw, true
}

// encodeLikeGoSDK encodes a result as go-sdk's JSON-RPC layer does
// (encoding/json, HTML characters not escaped), so a kept page is the
// bytes go-sdk would have sent.
func encodeLikeGoSDK(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// encodedToolList is a tools/list result whose encoding is already known.
type encodedToolList struct {
	*mcp.ListToolsResult
	raw json.RawMessage
}

// MarshalJSON returns the kept encoding, unless go-sdk added to the result
// after the middleware (it stamps results of newer protocol revisions):
// then the result is encoded as it now stands.
func (r *encodedToolList) MarshalJSON() ([]byte, error) {
	if r.Meta != nil || r.ResultType != "" {
		return encodeLikeGoSDK(r.ListToolsResult)
	}
	return r.raw, nil
}

// cachedToolList is the receiving middleware that answers tools/list from
// the kept pages.
func (f *Frontend) cachedToolList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" || f.lists.off.Load() {
			return next(ctx, method, req)
		}
		gen := f.lists.generation()
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok || lr == nil || lr.Meta != nil || lr.ResultType != "" {
			return res, err
		}
		cursor := ""
		if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil {
			cursor = p.Cursor
		}
		raw, ok := f.lists.page(gen, cursor, lr)
		if !ok {
			return res, nil
		}
		return &encodedToolList{ListToolsResult: lr, raw: raw}, nil
	}
}

// removeTools takes tools off the host's list.
func (f *Frontend) removeTools(names ...string) {
	f.srv.RemoveTools(names...)
	f.lists.changed()
}
