package session

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/time/rate"

	"github.com/remotemcp/remotemcp/config"
)

// LimitError says that a server exceeded one of its limits (issue #10): a
// message, a response stream, its memory budget or a listing was larger
// than this process agreed to read. Nothing past the limit was read or
// kept, and the session stays usable.
type LimitError struct {
	// Server is the server's id.
	Server string `json:"server"`
	// Limit is the config field that bounds it, e.g. "maxMessageBytes"
	// (set as limits.maxMessageBytes on the server).
	Limit string `json:"limit"`
	// Value is the limit in force (bytes, items or pages).
	Value int64 `json:"value"`
	// What names what exceeded it: "a response", "a listing", ….
	What string `json:"what"`
}

// Error is WithAdvice without advice.
func (e *LimitError) Error() string { return e.WithAdvice("") }

// WithAdvice is the error's text followed by advice, the person's words
// for raising the limit (a surface's: the session names no command).
func (e *LimitError) WithAdvice(advice string) string {
	v := strconv.FormatInt(e.Value, 10)
	switch e.Limit {
	case "maxMessageBytes", "maxStreamBytes", "memoryBytes", "maxListBytes":
		v = config.FormatBytes(e.Value)
	}
	if advice != "" {
		advice = " " + advice
	}
	return fmt.Sprintf("server %q: %s exceeded the limit limits.%s (%s); the rest was not read.%s", e.Server, e.What, e.Limit, v, advice)
}

// limitCode is the JSON-RPC error code of the synthetic error response a
// session substitutes for a response that exceeded a limit, so that go-sdk
// ends just that request (not the connection) and the caller gets a
// *LimitError. -32000 to -32099 are implementation-defined server errors;
// the data member makes it unambiguous.
const limitCode = -32042

// limitNames are the limits a session enforces: the only names a
// *LimitError read back from the wire may carry.
var limitNames = map[string]bool{
	"maxMessageBytes": true, "maxStreamBytes": true, "maxStreamEvents": true,
	"memoryBytes": true, "maxListPages": true, "maxListItems": true, "maxListBytes": true,
}

// limitKey signs the synthetic error responses of this process. A server
// can send a -32042 error with a remotemcpLimit of its own making; only
// one this process synthesized (and so signed) becomes a *LimitError, so
// nothing a server sends reaches a person dressed as remotemcp's words.
// The key never leaves the process: synthetic responses are made on the
// client side of the connection and never sent to the server.
var limitKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("session: no randomness for the limit key: " + err.Error())
	}
	return k
}()

// limitMAC is the signature of le's fields.
func limitMAC(le *LimitError) string {
	m := hmac.New(sha256.New, limitKey)
	fmt.Fprintf(m, "%q\x00%q\x00%d\x00%q", le.Server, le.Limit, le.Value, le.What)
	return hex.EncodeToString(m.Sum(nil))
}

// wireLimit is the data member of a synthetic error response.
type wireLimit struct {
	LimitError *LimitError `json:"remotemcpLimit"`
	MAC        string      `json:"remotemcpLimitMAC"`
}

// limitFromWire turns the synthetic error back into a *LimitError; any
// other error, a server's forged -32042 among them, is returned unchanged
// (server text).
func limitFromWire(err error) error {
	var we *jsonrpc.Error
	if err == nil || !errors.As(err, &we) || we.Code != limitCode || len(we.Data) == 0 {
		return err
	}
	var wl wireLimit
	if json.Unmarshal(we.Data, &wl) != nil || wl.LimitError == nil || !limitNames[wl.LimitError.Limit] ||
		!hmac.Equal([]byte(wl.MAC), []byte(limitMAC(wl.LimitError))) {
		return err
	}
	return wl.LimitError
}

// syntheticResponse encodes a JSON-RPC error response to id carrying le.
func syntheticResponse(id json.RawMessage, le *LimitError) []byte {
	data, _ := json.Marshal(wireLimit{LimitError: le, MAC: limitMAC(le)})
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": limitCode, "message": le.Error(), "data": json.RawMessage(data)},
	})
	return b
}

// requestID reads the JSON-RPC id of a POST's body (a copy); nil when the
// message has none (a notification) or cannot be read. Only called on the
// error path, so it decodes rather than scans.
func requestID(req *http.Request) json.RawMessage {
	if req == nil || req.GetBody == nil {
		return nil
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer rc.Close()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.NewDecoder(io.LimitReader(rc, 16<<20)).Decode(&m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil
	}
	return m.ID
}

// memBudget is one server's buffer budget: responses read concurrently
// from the same server share it (issue #10, "a memory budget per server").
// A response that does not fit fails at once instead of waiting, since two
// half-read responses waiting for each other would never finish.
type memBudget struct {
	mu        sync.Mutex
	used, max int64
}

func (b *memBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *memBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// listMeter counts the bytes of one listing across its pages; it travels
// in the context of the listing's requests.
type listMeter struct {
	n   atomic.Int64
	max int64
	// method is the listing's ("tools/list", …), so the transport knows
	// a tools/list answer without reading the request's body.
	method string
}

type listMeterKey struct{}

func withListMeter(ctx context.Context, m *listMeter) context.Context {
	return context.WithValue(ctx, listMeterKey{}, m)
}

func listMeterFrom(ctx context.Context) *listMeter {
	m, _ := ctx.Value(listMeterKey{}).(*listMeter)
	return m
}

// limiter applies one session's limits to the bodies go-sdk reads.
type limiter struct {
	server string
	lim    config.Limits
	mem    *memBudget
	log    *slog.Logger
	// events and bytes throttle the standalone stream.
	events, bytes *rate.Limiter
	// hits counts limit violations, for tests and the status line.
	hits atomic.Int64
	// onProgress hears the token of every progress notification as the
	// framer hands it to go-sdk, in stream order (before the response
	// that follows it), so a call can wait for its last progress.
	onProgress func(token string)
	// relSecret is the session's secret in the marks of server requests
	// (related.go); "" marks nothing.
	relSecret string
}

func newLimiter(server string, lim config.Limits, log *slog.Logger) *limiter {
	lim = lim.WithDefaults()
	return &limiter{
		server: server, lim: lim, log: log,
		mem:    &memBudget{max: lim.MemoryBytes},
		events: rate.NewLimiter(rate.Limit(lim.EventsPerSecond), max(1, int(lim.EventsPerSecond))),
		// The burst must hold the largest event allowed, or WaitN refuses it.
		bytes: rate.NewLimiter(rate.Limit(lim.BytesPerSecond), int(max(lim.BytesPerSecond, lim.MaxMessageBytes+64<<10))),
	}
}

func (l *limiter) errorf(limit string, value int64, what string) *LimitError {
	l.hits.Add(1)
	le := &LimitError{Server: l.server, Limit: limit, Value: value, What: what}
	if l.log != nil {
		l.log.Warn("server exceeded a limit", "limit", "limits."+limit, "value", value, "what", what)
	}
	return le
}

// wrapPOST bounds the body of a POST's 2xx response, JSON or SSE, and
// counts it against meter, the listing's (nil for other requests). The
// body records what cp wants as it hands each message on.
func (l *limiter) wrapPOST(req *http.Request, resp *http.Response, meter *listMeter, cp capture) {
	if isSSE(resp.Header.Get("Content-Type")) {
		b := &sseBody{l: l, rc: resp.Body, req: req, meter: meter, call: true, capture: cp}
		if slot := requestSlotFrom(req.Context()); slot != nil {
			// The request's stream is open until Read ends it or
			// Close (see reqCtx.end).
			b.slot = slot
			slot.streams.Add(1)
		}
		resp.Body = b
		return
	}
	if resp.ContentLength > l.lim.MaxMessageBytes {
		resp.Body.Close()
		le := l.errorf("maxMessageBytes", l.lim.MaxMessageBytes, "a response")
		resp.Body = syntheticBody(req, le)
		resp.ContentLength = -1
		return
	}
	resp.Body = &jsonBody{l: l, rc: resp.Body, req: req, meter: meter, size: resp.ContentLength, sink: cp.sink}
}

// wrapStream bounds the standalone GET stream: each event is capped and
// the stream's rate is throttled (it has no end, so it has no total).
func (l *limiter) wrapStream(req *http.Request, resp *http.Response, cp capture) {
	resp.Body = &sseBody{l: l, rc: resp.Body, req: req, capture: cp}
}

// syntheticBody is a JSON body holding the error response to req's id, or
// a body whose read fails with le when the id is unknown.
func syntheticBody(req *http.Request, le *LimitError) io.ReadCloser {
	id := requestID(req)
	if id == nil {
		return io.NopCloser(&errReader{le})
	}
	return io.NopCloser(bytes.NewReader(syntheticResponse(id, le)))
}

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }

// jsonBody bounds a JSON response. A body of known length within the cap
// passes through after reserving its size; one of unknown length (chunked)
// is read into a buffer first, so that a body over the cap can be replaced
// by an error response before go-sdk has seen any of it. A tools/list
// answer (sink set) is read whole either way and recorded before go-sdk
// reads it: that one read both bounds and captures it.
type jsonBody struct {
	l     *limiter
	rc    io.ReadCloser
	req   *http.Request
	meter *listMeter
	size  int64        // Content-Length, or -1
	sink  *rawToolSink // the raw tools of a tools/list answer; else nil

	started  bool
	r        io.Reader // what go-sdk reads
	reserved int64
}

func (b *jsonBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.r = b.prepare()
	}
	return b.r.Read(p)
}

func (b *jsonBody) Close() error {
	err := b.rc.Close()
	if b.reserved > 0 {
		b.l.mem.give(b.reserved)
		b.reserved = 0
	}
	return err
}

func (b *jsonBody) fail(le *LimitError) io.Reader {
	if b.reserved > 0 {
		b.l.mem.give(b.reserved)
		b.reserved = 0
	}
	b.rc.Close()
	return syntheticBody(b.req, le)
}

func (b *jsonBody) prepare() io.Reader {
	lim := b.l.lim
	if b.meter != nil && b.size >= 0 && b.meter.n.Add(b.size) > b.meter.max {
		return b.fail(b.l.errorf("maxListBytes", b.meter.max, "a listing"))
	}
	if b.size >= 0 {
		if !b.l.mem.take(b.size) {
			return b.fail(b.l.errorf("memoryBytes", lim.MemoryBytes, "the responses being read at once"))
		}
		b.reserved = b.size
		if b.sink == nil {
			return b.rc
		}
		// Within the cap (wrapPOST checked it) and reserved: read it
		// whole, as go-sdk would, to record its tools first.
		data := make([]byte, b.size)
		if _, err := io.ReadFull(b.rc, data); err != nil {
			return &errReader{err}
		}
		capture{sink: b.sink}.take(data)
		return bytes.NewReader(data)
	}
	var buf bytes.Buffer
	rb := readBufs.Get().(*[readBufSize]byte)
	defer readBufs.Put(rb) // buf.Write copies: nothing refers to rb after
	chunk := rb[:]
	for {
		n, err := b.rc.Read(chunk)
		if n > 0 {
			if int64(buf.Len()+n) > lim.MaxMessageBytes {
				return b.fail(b.l.errorf("maxMessageBytes", lim.MaxMessageBytes, "a response"))
			}
			if b.meter != nil && b.meter.n.Add(int64(n)) > b.meter.max {
				return b.fail(b.l.errorf("maxListBytes", b.meter.max, "a listing"))
			}
			if !b.l.mem.take(int64(n)) {
				return b.fail(b.l.errorf("memoryBytes", lim.MemoryBytes, "the responses being read at once"))
			}
			b.reserved += int64(n)
			buf.Write(chunk[:n])
		}
		if err == io.EOF {
			if b.sink != nil {
				capture{sink: b.sink}.take(buf.Bytes())
			}
			return &buf
		}
		if err != nil {
			return &errReader{err}
		}
	}
}

// sseBody re-frames an SSE stream event by event, so that every limit acts
// on whole events: an event over maxMessageBytes is never handed to go-sdk
// (which would buffer all of it), a call's stream ends with an error
// response once it exceeds its totals, and the standalone stream is
// throttled. Lines end at "\n" and lose trailing "\r"s, exactly as go-sdk
// reads them; field lines pass otherwise unchanged.
//
// Buffers. go-sdk only ever sees copies (Read copies into its p), so the
// framer's buffers are its own: the read buffer of a call's stream is
// borrowed for one read (from smallReadBufs until a read fills one, then
// from readBufs), and the line, event and output
// buffers from frameBufs while they hold anything; an idle stream holds
// neither (the standalone stream keeps a small read buffer of its own,
// since it waits in Read for the whole session).
type sseBody struct {
	l     *limiter
	rc    io.ReadCloser
	req   *http.Request
	meter *listMeter
	call  bool // a POST's response stream (vs the standalone GET stream)
	// capture records raw tools and question schemas from the events.
	capture capture

	in   []byte     // the standalone stream's read buffer
	bufs *frameBufs // borrowed for line, ev and out; nil when all are empty
	line []byte     // the current partial line
	ev   []byte     // the current event's lines
	skip bool       // dropping an oversized event up to its end
	// skipLine: the current line, while dropping, is not blank
	skipLine bool
	out      []byte // complete events ready for go-sdk: out[outPos:]
	outPos   int
	events   int
	total    int64
	held     int64 // budget bytes held by the event being read
	outHeld  int64 // budget bytes held by the events in out
	eof      bool
	err      error
	stopped  bool
	// bigReads: a read filled a small buffer, so more is coming than
	// most answers hold; later reads take readBufs' large buffers.
	bigReads bool
	// slot is the request's, whose open streams this one counts in
	// until ended is set.
	slot  *requestSlot
	ended atomic.Bool
}

// endStream takes the stream off its request's count, once.
func (b *sseBody) endStream() {
	if b.slot != nil && b.ended.CompareAndSwap(false, true) {
		b.slot.streams.Add(-1)
	}
}

const (
	// readBufSize is the read buffer of a large response: a chunked
	// JSON body, or a call's stream once a small read came back full.
	readBufSize = 32 << 10
	// smallReadSize is the read buffer of a call's stream at first; most
	// answers fit it. sync.Pool drops its buffers at every GC, so a
	// large buffer taken for each call would be allocated again after
	// each one: a small one costs an eighth of that.
	smallReadSize = 4 << 10
	// streamReadSize is the standalone stream's own read buffer: that
	// stream waits in Read as long as the session lives, buffer in hand,
	// and carries small notifications.
	streamReadSize = 1 << 10
	// maxPooledFrame is the largest frame buffer given back to frameBufs;
	// a larger one (a big event) is left to the garbage collector.
	maxPooledFrame = 64 << 10
)

// readBufs are the read buffers of calls' response streams. One is taken
// for one read and given back before fill returns: feed copies what it
// keeps, and io.Reader implementations must not retain the buffer.
var (
	readBufs      = sync.Pool{New: func() any { return new([readBufSize]byte) }}
	smallReadBufs = sync.Pool{New: func() any { return new([smallReadSize]byte) }}
)

// frameBufs are the line, event and output buffers of streams.
type frameBufs struct{ line, ev, out []byte }

var framePool = sync.Pool{New: func() any { return new(frameBufs) }}

// borrow takes frame buffers for a stream that has none.
func (b *sseBody) borrow() {
	if b.bufs != nil {
		return
	}
	f := framePool.Get().(*frameBufs)
	b.bufs = f
	b.line, b.ev, b.out, b.outPos = f.line[:0], f.ev[:0], f.out[:0], 0
}

// giveBack returns the frame buffers once they hold nothing: the output
// was read, and no line or event is partly read. Called from Read only
// (the goroutine that owns the buffers), after the last use of them.
func (b *sseBody) giveBack() {
	f := b.bufs
	if f == nil || b.outPos != len(b.out) || len(b.line) > 0 || len(b.ev) > 0 {
		return
	}
	f.line, f.ev, f.out = poolable(b.line), poolable(b.ev), poolable(b.out)
	b.bufs, b.line, b.ev, b.out, b.outPos = nil, nil, nil, nil, 0
	framePool.Put(f)
}

func poolable(p []byte) []byte {
	if cap(p) > maxPooledFrame {
		return nil
	}
	return p[:0]
}

func (b *sseBody) Close() error {
	b.release()
	err := b.rc.Close()
	b.endStream()
	return err
}

func (b *sseBody) release() {
	b.l.mem.give(b.held + b.outHeld)
	b.held, b.outHeld = 0, 0
}

func (b *sseBody) Read(p []byte) (int, error) {
	for b.outPos == len(b.out) {
		if b.eof {
			b.giveBack()
			b.endStream()
			return 0, io.EOF
		}
		if b.err != nil {
			b.giveBack()
			b.endStream()
			return 0, b.err
		}
		b.fill()
	}
	n := copy(p, b.out[b.outPos:])
	b.outPos += n
	if b.outPos == len(b.out) {
		b.l.mem.give(b.outHeld)
		b.outHeld = 0
		b.giveBack()
	}
	return n, nil
}

// fill reads from the server until at least one event is complete, the
// stream ends, or a limit ends it. It runs only when out is empty.
func (b *sseBody) fill() {
	var in []byte
	// feed copies what it keeps: nothing refers to a pooled buffer after
	// fill returns.
	switch {
	case b.call && b.bigReads:
		buf := readBufs.Get().(*[readBufSize]byte)
		defer readBufs.Put(buf)
		in = buf[:]
	case b.call:
		buf := smallReadBufs.Get().(*[smallReadSize]byte)
		defer smallReadBufs.Put(buf)
		in = buf[:]
	default:
		if b.in == nil {
			b.in = make([]byte, streamReadSize)
		}
		in = b.in
	}
	n, err := b.rc.Read(in)
	if b.call && n == len(in) {
		b.bigReads = true
	}
	b.borrow()
	b.out, b.outPos = b.out[:0], 0
	b.feed(in[:n])
	if b.stopped {
		return
	}
	if err == io.EOF {
		// An unterminated last event still counts (go-sdk dispatches it).
		if len(b.line) > 0 {
			b.endLine()
		}
		if len(b.ev) > 0 && !b.skip {
			b.endEvent()
		}
		b.eof = true
		return
	}
	if err != nil {
		b.err = err
	}
}

func (b *sseBody) feed(data []byte) {
	for len(data) > 0 && !b.stopped {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			b.appendLine(data)
			return
		}
		b.appendLine(data[:i])
		data = data[i+1:]
		b.endLine()
	}
}

func (b *sseBody) appendLine(p []byte) {
	if b.skip {
		// Only whether the line is blank matters: a blank line ends
		// the dropped event.
		b.skipLine = b.skipLine || len(bytes.TrimRight(p, "\r")) > 0
		return
	}
	// +1: the line's end counts, so an event handed on (its lines, each
	// ending in "\n") is never over the limit.
	if int64(len(b.ev)+len(b.line)+len(p)+1) > b.l.lim.MaxMessageBytes {
		b.oversized()
		return
	}
	if !b.hold(int64(len(p))) {
		return
	}
	b.line = append(b.line, p...)
}

// hold reserves n bytes of the server's budget for the event being read.
func (b *sseBody) hold(n int64) bool {
	if !b.l.mem.take(n) {
		le := b.l.errorf("memoryBytes", b.l.lim.MemoryBytes, "the responses being read at once")
		if b.call {
			b.stop(le)
		} else {
			b.drop()
		}
		return false
	}
	b.held += n
	return true
}

func (b *sseBody) endLine() {
	// Trailing "\r"s go, as go-sdk's reader drops them.
	line := bytes.TrimRight(b.line, "\r")
	b.line = b.line[:0]
	if b.skip {
		if !b.skipLine {
			b.skip = false
		}
		b.skipLine = false
		return
	}
	if len(line) == 0 {
		if len(b.ev) > 0 {
			b.endEvent()
		}
		return
	}
	b.ev = append(b.ev, line...)
	b.ev = append(b.ev, '\n')
}

// endEvent hands a complete event on, after the totals and the rate.
func (b *sseBody) endEvent() {
	ev := b.ev
	b.ev = ev[:0] // ev's bytes are copied into out (or dropped) below
	size := int64(len(ev))
	b.events++
	b.total += size
	lim := b.l.lim
	switch {
	case b.call && b.events > lim.MaxStreamEvents:
		b.stop(b.l.errorf("maxStreamEvents", int64(lim.MaxStreamEvents), "a response stream"))
		return
	case b.call && b.total > lim.MaxStreamBytes:
		b.stop(b.l.errorf("maxStreamBytes", lim.MaxStreamBytes, "a response stream"))
		return
	case b.meter != nil && b.meter.n.Add(size) > b.meter.max:
		b.stop(b.l.errorf("maxListBytes", b.meter.max, "a listing"))
		return
	}
	if !b.call {
		// Past the rate, wait: the server is slowed down by TCP instead
		// of filling this process.
		ctx := b.req.Context()
		if b.l.events.Wait(ctx) != nil || b.l.bytes.WaitN(ctx, int(min(size, int64(b.l.bytes.Burst())))) != nil {
			b.err = context.Cause(ctx)
			if b.err == nil {
				b.err = context.Canceled
			}
			return
		}
	}
	progress := b.l.onProgress != nil && bytes.Contains(ev, []byte(`"notifications/progress"`))
	if progress || b.capture.wanted(ev) {
		// Before go-sdk sees the event: a capture must be in place when
		// it acts on the message, and a progress count before the answer.
		data := eventData(ev)
		b.capture.take(data)
		if tok, ok := progressToken(data); progress && ok {
			b.l.onProgress(tok)
		}
	}
	if b.l.relSecret != "" && mayNeedMark(ev) {
		// A server's question or sampling request: say which call's
		// stream carried it (issue #20 item 3).
		// Three cases apart (review finding 1): a tools/call's stream
		// names its call; the standalone GET stream, first opened or
		// resumed, says so (a GET resuming a request's stream is not
		// it); any other request's stream is neither, so its question
		// never reaches a call in flight.
		call := ""
		if slot := requestSlotFrom(b.req.Context()); slot != nil {
			call = slot.call
		}
		standalone := !b.call && call == "" && onConnectionStream(b.req)
		if marked := markEvent(ev, eventData(ev), b.l.relSecret, relTag(call, standalone)); marked != nil {
			ev = marked
		}
	}
	b.out = append(b.out, ev...)
	b.out = append(b.out, '\n')
	b.outHeld += b.held
	b.held = 0
}

// oversized handles an event over maxMessageBytes: a call's stream ends
// with an error response; the standalone stream drops the event.
func (b *sseBody) oversized() {
	le := b.l.errorf("maxMessageBytes", b.l.lim.MaxMessageBytes, "one event")
	if b.call {
		b.stop(le)
		return
	}
	b.drop()
}

// drop discards the current event of the standalone stream up to its end.
func (b *sseBody) drop() {
	b.ev, b.line, b.skip, b.skipLine = b.ev[:0], b.line[:0], true, true
	b.l.mem.give(b.held)
	b.held = 0
}

// stop ends a call's stream: the server's connection is closed, and go-sdk
// reads an error response for the call, so just this request fails.
func (b *sseBody) stop(le *LimitError) {
	b.stopped, b.ev, b.line = true, nil, nil
	b.l.mem.give(b.held)
	b.held = 0
	b.rc.Close()
	b.eof = true
	if id := requestID(b.req); id != nil {
		b.out = append(b.out, "event: message\ndata: "...)
		b.out = append(b.out, syntheticResponse(id, le)...)
		b.out = append(b.out, "\n\n"...)
	} else {
		b.err, b.eof = le, false
	}
}

// eventData joins the data lines of an SSE event (its raw lines), as an
// SSE reader does.
func eventData(ev []byte) []byte {
	var data []byte
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(rest, []byte(" "))...)
		}
	}
	return data
}

// progressToken reads the string progress token of a notifications/progress
// message.
func progressToken(data []byte) (string, bool) {
	var m struct {
		Method string `json:"method"`
		Params struct {
			ProgressToken any `json:"progressToken"`
		} `json:"params"`
	}
	if json.Unmarshal(data, &m) != nil || m.Method != "notifications/progress" {
		return "", false
	}
	tok, ok := m.Params.ProgressToken.(string)
	return tok, ok
}
