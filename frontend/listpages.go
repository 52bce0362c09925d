package frontend

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/remotemcp/remotemcp/internal/jsonenc"
)

// A host's tools/list, answered from encodings kept per offered tool
// (issue #21). Each tool is encoded once, when it is offered (its offer
// signature is that encoding), and a listing splices the encodings of
// its page; go-sdk still picks the page (its order, its cursors, its
// envelope). With 500 servers × 50 tools a listing is ~15 MB, and go-sdk
// encodes a result twice whatever it is given: the result to raw JSON,
// then the whole message, and encoding/json compacts a Marshaler's or a
// json.RawMessage's bytes each time, so an encoding handed to go-sdk
// saves nothing. What does save is not handing it to go-sdk: on a stream
// transport (remotemcp mcp's stdio), the result go-sdk encodes is a short
// marker, and the transport's writer (pageWriter) puts the page in its
// place as the message is written. The bytes the host reads are the ones
// go-sdk would have written: the page is the encoding of the very tool
// objects go-sdk picked (a tool replaced meanwhile is a new object, and
// such a page is left to go-sdk), under the envelope go-sdk made. Over
// other transports (streamable HTTP, in memory) go-sdk encodes as ever.

// keptTools are the encodings of the offered tools, by offered name.
type keptTools struct {
	mu    sync.RWMutex
	tools map[string]keptTool
	held  atomic.Uint64 // pages held for a writer so far (tests count work with it)
}

// keptTool is one offered tool and its encoding (encodeLikeGoSDK).
type keptTool struct {
	tool *mcp.Tool
	enc  string
}

func (k *keptTools) add(t *mcp.Tool, enc string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.tools == nil {
		k.tools = map[string]keptTool{}
	}
	k.tools[t.Name] = keptTool{tool: t, enc: enc}
}

func (k *keptTools) remove(names ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, n := range names {
		delete(k.tools, n)
	}
}

// page is the encoding of res as go-sdk would write it, from the kept
// encodings of its tools; false when one of its tools is not the kept
// one (replaced or removed since go-sdk picked the page).
func (k *keptTools) page(res *mcp.ListToolsResult) ([]byte, bool) {
	envelope := *res
	envelope.Tools = []*mcp.Tool{}
	head, err := encodeLikeGoSDK(&envelope)
	// The tools are the envelope's last member: their encodings go
	// between its brackets.
	const tail = `"tools":[]}`
	if err != nil || !bytes.HasSuffix(head, []byte(tail)) {
		return nil, false
	}
	head = head[:len(head)-len("]}")]
	encs := make([]string, len(res.Tools))
	n := len(head) + len(res.Tools) + len("]}")
	k.mu.RLock()
	for i, t := range res.Tools {
		kt, ok := k.tools[t.Name]
		if !ok || kt.tool != t {
			k.mu.RUnlock()
			return nil, false
		}
		encs[i] = kt.enc
		n += len(kt.enc)
	}
	k.mu.RUnlock()
	out := make([]byte, 0, n)
	out = append(out, head...)
	for i, enc := range encs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, enc...)
	}
	return append(out, "]}"...), true
}

// encodeLikeGoSDK encodes v as go-sdk's JSON-RPC layer does (encoding/json,
// HTML characters not escaped), so the encoding of a tool is the bytes
// go-sdk writes for it inside a listing.
func encodeLikeGoSDK(v any) ([]byte, error) { return jsonenc.Marshal(v) }

// keptToolList is the receiving middleware that answers tools/list on a
// stream transport with a marker for its pageWriter (see above).
func (f *Frontend) keptToolList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		pw, _ := ctx.Value(pageWriterKey{}).(*pageWriter)
		if method != "tools/list" || pw == nil {
			return next(ctx, method, req)
		}
		res, err := next(ctx, method, req)
		if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil && lr != nil {
			return &keptPage{ListToolsResult: lr, kept: &f.kept, w: pw}, nil
		}
		return res, err
	}
}

// keptPage is a tools/list result whose page pageWriter writes. It
// embeds go-sdk's result, so what go-sdk sets on a result after the
// middleware (its result type and _meta of newer revisions) lands in
// the envelope, which is encoded when go-sdk encodes the result.
type keptPage struct {
	*mcp.ListToolsResult
	kept *keptTools
	w    *pageWriter

	once sync.Once
	enc  []byte
	err  error
}

// MarshalJSON is the marker of the page, held by the writer; or the
// result encoded as go-sdk would, when the page cannot be spliced. It is
// the same bytes each time: one page is held per result.
func (p *keptPage) MarshalJSON() ([]byte, error) {
	p.once.Do(func() {
		page, ok := p.kept.page(p.ListToolsResult)
		if !ok {
			p.enc, p.err = encodeLikeGoSDK(p.ListToolsResult)
			return
		}
		p.enc = p.w.hold(page)
		p.kept.held.Add(1)
	})
	return p.enc, p.err
}

// pageWriterKey is the context key of a session's pageWriter: go-sdk
// derives every request's context from the one the session was
// connected with.
type pageWriterKey struct{}

// pageWriter is the writer of a stream transport (newline-delimited
// JSON-RPC messages, one Write each, as go-sdk's IOTransport writes
// them): it writes each held page where its marker is. The marker names
// the page by a random nonce of this writer and a number, so no text a
// server or host sent can pass for one.
type pageWriter struct {
	w      io.WriteCloser
	prefix []byte // `{"remotemcp/keptPage":"NONCE/`

	mu      sync.Mutex
	next    uint64
	pending map[uint64][]byte
}

func newPageWriter(w io.WriteCloser) *pageWriter {
	return &pageWriter{w: w, prefix: []byte(`{"remotemcp/keptPage":"` + rand.Text() + `/`), pending: map[uint64][]byte{}}
}

// maxHeldPages bounds the pages held for markers not yet written. A
// marker whose message is never written (go-sdk gives up on a write when
// the connection's context ends after encoding) would otherwise keep its
// page, up to ~15 MB, for the life of the session; no host has this many
// listings encoded and not yet written at once.
const maxHeldPages = 64

// errPageLetGo fails the write of a listing whose page was let go.
var errPageLetGo = errors.New("front end: a tools/list page was let go before its message was written (more than 64 listings encoded and not written)")

// hold keeps page until its marker is written and returns the marker.
func (w *pageWriter) hold(page []byte) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	w.pending[w.next] = page
	if len(w.pending) > maxHeldPages {
		oldest := w.next
		for id := range w.pending {
			oldest = min(oldest, id)
		}
		delete(w.pending, oldest)
	}
	return fmt.Appendf(bytes.Clone(w.prefix), `%d"}`, w.next)
}

// Write writes one message, with the pages of the markers in it.
func (w *pageWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	held := len(w.pending) > 0
	w.mu.Unlock()
	if !held {
		return w.w.Write(p)
	}
	rest := p
	for {
		i := bytes.Index(rest, w.prefix)
		if i < 0 {
			break
		}
		j := i + len(w.prefix)
		k := bytes.Index(rest[j:], []byte(`"}`))
		if k < 0 {
			break
		}
		id, err := strconv.ParseUint(string(rest[j:j+k]), 10, 64)
		w.mu.Lock()
		page, ok := w.pending[id]
		delete(w.pending, id)
		w.mu.Unlock()
		if err != nil || !ok {
			// A marker of this writer's nonce whose page is no longer held
			// (let go past maxHeldPages): never write it, which would give
			// the host a listing without tools and the nonce. The message
			// fails as a whole; the host's session ends with the error.
			return 0, errPageLetGo
		}
		if _, err := w.w.Write(rest[:i]); err != nil {
			return 0, err
		}
		if _, err := w.w.Write(page); err != nil {
			return 0, err
		}
		rest = rest[j+k+len(`"}`):]
	}
	if _, err := w.w.Write(rest); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *pageWriter) Close() error { return w.w.Close() }

// keptTransport is t with a pageWriter on its stream, and the writer;
// t itself and nil for a transport it cannot see the stream of.
func keptTransport(t mcp.Transport) (mcp.Transport, *pageWriter) {
	it, ok := t.(*mcp.IOTransport)
	if !ok || it == nil || it.Writer == nil {
		return t, nil
	}
	pw := newPageWriter(it.Writer)
	c := *it
	c.Writer = pw
	return &c, pw
}
