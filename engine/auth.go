package engine

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/netlimit"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/store"
)

// Sign-in (R3.13: interactive authorization only on an explicit user
// action). Authorize starts oauth.Login in a goroutine the engine owns and
// answers with the authorization URL as soon as the flow has one. The
// authorization server sends the browser back to the loopback redirect
// URI http://127.0.0.1:PORT/mcp-oauth (redirectFor chooses PORT: the
// configured auth.redirectPort; else the daemon's own page port; else the
// engine's own listener, on 7717 when free). When the engine's owner
// serves that port (ServeCallbacks: the daemon), it hands the callback to
// CompleteAuthorization; otherwise the engine opens a listener of its own
// on the port for the length of the flow (a one-shot command, or a server
// configured with another port). Either way
// the callback is matched to its flow by state, in constant time: nothing
// else protects /mcp-oauth, since the browser arrives there from the
// authorization server without any credential of ours. A gateway's engine
// differs in two ways (sharedflows.go): with a public page URL its
// redirect URI is <public URL>/mcp-oauth (ServeCallbacksAt), and its
// flows are kept in the database too (Options.SharedFlows), so that the
// callback may reach any replica.

const (
	// flowTimeout bounds a whole flow: the person has this long to finish
	// at the authorization server.
	flowTimeout = 10 * time.Minute
	// authorizeWait is how long Authorize waits for the authorization URL
	// (discovery and registration come first).
	authorizeWait = 60 * time.Second
	// callbackWait is how long CompleteAuthorization waits for the code
	// exchange before answering with the flow as it stands.
	callbackWait = 60 * time.Second
	// replacedWait is how long Authorize waits for the flow it abandons to
	// end, so that what that flow records (a registration whose browser
	// step never came back) is seen by the new one.
	replacedWait = 5 * time.Second
)

// flow is one sign-in flow.
type flow struct {
	server   string
	cancel   context.CancelFunc
	urlc     chan string               // the authorization URL, once
	callback chan oauth.CallbackResult // the matching callback, once
	done     chan struct{}             // closed when Login has returned

	// Guarded by flows.mu.
	view  localapi.AuthFlow
	state string // the OAuth state while waiting for the callback
	// release closes the flow's own callback listeners, after the flow
	// ended (so the callback page can still be written).
	release []func()
	// shared are the states of the flow's authorization requests
	// recorded in Options.SharedFlows.
	shared []string
}

// flows holds the latest flow of each server.
type flows struct {
	mu sync.Mutex
	m  map[string]*flow
}

func newFlows() *flows { return &flows{m: map[string]*flow{}} }

// view returns a copy of a server's latest flow, or nil.
func (fs *flows) view(id string) *localapi.AuthFlow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.m[id]
	if f == nil {
		return nil
	}
	v := f.view
	return &v
}

// get returns a server's latest flow, or nil.
func (fs *flows) get(id string) *flow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.m[id]
}

// viewOf returns a copy of f's state.
func (fs *flows) viewOf(f *flow) *localapi.AuthFlow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	v := f.view
	return &v
}

func (fs *flows) update(f *flow, change func(*localapi.AuthFlow)) {
	fs.mu.Lock()
	change(&f.view)
	fs.mu.Unlock()
}

// replace installs f as the server's flow, cancelling the one before,
// which it returns (nil if none).
func (fs *flows) replace(f *flow) *flow {
	fs.mu.Lock()
	old := fs.m[f.server]
	fs.m[f.server] = f
	fs.mu.Unlock()
	if old != nil {
		old.cancel()
	}
	return old
}

// drop forgets a deleted server's flow, cancelling it.
func (fs *flows) drop(id string) {
	fs.mu.Lock()
	f := fs.m[id]
	delete(fs.m, id)
	fs.mu.Unlock()
	if f != nil {
		f.cancel()
	}
}

// byState finds the flow waiting for a callback with this state. Every
// waiting flow is compared, in constant time, so the answer's timing says
// nothing about how close a guess was.
func (fs *flows) byState(state string) *flow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var found *flow
	for _, f := range fs.m {
		if f.state != "" && f.view.Phase == localapi.PhaseWaiting &&
			subtle.ConstantTimeCompare([]byte(f.state), []byte(state)) == 1 {
			found = f
		}
	}
	return found
}

// ServeCallbacks tells the engine that its owner serves the loopback
// redirect URI http://127.0.0.1:port/mcp-oauth and hands every request to
// it to CompleteAuthorization. Flows of servers with another redirect
// port still get a listener of their own.
func (c *Engine) ServeCallbacks(port int) { c.cbPort.Store(int64(port)) }

// Authorize starts the sign-in flow of an OAuth server and returns once
// the authorization URL is known (phase waiting), the flow failed, or it
// was not needed. A flow that failed is returned together with an
// *localapi.Error (CodePermissionRequired when an origin needs a grant
// first). Starting a flow abandons the server's previous one.
//
// Registration recovery (issue #11): a flow whose browser step never came
// back with a dynamically registered client leaves the registration
// marked, and the next flow registers a new client — the authorization
// server may have forgotten the old one, and it never redirects back for
// an unknown client. Options.Reregister forces a new registration. The
// scopes asked for include those a 403 insufficient_scope recorded.
func (c *Engine) Authorize(ctx context.Context, id string, opts ...localapi.AuthorizeOptions) (*localapi.AuthFlow, error) {
	var o localapi.AuthorizeOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	srv, err := c.Store.GetServer(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errNoServer(id)
		}
		return nil, fail(err)
	}
	if !srv.Auth.Kind.OAuthCapable() {
		return nil, conflict("server %s uses %s auth, not OAuth, so there is nothing to sign in to; switch it to OAuth first (servers set %s --auth oauth)", id, srv.Auth.Kind, id)
	}
	f := &flow{
		server: id, urlc: make(chan string, 1), callback: make(chan oauth.CallbackResult, 1), done: make(chan struct{}),
		view: localapi.AuthFlow{ServerID: id, Phase: localapi.PhaseStarting, Started: time.Now().UTC(),
			RedirectURI: oauth.RedirectURI(srv.Auth.RedirectPort)},
	}
	if pub := c.publicRedirect(); pub != "" {
		f.view.RedirectURI = pub
	}
	// The flow outlives the request (a page only waits for the URL) but
	// not the engine.
	fctx, cancel := context.WithTimeout(c.ctx, flowTimeout)
	f.cancel = cancel
	if old := c.flows.replace(f); old != nil {
		t := time.NewTimer(replacedWait)
		select {
		case <-old.done:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	started := c.goBackground(func(context.Context) {
		defer cancel()
		c.runFlow(fctx, f, srv, oauth.LoginOptions{Reregister: o.Reregister})
	})
	if !started {
		cancel()
		return nil, &localapi.Error{Status: http.StatusServiceUnavailable, Code: localapi.CodeUnavailable, Message: "remotemcp is closing"}
	}
	c.hub.bump(topicServers)

	t := time.NewTimer(authorizeWait)
	defer t.Stop()
	select {
	case <-f.urlc:
	case <-f.done:
	case <-t.C:
	case <-ctx.Done():
		// The caller went away; the flow goes on, and its outcome shows
		// in the server list.
	}
	v := c.flows.viewOf(f)
	return v, flowError(v)
}

// flowError is the error of a failed flow, nil otherwise.
func flowError(v *localapi.AuthFlow) error {
	if v == nil || v.Phase != localapi.PhaseFailed {
		return nil
	}
	e := &localapi.Error{Status: http.StatusBadGateway, Code: localapi.CodeUnavailable, Message: v.Error, Step: v.Step, Permission: v.Permission}
	if v.Permission != nil {
		e.Status, e.Code = http.StatusConflict, localapi.CodePermissionRequired
	}
	return e
}

// Authorization returns the server's latest sign-in flow.
func (c *Engine) Authorization(ctx context.Context, id string) (*localapi.AuthFlow, error) {
	v := c.flows.view(id)
	if v == nil {
		return nil, notFound("no sign-in was started for server %s", id)
	}
	return v, nil
}

// WaitAuthorization waits until the server's latest flow ends (or ctx
// does) and returns it.
func (c *Engine) WaitAuthorization(ctx context.Context, id string) (*localapi.AuthFlow, error) {
	f := c.flows.get(id)
	if f == nil {
		return nil, notFound("no sign-in was started for server %s", id)
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return c.flows.viewOf(f), fail(ctx.Err())
	}
	v := c.flows.viewOf(f)
	return v, flowError(v)
}

// runFlow runs oauth.Login for one flow and records the outcome.
//
// Long: one sign-in from start to finish, in the order the page sees it:
// redirect listener, oauth.Login, the flow's final record (its error worded
// for a person), clearing the sign-out mark and backoff before done is
// closed, releasing the listeners, then reconnecting with the new token.
// The order between these is what the comments in it guard (issue #20
// item 1), so it is one function.
func (c *Engine) runFlow(ctx context.Context, f *flow, srv config.Server, lo oauth.LoginOptions) {
	// Every request the flow makes is attributed to the server, so a
	// refused authorization-server origin shows up beside it as pending.
	ctx = hostperm.WithPurpose(ctx, hostperm.PurposeAuthorization, srv.ID)
	var res *oauth.LoginResult
	var err error
	if pub := c.publicRedirect(); pub != "" {
		// The owner serves the public redirect URI (a gateway's page):
		// no listener of ours, and no port in the config matters.
		c.flows.update(f, func(v *localapi.AuthFlow) { v.RedirectURI = pub })
	} else {
		var port int
		var listening func()
		port, listening, err = c.redirectFor(srv)
		if err == nil {
			if listening != nil {
				c.flows.mu.Lock()
				f.release = append(f.release, listening)
				c.flows.mu.Unlock()
			}
			// The flow's redirect URI, for registration and authorization
			// alike: a registered client whose URI differs registers again
			// (oauth resolveClient); nothing of this is stored in the config.
			srv.Auth.RedirectPort = port
			c.flows.update(f, func(v *localapi.AuthFlow) { v.RedirectURI = oauth.RedirectURI(port) })
		}
	}
	if err == nil {
		if c.o.SharedFlows != nil {
			lo.Share = c.shareFlow(f, c.flows.viewOf(f).Started)
		}
		res, err = c.OAuth.Login(ctx, srv, c.browserFor(f, srv), lo)
		// Before the flow says it ended: a callback from now on is
		// no one's, on every replica.
		c.forgetShared(f)
	}
	c.flows.update(f, func(v *localapi.AuthFlow) {
		now := time.Now().UTC()
		v.Finished = &now
		v.AuthorizationURL = ""
		if err != nil {
			v.Phase = localapi.PhaseFailed
			v.Error = err.Error()
			var oe *oauth.Error
			if errors.As(err, &oe) {
				v.Step = string(oe.Step)
			}
			var pe *hostperm.PermissionRequiredError
			if errors.As(err, &pe) {
				v.Permission = &localapi.PermissionInfo{Origin: pe.Origin, Purpose: purposeOf(pe.Purpose), ServerID: pe.ServerID}
			}
			switch {
			case errors.Is(err, errPortTaken):
				// The message names the port and the flag already.
			case errors.Is(err, context.Canceled):
				v.Error = "the sign-in was abandoned (it was started again, the server was removed, or remotemcp stopped)"
			case errors.Is(err, context.DeadlineExceeded) && errors.Is(err, oauth.ErrMaybeForgottenClient):
				v.Error = fmt.Sprintf("the sign-in was not completed within %v. If the authorization page showed an error such as invalid_client or \"unknown client\", the authorization server has forgotten remotemcp's client registration (for example after a restart): the next sign-in registers a new client. Start it again", flowTimeout)
			case errors.Is(err, context.DeadlineExceeded):
				v.Error = fmt.Sprintf("the sign-in was not completed within %v; start it again", flowTimeout)
			}
			return
		}
		v.Phase = localapi.PhaseDone
		v.Result = loginResult(res)
	})
	if err == nil {
		if err := c.Manager.SetSignedOut(context.WithoutCancel(ctx), srv.ID, false); err != nil {
			c.log.Warn("remotemcp: clear the sign-out mark", "server", srv.ID, "err", err)
		}
		// Before the flow says it is done: a call made then must not meet
		// the backoff of the failure the sign-in fixed (issue #20 item 1).
		c.Manager.ResetBackoff(srv.ID)
	}
	close(f.done)
	c.flows.mu.Lock()
	release := f.release
	f.release = nil
	c.flows.mu.Unlock()
	for _, r := range release {
		r()
	}
	c.hub.bump(topicServers)
	if err != nil {
		c.log.Info("remotemcp: sign-in failed", "server", srv.ID, "err", err)
		return
	}
	c.log.Info("remotemcp: signed in", "server", srv.ID)
	c.connectAfterSignIn(ctx, srv.ID)
}

// connectAfterSignIn connects a server again after its sign-in, when it
// is enabled and the engine runs.
func (c *Engine) connectAfterSignIn(ctx context.Context, id string) {
	// The manager's sessions pick the new token up on their next request;
	// a server that failed for want of it is connected again now. A live
	// session is kept (Connect, not Reconnect): replacing it would fail
	// the calls in flight on it, which the new token serves anyway.
	if cur, gerr := c.Store.GetServer(ctx, id); gerr == nil && cur.Enabled && c.running {
		rctx, rcancel := context.WithTimeout(ctx, connectWait)
		connect := c.Manager.Connect
		if st, serr := c.Manager.ServerStatusOf(id); serr == nil && st.State != manager.StateReady {
			// No live session to keep: an attempt already in flight
			// started without the new token and would fail for want of
			// it (and a reconnect that needs a sign-in is not retried),
			// so start afresh.
			connect = c.Manager.Reconnect
		}
		if rerr := connect(rctx, id); rerr != nil {
			c.log.Info("remotemcp: reconnect after sign-in failed", "server", id, "err", rerr)
		} else if rerr := c.reg.Refresh(withWant(rctx, id)); rerr != nil {
			c.log.Debug("remotemcp: list after sign-in", "server", id, "err", rerr)
		}
		rcancel()
	}
}

// browserFor is the oauth.Browser of one flow: it publishes the
// authorization URL and waits for the callback matched by state.
func (c *Engine) browserFor(f *flow, srv config.Server) oauth.Browser {
	return func(ctx context.Context, authURL string) (*oauth.CallbackResult, error) {
		// The authorization page is an origin we send the person to: it
		// needs a grant like every other (R2.2).
		if err := c.Hosts.Check(ctx, authURL, hostperm.PurposeAuthorization, srv.ID); err != nil {
			return nil, err
		}
		u, err := url.Parse(authURL)
		if err != nil {
			return nil, err
		}
		q := u.Query()
		state := q.Get("state")
		if state == "" {
			return nil, errors.New("the authorization URL has no state")
		}
		port, err := c.callbackPort(q.Get("redirect_uri"))
		if err != nil {
			return nil, err
		}
		if port != 0 && int64(port) != c.cbPort.Load() {
			_, release, err := c.listenLoopback(port, srv.ID)
			if err != nil {
				return nil, err
			}
			c.flows.mu.Lock()
			f.release = append(f.release, release)
			c.flows.mu.Unlock()
		}
		c.flows.update(f, func(v *localapi.AuthFlow) {
			v.Phase, v.AuthorizationURL, v.RedirectURI = localapi.PhaseWaiting, authURL, q.Get("redirect_uri")
		})
		c.flows.mu.Lock()
		f.state = state
		c.flows.mu.Unlock()
		select {
		case f.urlc <- authURL:
		default: // a second round (re-registration): callers learn it from the server list
		}
		c.hub.bump(topicServers)
		var elsewhere <-chan error // nil: never
		if c.o.SharedFlows != nil && c.isShared(f, state) {
			wctx, wcancel := context.WithCancel(ctx)
			defer wcancel()
			elsewhere = c.watchShared(wctx, srv.ID, state)
		}
		select {
		case err := <-elsewhere:
			// Another replica took the callback and ended the flow.
			c.flows.mu.Lock()
			f.state = ""
			c.flows.mu.Unlock()
			return nil, err
		case r := <-f.callback:
			c.flows.update(f, func(v *localapi.AuthFlow) { v.Phase, v.AuthorizationURL = localapi.PhaseExchanging, "" })
			c.flows.mu.Lock()
			f.state = ""
			c.flows.mu.Unlock()
			c.hub.bump(topicServers)
			return &r, nil
		case <-ctx.Done():
			c.flows.mu.Lock()
			f.state = ""
			c.flows.mu.Unlock()
			return nil, fmt.Errorf("waiting for the authorization callback: %w", ctx.Err())
		}
	}
}

// callbackPort checks that a flow's redirect URI is one whose callbacks
// reach this engine: with a public redirect URI (ServeCallbacksAt), that
// one and nothing else (port 0: the owner serves it); without, a loopback
// one, whose port it returns.
func (c *Engine) callbackPort(redirect string) (int, error) {
	if pub := c.publicRedirect(); pub != "" {
		if redirect != pub {
			return 0, fmt.Errorf("the redirect URI %q is not the one remotemcp serves, %s", redirect, pub)
		}
		return 0, nil
	}
	port, ok := loopbackPort(redirect)
	if !ok {
		return 0, fmt.Errorf("the redirect URI %q is not a loopback callback remotemcp can serve", redirect)
	}
	return port, nil
}

// loopbackPort returns the port of a loopback redirect URI.
func loopbackPort(redirect string) (int, bool) {
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" || u.Path != oauth.CallbackPath {
		return 0, false
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return 0, false
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port <= 0 {
		return 0, false
	}
	return port, true
}

// CompleteAuthorization completes the flow a callback to /mcp-oauth
// belongs to, matched by its state, and answers with the flow once the
// code has been exchanged (or after a while, as it then stands). A
// callback that cannot be read is CodeBadRequest; one that belongs to no
// waiting flow (forged, stale or replayed) is CodeNotFound and changes
// nothing; a second delivery of one is CodeConflict.
func (c *Engine) CompleteAuthorization(ctx context.Context, query url.Values) (*localapi.AuthFlow, error) {
	res, err := oauth.ParseCallback(query)
	if err != nil {
		return nil, badRequest("", "the authorization response could not be read: %v", err)
	}
	f := c.flows.byState(res.State)
	if f == nil {
		return nil, notFound("this authorization response does not belong to a sign-in remotemcp is waiting for, and was ignored")
	}
	if c.o.SharedFlows != nil && c.isShared(f, res.State) {
		// Taken in the store, so that no replica takes it a second time
		// (nor after another replica has).
		if _, err := c.claimShared(ctx, res.State); err != nil {
			return nil, err
		}
	}
	select {
	case f.callback <- *res:
	default:
		return nil, conflict("remotemcp already has the answer for this sign-in")
	}
	t := time.NewTimer(callbackWait)
	defer t.Stop()
	select {
	case <-f.done:
	case <-t.C:
	case <-ctx.Done():
	case <-c.ctx.Done():
	}
	return c.flows.viewOf(f), nil
}

// OwnsAuthState reports whether a sign-in flow of this engine waits for
// the authorization response with this state: a gateway, whose users'
// engines share one redirect URI, hands the response to that engine.
func (c *Engine) OwnsAuthState(state string) bool {
	return state != "" && c.flows.byState(state) != nil
}

// errPortTaken marks a redirect port the engine could not listen on.
var errPortTaken = errors.New("redirect port taken")

// defaultRedirectPort is the redirect port of a flow when neither the
// server's config nor the engine's owner names one (a variable for
// tests, which never depend on 7717 itself).
var defaultRedirectPort = config.DefaultRedirectPort

// redirectFor chooses the loopback port of a flow's redirect URI
// (issue #19 item 1) and, when the engine's owner does not serve it,
// listens on it for the flow (release ends that).
//
//   - A configured auth.redirectPort (servers set --port) is honoured.
//   - A dynamically registered client uses the daemon's own page port, or
//     without a daemon the engine's own listener: 7717 when free, else a
//     free port. RFC 8252 §7.3 says the authorization server must accept
//     any loopback port; many check the registered URI exactly, so a
//     client registered with another URI registers again instead.
//   - A pre-registered client (auth.clientId, or a client ID metadata
//     document) has the default redirect URI registered; when that port
//     cannot be used, the error names the URI to register instead and the
//     command that makes it the server's.
func (c *Engine) redirectFor(srv config.Server) (port int, release func(), err error) {
	served := int(c.cbPort.Load())
	if p := srv.Auth.RedirectPort; p != 0 {
		if p == served {
			return p, nil, nil
		}
		_, release, err := c.listenLoopback(p, srv.ID)
		return p, release, err
	}
	preRegistered := srv.Auth.ClientID != "" || srv.Auth.ClientMetadataURL != ""
	if !preRegistered && served != 0 {
		return served, nil, nil
	}
	if served == defaultRedirectPort {
		return served, nil, nil
	}
	port, release, err = c.listenLoopback(defaultRedirectPort, srv.ID)
	if err == nil {
		return port, release, nil
	}
	if !preRegistered {
		// The engine's own listener, on any free port.
		return c.listenLoopback(0, srv.ID)
	}
	suggest := served
	if suggest == 0 {
		if p, perr := freeLoopbackPort(); perr == nil {
			suggest = p
		}
	}
	// The command changes the redirect port alone (the client id, secret
	// and scopes stay).
	how := fmt.Sprintf("register a redirect URI on a free port, e.g. %s, with the authorization server for this client, then run \"remotemcp servers set %s --port %d\"", oauth.RedirectURI(suggest), srv.ID, suggest)
	if suggest == 0 {
		how = fmt.Sprintf("register http://127.0.0.1:PORT/mcp-oauth on a free PORT with the authorization server for this client, then run \"remotemcp servers set %s --port PORT\"", srv.ID)
	}
	if served != 0 {
		how = fmt.Sprintf("register %s (the daemon's settings page) with the authorization server for this client, then run \"remotemcp servers set %s --port %d\"", oauth.RedirectURI(served), srv.ID, served)
	}
	var cause error = err
	var oe *net.OpError
	if errors.As(err, &oe) {
		cause = oe
	}
	return 0, nil, fmt.Errorf("%w: server %s signs in with a pre-registered client, whose redirect URI is %s, but remotemcp cannot listen there (%w); free that port, or %s",
		errPortTaken, srv.ID, oauth.RedirectURI(defaultRedirectPort), cause, how)
}

// freeLoopbackPort is a port free on 127.0.0.1 a moment ago, to suggest.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// loopback is one of the engine's own callback listeners, shared by the
// flows that use its port.
type loopback struct {
	srv  *http.Server
	refs int
	done chan struct{}
	// gone is closed once the listener is closed and out of the map;
	// until then a flow that wants its port waits (a flow started again
	// binds the port its predecessor is still letting go of).
	gone    chan struct{}
	closing bool
}

// listenLoopback serves /mcp-oauth on 127.0.0.1:port (0: a free port,
// which it returns) until release has been called by every flow that
// asked for it.
func (c *Engine) listenLoopback(port int, serverID string) (bound int, release func(), err error) {
	c.loopMu.Lock()
	defer c.loopMu.Unlock()
	l := c.loops[port]
	for l != nil && l.closing {
		c.loopMu.Unlock()
		<-l.gone
		c.loopMu.Lock()
		l = c.loops[port]
	}
	if l == nil || port == 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return 0, nil, fmt.Errorf("%w: listening for the OAuth callback on 127.0.0.1:%d failed: %w (another program, or another remotemcp process signing in, has the port; free it, choose another redirect port with \"remotemcp servers set %s --port PORT\" after registering http://127.0.0.1:PORT/mcp-oauth with the authorization server if the client is pre-registered, or go back to the default with \"remotemcp servers set %s --port default\")",
				errPortTaken, port, err, serverID, serverID)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		l = &loopback{done: make(chan struct{}), gone: make(chan struct{})}
		// The limits of every local listener (issue #20 item 2).
		// The one /mcp-oauth handler, which the daemon mounts too.
		l.srv = netlimit.Server(localapi.CallbackHandler(c, nil), netlimit.Options{})
		lim := netlimit.Limit(ln, netlimit.Cap(netlimit.MaxCallbackConns), "the OAuth callback")
		go func() {
			defer close(l.done)
			_ = l.srv.Serve(lim) // ErrServerClosed after Shutdown
		}()
		c.loops[port] = l
	}
	l.refs++
	var once sync.Once
	release = func() {
		once.Do(func() {
			c.loopMu.Lock()
			l.refs--
			last := l.refs == 0
			l.closing = last
			c.loopMu.Unlock()
			if last {
				// Let the "you can close this tab" page finish.
				sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = l.srv.Shutdown(sctx)
				cancel()
				_ = l.srv.Close()
				<-l.done
				c.loopMu.Lock()
				if c.loops[port] == l {
					delete(c.loops, port)
				}
				c.loopMu.Unlock()
				close(l.gone)
			}
		})
	}
	return port, release, nil
}

// Logout signs out of an OAuth server: it forgets the access token, the
// refresh token and the client registration, and ends the server's
// sessions; its state is then needs-auth, reason "signed out", until it
// signs in or connects again. A server that does not use OAuth is
// CodeConflict: there is nothing to sign out of.
func (c *Engine) Logout(ctx context.Context, id string) (*localapi.LogoutResult, error) {
	srv, err := c.Store.GetServer(ctx, id)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errNoServer(id)
		}
		return nil, fail(err)
	}
	if !srv.UsesOAuth() {
		return nil, conflict("server %s does not use OAuth (its auth is %s): there is nothing to sign out of", id, srv.Auth.Kind)
	}
	before := c.OAuth.Status(ctx, srv)
	if err := c.OAuth.Logout(ctx, id); err != nil {
		return nil, fail(err)
	}
	if f := c.flows.get(id); f != nil {
		f.cancel()
	}
	if err := c.Manager.Disconnect(ctx, id); err != nil {
		c.log.Debug("remotemcp: disconnect after sign-out", "server", id, "err", err)
	}
	// After the disconnect, a barrier: no connect started before it can
	// clear the mark.
	if err := c.Manager.SetSignedOut(ctx, id, true); err != nil {
		c.log.Warn("remotemcp: record the sign-out", "server", id, "err", err)
	}
	c.hub.bump(topicServers)
	res := &localapi.LogoutResult{ServerID: id, Forgotten: []string{}}
	if before.HasAccessToken {
		res.Forgotten = append(res.Forgotten, "access token")
	}
	if before.HasRefreshToken {
		res.Forgotten = append(res.Forgotten, "refresh token")
	}
	if before.Registered {
		res.Forgotten = append(res.Forgotten, "client registration")
	}
	res.Server, _ = c.serverView(ctx, id)
	return res, nil
}

// AuthStatus reports what this engine knows about the sign-in of every
// server (or of ids), never the tokens themselves. HasAccessToken is this
// process's in-memory token: through a daemon, the daemon's. A server
// that does not use OAuth is listed with its kind, signed in false.
func (c *Engine) AuthStatus(ctx context.Context, ids ...string) ([]localapi.AuthStatus, error) {
	var srvs []config.Server
	if len(ids) == 0 {
		all, err := c.Store.ListServers(ctx)
		if err != nil && !errors.Is(err, store.ErrSealOpen) {
			return nil, fail(err)
		}
		srvs = all
	} else {
		for _, id := range ids {
			srv, err := c.Store.GetServer(ctx, id)
			if err != nil && !errors.Is(err, store.ErrSealOpen) {
				if errors.Is(err, store.ErrNotFound) {
					return nil, errNoServer(id)
				}
				return nil, fail(err)
			}
			srvs = append(srvs, srv)
		}
	}
	out := make([]localapi.AuthStatus, 0, len(srvs))
	for _, srv := range srvs {
		as := localapi.AuthStatus{ServerID: srv.ID, Kind: srv.Auth.Kind}
		if srv.Auth.Kind.OAuthCapable() {
			st := c.OAuth.Status(ctx, srv)
			as.Binding, as.BindingCurrent, as.ClientID, as.Registered = st.Binding, st.BindingCurrent, st.ClientID, st.Registered
			as.HasRefreshToken, as.HasAccessToken, as.Scopes, as.Problem = st.HasRefreshToken, st.HasAccessToken, st.Scopes, st.Problem
			as.SignedIn = st.HasAccessToken || st.HasRefreshToken
			if !st.RegisteredAt.IsZero() {
				t := st.RegisteredAt.UTC()
				as.RegisteredAt = &t
			}
			if !st.AccessTokenExpiry.IsZero() {
				t := st.AccessTokenExpiry.UTC()
				as.AccessTokenExpiry = &t
			}
		}
		out = append(out, as)
	}
	return out, nil
}
