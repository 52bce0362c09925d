// Package session holds one go-sdk ClientSession per server over the
// Streamable HTTP transport: the handshake, the connectionId, the catalog
// with refresh generations, calls with operation ids and cancel records, and
// run-time validation of everything the server sends back (R2.10, R4.4).
package session

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
)

// ProtocolVersion is the protocol revision we ask for by default. go-sdk's
// default probes the 2026-07-28 draft first; we offer the released revision
// and accept a server that answers with an older one we speak (SPEC §9 A6).
// A server's config may pin a revision instead (config.Server.ProtocolVersion).
const ProtocolVersion = "2025-11-25"

// ProtocolAuto, as Options.ProtocolVersion, lets go-sdk negotiate the
// revision itself (conformance testing of the draft only).
const ProtocolAuto = "auto"

// acceptedVersions are the negotiated revisions we keep a session for.
// 2025-03-26 servers get that revision's transport and features; OAuth
// keeps the 2025-06-18+ rules whatever the revision (SPEC §3, A6).
var acceptedVersions = map[string]bool{"2025-11-25": true, "2025-06-18": true, "2025-03-26": true}

// Options configure one session.
type Options struct {
	Server config.Server
	// HTTPClient is the shared base client; its Transport is wrapped per
	// session. It must not set Timeout (it would kill SSE streams).
	HTTPClient *http.Client
	// OAuth is the handler of an oauth server; nil otherwise.
	OAuth auth.OAuthHandler
	// ConnectionID is unique per client instance (R2.9); generated when empty.
	ConnectionID string
	// OnCatalog is called (from a session goroutine) after every commit of a
	// catalog category, with this session's connection id.
	OnCatalog func(connID string, c *Catalog)
	// Elicit answers a server's elicitation request. nil declines.
	// req.Params.RequestedSchema is a json.RawMessage holding the schema
	// as the server sent it (properties in the server's order) whenever
	// the transport captured it, else go-sdk's map[string]any.
	Elicit func(ctx context.Context, connID string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// OnExchange receives every HTTP exchange of the session (metadata
	// only, no secrets) for the per-server request log (R5.3).
	OnExchange func(Exchange)
	// ProtocolVersion overrides the revision asked for (default
	// ProtocolVersion). Only the conformance client sets it, to exercise
	// the draft revision where go-sdk supports it: ProtocolAuto lets
	// go-sdk negotiate (it probes the 2026-07-28 draft first).
	ProtocolVersion string
	// OnLog receives the server's notifications/message, bounded and
	// redacted; logging/setLevel asks for Server.LogLevel (default
	// warning) when the server offers logging.
	OnLog func(LogMessage)
	// OnResourceUpdated receives the URI of each
	// notifications/resources/updated (bounded to MaxURI bytes).
	OnResourceUpdated func(uri string)
	// KeepWithoutStream keeps the session when its standalone stream
	// fails (the owner saw it fail on earlier sessions: reconnecting again
	// would not help); the catalog is then polled instead.
	KeepWithoutStream bool
	// CatalogPoll is the interval of the catalog check of a session
	// without a working notification stream, while in use (within
	// IdleWindow of its last request); 0 means no polling.
	CatalogPoll time.Duration
	// ClientName is sent in initialize.
	ClientName, ClientVersion string
	Logger                    *slog.Logger
}

// Session is one live connection to a server. All methods are safe for
// concurrent use.
type Session struct {
	connID string
	srv    config.Server
	cs     *mcp.ClientSession
	raw    *rawToolSink
	// elicitRaw keeps the raw schemas of the server's questions; nil
	// when the owner does not answer questions (Options.Elicit).
	elicitRaw *rawElicitSink
	lim       *limiter
	log       *slog.Logger
	onCat     func(string, *Catalog)

	ctx    context.Context // cancelled on Close; bounds refreshes
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed when the connection ends
	err    error         // why it ended (set before done closes)

	mu      sync.Mutex
	catalog *Catalog
	gens    [numKinds]uint64 // newest refresh generation started, per kind
	closed  bool
	lost    bool // streamLost ended the session
	// troubleEarly is stream trouble seen during the handshake.
	troubleEarly error
	// keepWithoutStream and noStream: see Options.KeepWithoutStream.
	keepWithoutStream bool
	noStream          bool
	streamOpen        atomic.Bool
	lastUse           atomic.Int64 // unix nanos of the last request
	onLogMsg          func(LogMessage)
	onUpdated         func(uri string)
	// ready is set once the handshake (initialize + first listings) is
	// done; list_changed before that only marks the kind pending, because
	// the first listing is still to come (or running) and s.cs may not be
	// set yet.
	ready   bool
	pending [numKinds]bool
	// refreshing and again coalesce list_changed storms (issue #10): per
	// kind at most one listing runs and one more is owed, however many
	// notifications arrive; lastList spaces listings of a kind apart.
	refreshing [numKinds]bool
	again      [numKinds]bool
	lastList   [numKinds]time.Time
	closing    bool // Close has begun: no new call is admitted (under calls)

	calls sync.Mutex
	ops   map[string]*operation // in-flight calls by operation id
	// endAfterCalls: the stream was lost while calls were in flight; the
	// last of them to finish ends the session.
	endAfterCalls bool
	cancels       CancelRecords // cancels that overtook their call (R4.5)

	// lingering ends response streams kept open after their answer.
	lingering lingerer
}

type operation struct {
	cancel   context.CancelCauseFunc
	progress func(Progress)
	sample   func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	token    string
	// seen counts the call's progress notifications the transport handed
	// to go-sdk, delivered those given to progress (both under calls);
	// delivery signals each delivery.
	seen, delivered int
	delivery        chan struct{} // nil without a progress listener
	// req is the call's context when its caller brought no Request (see
	// reqCtx), shared the Request it brought; cancel is the call's
	// context's cancel.
	req    reqCtx
	shared *Request
	// args and params are the call's request, here rather than in
	// allocations of their own.
	args   json.RawMessage
	params mcp.CallToolParams
}

// Progress is one progress notification of a call.
type Progress struct {
	Progress, Total float64
	Message         string
}

// NewConnectionID returns a fresh random connection id.
func NewConnectionID() string { return RandomID("c-", 16) }

// RandomID returns prefix and n (at most 48) characters of the base32
// alphabet from crypto/rand, as prefix + rand.Text()[:n] would, in one
// allocation.
func RandomID(prefix string, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	var buf [64]byte
	b := buf[:len(prefix)+n]
	copy(b, prefix)
	r := b[len(prefix):]
	rand.Read(r)
	for i := range r {
		r[i] = alphabet[r[i]%32]
	}
	return string(b)
}

// Connect performs the full handshake (initialize, then the first listing of
// every advertised category). A session is returned only when the whole
// handshake succeeded (R2.8); on failure everything is closed.
func Connect(ctx context.Context, o Options) (*Session, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	s := newSession(o)
	hc := &http.Client{
		Transport: s.httpStack(o).build(o.transport()),
		Jar:       o.HTTPClient.Jar,
		// Never follow a redirect with our headers attached: a redirecting
		// MCP endpoint is an error the user must fix in the config.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if err := s.initialize(ctx, o, hc); err != nil {
		s.cancel()
		return nil, err
	}
	if err := s.firstListings(ctx); err != nil {
		s.cs.Close()
		s.cancel()
		return nil, err
	}
	s.start(o)
	return s, nil
}

// withDefaults fills in what Options leave out, and refuses an HTTP client
// that would cut SSE streams.
func (o Options) withDefaults() (Options, error) {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.HTTPClient.Timeout != 0 {
		return o, errors.New("session: HTTP client must not set Timeout (it cuts SSE streams); use context deadlines")
	}
	if o.ConnectionID == "" {
		o.ConnectionID = NewConnectionID()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// transport is the base RoundTripper the session's stack goes over.
func (o Options) transport() http.RoundTripper {
	if o.HTTPClient.Transport == nil {
		return http.DefaultTransport
	}
	return o.HTTPClient.Transport
}

// newSession is a session not yet connected, with its limiter and sinks.
func newSession(o Options) *Session {
	log := o.Logger.With("server", o.Server.ID, "conn", o.ConnectionID)
	lim := newLimiter(o.Server.ID, o.Server.Limits, log)
	// The secret of the marks that tie a server's requests to the call
	// whose stream carried them (related.go); never sent anywhere.
	lim.relSecret = RandomID("", 32) + ":"
	sctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		connID:  o.ConnectionID,
		srv:     o.Server.Clone(),
		raw:     newRawToolSink(),
		lim:     lim,
		log:     log,
		onCat:   o.OnCatalog,
		ctx:     sctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		catalog: &Catalog{},
		ops:     map[string]*operation{},

		keepWithoutStream: o.KeepWithoutStream,
		onLogMsg:          o.OnLog,
		onUpdated:         o.OnResourceUpdated,
	}
	if o.Elicit != nil {
		s.elicitRaw = newRawElicitSink()
	}
	s.used()
	s.cancels.init()
	lim.onProgress = s.progressSeen
	return s
}

// httpStack is what the session's HTTP stack is built from (see stack).
func (s *Session) httpStack(o Options) stack {
	c := stack{serverID: o.Server.ID, headers: o.Server.Headers, passAuth: o.OAuth != nil,
		lim: s.lim, raw: s.raw, elicit: s.elicitRaw,
		onTrouble: s.streamLost, onOpen: s.streamAnswered,
		connID: o.ConnectionID, onExchange: o.OnExchange}
	if o.Server.Auth.Kind == config.AuthBearer {
		c.bearer = o.Server.Auth.Token
	}
	return c
}

// streamAnswered hears the standalone stream's answer: true for 200,
// false for 405 (the server offers no stream).
func (s *Session) streamAnswered(ok bool) {
	s.streamOpen.Store(ok)
	if !ok {
		s.mu.Lock()
		s.noStream = true
		s.mu.Unlock()
	}
}

// client is the go-sdk client of the session, with its handlers.
func (s *Session) client(o Options) *mcp.Client {
	name, version := o.ClientName, o.ClientVersion
	if name == "" {
		name, version = "remotemcp", "dev"
	}
	copts := &mcp.ClientOptions{
		Capabilities:                &mcp.ClientCapabilities{},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.Refresh(KindTools) },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { s.Refresh(KindPrompts) },
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { s.Refresh(KindResources, KindTemplates) },
		ProgressNotificationHandler: s.onProgress,
		LoggingMessageHandler:       s.onLog,
		ResourceUpdatedHandler:      s.onResourceUpdated,
		CreateMessageHandler:        s.onCreateMessage,
	}
	if o.Elicit == nil {
		return mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, copts)
	}
	elicitH := s.elicitHandler(o.Elicit)
	copts.ElicitationHandler = elicitH
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, copts)
	// go-sdk v1.8.0's client checks a question's schema before the
	// handler and refuses valid SEP-1330 forms (a titled multi-select
	// whose items say "type": "string" beside anyOf). Questions go
	// straight to the handler: package elicit parses the schema as the
	// server sent it, stricter and bounded, and declines what it cannot
	// show with the reason.
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if er, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" && er.Params != nil {
				return elicitH(ctx, er)
			}
			return next(ctx, method, req)
		}
	})
	return client
}

// elicitHandler answers the server's questions through elicit.
func (s *Session) elicitHandler(elicit func(context.Context, string, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if req.Params != nil && req.Params.Mode == "url" {
			// URL mode is explicitly declined (R6.1).
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		// go-sdk's Close waits for incoming requests; a question
		// waiting for a person must end when the session does.
		// The cause says who ended it: ErrClosed when our own session
		// closes, context.Canceled when the server sends
		// notifications/cancelled, a transport error when the
		// connection breaks. elicit words the card's reason from it.
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(s.ctx, func() { cancel(ErrClosed) })
		defer stop()
		// The call the question belongs to ("" for none: declined
		// by the owner of the cards, issue #20 item 3).
		var rel relation
		if req.Params != nil {
			rel, _ = takeRelated(req.Params.Meta, s.lim.relSecret)
		}
		return elicit(withRelated(ctx, rel), s.connID, withRawSchema(req, s.elicitRaw))
	}
}

// initialize connects the go-sdk client over hc and checks the protocol
// revision the server chose. On failure nothing stays open but s.ctx.
func (s *Session) initialize(ctx context.Context, o Options, hc *http.Client) error {
	// go-sdk v1.8.0 leaves MaxEventSize at 0, which means unlimited: the
	// limiter caps events first; this is the backstop.
	tr := &mcp.StreamableClientTransport{Endpoint: o.Server.URL, HTTPClient: hc, OAuthHandler: o.OAuth,
		MaxEventSize: int(s.lim.lim.MaxMessageBytes) + 64<<10}
	want, accept, speaks := ProtocolVersion, acceptedVersions, "2025-11-25, 2025-06-18 and 2025-03-26"
	if pin := o.Server.ProtocolVersion; pin != "" {
		// A pin is exact: the person chose this revision for the server.
		want, accept, speaks = pin, map[string]bool{pin: true}, pin+" (the server's protocolVersion pin)"
	}
	if o.ProtocolVersion != "" {
		want = o.ProtocolVersion
	}
	ask := want
	if want == ProtocolAuto {
		ask = ""
	}
	// go-sdk opens (and reopens) the standalone stream with a context
	// detached from this one, values kept: the mark tells that stream's
	// GETs from those resuming a request's stream (related.go).
	cs, err := s.client(o).Connect(withConnectionStream(ctx), tr, &mcp.ClientSessionOptions{ProtocolVersion: ask})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	s.mu.Lock()
	s.cs = cs
	s.mu.Unlock()
	ir := cs.InitializeResult()
	if ir == nil || !(accept[ir.ProtocolVersion] || ir.ProtocolVersion == want || want == ProtocolAuto) {
		v := "none"
		if ir != nil {
			v = ir.ProtocolVersion
		}
		cs.Close()
		return fmt.Errorf("initialize: %w: server negotiated protocol version %q; remotemcp speaks %s", ErrValidation, v, speaks)
	}
	return nil
}

// firstListings asks for the configured log level and lists every
// category the server offers: a session without its catalog is not ready
// (R2.8).
func (s *Session) firstListings(ctx context.Context) error {
	s.setLogLevel(ctx)
	s.mu.Lock()
	s.catalog = &Catalog{Instructions: s.Instructions()}
	s.mu.Unlock()
	caps := s.cs.InitializeResult().Capabilities
	for _, k := range AllKinds {
		if !supported(caps, k) {
			continue
		}
		if err := s.load(ctx, k); err != nil {
			return fmt.Errorf("list %s: %w", k, err)
		}
	}
	return nil
}

// start hands the session over: what was announced or went wrong during
// the handshake is acted on now, and the goroutines that outlive Connect
// start (the catalog poll, the watch of the connection's end).
func (s *Session) start(o Options) {
	s.mu.Lock()
	s.ready = true
	var missed []Kind
	for _, k := range AllKinds {
		if s.pending[k] {
			s.pending[k] = false
			missed = append(missed, k)
		}
	}
	early := s.troubleEarly
	s.mu.Unlock()
	s.Refresh(missed...)
	if early != nil {
		s.streamLost(early)
	}
	if o.CatalogPoll > 0 {
		s.wg.Add(1)
		go s.pollCatalog(o.CatalogPoll)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		werr := s.cs.Wait()
		s.mu.Lock()
		if s.err == nil {
			s.err = werr
			if s.err == nil {
				s.err = mcp.ErrConnectionClosed
			}
		}
		s.mu.Unlock()
		close(s.done)
		s.cancel()
	}()
}

// ConnectionID is this client instance's unique id (R2.9).
func (s *Session) ConnectionID() string { return s.connID }

// Server is the config the session was made with.
func (s *Session) Server() config.Server { return s.srv.Clone() }

// ProtocolVersion is the negotiated protocol revision.
func (s *Session) ProtocolVersion() string { return s.cs.InitializeResult().ProtocolVersion }

// InitializeResult is the server's initialize answer.
func (s *Session) InitializeResult() *mcp.InitializeResult { return s.cs.InitializeResult() }

// Done is closed when the connection has ended (closed, session expired,
// network gone).
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why the connection ended; nil while it is alive.
func (s *Session) Err() error {
	select {
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.err
	default:
		return nil
	}
}

// Catalog returns the current committed catalog (never nil; do not modify).
func (s *Session) Catalog() *Catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalog
}

// Close ends the session and waits for its goroutines. Idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	if s.err == nil {
		s.err = ErrClosed
	}
	s.mu.Unlock()
	if already {
		s.wg.Wait()
		return nil
	}
	s.cancel()
	// go-sdk's Close waits for every outgoing call to return; a call still
	// running (or waiting on a person's answer) would hold the close up
	// until its timeout. Cancel them (go-sdk sends notifications/cancelled)
	// and admit no new one.
	s.calls.Lock()
	s.closing = true
	for _, op := range s.ops {
		if op.slot().sessionMissing.Load() {
			// The server answered the call's own POST 404: the call is
			// over, provably not run, and go-sdk returns it without a
			// cancel. Its context may be its owner's Request, under
			// which the owner re-sends it once on a fresh session (SPEC
			// §9 A5); the 404 is what ends this session, so this close
			// comes while the call returns, and a cancel here would end
			// the Request and skip the re-send.
			continue
		}
		op.cancel(ErrClosed)
	}
	s.calls.Unlock()
	s.closeLingering()
	err := s.cs.Close()
	s.wg.Wait()
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) {
		err = nil
	}
	return err
}

// MinRefreshInterval is the shortest time between two background listings
// of the same category: a server announcing list_changed a thousand times
// a second is listed at most a few times a second (issue #10).
const MinRefreshInterval = 250 * time.Millisecond

// Refresh starts a refresh of the given categories in the background. Each
// refresh takes a new generation; only the newest generation of a category
// may commit (R4.4). Refreshes coalesce: while a listing of a category
// runs, further requests only make sure one more listing follows it, so a
// notification storm costs a bounded number of listings and connections,
// and the last listing still starts after the last notification.
func (s *Session) Refresh(kinds ...Kind) {
	for _, k := range kinds {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		if !s.ready {
			s.pending[k] = true
			s.mu.Unlock()
			continue
		}
		if s.refreshing[k] {
			s.again[k] = true
			s.mu.Unlock()
			continue
		}
		s.refreshing[k] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.refreshLoop(k)
	}
}

// refreshLoop lists one category until no request is owed; it is the only
// background lister of k while it runs.
func (s *Session) refreshLoop(k Kind) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		wait := time.Until(s.lastList[k].Add(MinRefreshInterval))
		s.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
			}
		}
		s.mu.Lock()
		if s.closed || s.ctx.Err() != nil {
			s.refreshing[k] = false
			s.mu.Unlock()
			return
		}
		s.again[k] = false
		s.gens[k]++
		gen := s.gens[k]
		s.lastList[k] = time.Now()
		s.mu.Unlock()

		s.refresh(s.ctx, k, gen)

		s.mu.Lock()
		if !s.again[k] || s.closed {
			s.refreshing[k] = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// RefreshNow refreshes the categories synchronously and returns the first
// error; the commit rules are the same as Refresh.
func (s *Session) RefreshNow(ctx context.Context, kinds ...Kind) error {
	var first error
	for _, k := range kinds {
		s.mu.Lock()
		s.gens[k]++
		gen := s.gens[k]
		s.mu.Unlock()
		if err := s.refresh(ctx, k, gen); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *Session) load(ctx context.Context, k Kind) error {
	s.mu.Lock()
	s.gens[k]++
	gen := s.gens[k]
	s.mu.Unlock()
	return s.refreshNotify(ctx, k, gen, false)
}

func (s *Session) refresh(ctx context.Context, k Kind, gen uint64) error {
	return s.refreshNotify(ctx, k, gen, true)
}

func (s *Session) refreshNotify(ctx context.Context, k Kind, gen uint64, notify bool) error {
	next, err := s.fetch(ctx, k)
	s.mu.Lock()
	if gen != s.gens[k] || s.closed && notify {
		// A newer refresh of this category started: this result is stale
		// and must not commit, even if it is the last to arrive.
		s.mu.Unlock()
		return err
	}
	c := *s.catalog
	if err != nil {
		// Keep the last good list: a failed refresh is never read as the
		// server deleting its capabilities.
		c.Errors[k] = err
	} else {
		c.Errors[k] = nil
		c.Generations[k] = gen
		switch k {
		case KindTools:
			c.Tools = next.tools
		case KindPrompts:
			c.Prompts = next.prompts
		case KindResources:
			c.Resources = next.resources
		case KindTemplates:
			c.Templates = next.templates
		}
	}
	s.catalog = &c
	s.mu.Unlock()
	if notify && s.onCat != nil {
		s.onCat(s.connID, &c)
	}
	if err != nil {
		s.log.Warn("catalog refresh failed; keeping the last good list", "kind", k.String(), "err", err)
	}
	return err
}

type lists struct {
	tools     []Tool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	templates []*mcp.ResourceTemplate
}

// listAll pages through one listing within the server's limits: pages,
// items, bytes (metered by the limiter through ctx) and time. go-sdk's own
// iterators have no guard against a server that never stops paging.
func listAll[T any](ctx context.Context, s *Session, method string, page func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, error) {
	lim := s.lim.lim
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, time.Duration(lim.ListTimeout))
	defer cancel()
	ctx = withListMeter(ctx, &listMeter{max: lim.MaxListBytes, method: method})
	var all []T
	cursor := ""
	for n := 0; ; n++ {
		if n == lim.MaxListPages {
			return nil, s.lim.errorf("maxListPages", int64(lim.MaxListPages), method)
		}
		items, next, err := page(ctx, cursor)
		if err != nil {
			if ctx.Err() != nil && parent.Err() == nil {
				return nil, fmt.Errorf("server %q: %s took longer than limits.listTimeout (%s): %w",
					s.srv.ID, method, time.Duration(lim.ListTimeout), err)
			}
			return nil, limitFromWire(err)
		}
		all = append(all, items...)
		if len(all) > lim.MaxListItems {
			return nil, s.lim.errorf("maxListItems", int64(lim.MaxListItems), method)
		}
		if next == "" || next == cursor {
			return all, nil
		}
		cursor = next
	}
}

// fetch lists every page of one kind of the catalog and validates it.
//
// Long: one case per list kind (tools, prompts, resources, templates),
// each the same paged listAll call and its validation side by side, so
// they stay alike; tools also keep the raw schemas and drop go-sdk's
// decoded copy.
func (s *Session) fetch(ctx context.Context, k Kind) (lists, error) {
	var out lists
	var err error
	switch k {
	case KindTools:
		var tools []*mcp.Tool
		tools, err = listAll(ctx, s, "tools/list", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
			res, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
			if err == nil && res == nil {
				err = validationErrorf("tools/list returned no result")
			}
			if err != nil {
				return nil, "", err
			}
			return res.Tools, res.NextCursor, nil
		})
		if err != nil {
			return out, err
		}
		if err := validateTools(tools); err != nil {
			return out, err
		}
		for _, name := range dropBadOutputSchemas(tools) {
			s.log.Warn("tool's outputSchema left out: it is not a JSON object", "tool", name)
		}
		out.tools = make([]Tool, len(tools))
		for i, t := range tools {
			r, ok := s.raw.tool(t.Name)
			out.tools[i] = Tool{Tool: t,
				RawInputSchema:  rawOr(ok, r.input, t.InputSchema),
				RawOutputSchema: rawOr(ok, r.output, t.OutputSchema),
				RawMeta:         rawOr(ok, r.meta, t.Meta)}
			// The raw bytes are what every reader uses (issue #13: hosts
			// get the schema as the server wrote it); go-sdk's decoded map
			// beside them costs ~1.6 KB a tool for as long as the catalog
			// lives (issue #21, heap per hibernated server). The catalog
			// drops it from its own copy: t is also in go-sdk's list
			// cache, whose decoded schema CallTool reads for the draft's
			// Mcp-Param-* headers (SEP-2243) while the session lives.
			if len(out.tools[i].RawInputSchema) > 0 {
				c := *t
				c.InputSchema = nil
				out.tools[i].Tool = &c
			}
		}
	case KindPrompts:
		out.prompts, err = listAll(ctx, s, "prompts/list", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
			res, err := s.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err == nil && res == nil {
				err = validationErrorf("prompts/list returned no result")
			}
			if err != nil {
				return nil, "", err
			}
			return res.Prompts, res.NextCursor, nil
		})
		if err == nil {
			err = validatePrompts(out.prompts)
		}
	case KindResources:
		out.resources, err = listAll(ctx, s, "resources/list", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
			res, err := s.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err == nil && res == nil {
				err = validationErrorf("resources/list returned no result")
			}
			if err != nil {
				return nil, "", err
			}
			return res.Resources, res.NextCursor, nil
		})
		if err == nil {
			err = validateResources(out.resources)
		}
	case KindTemplates:
		out.templates, err = listAll(ctx, s, "resources/templates/list", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			res, err := s.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err == nil && res == nil {
				err = validationErrorf("resources/templates/list returned no result")
			}
			if err != nil {
				return nil, "", err
			}
			return res.ResourceTemplates, res.NextCursor, nil
		})
		if err == nil {
			err = validateTemplates(out.templates)
		}
	}
	return out, err
}

// rawOr is the server's bytes of a decoded value v (nil when v is empty):
// raw when the capture saw it (ok) and it decodes to v, else go-sdk's
// decoded form encoded again (the capture missed, or saw another version
// of the page).
func rawOr(ok bool, raw json.RawMessage, v any) json.RawMessage {
	if empty(v) {
		return nil
	}
	if ok && sameJSON(raw, v) {
		return raw
	}
	b, _ := json.Marshal(v)
	return b
}

// empty reports whether a decoded field was absent (or null).
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case mcp.Meta:
		return len(x) == 0
	}
	return false
}

// sameJSON reports whether raw decodes to the same value as v.
func sameJSON(raw json.RawMessage, v any) bool {
	var a any
	if json.Unmarshal(raw, &a) != nil {
		return false
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(v)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
