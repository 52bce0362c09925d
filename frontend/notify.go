package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/remotemcp/remotemcp/localapi"
)

// Notifications from the servers to the hosts: log messages (after the
// host's logging/setLevel, which is forwarded to the servers) and the
// updates of subscribed resources (SPEC B3, §9 A7).

// releaseWait bounds the unsubscriptions when the front end stops.
const releaseWait = 5 * time.Second

// subKey is one subscribed resource: its server and the server's own URI.
type subKey struct{ server, uri string }

// subscription is one subscribed resource: the URI the hosts subscribed
// with (what their updates name) and the host sessions that did.
type subscription struct {
	exposed  string
	sessions map[*mcp.ServerSession]bool
}

// subscriptions are the front end's resource subscriptions. The engine
// holds one subscription per resource for the whole front end, however
// many of its hosts subscribed.
type subscriptions struct {
	// ops serializes the changes that call the engine (subscribe,
	// unsubscribe, give back), so that each resource's count moves one
	// step at a time; mu guards the maps only and is never held across
	// a call to the engine, so that a slow server's subscribe does not
	// hold up the updates of the others on their way to the hosts.
	ops sync.Mutex
	mu  sync.Mutex
	m   map[subKey]*subscription
	// watched are the host sessions that subscribed, each with a
	// goroutine that waits for its end (an HTTP host's DELETE, a stdio
	// host leaving) to give back what it still held: a server is never
	// kept subscribed, and awake (it does not hibernate while
	// subscribed), for a host that is gone.
	watched map[*mcp.ServerSession]bool
	// runs counts the Run and RunHTTPWith serving hosts: the last to stop
	// gives everything back.
	runs int
}

// route maps a URI a host names to its server and the server's own URI:
// an offered resource or template expansion, a remotemcp://SERVER/… URI,
// or in single-server mode anything, unchanged.
func (f *Frontend) route(uri string) (subKey, bool) {
	f.refMu.RLock()
	defer f.refMu.RUnlock()
	if server, ok := f.uriRefs[uri]; ok && !strings.Contains(uri, "{") {
		return subKey{server, OriginalURI(server, uri)}, true
	}
	if rest, ok := strings.CutPrefix(uri, URIScheme+"://"); ok {
		if esc, _, ok := strings.Cut(rest, "/"); ok {
			if server, err := url.PathUnescape(esc); err == nil && f.known(server) {
				return subKey{server, OriginalURI(server, uri)}, true
			}
		}
	}
	if f.o.ServerID != "" {
		return subKey{f.o.ServerID, uri}, true
	}
	for exposed, server := range f.uriRefs {
		if !strings.Contains(exposed, "{") {
			continue
		}
		if t, err := uritemplate.New(exposed); err == nil && t.Match(uri) != nil {
			return subKey{server, OriginalURI(server, uri)}, true
		}
	}
	return subKey{}, false
}

// known reports whether server owns any offered resource (under refMu).
func (f *Frontend) known(server string) bool {
	for _, s := range f.uriRefs {
		if s == server {
			return true
		}
	}
	return false
}

// subscribe is the host's resources/subscribe: the first host session to
// subscribe to a resource subscribes the engine.
func (f *Frontend) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	k, ok := f.route(req.Params.URI)
	if !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resources/subscribe: no resource %q is offered", req.Params.URI)}
	}
	f.subs.ops.Lock()
	defer f.subs.ops.Unlock()
	f.pruneSubscriptions(ctx)
	f.subs.mu.Lock()
	if s := f.subs.m[k]; s != nil {
		s.sessions[req.Session] = true
		f.watchSessionLocked(req.Session)
		f.subs.mu.Unlock()
		return nil
	}
	f.subs.mu.Unlock()
	if err := f.o.Engine.SubscribeResource(ctx, localapi.ResourceSubscription{ServerID: k.server, URI: k.uri}); err != nil {
		if localapi.HasCode(err, localapi.CodeConflict) || localapi.HasCode(err, localapi.CodeBadRequest) || localapi.HasCode(err, localapi.CodeNotFound) {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		return fmt.Errorf("subscribe to %s of server %s: %w", k.uri, k.server, err)
	}
	f.subs.mu.Lock()
	defer f.subs.mu.Unlock()
	if f.subs.m == nil {
		f.subs.m = map[subKey]*subscription{}
	}
	f.subs.m[k] = &subscription{exposed: req.Params.URI, sessions: map[*mcp.ServerSession]bool{req.Session: true}}
	f.watchSessionLocked(req.Session)
	return nil
}

// watchSessionLocked starts, once per host session, the wait for its end
// that gives back its subscriptions. The goroutine ends with the session;
// releaseAll ends the sessions it watches when the front end stops.
// subs.mu held.
func (f *Frontend) watchSessionLocked(ss *mcp.ServerSession) {
	if ss == nil || f.subs.watched[ss] {
		return
	}
	if f.subs.watched == nil {
		f.subs.watched = map[*mcp.ServerSession]bool{}
	}
	f.subs.watched[ss] = true
	go func() {
		_ = ss.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
		defer cancel()
		f.dropSession(ctx, ss)
	}()
}

// dropSession gives back the subscriptions only ss held (it ended).
func (f *Frontend) dropSession(ctx context.Context, ss *mcp.ServerSession) {
	f.subs.ops.Lock()
	defer f.subs.ops.Unlock()
	f.subs.mu.Lock()
	delete(f.subs.watched, ss)
	f.subs.mu.Unlock()
	f.dropSessions(ctx, func(s *mcp.ServerSession) bool { return s == ss })
}

// dropSessions forgets the host sessions gone says ended and gives back
// the engine's subscriptions no session holds any more. subs.ops held.
func (f *Frontend) dropSessions(ctx context.Context, gone func(*mcp.ServerSession) bool) {
	f.subs.mu.Lock()
	var released []subKey
	for k, s := range f.subs.m {
		for ss := range s.sessions {
			if gone(ss) {
				delete(s.sessions, ss)
			}
		}
		if len(s.sessions) == 0 {
			delete(f.subs.m, k)
			released = append(released, k)
		}
	}
	f.subs.mu.Unlock()
	f.release(ctx, released)
}

// unsubscribe is the host's resources/unsubscribe: the last host session
// to leave a resource unsubscribes the engine.
func (f *Frontend) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	k, ok := f.route(req.Params.URI)
	if !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resources/unsubscribe: no resource %q is offered", req.Params.URI)}
	}
	f.subs.ops.Lock()
	defer f.subs.ops.Unlock()
	f.subs.mu.Lock()
	s := f.subs.m[k]
	if s == nil || !s.sessions[req.Session] {
		f.subs.mu.Unlock()
		return nil // nothing to undo; unsubscribing twice is harmless
	}
	delete(s.sessions, req.Session)
	last := len(s.sessions) == 0
	if last {
		delete(f.subs.m, k)
	}
	f.subs.mu.Unlock()
	if !last {
		return nil
	}
	return f.o.Engine.UnsubscribeResource(ctx, localapi.ResourceSubscription{ServerID: k.server, URI: k.uri})
}

// pruneSubscriptions forgets host sessions that ended without
// unsubscribing, and gives back the engine's subscriptions nobody holds.
// subs.ops held.
func (f *Frontend) pruneSubscriptions(ctx context.Context) {
	live := map[*mcp.ServerSession]bool{}
	for ss := range f.srv.Sessions() {
		live[ss] = true
	}
	f.dropSessions(ctx, func(ss *mcp.ServerSession) bool { return !live[ss] })
}

// startRun counts a Run or RunHTTPWith serving hosts; each ends with
// releaseAll.
func (f *Frontend) startRun() {
	f.subs.mu.Lock()
	f.subs.runs++
	f.subs.mu.Unlock()
}

// releaseAll gives back every subscription when the last Run or RunHTTPWith
// stops (the front end stops). The engine's event stream ending (a
// daemon's restart) is not a stop: the hosts are still served.
func (f *Frontend) releaseAll() {
	// No host can be served any more: their sessions end, and so do the
	// goroutines waiting for that. After the ops lock is let go: a
	// session's end may wait for its requests, which may wait for it.
	for _, ss := range f.releaseEverything() {
		_ = ss.Close()
	}
}

// releaseEverything gives back every subscription when the last run
// stops, and returns the host sessions that subscribed.
func (f *Frontend) releaseEverything() []*mcp.ServerSession {
	f.subs.ops.Lock()
	defer f.subs.ops.Unlock()
	f.subs.mu.Lock()
	if f.subs.runs--; f.subs.runs > 0 {
		f.subs.mu.Unlock()
		return nil
	}
	var gone []subKey
	for k := range f.subs.m {
		gone = append(gone, k)
	}
	f.subs.m = nil
	var sessions []*mcp.ServerSession
	for ss := range f.subs.watched {
		sessions = append(sessions, ss)
	}
	f.subs.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	f.release(ctx, gone)
	return sessions
}

func (f *Frontend) release(ctx context.Context, ks []subKey) {
	for _, k := range ks {
		if err := f.o.Engine.UnsubscribeResource(ctx, localapi.ResourceSubscription{ServerID: k.server, URI: k.uri}); err != nil {
			f.log.Info("frontend: give back a resource subscription", "server", k.server, "uri", k.uri, "err", err)
		}
	}
}

// setLevel forwards the host's logging/setLevel to the servers it is
// offered (go-sdk keeps the host's level and filters what it is sent).
// The most recent level asked by any host applies to a server.
func (f *Frontend) setLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "logging/setLevel" {
			return res, err
		}
		if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
			if lerr := f.o.Engine.SetLogLevel(ctx, localapi.LogLevelRequest{ServerID: f.o.ServerID, Level: string(p.Level)}); lerr != nil {
				f.log.Info("frontend: forward the host's log level", "level", p.Level, "err", lerr)
			}
		}
		return res, err
	}
}

// notices passes the servers' notifications on to the hosts: log
// messages to every host session (go-sdk drops those below a host's
// level, and all of them for a host that never set one), updates to the
// sessions subscribed to the resource.
func (f *Frontend) notices(ctx context.Context, data json.RawMessage) {
	var ns []localapi.Notice
	if err := json.Unmarshal(data, &ns); err != nil {
		f.log.Warn("frontend: unreadable notices", "err", err)
		return
	}
	// Every Run and RunHTTPWith of the front end watches the engine, but
	// each notice goes to the hosts once: the first watcher to see it
	// takes it. Sequence numbers restart with the engine (a daemon's
	// restart), so one far behind the newest taken is new again.
	f.noticeMu.Lock()
	fresh := ns[:0]
	for _, n := range ns {
		if n.Seq > f.noticeSeq || n.Seq+localapi.MaxNoticeBacklog < f.noticeSeq {
			fresh = append(fresh, n)
			f.noticeSeq = n.Seq
		}
	}
	f.noticeMu.Unlock()
	for _, n := range fresh {
		if f.o.ServerID != "" && n.ServerID != f.o.ServerID {
			continue
		}
		switch n.Type {
		case localapi.NoticeLog:
			logger := n.Logger
			if f.o.ServerID == "" {
				// Whose message it is, in the hosts' words.
				logger = n.ServerID
				if n.Logger != "" {
					logger += "/" + n.Logger
				}
			}
			p := &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(n.Level), Logger: logger, Data: n.Text}
			for ss := range f.srv.Sessions() {
				if err := ss.Log(ctx, p); err != nil && ctx.Err() == nil {
					f.log.Debug("frontend: pass a log message on", "err", err)
				}
			}
		case localapi.NoticeResourceUpdated:
			f.subs.mu.Lock()
			s := f.subs.m[subKey{n.ServerID, n.URI}]
			exposed := ""
			if s != nil {
				exposed = s.exposed
			}
			f.subs.mu.Unlock()
			if exposed == "" {
				continue // another front end's subscription
			}
			if err := f.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: exposed}); err != nil && ctx.Err() == nil {
				f.log.Debug("frontend: pass a resource update on", "uri", exposed, "err", err)
			}
		}
	}
}
