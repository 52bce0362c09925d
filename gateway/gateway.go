// Package gateway serves many people from one remotemcp (SPEC §9 A11,
// issue #22): a gateway's database (store.Postgres) and, for each person,
// an engine of their own over their part of it, opened when first needed
// and lazy (it connects a server only when a request needs it).
//
// Isolation is by construction: every request is routed to its person's
// engine, and that engine's store reads and writes only that person's
// rows, with their secrets sealed under their user id. Another person's
// server, card, call, token or log is not hidden from them, it is not
// there: the answer is the engine's own 404.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sync"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// ErrNoUser: no user has that id, or a host token is no one's. (An email
// no one has is a *localapi.Error with CodeNotFound.)
var ErrNoUser = errors.New("no such user on this gateway")

// DefaultQuotas are each person's quotas when Options.Engine sets none:
// enough for one person's agents, few enough that one person cannot
// crowd out the others on one gateway.
var DefaultQuotas = engine.Quotas{Servers: 50, Calls: 16, Questions: 10}

// Options configure New.
type Options struct {
	// DB is the gateway's database; the gateway does not close it.
	DB *store.Postgres
	// Engine is the template of every user's engine (HTTP client,
	// logger, limits); Store and DataDir are set per user, and every
	// engine is lazy (NoStartupConnect). Zero Quotas are DefaultQuotas.
	Engine engine.Options
	Logger *slog.Logger
}

// Gateway holds the users' engines.
type Gateway struct {
	db  *store.Postgres
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	engines map[string]*userEngine // by user id
	// byEmail finds an open engine without the database, so a person's
	// requests go on while PostgreSQL restarts (issue #22 "Bad input and
	// faults"); owners maps a host token's hash to its owner, used only
	// while the database cannot answer.
	byEmail map[string]*userEngine
	owners  map[string]string
	port    int // the redirect URI's port (ServeCallbacks)
	// public is the redirect URI beyond loopback (ServeCallbacksAt),
	// "" for none.
	public string
	closed bool
	// onRemove are told of a removed person (Hosts stops their front
	// end).
	onRemove []func(id string)
}

// userEngine is one user's engine, opened once (ready closes when done).
type userEngine struct {
	user  store.UserInfo
	ready chan struct{}
	eng   *engine.Engine
	err   error

	closeOnce sync.Once
}

// close closes the engine once it is open; a second caller waits for
// the first.
func (ue *userEngine) close() {
	ue.closeOnce.Do(func() {
		<-ue.ready
		if ue.eng != nil {
			ue.eng.Close()
		}
	})
}

// New returns a gateway over o.DB; no engine is opened yet.
func New(o Options) *Gateway {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Engine.Quotas == (engine.Quotas{}) {
		o.Engine.Quotas = DefaultQuotas
	}
	g := &Gateway{db: o.DB, o: o, log: log, engines: map[string]*userEngine{},
		byEmail: map[string]*userEngine{}, owners: map[string]string{}}
	if o.DB != nil {
		o.DB.OnUserRemoved(g.userGone)
	}
	return g
}

// Users lists the gateway's people by email (never their secrets).
func (g *Gateway) Users(ctx context.Context) ([]localapi.User, error) {
	list, err := g.db.Users(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := g.db.ServerCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]localapi.User, 0, len(list))
	for _, u := range list {
		w := wireUser(u)
		w.Servers = counts[u.ID]
		out = append(out, w)
	}
	return out, nil
}

func wireUser(u store.UserInfo) localapi.User {
	return localapi.User{ID: u.ID, Email: u.Email, Created: u.Created}
}

// AddUser adds a person by email: a conflict when the email has one, a
// bad request when it is no email address.
func (g *Gateway) AddUser(ctx context.Context, email string) (*localapi.User, error) {
	u, err := g.db.AddUser(ctx, email)
	switch {
	case errors.Is(err, store.ErrDuplicate):
		return nil, &localapi.Error{Code: localapi.CodeConflict, Message: fmt.Sprintf("%s is a user of this gateway already", email)}
	case errors.Is(err, store.ErrBadEmail):
		return nil, &localapi.Error{Code: localapi.CodeBadRequest, Field: "email", Message: fmt.Sprintf("%q is not an email address (want name@domain)", email)}
	case err != nil:
		return nil, err
	}
	w := wireUser(u)
	g.log.Info("gateway: user added", "user", u.ID)
	return &w, nil
}

// user finds a person by email: CodeNotFound (ErrNoUser) when there is
// none.
func (g *Gateway) user(ctx context.Context, email string) (store.UserInfo, error) {
	u, err := g.db.UserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrBadEmail) {
		return store.UserInfo{}, noUser(email)
	}
	return u, err
}

// noUser is the answer for an email no person has.
func noUser(email string) error {
	return &localapi.Error{Code: localapi.CodeNotFound,
		Message: fmt.Sprintf("no user %q on this gateway (\"remotemcp users list\" shows them; \"remotemcp users add EMAIL\" adds one)", email)}
}

// RemoveUser removes a person and everything of theirs: their rows go
// in one transaction (servers, secrets, host tokens, cards, logs,
// catalogs), so no request finds them from then on; then their engine
// closes (its sessions to remote servers end, calls in flight are
// cancelled) and so do their hosts' sessions. Other replicas do the same
// when their change feed finds the person gone (userGone).
func (g *Gateway) RemoveUser(ctx context.Context, email string) error {
	u, err := g.user(ctx, email)
	if err != nil {
		return err
	}
	g.mu.Lock()
	ue := g.engines[u.ID]
	g.mu.Unlock()
	if err := g.db.RemoveUser(ctx, u.ID); err != nil {
		return fmt.Errorf("gateway: remove user %s: %w", u.Email, err)
	}
	g.userGone(u.ID)
	if ue != nil {
		// Closed by userGone, here or on the feed's goroutine; wait
		// until it is.
		ue.close()
	}
	g.log.Info("gateway: user removed", "user", u.ID)
	return nil
}

// userGone forgets a removed person in this process: their engine is
// closed, their host tokens' owner forgotten and their hosts' sessions
// ended (the onRemove hooks). Idempotent: a removal seen here by
// RemoveUser and again by the change feed closes once.
func (g *Gateway) userGone(id string) {
	g.mu.Lock()
	ue := g.engines[id]
	if ue != nil {
		delete(g.engines, id)
		if g.byEmail[ue.user.Email] == ue {
			delete(g.byEmail, ue.user.Email)
		}
	}
	for h, owner := range g.owners {
		if owner == id {
			delete(g.owners, h)
		}
	}
	hooks := slices.Clone(g.onRemove)
	g.mu.Unlock()
	if ue == nil {
		return
	}
	for _, f := range hooks {
		f(id)
	}
	ue.close()
	g.log.Info("gateway: a removed person's engine closed", "user", id)
}

// EngineFor is Engine as daemon.Gateway has it.
func (g *Gateway) EngineFor(ctx context.Context, email string) (localapi.Engine, error) {
	e, _, err := g.Engine(ctx, email)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Engine returns the engine of the user with email, opening it the first
// time; CodeNotFound (ErrNoUser) when there is none.
func (g *Gateway) Engine(ctx context.Context, email string) (*engine.Engine, store.UserInfo, error) {
	if e, u, ok := g.openByEmail(email); ok {
		return e, u, nil
	}
	u, err := g.user(ctx, email)
	if err != nil {
		return nil, store.UserInfo{}, err
	}
	e, err := g.engineOf(ctx, u)
	return e, u, err
}

// EngineByID is Engine for a user id (a host token's owner).
func (g *Gateway) EngineByID(ctx context.Context, id string) (*engine.Engine, store.UserInfo, error) {
	g.mu.Lock()
	ue := g.engines[id]
	g.mu.Unlock()
	if ue != nil {
		select {
		case <-ue.ready:
			if ue.eng != nil {
				return ue.eng, ue.user, nil
			}
		default:
		}
	}
	u, err := g.db.UserByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.UserInfo{}, fmt.Errorf("user id %q: %w", id, ErrNoUser)
	}
	if err != nil {
		return nil, store.UserInfo{}, err
	}
	e, err := g.engineOf(ctx, u)
	return e, u, err
}

// openByEmail is the open engine of the person with email, if any.
func (g *Gateway) openByEmail(email string) (*engine.Engine, store.UserInfo, bool) {
	norm, err := store.NormalizeEmail(email)
	if err != nil {
		return nil, store.UserInfo{}, false
	}
	g.mu.Lock()
	ue := g.byEmail[norm]
	g.mu.Unlock()
	if ue == nil {
		return nil, store.UserInfo{}, false
	}
	select {
	case <-ue.ready:
		return ue.eng, ue.user, ue.eng != nil
	default:
		return nil, store.UserInfo{}, false
	}
}

// engineOf opens u's engine once; concurrent first requests wait for the
// one opening. A failed open is not kept: the next request tries again.
func (g *Gateway) engineOf(ctx context.Context, u store.UserInfo) (*engine.Engine, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, fmt.Errorf("gateway: %w", store.ErrClosed)
	}
	ue, ok := g.engines[u.ID]
	if !ok {
		ue = &userEngine{user: u, ready: make(chan struct{})}
		g.engines[u.ID] = ue
	}
	port, public := g.port, g.public
	g.mu.Unlock()
	if ok {
		select {
		case <-ue.ready:
			return ue.eng, ue.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ue.eng, ue.err = g.open(ctx, u, port, public)
	g.mu.Lock()
	switch {
	case ue.err != nil && g.engines[u.ID] == ue:
		delete(g.engines, u.ID)
	case ue.err == nil && g.engines[u.ID] == ue:
		g.byEmail[u.Email] = ue
	}
	g.mu.Unlock()
	close(ue.ready)
	return ue.eng, ue.err
}

func (g *Gateway) open(ctx context.Context, u store.UserInfo, port int, public string) (*engine.Engine, error) {
	st, err := g.db.User(ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("gateway: open the store of %s: %w", u.Email, err)
	}
	o := g.o.Engine
	o.Store, o.DataDir, o.NoStartupConnect = st, "", true
	// Sign-ins wait for their callback in the database, where every
	// replica finds them (issue #23).
	o.SharedFlows = st
	o.Logger = g.log.With("user", u.ID)
	e, err := engine.Open(context.WithoutCancel(ctx), o)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("gateway: open the engine of %s: %w", u.Email, err)
	}
	if port > 0 {
		e.ServeCallbacks(port)
	}
	e.ServeCallbacksAt(public)
	if err := g.syncShared(ctx, e); err != nil {
		g.log.Warn("gateway: shared servers", "user", u.ID, "err", err)
	}
	return e, nil
}

// ServeCallbacks tells every user's engine, now and later, that the
// daemon serves the OAuth redirect URI on port (localapi.CallbackReceiver).
func (g *Gateway) ServeCallbacks(port int) {
	g.mu.Lock()
	g.port = port
	open := g.openEngines()
	g.mu.Unlock()
	for _, e := range open {
		e.ServeCallbacks(port)
	}
}

// ServeCallbacksAt tells every user's engine, now and later, that the
// gateway's page serves the OAuth redirect URI redirectURI beyond
// loopback (<public URL>/mcp-oauth): their sign-ins use it instead of the
// loopback one, so a browser anywhere can finish them.
func (g *Gateway) ServeCallbacksAt(redirectURI string) {
	g.mu.Lock()
	g.public = redirectURI
	open := g.openEngines()
	g.mu.Unlock()
	for _, e := range open {
		e.ServeCallbacksAt(redirectURI)
	}
}

// CompleteAuthorization hands an authorization response to the engine
// whose sign-in waits for its state. A sign-in of no engine of this
// replica may be another replica's (or this one's before a restart):
// the database says whose it is, and that person's engine completes it
// from its record (engine.CompleteSharedAuthorization). Nobody's: 404,
// as one engine answers a state it does not know, and nothing changes.
func (g *Gateway) CompleteAuthorization(ctx context.Context, query url.Values) (*localapi.AuthFlow, error) {
	state := query.Get("state")
	g.mu.Lock()
	open := g.openEngines()
	g.mu.Unlock()
	for _, e := range open {
		if e.OwnsAuthState(state) {
			return e.CompleteAuthorization(ctx, query)
		}
	}
	unknown := &localapi.Error{Status: 404, Code: localapi.CodeNotFound,
		Message: "this authorization response does not belong to a sign-in remotemcp is waiting for, and was ignored"}
	if g.db == nil || state == "" {
		return nil, unknown
	}
	id, err := g.db.AuthFlowUser(ctx, state)
	if errors.Is(err, store.ErrNotFound) {
		return nil, unknown
	}
	if err != nil {
		return nil, &localapi.Error{Status: 503, Code: localapi.CodeUnavailable,
			Message: fmt.Sprintf("the sign-in this authorization response belongs to cannot be looked up just now (%v); go back to the authorization page and try again", err)}
	}
	e, _, err := g.EngineByID(ctx, id)
	if errors.Is(err, ErrNoUser) {
		return nil, unknown
	}
	if err != nil {
		return nil, fmt.Errorf("gateway: complete a sign-in: open the engine of its person: %w", err)
	}
	return e.CompleteSharedAuthorization(ctx, query)
}

// openEngines are the engines opened so far. Called with mu held.
func (g *Gateway) openEngines() []*engine.Engine {
	var out []*engine.Engine
	for _, ue := range g.engines {
		select {
		case <-ue.ready:
			if ue.eng != nil {
				out = append(out, ue.eng)
			}
		default:
		}
	}
	return out
}

// TokenOwner returns the id of the user whose host token tok is
// (frontend.Tokens keeps only its hash); ErrNoUser when it is no one's.
//
// While the database cannot answer, a token whose owner was found before
// keeps its owner: the owner's front end checks the token itself (with
// its own grace, frontend.StaleGrace), so a revoked token stays refused.
// (Remembering owners always would save the query each host request
// costs, but a revoked token would keep its owner here.)
func (g *Gateway) TokenOwner(ctx context.Context, tok string) (string, error) {
	hash := frontend.HashToken(tok)
	id, err := g.db.KVOwner(ctx, frontend.TokenNamespace, "sha256", hash)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil:
		g.owners[hash] = id
		return id, nil
	case errors.Is(err, store.ErrNotFound):
		delete(g.owners, hash)
		return "", ErrNoUser
	}
	if id, ok := g.owners[hash]; ok && ctx.Err() == nil {
		return id, nil
	}
	return "", err
}

// OpenUsers returns the ids of the users whose engines are open, sorted
// (tests, status).
func (g *Gateway) OpenUsers() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for id := range g.engines {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Close closes every user's engine. Idempotent.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	all := g.engines
	g.engines = map[string]*userEngine{}
	g.mu.Unlock()
	var wg sync.WaitGroup
	var errs []error
	var emu sync.Mutex
	for _, ue := range all {
		wg.Go(func() {
			<-ue.ready
			if ue.eng == nil {
				return
			}
			if err := ue.eng.Close(); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

var _ daemon.Gateway = (*Gateway)(nil)
