package frontend

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The limits of the host sessions of the Streamable HTTP endpoint (issue
// #20 item 2). Before them a host, or anyone holding a token, could open
// sessions without end (2,000 kept ~61 MiB after the client left), and
// old session ids answered forever.
const (
	// DefaultSessionIdle ends a session that has no open stream and has
	// had no request for this long (--session-idle).
	DefaultSessionIdle = 10 * time.Minute
	// DefaultMaxSessionsPerToken caps the live sessions of one token: a
	// host opens one per connection, so 64 is many hosts, or one host
	// that forgets to end its sessions.
	DefaultMaxSessionsPerToken = 64
	// DefaultMaxSessions caps the live sessions of the endpoint in all.
	DefaultMaxSessions = 1024
	// tokenRecheckWait bounds one read of the tokens by the revocation
	// check.
	tokenRecheckWait = 10 * time.Second
)

// sessionHeader is the Streamable HTTP session id header (MCP 2025-06-18
// §Session Management).
const sessionHeader = "Mcp-Session-Id"

// HTTPOptions are the limits of the Streamable HTTP endpoint: its host
// sessions (HTTPHandlerWith) and its listener (RunHTTPWith). A zero field
// takes its default.
type HTTPOptions struct {
	// SessionIdle ends a host session that has no open stream (GET, or a
	// POST whose answer still streams) and no request for this long;
	// its subscriptions are given back. Default DefaultSessionIdle;
	// negative: never.
	SessionIdle time.Duration
	// MaxSessionsPerToken and MaxSessions cap the live sessions of one
	// token and of the endpoint; a new session over either is refused
	// with 429 naming the limit. Defaults DefaultMaxSessionsPerToken and
	// DefaultMaxSessions.
	MaxSessionsPerToken int
	MaxSessions         int
	// AfterFunc runs f after d, as time.AfterFunc does (the default), and
	// returns what stops it. Tests give a clock they move by hand.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)

	// The listener's limits (RunHTTPWith): at most MaxConns connections
	// at once (default netlimit.Cap(netlimit.MaxMCPConns)), and the
	// timeouts of netlimit.Options (defaults netlimit's).
	MaxConns          int
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
}

// withDefaults fills the session limits' zero fields.
func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.SessionIdle == 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxSessionsPerToken <= 0 {
		o.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return o
}

// hostSessions keeps the limits of one endpoint's host sessions in front
// of go-sdk's StreamableHTTPHandler: it counts each session's requests in
// flight (an open stream is one), ends a session idle for SessionIdle,
// caps the sessions per token and in all, refuses a session's id with a
// token other than the one that made it, and ends a revoked token's
// sessions. go-sdk's handler keeps its own map of sessions; a session
// ends for both when its ServerSession closes.
type hostSessions struct {
	o      HTTPOptions
	srv    *mcp.Server
	tokens *Tokens
	log    *slog.Logger
	next   http.Handler

	mu      sync.Mutex
	byID    map[string]*hostSession
	perUser map[string]int // live and pending sessions per token (user id)
	total   int            // live and pending sessions in all
	// rechecking is set while a revocation check is scheduled; it runs
	// every Tokens.Recheck while there are sessions.
	rechecking bool
}

// hostSession is one live host session.
type hostSession struct {
	user, name string // the token that made it: its user id, its name
	// authenticated: made by an Authenticator's identity, not a token;
	// no revocation of tokens ends it.
	authenticated bool
	ss            *mcp.ServerSession
	refs          int // requests in flight, open streams included
	gen           int // moves at every start and end of a request; an idle timer of an older one does nothing
	stop          func() bool
	ended         bool // closed by a limit: the session is going
}

// newHostSessions wraps next (go-sdk's handler serving srv).
func newHostSessions(srv *mcp.Server, tokens *Tokens, log *slog.Logger, o HTTPOptions, next http.Handler) *hostSessions {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &hostSessions{o: o.withDefaults(), srv: srv, tokens: tokens, log: log, next: next,
		byID: map[string]*hostSession{}, perUser: map[string]int{}}
}

// The bodies of the refusals. A host shows them (or its log does), so
// they name the limit and what to do.
const (
	otherTokenBody = "remotemcp: this MCP session was started with another bearer token, and a session answers only the token that started it. Start a new session: send initialize without the Mcp-Session-Id header."
)

// ServeHTTP runs one request of a host, after Tokens.Require.
func (h *hostSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	who, ok := requester(r.Context())
	if !ok {
		// Require puts it there; without it nothing may pass.
		http.Error(w, "remotemcp: the request's token is not known", http.StatusInternalServerError)
		return
	}
	sid := r.Header.Get(sessionHeader)
	if sid == "" {
		if r.Method != http.MethodPost {
			h.next.ServeHTTP(w, r) // go-sdk refuses it
			return
		}
		h.serveNew(w, r, who)
		return
	}
	switch h.begin(sid, who.user) {
	case sessionOther:
		http.Error(w, otherTokenBody, http.StatusForbidden)
		return
	case sessionEnding:
		http.Error(w, "session not found", http.StatusNotFound)
		return
	case sessionUnknown:
		// Ended or never was: go-sdk answers 404, and a host starts over.
		h.next.ServeHTTP(w, r)
		return
	}
	defer h.end(sid)
	h.next.ServeHTTP(w, r)
}

// serveNew runs a POST without a session id, which makes a session: it
// is refused with 429 when a limit is reached, and counted from the
// moment go-sdk names it in the answer's header.
func (h *hostSessions) serveNew(w http.ResponseWriter, r *http.Request, who identity) {
	if msg := h.reserve(who); msg != "" {
		http.Error(w, msg, http.StatusTooManyRequests)
		return
	}
	cw := &sessionWriter{ResponseWriter: w}
	cw.onHeader = func() {
		if sid := w.Header().Get(sessionHeader); sid != "" && h.register(sid, who) {
			cw.sid = sid
		}
	}
	h.next.ServeHTTP(cw, r)
	if cw.sid == "" {
		h.unreserve(who.user) // no session came of it
		// go-sdk names a session in the header before it writes: a host
		// that hung up before the answer went out leaves a session that
		// nothing here counts, times or revokes. It is closed.
		h.mu.Lock()
		_, known := h.byID[w.Header().Get(sessionHeader)]
		h.mu.Unlock()
		if sid := w.Header().Get(sessionHeader); sid != "" && !known {
			for ss := range h.srv.Sessions() {
				if ss.ID() == sid {
					h.log.Info("mcp http: closed a host session whose initialize was never answered (the host hung up)", "token", who.name)
					go func() { _ = ss.Close() }()
					break
				}
			}
		}
		return
	}
	h.end(cw.sid)
}

// reserve counts a session about to be made, or says which limit it is
// over.
func (h *hostSessions) reserve(who identity) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.perUser[who.user] >= h.o.MaxSessionsPerToken {
		return fmt.Sprintf("remotemcp: too many MCP sessions: %s already has %d sessions open, the limit per token. %s", who.label(), h.o.MaxSessionsPerToken, h.advice())
	}
	if h.total >= h.o.MaxSessions {
		return fmt.Sprintf("remotemcp: too many MCP sessions: the endpoint already has %d sessions open, its limit in all. %s", h.o.MaxSessions, h.advice())
	}
	h.perUser[who.user]++
	h.total++
	return ""
}

// advice says, in a 429, how sessions end.
func (h *hostSessions) advice() string {
	idle := fmt.Sprintf("one with no stream and no request ends by itself after %s (--session-idle)", h.o.SessionIdle)
	if h.o.SessionIdle < 0 {
		idle = "sessions do not end by themselves here (--session-idle never)"
	}
	return "End the sessions a host no longer uses (DELETE with their Mcp-Session-Id); " + idle + "; restarting \"remotemcp mcp --http\" ends them all."
}

// unreserve gives back a reservation, or a session that ended.
func (h *hostSessions) unreserve(user string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release(user)
}

// release is unreserve with mu held.
func (h *hostSessions) release(user string) {
	if h.perUser[user]--; h.perUser[user] <= 0 {
		delete(h.perUser, user)
	}
	h.total--
}

// register makes the reserved session sid live, with the POST that made
// it in flight, and reports whether it did (false: sid is known
// already). It watches the session's end, and the revocation of its
// token.
func (h *hostSessions) register(sid string, who identity) bool {
	var ss *mcp.ServerSession
	for s := range h.srv.Sessions() {
		if s.ID() == sid {
			ss = s
			break
		}
	}
	if ss == nil {
		return false // closed already: go-sdk answers 404 to its id
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.byID[sid]; ok {
		return false
	}
	h.byID[sid] = &hostSession{user: who.user, name: who.name, authenticated: who.authenticated, ss: ss, refs: 1}
	// Its owner is the session: it returns when the session closes (a
	// DELETE, a limit, the endpoint's end).
	go func() {
		_ = ss.Wait()
		h.forget(sid)
	}()
	h.scheduleRecheck()
	return true
}

// forget drops sid, which ended.
func (h *hostSessions) forget(sid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.byID[sid]
	if !ok {
		return
	}
	if s.stop != nil {
		s.stop()
	}
	delete(h.byID, sid)
	h.release(s.user)
}

// What begin found of a session id.
const (
	sessionOurs = iota
	sessionOther
	sessionUnknown
	sessionEnding
)

// begin counts a request of session sid made with user's token.
func (h *hostSessions) begin(sid, user string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.byID[sid]
	switch {
	case !ok:
		return sessionUnknown
	case s.ended:
		// Closed by a limit or a revocation, go-sdk may not have let go
		// of it yet: to every token it is gone already.
		return sessionEnding
	case s.user != user:
		return sessionOther
	}
	s.refs++
	s.gen++
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	return sessionOurs
}

// end counts the end of a request of sid; the last one starts the idle
// timer.
func (h *hostSessions) end(sid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.byID[sid]
	if !ok {
		return
	}
	s.refs--
	s.gen++
	if s.refs > 0 || h.o.SessionIdle < 0 || s.ended {
		return
	}
	gen := s.gen
	s.stop = h.o.AfterFunc(h.o.SessionIdle, func() { h.expire(sid, gen) })
}

// expire ends sid if nothing happened in it since its idle timer of gen
// started.
func (h *hostSessions) expire(sid string, gen int) {
	h.mu.Lock()
	s, ok := h.byID[sid]
	if !ok || s.gen != gen || s.refs > 0 || s.ended {
		h.mu.Unlock()
		return
	}
	s.ended = true
	h.mu.Unlock()
	h.log.Info("mcp http: a host session ended after --session-idle without a stream or a request", "token", s.name, "idle", h.o.SessionIdle.String())
	h.close(s)
}

// close ends s: go-sdk forgets it (its id answers 404 from now on) and
// the front end gives back its subscriptions; the watcher of register
// forgets it here.
//
// go-sdk's Close waits for the session's requests in flight (a call may
// wait on a person's card for long), so it runs on its own goroutine:
// the revocation check and the idle timers never wait behind it. Each
// such goroutine ends when its session's last request does; the front
// end's shutdown ends them all (closeHTTPSessions).
func (h *hostSessions) close(s *hostSession) {
	go func() { _ = s.ss.Close() }()
}

// scheduleRecheck schedules the revocation check unless one is. mu held.
func (h *hostSessions) scheduleRecheck() {
	if h.rechecking || len(h.byID) == 0 || h.tokens == nil {
		return
	}
	h.rechecking = true
	every := h.tokens.Recheck
	if every <= 0 {
		every = DefaultRecheck
	}
	h.o.AfterFunc(every, h.recheck)
}

// recheck ends the sessions of the tokens revoked since the last check,
// and schedules the next while sessions remain. A stream of a revoked
// token ends with its session (before, a session outlived its token and
// answered any other one).
func (h *hostSessions) recheck() {
	h.mu.Lock()
	h.rechecking = false
	n := len(h.byID)
	h.mu.Unlock()
	if n > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), tokenRecheckWait)
		valid, err := h.tokens.users(ctx)
		cancel()
		if err != nil {
			h.log.Warn("mcp http: the tokens could not be read to end the sessions of revoked ones; trying again", "err", err)
		} else {
			h.endRevoked(valid)
		}
	}
	h.mu.Lock()
	h.scheduleRecheck()
	h.mu.Unlock()
}

// endRevoked closes the sessions whose token is not in valid.
func (h *hostSessions) endRevoked(valid map[string]bool) {
	var gone []*hostSession
	h.mu.Lock()
	for _, s := range h.byID {
		if !s.authenticated && !valid[s.user] && !s.ended {
			s.ended = true
			if s.stop != nil {
				s.stop()
				s.stop = nil
			}
			gone = append(gone, s)
		}
	}
	h.mu.Unlock()
	for _, s := range gone {
		h.log.Info("mcp http: a host session ended: its token was revoked", "token", s.name)
		h.close(s)
	}
}

// sessionWriter calls onHeader once, when the answer's header is about
// to go out (go-sdk sets the session id header before).
type sessionWriter struct {
	http.ResponseWriter
	onHeader func()
	once     sync.Once
	sid      string
}

func (w *sessionWriter) WriteHeader(code int) {
	w.once.Do(w.onHeader)
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	w.once.Do(w.onHeader)
	return w.ResponseWriter.Write(b)
}

// Flush sends the header too, so it counts as its start.
func (w *sessionWriter) Flush() {
	w.once.Do(w.onHeader)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// identity is who a request is, by its token: the token's user id (the
// SHA-256 of the token, also go-sdk's auth.TokenInfo.UserID) and name;
// or, authenticated, by its Identity (user is authSubjectPrefix and its
// Subject), whose credential may expire and is never revoked here.
type identity struct {
	user, name    string
	expiry        time.Time
	authenticated bool
}

// label names the identity in a refusal.
func (id identity) label() string {
	if id.authenticated {
		return fmt.Sprintf("the sign-in of %q", id.name)
	}
	return fmt.Sprintf("the token %q", id.name)
}

// identityKey carries a request's identity, set by Tokens.Require.
type identityKey struct{}

// requester is the identity Tokens.Require found.
func requester(ctx context.Context) (identity, bool) {
	id, ok := ctx.Value(identityKey{}).(identity)
	return id, ok
}

// closeHTTPSessions ends every Streamable HTTP host session of f (they
// have an id; a stdio host's has none), when RunHTTP stops.
//
// They close side by side, and the wait is bounded: each Close waits for
// its session's requests in flight, and a call waiting on a person must
// not hold the process up (their contexts end with the process).
func (f *Frontend) closeHTTPSessions() {
	var wg sync.WaitGroup
	for ss := range f.srv.Sessions() {
		if ss.ID() != "" {
			wg.Go(func() { _ = ss.Close() })
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(httpShutdownWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		f.log.Warn("mcp http: host sessions still finishing calls at shutdown; not waiting for them", "after", httpShutdownWait.String())
	}
}
