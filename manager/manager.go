// Package manager owns the per-server connection lifecycle: the state
// machine, serialized connect / disconnect / reconnect with shared attempts
// and disconnect barriers, reconciliation with the stored configs, lazy
// connects, drift checks, reconnect with backoff and error attribution
// (SPEC §2, R4.4, R5.1).
//
// Concurrency model. Each server has an entry with two locks: mu guards the
// entry's fields and is never held across I/O; op serializes the I/O of
// connect attempts and disconnects. An epoch counter is bumped by every
// disconnect (explicit, reconcile or reconnect): an attempt remembers the
// epoch it started in and may only commit while the epoch is unchanged, so
// a disconnect is a barrier no earlier attempt can cross (R2.7, R2.9).
package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/fanout"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// State is a server's lifecycle state (R5.1).
type State string

// States of the per-server state machine.
const (
	StateDisconnected State = "disconnected"
	StateConnecting   State = "connecting"
	StateReady        State = "ready"
	StateError        State = "error"
)

// Errors callers branch on.
var (
	ErrUnknownServer = errors.New("no such server")
	ErrDisabled      = errors.New("server is disabled")
	// ErrSuperseded: the attempt was overtaken by a disconnect or config
	// change before it could commit (R2.7, R2.9).
	ErrSuperseded = errors.New("connect attempt superseded by a config change")
	// ErrDisconnected: the attempt was cancelled by an explicit disconnect.
	ErrDisconnected = errors.New("server was disconnected")
	// ErrConfigDrift: the stored config changed during the handshake (R2.5).
	ErrConfigDrift = errors.New("server config changed during the handshake; the session was discarded")
	// ErrStaleConnection: an operation named a connection id that is no
	// longer the server's current one (R2.9).
	ErrStaleConnection = errors.New("stale connection id")
	// ErrToolDisabled: the tool is switched off in disabledTools (R5.2).
	ErrToolDisabled = errors.New("tool is disabled for this server")
	// ErrNoOAuth: an oauth server but no OAuth provider configured.
	ErrNoOAuth = errors.New("server uses OAuth but no OAuth provider is configured")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("manager closed")
)

// MaxToolTimeFactor bounds a call whose progress keeps restarting its
// timeout: it ends after this many times its tool timeout in all.
const MaxToolTimeFactor = 10

// DefaultToolTimeout is the tool call timeout without a per-server
// toolTimeout (R4.5).
const DefaultToolTimeout = 60 * time.Second

// OAuthProvider gives the go-sdk OAuth handler of a server of auth kind
// oauth or auto (config.AuthKind.OAuthCapable). The manager's handlers are
// non-interactive (R3.13): an auto server that answers 401 with a Bearer
// challenge, like an oauth server without a usable token, fails its
// connect with the provider's login-required error.
type OAuthProvider interface {
	Handler(srv config.Server) auth.OAuthHandler
}

// ElicitInfo says where an elicitation request came from.
type ElicitInfo struct {
	ServerID, ConnectionID string
	// OperationID is the tool call the question belongs to: the call
	// whose response stream carried it (session.RelatedCall); "" when it
	// belongs to none (the standalone stream, another request's stream,
	// or no way to tell), and such a question is declined (issue #20
	// item 3).
	OperationID string
	// Standalone is set when the question came on the server's
	// standalone GET stream (session.FromStandaloneStream), which belongs
	// to no request; false for a call's stream, another request's stream
	// and a question that could not be tied to a stream. Only such a
	// question may be given to the server's one call in flight (issue #20
	// item 3, review finding 1).
	Standalone bool
}

// Options configure a Manager.
type Options struct {
	Store store.Store
	// HTTPClient is the base client for MCP traffic (no Timeout).
	HTTPClient *http.Client
	OAuth      OAuthProvider
	// Elicit answers server questions; nil declines them.
	Elicit func(ctx context.Context, info ElicitInfo, req *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	Logger *slog.Logger
	// HandshakeTimeout bounds initialize + first listing (default 30 s).
	HandshakeTimeout time.Duration
	// CancelGrace is how long a disconnect lets a superseded handshake
	// finish before cancelling it (default 2 s).
	CancelGrace time.Duration
	// BackoffBase and BackoffMax shape each server's connect backoff
	// (default 1 s, 5 min; see backoff.go). Clock is its time and the
	// schedule of the idle checks (default the wall clock; tests
	// substitute a manual one).
	BackoffBase, BackoffMax   time.Duration
	Clock                     Clock
	ClientName, ClientVersion string
	// ProtocolVersion overrides the MCP revision sessions ask for (see
	// session.Options.ProtocolVersion); empty means the pinned default.
	ProtocolVersion string
	// NoProgressExtension turns off what progress does to a call's
	// timeout: by default each progress notification restarts it, up to
	// MaxToolTimeFactor times the timeout in all.
	NoProgressExtension bool
	// CatalogPoll is how often a session without a working notification
	// stream re-lists its catalog while in use (default 5 min; negative:
	// never). Without the stream, list_changed cannot reach us.
	CatalogPoll time.Duration
	// NoStartupConnect makes Start connect nothing: every server is lazy.
	// One-shot CLI commands use it so a command about one server does not
	// contact the others.
	NoStartupConnect bool
	// OnLog receives every server's notifications/message (bounded and
	// redacted), besides the request log; OnResourceUpdated every
	// notifications/resources/updated. Both are called from session
	// goroutines and must not block.
	OnLog             func(serverID string, l session.LogMessage)
	OnResourceUpdated func(serverID, uri string)
	// Catalogs keeps the servers' last good catalogs (see CatalogCache);
	// nil keeps them in memory only. Logs keeps idle servers' request
	// logs (see LogShelf); nil keeps them in memory.
	Catalogs CatalogCache
	Logs     LogShelf
	// SharedLog, when set (a gateway's replicas), receives every
	// exchange besides the log in memory, and Log reads it (see
	// SharedLog); nil: the log is this process's alone.
	SharedLog SharedLog
	// IdleCheck is how often idle sessions are looked for (default 15 s),
	// on Clock.
	IdleCheck time.Duration
}

// Manager owns all server connections. Create with New, then Start.
type Manager struct {
	o     Options
	log   *slog.Logger
	clock Clock

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	entries map[string]*entry
	closed  bool
	started bool

	revMu   sync.Mutex
	revCond *sync.Cond
	rev     int64 // store revision fully reconciled

	// events carries status snapshots: a slow subscriber loses old ones,
	// never the latest.
	events *fanout.Broker[Event]

	// Calls by operation id, from Begin until End, and cancels that
	// arrived before their call (R4.5): the one registry of calls.
	opsMu   sync.Mutex
	ops     map[string]*Op
	cancels *session.CancelRecords

	// cacheIDs are the servers that may have a stored catalog (cache.go).
	cacheMu  sync.Mutex
	cacheIDs map[string]bool

	pins pinGen // tool pinning (pins.go)

	// marks are the needs-auth states of the person's actions and of
	// calls' answers (states.go).
	marksMu sync.Mutex
	marks   personMarks
}

type entry struct {
	id string
	op sync.Mutex // serializes connect/disconnect I/O

	mu      sync.Mutex
	conf    srvConfig // latest stored config seen (entry.go)
	removed bool
	// reconnecting: the session was lost and the manager reconnects on
	// its own, on the backoff schedule (SPEC §9 A1).
	reconnecting bool
	state        State
	reason       *Reason
	sess         *session.Session
	epoch        uint64
	attempt      *attempt
	catalog      *session.Catalog // last good, kept across reconnects
	timers       *callTimer       // timeouts of calls in flight (a list); nil when none
	// eliciting counts the elicitations open on the server; call timeouts
	// stand still meanwhile.
	eliciting int
	// streamFailures counts sessions in a row whose notification stream
	// failed before it ever opened; past maxStreamFailures, sessions keep
	// going without one (and poll) instead of reconnecting forever.
	streamFailures int
	// subs counts the subscriptions of each resource URI (notify.go);
	// logLevel is a level set at run time, for every later session.
	subs     map[string]int
	logLevel string
	// catalogSeq counts the catalogs set (setCatalogLocked); idleTools is
	// the tool count of an idle server, whose catalog left memory.
	catalogSeq uint64
	idleTools  int
	// x is what a server that connected, failed, listed or logged needs
	// (entry.go): nil for a lazy server that never did.
	x atomic.Pointer[extra]
}

// setCatalogLocked replaces the catalog kept in memory. e.mu held.
func (e *entry) setCatalogLocked(c *session.Catalog) {
	e.catalog = c
	e.catalogSeq++
}

// maxStreamFailures is how many sessions in a row may lose a stream that
// never opened before the server is treated as offering none.
const maxStreamFailures = 3

type attempt struct {
	epoch  uint64
	cause  error // why a barrier cancelled it; set under entry.mu
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	// retryAt and failures: the backoff this attempt's failure set (zero
	// when it counted as none).
	retryAt  time.Time
	failures int
}

// New makes a manager; nothing connects until Start.
func New(o Options) *Manager {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = 30 * time.Second
	}
	if o.CancelGrace == 0 {
		o.CancelGrace = 2 * time.Second
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = time.Second
	}
	if o.CatalogPoll == 0 {
		o.CatalogPoll = 5 * time.Minute
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 5 * time.Minute
	}
	o.BackoffMax = max(o.BackoffMax, o.BackoffBase)
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.IdleCheck <= 0 {
		o.IdleCheck = defaultIdleCheck
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{o: o, log: o.Logger, clock: o.Clock, ctx: ctx, cancel: cancel, entries: map[string]*entry{},
		ops: map[string]*Op{}, cancels: session.NewCancelRecords(),
		marks: personMarks{signedOut: map[string]bool{}, waiting: map[string]*Reason{}}}
	m.revCond = sync.NewCond(&m.revMu)
	m.events = fanout.New[Event](64)
	return m
}

// Start loads the stored servers, connects those with enabled &&
// connectOnStartup (R2.3; others wait for first use) and starts
// reconciling stored changes (R2.4). It does not wait for connections.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started || m.closed {
		m.mu.Unlock()
		return errors.New("manager: Start called twice or after Close")
	}
	m.started = true
	m.mu.Unlock()

	// Subscribe before reading so no change between the read and the
	// subscription is missed.
	changes := m.o.Store.Subscribe(m.ctx)
	rev, err := m.o.Store.Revision(ctx)
	if err != nil {
		return fmt.Errorf("manager: read store revision: %w", err)
	}
	servers, err := m.o.Store.ListServers(ctx)
	if err != nil && !(errors.Is(err, store.ErrSealOpen) && servers != nil) {
		return fmt.Errorf("manager: load servers: %w", err)
	}
	if err != nil {
		// A secret that cannot be opened leaves that server without its
		// token; it will fail with an auth error, the others still work.
		m.log.Warn("some secrets could not be opened", "err", err)
	}
	m.mu.Lock()
	for _, s := range servers {
		m.entries[s.ID] = &entry{id: s.ID, conf: compactConfig(s), state: StateDisconnected}
	}
	m.mu.Unlock()
	for _, s := range servers {
		if s.Enabled && s.ConnectOnStartup && !m.o.NoStartupConnect {
			m.startConnect(m.entry(s.ID))
		}
	}
	m.setRev(rev)
	m.wg.Add(2)
	go m.reconcileLoop(changes)
	go m.idleLoop()
	if m.pinStore() != nil {
		m.wg.Add(1)
		go m.pinLoop(m.o.Store.Subscribe(m.ctx))
	}
	return nil
}

// Close disconnects everything and stops all goroutines.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	entries := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		entries = append(entries, e)
	}
	m.mu.Unlock()
	m.cancel()
	for _, e := range entries {
		m.disconnect(e, StateDisconnected, false, ErrClosed)
	}
	m.wg.Wait()
	m.events.Close()
	m.revMu.Lock()
	m.revCond.Broadcast()
	m.revMu.Unlock()
	return nil
}

func (m *Manager) entry(id string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries[id]
}

func (m *Manager) lookup(id string) (*entry, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	e := m.entries[id]
	m.mu.Unlock()
	if e != nil {
		return e, nil
	}
	// Perhaps just added and not reconciled yet (the change feed of
	// another process is polled): ask the store before saying no.
	cfg, err := m.o.Store.GetServer(m.ctx, id)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if e = m.entries[id]; e == nil {
		e = &entry{id: id, conf: compactConfig(cfg), state: StateDisconnected}
		m.entries[id] = e
	}
	return e, nil
}

// Connect connects a server, or joins the attempt in flight (R2.6), and
// waits until it is ready or failed. It is the person's request (a
// "connect" command, a finished sign-in, a new grant): it resets the
// server's backoff and tries now (issue #20 item 1). Use Ensure for a
// connect that a listing or a call needs.
func (m *Manager) Connect(ctx context.Context, id string) error {
	if e, err := m.lookup(id); err == nil {
		e.mu.Lock()
		m.resetBackoffLocked(e)
		e.mu.Unlock()
	}
	_, err := m.ensure(ctx, id, true)
	return err
}

// Ensure connects a server that has no session, as a listing or a call
// does: inside the server's backoff window it starts no attempt and fails
// at once with a *BackoffError (issue #20 item 1). It joins an attempt in
// flight.
func (m *Manager) Ensure(ctx context.Context, id string) error {
	_, err := m.ensure(ctx, id, false)
	return err
}

// ensure returns the ready session, connecting lazily (R2.3). An attempt
// overtaken by a config change is retried with the new config a few times.
// Unless explicit, no attempt starts inside the backoff window; explicit
// skips that check but does not reset the schedule (Connect does).
func (m *Manager) ensure(ctx context.Context, id string, explicit bool) (*session.Session, error) {
	retriedJoined := false
	for try := 0; ; try++ {
		e, err := m.lookup(id)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		if e.sess != nil {
			s := e.sess
			e.mu.Unlock()
			return s, nil
		}
		if e.removed {
			e.mu.Unlock()
			return nil, fmt.Errorf("%w %q", ErrUnknownServer, id)
		}
		if !e.conf.enabled {
			e.mu.Unlock()
			return nil, fmt.Errorf("server %q: %w", id, ErrDisabled)
		}
		joined := e.attempt != nil && e.attempt.epoch == e.epoch
		if !joined && !explicit && !retriedJoined {
			if be := m.waitingLocked(e); be != nil {
				e.mu.Unlock()
				return nil, be
			}
		}
		a := m.startAttemptLocked(e, false)
		e.mu.Unlock()
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if a.err == nil {
			continue // loop picks the committed session up
		}
		// An attempt that was already under way when this caller came
		// (the reconnect loop's, say) may have dialled just before the
		// server came back: its "connection refused" is older than the
		// caller. One attempt of the caller's own decides — for a person
		// who asked (explicit) only: any other caller inside the window
		// would dial a second time in the same backoff step (issue #20
		// item 1).
		if joined && explicit && !retriedJoined && Attribute(a.err).Class == ClassNetwork {
			retriedJoined = true
			continue
		}
		// A connect that a hibernation overtook (the session it would
		// replace went idle meanwhile) is tried again too.
		if try < 3 && (errors.Is(a.err, ErrSuperseded) || errors.Is(a.err, ErrConfigDrift) || errors.Is(a.err, ErrHibernated)) && !errors.Is(a.err, ErrDisconnected) {
			continue
		}
		if !a.retryAt.IsZero() {
			// The same words as every caller inside the window gets.
			return nil, &BackoffError{ServerID: id, Err: a.err, RetryAt: a.retryAt, Failures: a.failures, Attempted: true}
		}
		return nil, fmt.Errorf("server %q: connect: %w", id, a.err)
	}
}

func (m *Manager) startConnect(e *entry) {
	if e == nil {
		return
	}
	e.mu.Lock()
	if e.sess == nil && e.conf.enabled && !e.removed {
		m.startAttemptLocked(e, false)
	}
	e.mu.Unlock()
}

// startAttemptLocked returns the attempt of the current epoch, starting
// one if none is in flight (R2.6). background: the backoff schedule's
// own attempt. e.mu must be held.
func (m *Manager) startAttemptLocked(e *entry, background bool) *attempt {
	if a := e.attempt; a != nil && a.epoch == e.epoch {
		return a
	}
	ctx, cancel := context.WithCancel(m.ctx)
	a := &attempt{epoch: e.epoch, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	e.attempt = a
	switch {
	case e.reconnecting && e.state == StateReconnecting:
		// Reconnecting after a lost connection: the state keeps saying so
		// (and why) through every attempt, never flipping to "connecting"
		// or "error" while the server is away (SPEC §9 A1).
	case background && (e.state == StateError || e.state == StateNeedsAuth):
		// The schedule's retry of a failed server: state and reason stay
		// its last failure until this attempt ends (issue #20 item 1).
	default:
		m.setState(e, StateConnecting, nil)
	}
	m.wg.Add(1)
	go m.runAttempt(e, a)
	return a
}

func (m *Manager) runAttempt(e *entry, a *attempt) {
	defer m.wg.Done()
	defer a.cancel()
	err := m.attemptOnce(e, a)
	e.mu.Lock()
	if a.cause != nil && (err == nil || errors.Is(err, ErrSuperseded) || errors.Is(err, context.Canceled)) {
		err = a.cause
	}
	if e.attempt == a {
		e.attempt = nil
		if err != nil && e.epoch == a.epoch {
			if countsAsFailure(err) {
				a.retryAt, a.failures = m.failedLocked(e, err), e.ext().bo.failures
			}
			r := Attribute(err)
			if e.reconnecting && retriable(r.Class) {
				// The schedule tries again; the server is away, not
				// broken. Auth, config and permission failures need the
				// person and stop being "reconnecting".
				rr := reconnectingReason(r)
				m.setState(e, StateReconnecting, &rr)
			} else {
				e.reconnecting = false
				m.failedStateLocked(e, err, r)
			}
		}
	}
	a.err = err
	e.mu.Unlock()
	close(a.done)
}

// attemptOnce makes one connection attempt a for e under e.op: read the
// config, build the session options, connect, and install the session
// unless the config drifted or a newer attempt took over.
//
// Long: one attempt holds e.op from the config read to the installed
// session, and the drift check compares the revision read at its start
// (R2.5, R2.9); the session options' callbacks close over e and its
// log, so the steps stay in one function.
func (m *Manager) attemptOnce(e *entry, a *attempt) error {
	e.op.Lock()
	defer e.op.Unlock()
	if !m.current(e, a) {
		return ErrSuperseded
	}
	cfg, rev, err := m.readServer(a.ctx, e.id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w %q", ErrUnknownServer, e.id)
		}
		return fmt.Errorf("read config: %w", err)
	}
	if !cfg.Enabled {
		return ErrDisabled
	}
	x := e.ext() // the log and the backoff of a server that connects
	opts := session.Options{
		Server:          cfg,
		HTTPClient:      m.o.HTTPClient,
		ConnectionID:    session.NewConnectionID(),
		ClientName:      m.o.ClientName,
		ClientVersion:   m.o.ClientVersion,
		ProtocolVersion: m.o.ProtocolVersion,
		Logger:          m.log,
		OnCatalog:       func(connID string, c *session.Catalog) { m.onCatalog(e, connID, c) },
		OnExchange:      func(ex session.Exchange) { m.record(e.id, x, ex) },
		OnLog: func(l session.LogMessage) {
			msg := l.Text
			if l.Logger != "" {
				msg = l.Logger + ": " + msg
			}
			m.record(e.id, x, session.Exchange{Time: l.Time, Kind: "log", Level: l.Level, Message: msg})
			if m.o.OnLog != nil {
				m.o.OnLog(e.id, l)
			}
		},
		OnResourceUpdated: func(uri string) {
			if m.o.OnResourceUpdated != nil {
				m.o.OnResourceUpdated(e.id, uri)
			}
		},
		CatalogPoll: max(m.o.CatalogPoll, 0),
	}
	e.mu.Lock()
	opts.KeepWithoutStream = e.streamFailures >= maxStreamFailures
	if e.logLevel != "" {
		// Set at run time (SetLogLevel); cfg stays the stored config,
		// which the drift check below compares.
		opts.Server.LogLevel = e.logLevel
	}
	e.mu.Unlock()
	switch {
	case cfg.Auth.Kind.OAuthCapable() && m.o.OAuth != nil:
		opts.OAuth = m.o.OAuth.Handler(cfg)
	case cfg.Auth.Kind == config.AuthOAuth:
		return ErrNoOAuth
	}
	// An auto server without a provider connects unauthenticated; if it
	// asks for OAuth, its 401 is a typed *session.HTTPStatusError.
	if m.o.Elicit != nil {
		opts.Elicit = func(ctx context.Context, connID string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			m.pauseCalls(e, 1)
			defer m.pauseCalls(e, -1)
			return m.o.Elicit(ctx, ElicitInfo{ServerID: e.id, ConnectionID: connID, OperationID: session.RelatedCall(ctx), Standalone: session.FromStandaloneStream(ctx)}, req)
		}
	}
	hctx, cancel := context.WithTimeout(a.ctx, m.o.HandshakeTimeout)
	sess, err := session.Connect(hctx, opts)
	cancel()
	if err != nil {
		if a.ctx.Err() != nil && !m.current(e, a) {
			return ErrSuperseded
		}
		return err
	}
	// R2.5: the config may have changed while we shook hands. The
	// record's revision says whether it did; only then is it read again.
	if !m.sameRevision(a.ctx, e.id, rev) {
		now, err := m.o.Store.GetServer(a.ctx, e.id)
		if err != nil || !now.Enabled || !config.ConnectionEqual(now, cfg) {
			sess.Close()
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("re-read config after handshake: %w", err)
			}
			return ErrConfigDrift
		}
	}
	e.mu.Lock()
	if e.epoch != a.epoch || e.removed {
		// R2.9: a late candidate never replaces the owner.
		e.mu.Unlock()
		sess.Close()
		return ErrSuperseded
	}
	// e.conf is not set from now: reconcile keeps it current, and a newer
	// change (disabledTools, toolTimeout) may already be there.
	e.sess = sess
	e.setCatalogLocked(sess.Catalog())
	e.reconnecting = false
	// Success opens the window; the count of failures stays until the
	// session proves stable (see connectionLost).
	m.cancelRetryLocked(e)
	x.bo.next, x.bo.err, x.bo.readyAt = time.Time{}, nil, m.clock.Now()
	m.setState(e, StateReady, nil)
	renew := len(e.subs) > 0
	e.mu.Unlock()
	m.connected(e, cfg)
	m.saveCatalog(e)
	m.wg.Add(1)
	go m.watch(e, sess)
	if renew {
		m.wg.Add(1)
		go m.renew(e, sess)
	}
	return nil
}

func (m *Manager) current(e *entry, a *attempt) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.epoch == a.epoch && !e.removed
}

// watch waits for a ready session to end. If it was still the owner, the
// server reconnects with backoff, keeping the last catalog meanwhile.
func (m *Manager) watch(e *entry, sess *session.Session) {
	defer m.wg.Done()
	select {
	case <-sess.Done():
	case <-m.ctx.Done():
		return
	}
	m.connectionLost(e, sess, sess.Err())
}

// connectionLost handles the end of a session that may still be the
// owner. A stale session (already replaced or closed) changes nothing.
func (m *Manager) connectionLost(e *entry, sess *session.Session, cause error) {
	e.mu.Lock()
	if e.sess != sess {
		e.mu.Unlock()
		return
	}
	e.sess = nil
	e.epoch++
	switch {
	case sess.StreamOpened():
		e.streamFailures = 0
	case errors.Is(cause, session.ErrStreamLost):
		e.streamFailures++
	}
	r := Attribute(cause)
	// A session that lived long enough proves the server works: the next
	// attempt starts now. One lost soon after it was made counts as a
	// failure, whatever its class, so a server that drops every session is
	// tried on the backoff schedule, not in a loop (issue #20 item 1); one
	// lost for a cause the person must fix (sign-in, permission, config)
	// is an error that waits for them, not "reconnecting".
	quick := m.clock.Now().Sub(e.ext().bo.readyAt) < flapWindow
	switch {
	case quick && !retriable(r.Class):
		m.failedStateLocked(e, cause, r)
		e.reconnecting = false
	default:
		rr := reconnectingReason(r)
		m.setState(e, StateReconnecting, &rr)
		e.reconnecting = true
	}
	if quick {
		m.failedLocked(e, cause)
	} else {
		m.resetBackoffLocked(e)
		m.startAttemptLocked(e, true)
	}
	e.mu.Unlock()
	m.log.Info("connection lost; reconnecting", "server", e.id, "conn", sess.ConnectionID(), "err", cause, "soon", quick)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		sess.Close()
	}()
}

// Disconnect closes the server's session and cancels any attempt in
// flight. It is a barrier: when it returns, no attempt started before it
// can commit (R2.7).
func (m *Manager) Disconnect(ctx context.Context, id string) error {
	e, err := m.lookup(id)
	if err != nil {
		return err
	}
	m.disconnect(e, StateDisconnected, false, ErrDisconnected)
	return nil
}

// Reconnect closes the current session behind a barrier and connects
// again, keeping the last catalog until the new one commits. Like
// Connect it is the person's request: the backoff starts over.
func (m *Manager) Reconnect(ctx context.Context, id string) error {
	e, err := m.lookup(id)
	if err != nil {
		return err
	}
	m.disconnect(e, StateConnecting, true, ErrSuperseded)
	_, err = m.ensure(ctx, id, true)
	return err
}

func (m *Manager) disconnect(e *entry, to State, keepCatalog bool, cause error) {
	e.mu.Lock()
	e.epoch++
	a := e.attempt
	if a != nil {
		a.cause = cause
		e.attempt = nil
	}
	// A barrier ends the reconnecting and the schedule: what comes next
	// is a new start (an explicit connect, a config change, a first use).
	e.reconnecting = false
	m.resetBackoffLocked(e)
	sess := e.sess
	e.sess = nil
	if to == StateIdle && e.catalog != nil {
		e.idleTools = len(e.catalog.Tools)
	}
	x := e.peek()
	if !keepCatalog {
		e.setCatalogLocked(nil)
		if x != nil {
			// The pins' view of the catalog leaves memory with it (a
			// hibernated server keeps its catalog in the store only).
			x.pins.raw, x.pins.view, x.pins.held = nil, nil, nil
		}
	}
	m.setState(e, to, nil)
	e.mu.Unlock()
	if x != nil && !keepCatalog {
		x.dropPinViews()
	}
	if a != nil {
		// The attempt can no longer commit (its epoch is gone). Let a
		// handshake that is about to finish do so, so its candidate is
		// closed with a DELETE the server sees; cancelled mid-initialize,
		// the server would keep a session we never learned the id of.
		// A stuck handshake is cancelled after the grace period.
		t := time.NewTimer(m.o.CancelGrace)
		select {
		case <-a.done:
		case <-t.C:
		case <-m.ctx.Done():
		}
		t.Stop()
		a.cancel()
	}
	// Barrier: wait until the attempt that held op (if any) has seen the
	// new epoch and closed its candidate.
	e.op.Lock()
	if sess != nil {
		sess.Close()
	}
	e.op.Unlock()
}

// onCatalog commits a session's catalog refresh, unless the session is no
// longer the owner (R2.9).
func (m *Manager) onCatalog(e *entry, connID string, _ *session.Catalog) {
	e.mu.Lock()
	if e.sess == nil || e.sess.ConnectionID() != connID {
		e.mu.Unlock()
		return
	}
	// The session's current catalog, not the one delivered: deliveries of
	// two refreshes may arrive out of order; the session's commit order is
	// the truth.
	e.setCatalogLocked(e.sess.Catalog())
	m.emitLocked(e)
	e.mu.Unlock()
	m.saveCatalog(e)
}

// CurrentConnection returns the server's ready connection id.
func (m *Manager) CurrentConnection(id string) (string, bool) {
	e := m.entry(id)
	if e == nil {
		return "", false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sess == nil {
		return "", false
	}
	return e.sess.ConnectionID(), true
}

// sessionFor returns the session only if connID is still the current one.
func (m *Manager) sessionFor(id, connID string) (*session.Session, error) {
	e, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sess == nil || e.sess.ConnectionID() != connID {
		return nil, fmt.Errorf("server %q: connection %s: %w", id, connID, ErrStaleConnection)
	}
	return e.sess, nil
}

// CloseConnection closes the server's session only if connID is still the
// current one; a stale id never closes the new session (R2.9).
func (m *Manager) CloseConnection(id, connID string) error {
	if _, err := m.sessionFor(id, connID); err != nil {
		return err
	}
	e := m.entry(id)
	e.mu.Lock()
	if e.sess == nil || e.sess.ConnectionID() != connID {
		e.mu.Unlock()
		return fmt.Errorf("server %q: connection %s: %w", id, connID, ErrStaleConnection)
	}
	e.mu.Unlock()
	m.disconnect(e, StateDisconnected, false, ErrDisconnected)
	return nil
}

// CatalogOn returns the catalog of a specific connection (R2.9).
func (m *Manager) CatalogOn(id, connID string) (*session.Catalog, error) {
	s, err := m.sessionFor(id, connID)
	if err != nil {
		return nil, err
	}
	return m.viewOf(m.ctx, m.entry(id), s.Catalog()), nil
}

// Catalog returns the server's catalog, connecting lazily if needed
// (R2.3). While a lost connection is being re-established, the last good
// catalog is returned.
func (m *Manager) Catalog(ctx context.Context, id string) (*session.Catalog, error) {
	e, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.sess == nil && e.catalog != nil && e.conf.enabled && (e.reconnecting || e.attempt != nil) {
		// Reconnecting: serve the last good catalog meanwhile.
		c := e.catalog
		e.mu.Unlock()
		return m.viewOf(ctx, e, c), nil
	}
	noSession := e.sess == nil && e.conf.enabled
	e.mu.Unlock()
	if noSession {
		// A lazy or idle server lists its stored catalog without
		// connecting (R2.3); its first use connects.
		if c := m.cachedCatalog(ctx, e); c != nil {
			return m.viewOf(ctx, e, c), nil
		}
	}
	if _, err := m.ensure(ctx, id, false); err != nil {
		return nil, err
	}
	e.mu.Lock()
	c := e.catalog
	e.mu.Unlock()
	if c == nil {
		return &session.Catalog{}, nil
	}
	return m.viewOf(ctx, e, c), nil
}

// CallError is a tool call that failed without an answer from the server.
type CallError struct {
	ServerID, Tool string
	// MaybeExecuted is true when the request may have reached the server;
	// the call is never re-sent (R4.1).
	MaybeExecuted bool
	// Refused: the call was not sent because the host permission guard
	// or the server refused it before it ran (an origin grant or a
	// sign-in is missing); MaybeExecuted is false.
	Refused bool
	Err     error
}

func (e *CallError) Error() string {
	s := fmt.Sprintf("call %s on server %q failed: %v", e.Tool, e.ServerID, e.Err)
	if e.MaybeExecuted {
		s += "; the call was not re-sent and may or may not have run on the server"
	}
	return s
}

func (e *CallError) Unwrap() error { return e.Err }

// notSent is the CallError of a call that was not sent.
func notSent(id, tool string, err error) *CallError {
	return &CallError{ServerID: id, Tool: tool, Err: err, Refused: refusedUnsent(err)}
}

// CallTool calls a tool once, connecting lazily. It applies the per-server
// timeout (default 60 s) and never retries (R4.1). It is Begin, CallOp and
// End in one.
func (m *Manager) CallTool(ctx context.Context, id, tool string, args json.RawMessage, o session.CallOptions) (*mcp.CallToolResult, error) {
	op, err := m.Begin(ctx, o.OperationID)
	if err != nil {
		return nil, notSent(id, tool, err)
	}
	defer op.End()
	return m.CallOp(op, id, tool, args, o)
}

// CallOp sends a begun call once, connecting its server lazily. o's
// OperationID is op's. Progress is asked of the server only when
// o.Progress listens, and only then does progress restart the tool time.
func (m *Manager) CallOp(op *Op, id, tool string, args json.RawMessage, o session.CallOptions) (_ *mcp.CallToolResult, err error) {
	// A call that needed the person's sign-in (or worked again) changes
	// the server's state (StateOf's waiting mark).
	defer func() { m.noteCall(id, err) }()
	o.OperationID = op.id
	sess, err := m.ensure(op.Context(), id, false)
	if err != nil {
		return nil, notSent(id, tool, err)
	}
	return m.callOn(op, id, sess, tool, args, o)
}

// CallToolOn calls a tool on a specific connection; a stale connection id
// is refused without sending anything (R2.9).
func (m *Manager) CallToolOn(ctx context.Context, id, connID, tool string, args json.RawMessage, o session.CallOptions) (_ *mcp.CallToolResult, err error) {
	defer func() { m.noteCall(id, err) }()
	op, err := m.Begin(ctx, o.OperationID)
	if err != nil {
		return nil, notSent(id, tool, err)
	}
	defer op.End()
	o.OperationID = op.id
	sess, err := m.sessionFor(id, connID)
	if err != nil {
		return nil, notSent(id, tool, err)
	}
	return m.callOn(op, id, sess, tool, args, o)
}

func (m *Manager) callOn(op *Op, id string, sess *session.Session, tool string, args json.RawMessage, o session.CallOptions) (*mcp.CallToolResult, error) {
	ctx := op.Context()
	res, err := m.callOnce(op, id, sess, tool, args, o)
	if ctx.Err() != nil {
		return res, err
	}
	// Two failures prove the call never ran, and it goes out once more on
	// a fresh session; any other keeps R4.1 (never re-sent).
	var failed string
	switch {
	case errors.Is(err, session.ErrClosed) && errors.Is(err, session.ErrCancelledBeforeDispatch):
		// The session was closing (it went idle) before the call was sent.
		failed = "send"
	case errors.Is(err, session.ErrSessionNotFound):
		// The server answered the call's own POST with 404: it forgot the
		// session (it restarted, say) (SPEC §9 A5).
		m.log.Info("the server forgot the session; re-sending the call once on a fresh session", "server", id, "tool", tool)
		failed = "re-send"
	default:
		return res, err
	}
	if e := m.entry(id); e != nil {
		m.connectionLost(e, sess, err)
	}
	// The failure proved the call never ran: one fresh session for it,
	// even inside the backoff window (a call, not a loop, asks for it).
	fresh, cerr := m.ensure(ctx, id, true)
	if cerr != nil {
		return nil, notSent(id, tool, fmt.Errorf("%w; reconnecting to %s it failed: %w", err, failed, cerr))
	}
	return m.callOnce(op, id, fresh, tool, args, o)
}

// callOnce sends the call on sess. Its tool timer cancels the call's own
// context (op's): no context of its own.
func (m *Manager) callOnce(op *Op, id string, sess *session.Session, tool string, args json.RawMessage, o session.CallOptions) (*mcp.CallToolResult, error) {
	ctx := op.Context()
	// The entry's config is the newest; only the two fields a call needs
	// are read (sess.Server() would deep-copy the config on every call).
	var disabled bool
	var toolTimeout config.Duration
	if e := m.entry(id); e != nil {
		e.mu.Lock()
		disabled, toolTimeout = e.conf.toolDisabled(tool), e.conf.toolTimeout
		e.mu.Unlock()
	} else {
		cfg := sess.Server()
		disabled, toolTimeout = cfg.ToolDisabled(tool), cfg.ToolTimeout
	}
	if disabled {
		return nil, notSent(id, tool, ErrToolDisabled)
	}
	if err := m.heldError(ctx, id, sess, tool); err != nil {
		return nil, notSent(id, tool, err) // never sent (issue #20 item 3)
	}
	timeout := time.Duration(toolTimeout)
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	ct := &op.timer
	m.startTimer(id, timeout, ct, func() { op.Cancel(errToolTimeout) })
	defer m.stopTimer(ct)
	if report := o.Progress; report != nil && !m.o.NoProgressExtension {
		// Progress restarts the tool time, up to a hard limit per call.
		// Only a call whose progress someone listens to asks for it (a
		// progress token costs go-sdk a decoded _meta on every call), so
		// only such a call is extended (issue #21, decided).
		hard := time.Now().Add(timeout * MaxToolTimeFactor)
		o.Progress = func(p session.Progress) {
			ct.extend(timeout, hard)
			report(p)
		}
	}
	res, err := sess.CallTool(ctx, tool, args, o)
	if err == nil {
		return res, nil
	}
	// Our timer fired first (the caller's own deadline may have passed a
	// moment later): a timeout, not a cancellation.
	timedOut := op.TimedOut()
	if timedOut {
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	refused := refusedUnsent(err)
	ce := &CallError{ServerID: id, Tool: tool, Err: err, Refused: refused,
		MaybeExecuted: !refused && !errors.Is(err, session.ErrCancelledBeforeDispatch) && !errors.Is(err, session.ErrSessionNotFound)}
	switch {
	case timedOut:
		ce.Err = fmt.Errorf("timed out: %s of tool time passed without progress from the tool (progress restarts it, up to %s in all; time spent answering the server's questions does not count; raise the server's toolTimeout for long tools): %w", timeout, timeout*MaxToolTimeFactor, err)
	case session.IsConnectionLost(err):
		if e := m.entry(id); e != nil {
			m.connectionLost(e, sess, err)
		}
	case !errors.Is(err, context.Canceled) && Attribute(err).Class == ClassNetwork:
		// The request or its answer was lost on the wire; the session may
		// be dead too (server restarted). Check it in the background.
		m.probe(id, sess)
	}
	return nil, ce
}

// reconnectingPrefix starts the reason's message of a server whose
// connection was lost and that is reconnecting by itself (state
// StateReconnecting; the words are for people, nothing parses them).
const reconnectingPrefix = LeadReconnecting + ": "

// errToolTimeout is the cause of a call's context when its tool time ran out.
var errToolTimeout = errors.New("tool timeout")

// startTimer starts a call's timeout ct, paused if a question is open on
// the server (see pauseCalls).
func (m *Manager) startTimer(id string, d time.Duration, ct *callTimer, fire func()) {
	e := m.entry(id)
	ct.owner = e
	if e == nil {
		ct.start(d, 0, fire)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ct.start(d, e.eliciting, fire)
	ct.prev, ct.next = nil, e.timers
	if e.timers != nil {
		e.timers.prev = ct
	}
	e.timers = ct
}

// stopTimer stops ct and takes it off its server's list.
func (m *Manager) stopTimer(ct *callTimer) {
	ct.stop()
	e := ct.owner
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if ct.prev != nil {
		ct.prev.next = ct.next
	} else {
		e.timers = ct.next
	}
	if ct.next != nil {
		ct.next.prev = ct.prev
	}
	ct.prev, ct.next, ct.owner = nil, nil, nil
}

// probe pings a session whose call failed on the network; if the session
// is gone, reconnect.
func (m *Manager) probe(id string, sess *session.Session) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
		defer cancel()
		if err := sess.Ping(ctx); err != nil && m.ctx.Err() == nil {
			if e := m.entry(id); e != nil {
				m.connectionLost(e, sess, err)
			}
		}
	}()
}

// GetPrompt gets a prompt, connecting lazily.
func (m *Manager) GetPrompt(ctx context.Context, id, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return resendOnce(ctx, m, id, func(sess *session.Session) (*mcp.GetPromptResult, error) {
		return sess.GetPrompt(ctx, name, args)
	})
}

// ReadResource reads a resource, connecting lazily.
func (m *Manager) ReadResource(ctx context.Context, id, uri string) (*mcp.ReadResourceResult, error) {
	return resendOnce(ctx, m, id, func(sess *session.Session) (*mcp.ReadResourceResult, error) {
		return sess.ReadResource(ctx, uri)
	})
}

// Complete asks a server for completion values of a prompt's or a
// resource template's argument, connecting lazily.
func (m *Manager) Complete(ctx context.Context, id string, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return resendOnce(ctx, m, id, func(sess *session.Session) (*mcp.CompleteResult, error) {
		return sess.Complete(ctx, params)
	})
}

// resendOnce runs a request on the server's session and, when the server
// answered its own POST with 404 (it forgot the session, so the request
// never ran), once more on a fresh session (SPEC §9 A5).
func resendOnce[T any](ctx context.Context, m *Manager, id string, do func(*session.Session) (T, error)) (T, error) {
	var zero T
	sess, err := m.ensure(ctx, id, false)
	if err != nil {
		return zero, err
	}
	res, err := do(sess)
	if !errors.Is(err, session.ErrSessionNotFound) || ctx.Err() != nil {
		return res, err
	}
	if e := m.entry(id); e != nil {
		m.connectionLost(e, sess, err)
	}
	// As in callOn: one fresh session, even inside the backoff window.
	if sess, err = m.ensure(ctx, id, true); err != nil {
		return zero, err
	}
	return do(sess)
}

// ServerStatus is one server's state for display (CLI status, API).
type ServerStatus struct {
	ID               string   `json:"id"`
	Name             string   `json:"name"`
	URL              string   `json:"url"`
	Enabled          bool     `json:"enabled"`
	ConnectOnStartup bool     `json:"connectOnStartup"`
	Auth             string   `json:"auth"`
	State            State    `json:"state"`
	Reason           *Reason  `json:"reason"`
	ToolCount        int      `json:"toolCount"`
	ConnectionID     string   `json:"connectionId,omitempty"`
	DisabledTools    []string `json:"disabledTools,omitempty"`
	// RetryAt is when the next connect attempt may start, for a server
	// whose last attempt failed (issue #20 item 1); nil otherwise.
	RetryAt *time.Time `json:"retryAt,omitempty"`
	// HeldTools are the tools held because their definition changed
	// since it was pinned (issue #20 item 3); ToolCount leaves them out.
	HeldTools []string `json:"heldTools,omitempty"`
	// Unpinnable are the held tools that cannot be pinned (and so are
	// never offered), each with why; nil when none.
	Unpinnable map[string]string `json:"unpinnable,omitempty"`
}

// statusLocked is the server's status at now (the manager's clock). e.mu
// held.
func (e *entry) statusLocked(now time.Time) ServerStatus {
	st := ServerStatus{
		ID: e.id, Name: e.conf.name, URL: e.conf.url, Enabled: e.conf.enabled,
		ConnectOnStartup: e.conf.startup, Auth: string(e.conf.kind),
		State: e.state, DisabledTools: slices.Clone(e.conf.disabled),
	}
	if st.Auth == "" {
		st.Auth = string(config.AuthNone)
	}
	if e.reason != nil {
		r := *e.reason
		st.Reason = &r
	}
	switch {
	case e.catalog != nil:
		st.ToolCount = len(e.catalog.Tools)
	case e.state == StateIdle:
		st.ToolCount = e.idleTools
	}
	if e.sess != nil {
		st.ConnectionID = e.sess.ConnectionID()
	} else if x := e.peek(); x != nil && x.bo.err != nil && now.Before(x.bo.next) && retriable(Attribute(x.bo.err).Class) {
		// Only a failure retried by the clock: sign-in, permission and
		// configuration wait for the person, whatever the time.
		// Only a wait still ahead: a time passed would read "not tried
		// again before" a moment that is gone.
		at := x.bo.next
		st.RetryAt = &at
	}
	if st.HeldTools = e.heldNamesLocked(); len(st.HeldTools) > 0 {
		st.ToolCount = max(st.ToolCount-len(st.HeldTools), 0)
		st.Unpinnable = e.unpinnableLocked()
	}
	return st
}

// Status returns every server's status, sorted by id.
func (m *Manager) Status() []ServerStatus {
	m.mu.Lock()
	entries := make([]*entry, 0, len(m.entries))
	for _, e := range m.entries {
		entries = append(entries, e)
	}
	m.mu.Unlock()
	out := make([]ServerStatus, 0, len(entries))
	for _, e := range entries {
		e.mu.Lock()
		if !e.removed {
			out = append(out, e.statusLocked(m.clock.Now()))
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ServerStatusOf returns one server's status.
func (m *Manager) ServerStatusOf(id string) (ServerStatus, error) {
	e, err := m.lookup(id)
	if err != nil {
		return ServerStatus{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.statusLocked(m.clock.Now()), nil
}

// setState changes state and publishes an event. e.mu must be held.
func (m *Manager) setState(e *entry, s State, r *Reason) {
	e.state = s
	e.reason = r
	m.emitLocked(e)
}

func (m *Manager) emitLocked(e *entry) {
	st := e.statusLocked(m.clock.Now())
	m.events.Publish(Event{ServerID: e.id, Status: st, Removed: e.removed})
}

// revisions is what a store offers that keeps a revision per server
// record (*store.DB does), so the drift check after a handshake
// (R2.5) reads one number instead of the whole record and its secrets.
type revisions interface {
	GetServerRevision(ctx context.Context, id string) (config.Server, int64, error)
	ServerRevision(ctx context.Context, id string) (int64, error)
}

// readServer reads a server's config and, when the store keeps them, its
// record's revision (0 otherwise).
func (m *Manager) readServer(ctx context.Context, id string) (config.Server, int64, error) {
	if r, ok := m.o.Store.(revisions); ok {
		return r.GetServerRevision(ctx, id)
	}
	cfg, err := m.o.Store.GetServer(ctx, id)
	return cfg, 0, err
}

// sameRevision reports whether the server's record is still at rev; false
// when that cannot be told (then the record is read and compared).
func (m *Manager) sameRevision(ctx context.Context, id string, rev int64) bool {
	r, ok := m.o.Store.(revisions)
	if !ok || rev == 0 {
		return false
	}
	now, err := r.ServerRevision(ctx, id)
	return err == nil && now == rev
}
