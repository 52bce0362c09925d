package frontend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/netlimit"
)

// httpShutdownWait bounds a graceful shutdown: open SSE streams never go
// idle on their own, so after this the connections are closed.
const httpShutdownWait = 2 * time.Second

// HTTPHandlerWith is the Streamable HTTP endpoint of the front end behind
// the bearer token check of tokens: every request must carry
// "Authorization: Bearer TOKEN" with a token of tokens, else 401. A host
// session belongs to the token that made it, ends when idle or when its
// token is revoked, and is capped per token and in all (o; issue #20
// item 2). The Host and Origin checks are the caller's
// (daemon.GuardLoopback), outside this.
func (f *Frontend) HTTPHandlerWith(tokens *Tokens, o HTTPOptions) http.Handler {
	return f.HTTPHandlerAuth(tokens, nil, o)
}

// Identity is who a request is when the caller's Authenticator verified
// it (an OAuth access token at a gateway, issue #22) rather than a token
// of Tokens.
type Identity struct {
	// Subject is who it is, the same for every credential of one
	// person's sign-in (an OAuth access token is refreshed within a
	// session, so the session must go on): a host session answers only
	// requests of the Subject that made it, as go-sdk's
	// auth.TokenInfo.UserID asks.
	Subject string
	// Name names it in logs and refusals (an email address).
	Name string
	// Expiry is when the credential ends (zero: never); go-sdk refuses it
	// after.
	Expiry time.Time
}

// Authenticator verifies a request's credential that is not a token of
// Tokens (at a gateway: an OAuth access token).
type Authenticator interface {
	// Authenticate returns who r is, or answers r itself (a refusal with
	// its challenge) and returns false.
	Authenticate(w http.ResponseWriter, r *http.Request) (Identity, bool)
}

// HTTPHandlerAuth is HTTPHandlerWith where a bearer token that is not a
// remotemcp token (it lacks TokenPrefix) is verified by auth instead of
// tokens; auth nil is HTTPHandlerWith. remotemcp tokens are checked by
// tokens.Require as ever. Both kinds share the endpoint's host sessions
// and limits; an authenticated session belongs to its Identity's
// Subject, and only a token's session ends when its token is revoked.
func (f *Frontend) HTTPHandlerAuth(tokens *Tokens, auth Authenticator, o HTTPOptions) http.Handler {
	// go-sdk's own idle timeout (SessionTimeout) is not used: it counts
	// POSTs only, and would end a session whose host listens on an open
	// stream; hostSessions counts the stream too.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.srv },
		&mcp.StreamableHTTPOptions{Logger: f.log})
	sessions := newHostSessions(f.srv, tokens, f.log, o, h)
	byToken := tokens.Require(sessions, f.log)
	if auth == nil {
		return byToken
	}
	byAuth := requireIdentity(auth, sessions)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := BearerToken(r.Header.Get("Authorization")); ok && !strings.HasPrefix(tok, TokenPrefix) {
			byAuth.ServeHTTP(w, r)
			return
		}
		byToken.ServeHTTP(w, r)
	})
}

// authSubjectPrefix starts the user id of an authenticated identity: a
// token's user id is hex (its hash), so the two never meet.
const authSubjectPrefix = "auth:"

// requireIdentity lets only the requests auth verifies reach next, with
// their identity, and go-sdk's auth.TokenInfo (the user id binds
// go-sdk's session too; the expiry is checked by go-sdk as well).
func requireIdentity(a Authenticator, next http.Handler) http.Handler {
	withInfo := auth.RequireBearerToken(tokenInfo, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := a.Authenticate(w, r)
		if !ok {
			return
		}
		if id.Subject == "" {
			http.Error(w, "remotemcp: the request's identity has no subject", http.StatusInternalServerError)
			return
		}
		who := identity{user: authSubjectPrefix + id.Subject, name: id.Name, expiry: id.Expiry, authenticated: true}
		withInfo.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, who)))
	})
}

// StartHTTP starts what the front end runs beside its HTTP handler
// (HTTPHandlerWith) when its owner serves the handler on a listener of
// its own making (a gateway serves every user's front end on one): the
// re-sync of the catalogs on the engine's events, until ctx ends or stop
// is called. stop waits for it, then ends the host sessions; call it once
// no request is in flight (after the server's shutdown).
func (f *Frontend) StartHTTP(ctx context.Context) (stop func(), err error) {
	f.startRun()
	ctx, cancel := context.WithCancel(ctx)
	events, err := f.o.Engine.Subscribe(ctx)
	if err != nil {
		cancel()
		f.releaseAll()
		return nil, fmt.Errorf("frontend: subscribe to the engine's events: %w", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { f.watch(ctx, events) })
	return sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		f.releaseAll()
		f.closeHTTPSessions()
	}), nil
}

// Challenges and bodies of a refused request. A host shows the body (or
// its log does), so it says what to do, in remotemcp's commands.
const (
	// noTokenBody answers a request without a bearer token.
	noTokenBody = "remotemcp: this MCP endpoint needs a bearer token. Create one with \"remotemcp mcp token create NAME\" and have the host send it as the header \"Authorization: Bearer TOKEN\", or run \"remotemcp hosts connect HOST --http URL\", which creates one and writes both into the host's configuration."
	// badTokenBody answers a token that is not (or no longer) valid.
	badTokenBody = "remotemcp: invalid_token: the bearer token is unknown or revoked. \"remotemcp mcp token list\" shows the valid ones (by name); create a new one with \"remotemcp mcp token create NAME\", or run \"remotemcp hosts connect HOST --http URL\" again."
)

// Require wraps next so that only requests with a valid bearer token reach
// it. A refusal is 401 with a Bearer challenge (RFC 6750 §3): a request
// without a token (or with another scheme) gets realm="remotemcp" alone,
// since §3.1 says a request that lacks authentication gets no error code;
// a wrong or revoked token gets error="invalid_token". The presented token
// is never logged.
func (t *Tokens) Require(next http.Handler, log *slog.Logger) http.Handler {
	withInfo := auth.RequireBearerToken(tokenInfo, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := BearerToken(r.Header.Get("Authorization"))
		if !ok {
			unauthorized(w, "", noTokenBody)
			return
		}
		name, ok, err := t.Check(r.Context(), tok)
		if err != nil {
			if log != nil {
				log.Warn("mcp http: token check failed", "err", err)
			}
			http.Error(w, "the tokens could not be read", http.StatusInternalServerError)
			return
		}
		if !ok {
			unauthorized(w, `error="invalid_token", error_description="the bearer token is unknown or revoked"`, badTokenBody)
			return
		}
		// The token is the session's user: go-sdk refuses a session's
		// id with another one (auth.TokenInfo.UserID), and so does
		// hostSessions, first and in remotemcp's words.
		r = r.WithContext(context.WithValue(r.Context(), identityKey{}, identity{user: HashToken(tok), name: name}))
		// A stream, and a call still answering on its POST, live on:
		// each ends when its token is revoked (the call is cancelled on
		// the server, as when the host cancels it).
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go t.whileValid(ctx, tok, cancel)
		r = r.WithContext(ctx)
		withInfo.ServeHTTP(w, r)
	})
}

// tokenInfo is go-sdk's auth.TokenInfo of a request Require or
// requireIdentity has checked: its user id is the token's hash (or the
// identity's subject), so go-sdk's handler refuses a session's id with
// another token. A token does not expire; it is revoked. An
// authenticated identity's credential may expire.
func tokenInfo(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	who, ok := requester(ctx)
	if !ok {
		return nil, fmt.Errorf("%w: not checked", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: who.user, Expiration: who.expiry}, nil
}

// BearerToken extracts the token of an Authorization header (RFC 6750:
// the scheme is case-insensitive); a gateway's endpoint reads it too.
func BearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// unauthorized answers 401 with the challenge RFC 6750 asks for: realm,
// then params when there are any.
func unauthorized(w http.ResponseWriter, params, msg string) {
	ch := `Bearer realm="remotemcp"`
	if params != "" {
		ch += ", " + params
	}
	w.Header().Set("WWW-Authenticate", ch)
	http.Error(w, msg, http.StatusUnauthorized)
}

// RunHTTPWith serves h (built around HTTPHandlerWith) on ln until ctx
// ends, re-syncing the catalogs whenever the engine says they changed, as
// Run does for one stdio host. The listener holds at most o.MaxConns
// connections and closes idle ones (netlimit); when it stops, the host
// sessions end. It closes ln.
func (f *Frontend) RunHTTPWith(ctx context.Context, ln net.Listener, h http.Handler, o HTTPOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop, err := f.StartHTTP(ctx)
	if err != nil {
		ln.Close()
		return err
	}
	// The host sessions end last, after the server's shutdown below: no
	// request of theirs is in flight any more.
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	maxConns := o.MaxConns
	if maxConns <= 0 {
		maxConns = netlimit.Cap(netlimit.MaxMCPConns)
	}
	ln = netlimit.Limit(ln, maxConns, "the MCP endpoint")
	srv := netlimit.Server(h, netlimit.Options{ReadHeaderTimeout: o.ReadHeaderTimeout, BodyReadTimeout: o.ReadTimeout, IdleTimeout: o.IdleTimeout})
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	served := make(chan error, 1)
	wg.Go(func() { served <- srv.Serve(ln) })
	select {
	case err = <-served:
		cancel()
		return fmt.Errorf("frontend: serve http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), httpShutdownWait)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("frontend: serve http on %s: %w", ln.Addr(), err)
	}
	return nil
}
