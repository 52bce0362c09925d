package daemon

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
	"github.com/remotemcp/remotemcp/oauth"
)

// The Authorize button (R3.13: interactive authorization only on an
// explicit user action). POST /api/servers/{id}/authorize starts
// oauth.Login in a goroutine the daemon owns and answers with the
// authorization URL as soon as the flow has one; the page opens it in a
// new tab. The authorization server redirects that tab to the loopback
// redirect URI, which is this daemon's own /mcp-oauth when the server's
// redirect port is the daemon's port (the default, 7717). The callback is
// matched to the flow by its state (nothing else protects /mcp-oauth: the
// browser arrives there from the authorization server without our
// cookie), handed to Login, and the tab shows the outcome once the code
// has been exchanged; the settings page learns it through /api/events.
//
// A server configured with another redirect port gets a listener of its
// own for the duration of the flow (oauth.ListenLoopbackBrowser).

const (
	// flowTimeout bounds a whole Authorize flow: the person has this long
	// to finish at the authorization server.
	flowTimeout = 10 * time.Minute
	// authorizeWait is how long POST …/authorize waits for the
	// authorization URL (discovery and registration come first).
	authorizeWait = 60 * time.Second
	// callbackWait is how long the callback page waits for the code
	// exchange before saying the result will show in the settings page.
	callbackWait = 60 * time.Second
)

// flow is one Authorize flow.
type flow struct {
	server   string
	cancel   context.CancelFunc
	urlc     chan string               // the authorization URL, once
	callback chan oauth.CallbackResult // the matching callback, once
	done     chan struct{}             // closed when Login has returned

	// Guarded by flows.mu.
	view  AuthFlow
	state string // the OAuth state while waiting on our own /mcp-oauth
}

// flows holds the latest flow of each server.
type flows struct {
	mu sync.Mutex
	m  map[string]*flow
}

func newFlows() *flows { return &flows{m: map[string]*flow{}} }

// view returns a copy of a server's latest flow, or nil.
func (fs *flows) view(id string) *AuthFlow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.m[id]
	if f == nil {
		return nil
	}
	v := f.view
	return &v
}

// viewOf returns a copy of f's state.
func (fs *flows) viewOf(f *flow) *AuthFlow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	v := f.view
	return &v
}

func (fs *flows) update(f *flow, change func(*AuthFlow)) {
	fs.mu.Lock()
	change(&f.view)
	fs.mu.Unlock()
}

// replace installs f as the server's flow, cancelling the one before.
func (fs *flows) replace(f *flow) {
	fs.mu.Lock()
	old := fs.m[f.server]
	fs.m[f.server] = f
	fs.mu.Unlock()
	if old != nil {
		old.cancel()
	}
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
		if f.state != "" && f.view.Phase == PhaseWaiting &&
			subtle.ConstantTimeCompare([]byte(f.state), []byte(state)) == 1 {
			found = f
		}
	}
	return found
}

// startAuthorize starts the flow and waits for its authorization URL.
func (s *Server) startAuthorize(ctx context.Context, id string) (*AuthFlow, error) {
	if s.o.OAuth == nil {
		return nil, &APIError{Status: http.StatusNotImplemented, Code: CodeUnavailable, Message: "this daemon was started without OAuth support"}
	}
	srv, err := s.o.Store.GetServer(ctx, id)
	if err != nil {
		return nil, err
	}
	if srv.Auth.Kind != config.AuthOAuth {
		return nil, fmt.Errorf("server %s: %w", id, oauth.ErrNotOAuth)
	}
	f := &flow{
		server: id, urlc: make(chan string, 1), callback: make(chan oauth.CallbackResult, 1), done: make(chan struct{}),
		view: AuthFlow{Server: id, Phase: PhaseStarting, Started: time.Now().UTC()},
	}
	// The flow outlives the request (the page only waits for the URL) but
	// not the daemon.
	fctx, cancel := context.WithTimeout(s.ctx, flowTimeout)
	f.cancel = cancel
	s.flows.replace(f)
	started := s.goBackground(func(context.Context) {
		defer cancel()
		s.runFlow(fctx, f, srv)
	})
	if !started {
		cancel()
		return nil, context.Canceled
	}
	s.hub.bump(topicServers)

	t := time.NewTimer(authorizeWait)
	defer t.Stop()
	select {
	case <-f.urlc:
	case <-f.done:
	case <-t.C:
	case <-ctx.Done():
		// The page went away; the flow goes on, and its outcome shows in
		// the server list.
	}
	return s.flows.viewOf(f), nil
}

// runFlow runs oauth.Login for one flow and records the outcome.
func (s *Server) runFlow(ctx context.Context, f *flow, srv config.Server) {
	// Every request the flow makes is attributed to the server, so a
	// refused authorization-server origin shows up beside it as pending.
	ctx = hostperm.WithPurpose(ctx, hostperm.PurposeAuthorization, srv.ID)
	res, err := s.o.OAuth.Login(ctx, srv, s.browserFor(f, srv.ID))
	s.flows.update(f, func(v *AuthFlow) {
		v.Finished = time.Now().UTC()
		v.AuthorizationURL = ""
		if err != nil {
			v.Phase = PhaseFailed
			v.Error = err.Error()
			var oe *oauth.Error
			if errors.As(err, &oe) {
				v.Step = string(oe.Step)
			}
			var pe *hostperm.PermissionRequiredError
			if errors.As(err, &pe) {
				v.Permission = &PermissionInfo{Origin: pe.Origin, Purpose: pe.Purpose, ServerID: pe.ServerID}
			}
			if errors.Is(err, context.Canceled) {
				v.Error = "the authorization was abandoned (Authorize was clicked again, the server was deleted, or the daemon stopped)"
			} else if errors.Is(err, context.DeadlineExceeded) {
				v.Error = fmt.Sprintf("the authorization was not completed within %v; click Authorize to try again", flowTimeout)
			}
			return
		}
		v.Phase = PhaseDone
		li := &LoginInfo{NotNeeded: res.NotNeeded, ClientID: res.ClientID, Registered: res.Registered,
			Scopes: res.Scopes, ExpiresAt: res.ExpiresAt, RefreshToken: res.RefreshToken}
		if !res.Binding.IsZero() {
			b := res.Binding
			li.Binding = &b
		}
		v.Result = li
	})
	close(f.done)
	s.hub.bump(topicServers)
	if err != nil {
		s.log.Info("daemon: authorization failed", "server", srv.ID, "err", err)
		return
	}
	s.log.Info("daemon: authorized", "server", srv.ID)
	// The manager's sessions pick the new token up on their next request;
	// a server that failed for want of it is connected again now.
	if cur, gerr := s.o.Store.GetServer(ctx, srv.ID); gerr == nil && cur.Enabled {
		rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
		if rerr := s.o.Manager.Reconnect(rctx, srv.ID); rerr != nil {
			s.log.Info("daemon: reconnect after authorization failed", "server", srv.ID, "err", rerr)
		}
		rcancel()
	}
}

// browserFor is the oauth.Browser of one flow: it hands the authorization
// URL to the page and waits for the callback.
func (s *Server) browserFor(f *flow, serverID string) oauth.Browser {
	return func(ctx context.Context, authURL string) (*oauth.CallbackResult, error) {
		// The authorization page is an origin we send the person to: it
		// needs a grant like every other (R2.2).
		if err := s.o.Broker.Check(ctx, authURL, hostperm.PurposeAuthorization, serverID); err != nil {
			return nil, err
		}
		u, err := url.Parse(authURL)
		if err != nil {
			return nil, err
		}
		q := u.Query()
		publish := func(authURL, state string) {
			s.flows.update(f, func(v *AuthFlow) { v.Phase, v.AuthorizationURL = PhaseWaiting, authURL })
			if state != "" {
				s.flows.mu.Lock()
				f.state = state
				s.flows.mu.Unlock()
			}
			select {
			case f.urlc <- authURL:
			default: // a second round (re-registration): the page learns it from the server list
			}
			s.hub.bump(topicServers)
		}
		exchanging := func() {
			s.flows.update(f, func(v *AuthFlow) { v.Phase, v.AuthorizationURL = PhaseExchanging, "" })
			s.flows.mu.Lock()
			f.state = ""
			s.flows.mu.Unlock()
			s.hub.bump(topicServers)
		}
		if port, own := s.redirectPort(q.Get("redirect_uri")); own {
			state := q.Get("state")
			if state == "" {
				return nil, errors.New("the authorization URL has no state")
			}
			publish(authURL, state)
			select {
			case r := <-f.callback:
				exchanging()
				return &r, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the authorization callback: %w", ctx.Err())
			}
		} else if port > 0 {
			b := oauth.ListenLoopbackBrowser(port, func(u string) error { publish(u, ""); return nil })
			r, err := b(ctx, authURL)
			if err == nil {
				exchanging()
			}
			return r, err
		}
		return nil, fmt.Errorf("the redirect URI %q is not a loopback callback this daemon can serve", q.Get("redirect_uri"))
	}
}

// redirectPort returns the port of a loopback redirect URI, and whether
// it is this daemon's own /mcp-oauth.
func (s *Server) redirectPort(redirect string) (int, bool) {
	u, err := url.Parse(redirect)
	if err != nil || u.Scheme != "http" || u.Path != oauth.CallbackPath {
		return 0, false
	}
	host, p := u.Hostname(), u.Port()
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return 0, false
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 {
		return 0, false
	}
	return port, port == s.port
}

// handleCallback serves GET /mcp-oauth, the loopback redirect URI. It
// needs no token (the browser comes from the authorization server, without
// our SameSite=Strict cookie): only a callback whose state belongs to a
// flow waiting here is accepted, and it never echoes a parameter back.
func (s *Server) handleCallback(w http.ResponseWriter, r *http.Request) {
	res, err := oauth.ParseCallback(r.URL.Query())
	if err != nil {
		s.renderCallback(w, http.StatusBadRequest, callbackPage{Title: "Authorization response not understood",
			Message: "remotemcp could not read this authorization response. Return to the settings page and click Authorize again."})
		return
	}
	f := s.flows.byState(res.State)
	if f == nil {
		s.renderCallback(w, http.StatusBadRequest, callbackPage{Title: "Unexpected authorization response",
			Message: "This response does not belong to an authorization remotemcp is waiting for, and was ignored."})
		return
	}
	select {
	case f.callback <- *res:
	default:
		s.renderCallback(w, http.StatusConflict, callbackPage{Title: "Already received",
			Message: "remotemcp already has the answer for this authorization. You can close this tab."})
		return
	}
	t := time.NewTimer(callbackWait)
	defer t.Stop()
	select {
	case <-f.done:
	case <-t.C:
	case <-r.Context().Done():
		return
	case <-s.closing:
	}
	page := callbackPage{Server: f.server}
	v := s.flows.viewOf(f)
	switch {
	case v == nil || v.Phase != PhaseDone && v.Phase != PhaseFailed:
		page.Title = "Authorization in progress"
		page.Message = "remotemcp is finishing the authorization; the settings page shows the result."
	case v.Phase == PhaseDone:
		page.OK = true
		page.Title = "Authorization complete"
		page.Message = "remotemcp is authorized for " + f.server + ". You can close this tab."
	default:
		page.Title = "Authorization failed"
		page.Message = v.Error
	}
	s.renderCallback(w, http.StatusOK, page)
}
