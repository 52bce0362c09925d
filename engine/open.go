// Package engine is remotemcp's engine: it owns all state of an opened
// data directory (SQLite store with its key file, in-memory token store,
// host permission broker, OAuth authenticator, elicitation cards,
// connection manager) and implements [localapi.Engine], the one API every
// surface uses. The daemon's HTTP handlers are thin adapters over it, the
// CLI runs it in-process when no daemon runs.
//
// Embedders use package remotemcp, a thin facade over this package that
// exports no internals; the exported fields of [Engine] are for owners
// inside this module (the daemon, tests) that wire more around it.
//
// Failures a caller can branch on are *localapi.Error values with a stable
// Code (localapi.CodeNotFound, CodeLoginRequired …).
package engine

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// Version is the remotemcp version reported in initialize.
const Version = "0.1.0"

// Options configure Open. The zero value uses the default data directory.
type Options struct {
	// DataDir overrides $REMOTEMCP_HOME and the user config directory.
	DataDir string
	// Quotas bound what the engine holds at once (a gateway's person);
	// zero: no limits.
	Quotas Quotas
	// Store, when set, is the store the engine runs on instead of opening
	// the data directory's (a gateway user's, store.Postgres.User); the
	// engine owns it from then on and closes it. DataDir is then ignored.
	Store  *store.DB
	Logger *slog.Logger
	// HTTPClient is the base client for all outbound traffic; it must not
	// set Timeout. Nil uses a client with sane dial/TLS timeouts.
	HTTPClient *http.Client
	// SignIn makes sign-ins interactive: when a request (a connect, a
	// call, a step-up to more scopes, a background reconnect) meets an
	// OAuth server that needs the person's sign-in, the engine runs the
	// flow inside that request and calls SignIn with the authorization
	// URL, to open it in the person's browser; the browser comes back to
	// the engine's loopback redirect URI (or the owner's, ServeCallbacks)
	// and the request goes on. SignIn should return once the page is
	// opened; an error abandons the sign-in. Nil (the default): such a
	// request fails with localapi.CodeLoginRequired and the person signs
	// in with Authorize (R3.13: no browser flow in the background).
	SignIn func(ctx context.Context, serverID, authURL string) error
	// Elicit answers server questions itself. Nil (the default) turns
	// them into elicitation cards (Engine.Elicit) that a person answers
	// through CallHandler.Question and Answer (R6.1).
	Elicit func(ctx context.Context, info manager.ElicitInfo, req *ElicitRequest) (*ElicitResult, error)
	// ProtocolVersion overrides the MCP revision (conformance testing of
	// the draft only); empty means the pinned 2025-11-25.
	ProtocolVersion string
	// NoStartupConnect: Open connects nothing; every server is lazy, and
	// the engine connects only the server a call or listing needs. A
	// one-shot command runs the engine this way; connectOnStartup is for
	// long-lived owners (the daemon, an embedding agent).
	NoStartupConnect bool
	// IdleCheck is how often sessions unused for their server's
	// idleTimeout are looked for and closed (default 15 s).
	IdleCheck time.Duration
	// AskHost puts an origin without a grant to the person at once: a
	// request to it waits for the answer, and true grants the origin
	// (see hostperm.Options.Ask). Nil leaves a pending approval that the
	// person decides later (Pending, Grant; R2.2).
	AskHost func(ctx context.Context, refused localapi.PermissionInfo) bool
	// BackoffBase and BackoffMax shape each server's connect backoff
	// (default 1 s and 5 min; see manager.Options); Clock is its time
	// and the schedule of the idle checks (nil: the wall clock; tests
	// pass a manual one).
	BackoffBase, BackoffMax time.Duration
	Clock                   manager.Clock
	// SharedFlows, when set, keeps every sign-in that waits for its
	// callback where the other replicas of a gateway find it (a gateway
	// user's store.DB: PostgreSQL), so that the callback may land on any
	// of them (SPEC §9 A11, issue #23; CompleteSharedAuthorization). Nil
	// (a personal engine): flows live in this engine's memory only.
	SharedFlows SharedFlows
}

// Engine is an opened remotemcp: the engine. It implements
// [localapi.Engine] and [localapi.CallbackReceiver]; ordinary use needs
// nothing but those methods. The exported parts are for owners that wire
// more around the engine (the conformance client, tests).
type Engine struct {
	Store  *store.DB
	Memory *store.Memory
	// Elicit holds the elicitation cards (nil when Options.Elicit is set).
	Elicit *elicit.Cards
	// OAuth performs logins, refreshes and step-ups for oauth servers.
	OAuth *oauth.Authenticator
	// Hosts is the host permission broker every outbound request passes
	// (R2.2): HTTP is guarded by it.
	Hosts   *hostperm.Broker
	Manager *manager.Manager
	HTTP    *http.Client
	DataDir string

	o       Options
	log     *slog.Logger
	lazy    bool // NoStartupConnect: connect only what a request needs
	running bool // the manager and the registry were started
	started time.Time
	// reg is the snapshot of every server's tools, prompts and
	// resources, following the manager.
	reg *registry

	// ctx ends when Close begins; flows, watchers and background work
	// derive from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bgMu   sync.Mutex // orders wg.Add against Close's wg.Wait
	closed bool       // guarded by bgMu

	hub   *hub
	views viewCache // the live server list of the subscriptions
	// catalog is the live tool list of the subscriptions, encoded once
	// per registry generation for all of them.
	catalog catalogCache
	flows   *flows
	// cbPort is the port whose /mcp-oauth the owner serves (ServeCallbacks).
	cbPort atomic.Int64
	// public is the redirect URI the owner serves beyond loopback
	// (ServeCallbacksAt), "" for none.
	public atomic.Pointer[string]
	// instance names this engine in the flows it shares (SharedFlows).
	instance string
	loopMu   sync.Mutex
	loops    map[int]*loopback // the engine's own callback listeners

	// notices are the servers' notifications for Subscribe (log
	// messages, resource updates).
	notices noticeRing

	editMu sync.Mutex // queues this process's server edits
	quota  quota

	closeOnce sync.Once
	closeErr  error
}

// NewHTTPClient returns the default base HTTP client: bounded dial, TLS
// and header waits, but no overall Timeout (it would cut SSE streams).
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSHandshakeTimeout = 15 * time.Second
	tr.ResponseHeaderTimeout = 0 // tool calls may legitimately take minutes
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr}
}

// Open opens the data directory and starts the engine:
// the manager (connecting the servers with connectOnStartup, unless
// NoStartupConnect), the registry of tools (which connects nothing by
// itself) and the event watchers.
//
// Long: the engine's wiring in dependency order: store, host guard, HTTP
// client, OAuth, manager, elicitation cards, registry, start. Each
// part takes the ones before it, and each failure closes what was opened
// so far; split, the partial Engine would pass between pieces.
func Open(ctx context.Context, o Options) (*Engine, error) {
	st, dir := o.Store, ""
	if st != nil {
		dir = st.Dir()
	} else {
		var err error
		if dir, err = store.DataDir(o.DataDir); err != nil {
			return nil, fmt.Errorf("remotemcp: data directory: %w", err)
		}
		if st, err = store.Open(ctx, dir, store.Options{Logger: o.Logger}); err != nil {
			return nil, err
		}
	}
	base := o.HTTPClient
	if base == nil {
		base = NewHTTPClient()
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var ask func(context.Context, hostperm.PermissionRequiredError) bool
	if o.AskHost != nil {
		ask = func(ctx context.Context, p hostperm.PermissionRequiredError) bool {
			return o.AskHost(ctx, localapi.PermissionInfo{Origin: p.Origin, Purpose: localapi.Purpose(p.Purpose), ServerID: p.ServerID})
		}
	}
	hosts := hostperm.New(st, hostperm.Options{Ask: ask})
	// One guard for everything: MCP endpoints, metadata, registration,
	// token requests (R2.2). A copy, so the caller's client is unchanged.
	hc := *base
	hc.Transport = hosts.Transport(base.Transport)
	c := &Engine{
		Store: st, Memory: store.NewMemory(), HTTP: &hc, Hosts: hosts, DataDir: dir,
		o: o, log: log, lazy: o.NoStartupConnect, started: time.Now().UTC(),
		hub: newHub(), flows: newFlows(), loops: map[int]*loopback{}, instance: rand.Text(),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.quota.q = o.Quotas
	c.OAuth = oauth.New(oauth.Options{Store: st, Memory: c.Memory, HTTPClient: c.HTTP, Logger: o.Logger,
		ClientMetadataURL: func(s config.Server) string { return s.Auth.ClientMetadataURL },
		// OAuth requests join the server's request log (B1); c.Manager is
		// read when one is made, after it is set below.
		OnExchange: func(x oauth.Exchange) {
			if c.Manager != nil {
				c.Manager.RecordExchange(x.ServerID, session.Exchange{Time: x.Time, HTTPMethod: x.HTTPMethod,
					Status: x.Status, Millis: x.Millis, Error: x.Error, Kind: "oauth", Step: string(x.Step), URL: x.URL})
			}
		},
		RedirectURI: c.publicRedirect})
	// Background handlers unless the embedder has the person at hand
	// (R3.13): a 401 the refresh token cannot fix is "login required",
	// and the person signs in with Authorize.
	provider := providerFunc(func(srv config.Server) auth.OAuthHandler {
		if o.SignIn != nil {
			return c.OAuth.Handler(srv, c.interactiveBrowser(srv))
		}
		return c.OAuth.Handler(srv, nil)
	})
	mo := manager.Options{
		Store: st, HTTPClient: c.HTTP, OAuth: provider, Logger: o.Logger,
		ClientName: "remotemcp", ClientVersion: Version,
		ProtocolVersion: o.ProtocolVersion, NoStartupConnect: o.NoStartupConnect,
		Elicit: o.Elicit, OnLog: c.onServerLog, OnResourceUpdated: c.onResourceUpdated,
		Catalogs: manager.KVShelf{KV: st}, Logs: manager.KVShelf{KV: st}, IdleCheck: o.IdleCheck,
		BackoffBase: o.BackoffBase, BackoffMax: o.BackoffMax, Clock: o.Clock,
	}
	if st.SharesRequestLog() {
		// A gateway: the request log is the person's across replicas
		// (issue #23), kept in PostgreSQL.
		mo.SharedLog = manager.StoreLog{Store: st, Logger: log}
	}
	if mo.Elicit == nil {
		cards, err := elicit.Open(ctx, st, elicit.Options{Logger: o.Logger})
		if err != nil {
			c.cancel()
			hosts.Close()
			st.Close()
			return nil, fmt.Errorf("remotemcp: elicitation cards: %w", err)
		}
		c.Elicit = cards
		mo.Elicit = cards.Handle
	}
	mo.Elicit = c.boundQuestions(mo.Elicit)
	c.Manager = manager.New(mo)
	c.reg = newRegistry(c.Manager)
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// start starts the manager, the registry and the watchers.
func (c *Engine) start(ctx context.Context) error {
	if err := c.Manager.Start(ctx); err != nil {
		return err
	}
	if c.Elicit != nil {
		c.Elicit.Watch(c.Manager)
	}
	// The registry's first listing connects nothing: servers are listed
	// when a request needs them (connectOnStartup servers arrive through
	// the manager's events once they are ready).
	if err := c.startRegistry(withWant(ctx)); err != nil {
		return err
	}
	c.running = true
	c.startWatchers()
	return nil
}

// providerFunc is a function as a manager.OAuthProvider.
type providerFunc func(config.Server) auth.OAuthHandler

func (f providerFunc) Handler(srv config.Server) auth.OAuthHandler { return f(srv) }

// Close stops the engine in the order package elicit documents: sign-in
// flows and background work end, the registry stops, open questions are
// closed as interrupted while their connections can still carry the
// refusal, then the manager closes every session (cancelling calls in
// flight), then the broker and the store. Idempotent.
func (c *Engine) Close() error {
	c.closeOnce.Do(func() {
		c.bgMu.Lock()
		c.closed = true
		c.bgMu.Unlock()
		c.cancel()
		c.wg.Wait()
		if c.reg != nil {
			c.reg.close()
		}
		if c.Elicit != nil {
			c.Elicit.Close()
		}
		c.Manager.Close()
		c.Hosts.Close()
		c.closeErr = c.Store.Close()
	})
	return c.closeErr
}

// goBackground runs f in a goroutine owned by the engine: Close waits for
// it, and its context ends when Close begins. It reports false (and does
// not run f) once Close has begun.
func (c *Engine) goBackground(f func(ctx context.Context)) bool {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(c.ctx)
	}()
	return true
}
