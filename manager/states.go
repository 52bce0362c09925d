package manager

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/store"
)

// The states of SPEC §9 A1 besides those of R5.1 (manager.go) and idle
// (hibernate.go). The manager sets them itself: a lost session that
// recovers on its own is reconnecting; a server whose connect or call
// needs the person's sign-in is needs-auth, and nothing retries it.
const (
	// StateReconnecting: was ready; the session or its stream is gone
	// and the manager restores it on the backoff schedule.
	StateReconnecting State = "reconnecting"
	// StateNeedsAuth: background work needs the person's sign-in (B2).
	StateNeedsAuth State = "needs-auth"
)

// ReasonCode says, finer than Class, why a server is in its state: the
// key of what a surface tells the person (localapi's words table). It is
// data, never parsed out of a message.
type ReasonCode string

// Reason codes of the error state, one per class, with the HTTP statuses
// that call for different advice apart.
const (
	CodeNetwork       ReasonCode = "network"
	CodeTLS           ReasonCode = "tls"
	CodeTimeout       ReasonCode = "timeout"
	CodeCanceled      ReasonCode = "canceled"
	CodePermission    ReasonCode = "permission"
	CodeConfig        ReasonCode = "configuration"
	CodeProtocol      ReasonCode = "protocol"
	CodeAuth          ReasonCode = "auth"
	CodeHTTP          ReasonCode = "http"
	CodeHTTPNotFound  ReasonCode = "http-not-found"
	CodeRateLimited   ReasonCode = "http-rate-limited"
	CodeServerFailure ReasonCode = "http-server-failure"
	CodeUnknown       ReasonCode = "unknown"
	// CodeSessionExpired: the server forgot the session (HTTP 404).
	CodeSessionExpired ReasonCode = "session-expired"
	// CodeConnectionClosed: the connection closed under the session.
	CodeConnectionClosed ReasonCode = "connection-closed"
)

// Reason codes of the needs-auth state: why the person must sign in. The
// oauth package names the same codes for its login-required errors
// (oauth.LoginReason); the manager reads them through loginReasoner.
const (
	// CodeSignedOut: the person signed out (Engine.Logout).
	CodeSignedOut ReasonCode = "signed-out"
	// CodeNotSignedIn: an oauth server never signed in to.
	CodeNotSignedIn ReasonCode = "not-signed-in"
	// CodeLoginRequired: the server refused the credentials and no
	// background refresh could fix it.
	CodeLoginRequired ReasonCode = "login-required"
	// CodeNoRefreshToken: the sign-in ended and nothing can renew it.
	CodeNoRefreshToken ReasonCode = "no-refresh-token"
	// CodeRefreshRefused: the stored refresh token was refused.
	CodeRefreshRefused ReasonCode = "refresh-refused"
	// CodeClientRejected: the authorization server no longer accepts
	// remotemcp's client registration.
	CodeClientRejected ReasonCode = "client-rejected"
	// CodeIssuerChanged: the server names another authorization server.
	CodeIssuerChanged ReasonCode = "issuer-changed"
	// CodeInsufficientScope: the server asks for more scopes.
	CodeInsufficientScope ReasonCode = "insufficient-scope"
	// CodeNeedsAuth: a call of a ready server needed a sign-in.
	CodeNeedsAuth ReasonCode = "needs-auth"
)

// ReasonCodes lists every code, for tables that must cover them all.
var ReasonCodes = []ReasonCode{
	CodeNetwork, CodeTLS, CodeTimeout, CodeCanceled, CodePermission, CodeConfig, CodeProtocol,
	CodeAuth, CodeHTTP, CodeHTTPNotFound, CodeRateLimited, CodeServerFailure, CodeUnknown,
	CodeSessionExpired, CodeConnectionClosed,
	CodeSignedOut, CodeNotSignedIn, CodeLoginRequired, CodeNoRefreshToken, CodeRefreshRefused,
	CodeClientRejected, CodeIssuerChanged, CodeInsufficientScope, CodeNeedsAuth,
}

// Messages of needs-auth reasons the manager words itself (SPEC §9 A1,
// A4); leadNeedsAuth also starts the reason of a failure that needs the
// person, before the failure's own message.
const (
	msgSignedOut  = "signed out"
	leadNeedsAuth = "needs authorization"
)

// Leads are the manager's words that start a reason's message before the
// library's chain of errors. localapi.Table has the same words as each
// state's and code's Lead, so the CLI can cut the chain after them
// without reading the message (guarded by a test).
const (
	LeadNeedsAuth        = leadNeedsAuth
	LeadReconnecting     = "connection lost, reconnecting"
	leadSessionExpired   = "session expired on the server (HTTP 404)"
	leadConnectionClosed = "connection closed"
	// LeadSessionExpired and LeadConnectionClosed lead the reasons of
	// CodeSessionExpired and CodeConnectionClosed.
	LeadSessionExpired   = leadSessionExpired
	LeadConnectionClosed = leadConnectionClosed
)

// loginReasoner is implemented by the oauth package's login-required
// errors: the code of why the background could not authorize (one of the
// needs-auth codes above), without the manager importing oauth.
type loginReasoner interface{ LoginReason() string }

// scopeAsker is implemented by oauth's insufficient-scope error: the
// scopes the server demanded that the token lacks, and those the next
// sign-in asks for.
type scopeAsker interface {
	MissingScopes() []string
	ScopesToAsk() []string
}

// codeOf is the code of a reason Attribute made from err.
func codeOf(err error, r Reason) ReasonCode {
	if lr := loginReasoner(nil); errors.As(err, &lr) && r.Class == ClassAuth {
		return ReasonCode(lr.LoginReason())
	}
	switch r.Class {
	case ClassHTTP:
		switch {
		case r.HTTPStatus == http.StatusNotFound:
			return CodeHTTPNotFound
		case r.HTTPStatus == http.StatusTooManyRequests:
			return CodeRateLimited
		case r.HTTPStatus >= 500:
			return CodeServerFailure
		}
		return CodeHTTP
	case "":
		return ""
	}
	return ReasonCode(r.Class)
}

// needsPerson reports whether a failure of cfg's connect, attributed r,
// needs the person to sign in (R3.13): the background could not
// authorize.
func needsPerson(cfg config.Server, err error, r Reason) bool {
	if r.Class != ClassAuth {
		return false
	}
	if lr := loginReasoner(nil); errors.As(err, &lr) {
		return true
	}
	return cfg.Auth.Kind.OAuthCapable() && r.HTTPStatus == http.StatusUnauthorized
}

// needsAuthReason is the needs-auth reason of a failure r that needs the
// person: the failure's, led by leadNeedsAuth.
func needsAuthReason(r Reason) Reason {
	if r.Step == "" {
		r.Step = stepAuthorization
	}
	switch {
	case r.Code != CodeAuth && r.Code != "":
	case r.Step == "refresh":
		r.Code = CodeRefreshRefused
	default:
		r.Code = CodeLoginRequired
	}
	r.Message = leadNeedsAuth + ": " + r.Message
	return r
}

// stepAuthorization is oauth.StepAuthorization: the browser part, which
// only the person can do.
const stepAuthorization = "authorization"

// failedStateLocked sets the state of a failure that stops the server
// until the person acts: needs-auth when a sign-in would fix it, else
// error. e.mu held.
func (m *Manager) failedStateLocked(e *entry, err error, r Reason) {
	if needsPerson(e.configLocked(), err, r) {
		nr := needsAuthReason(r)
		m.setState(e, StateNeedsAuth, &nr)
		return
	}
	m.setState(e, StateError, &r)
}

// reconnectingReason is the reason of a server reconnecting after r.
func reconnectingReason(r Reason) Reason {
	r.Message = reconnectingPrefix + r.Message
	return r
}

// personMarks are the needs-auth states the person's own actions or a
// call's answer set, beside the state machine's: servers signed out
// (kept in the store, so every process says the same) and servers whose
// last call needed a sign-in while their session stays ready.
type personMarks struct {
	signedOut map[string]bool    // known marks; absent: not read yet
	waiting   map[string]*Reason // why a ready server waits for the person
}

// signedOutNS is the store's namespace of servers signed out by the
// person (key: server id): they stay needs-auth "signed out" in every
// process until a sign-in or a successful connect.
const signedOutNS = "remotemcp_signed_out"

// StateOf is srv's state and reason as SPEC §9 A1 names them: st's (the
// server's ServerStatus; the zero value for a server the manager does not
// run), with what waits for the person on top: a ready server whose call
// needed a sign-in, a server the person signed out of, an oauth server
// never signed in to. srv is the stored config, which says whether it was
// ever signed in. StateOf writes nothing; it reads the sign-out mark of a
// server once per process.
func (m *Manager) StateOf(ctx context.Context, srv config.Server, st ServerStatus) (State, *Reason) {
	s := StateDisconnected
	var r *Reason
	if st.ID == srv.ID {
		s, r = st.State, st.Reason
	}
	if s == StateReady {
		if w := m.waitingReason(srv.ID); w != nil && srv.Enabled {
			return StateNeedsAuth, w
		}
		return StateReady, nil
	}
	if srv.Auth.Kind.OAuthCapable() && srv.Enabled && s != StateConnecting && s != StateReconnecting && m.isSignedOut(ctx, srv.ID) {
		return StateNeedsAuth, &Reason{Class: ClassAuth, Step: stepAuthorization, Code: CodeSignedOut, Message: msgSignedOut}
	}
	switch s {
	case StateIdle:
		// Hibernated: no session, its catalog kept (SPEC §9 A1).
		return StateIdle, nil
	case StateDisconnected:
		// An enabled OAuth server that never signed in is waiting for the
		// person, not merely idle. An auto server is not: it connects
		// without auth until a server challenges it.
		if srv.Auth.Kind == config.AuthOAuth && srv.Enabled && (srv.Auth.Binding == nil || srv.Auth.Binding.IsZero()) {
			return StateNeedsAuth, &Reason{Class: ClassAuth, Step: stepAuthorization, Code: CodeNotSignedIn, Message: leadNeedsAuth}
		}
	}
	return s, r
}

// SetSignedOut records (on) or clears that the person signed out of a
// server, in the store for every process. Clearing also forgets why a
// call waited for the person: a sign-in fixes that too. The caller
// disconnects first, so no connect started before can clear the mark.
func (m *Manager) SetSignedOut(ctx context.Context, id string, on bool) error {
	m.marksMu.Lock()
	was, known := m.marks.signedOut[id]
	m.marks.signedOut[id] = on
	_, waited := m.marks.waiting[id]
	if !on {
		delete(m.marks.waiting, id)
	}
	m.marksMu.Unlock()
	if !on && waited {
		m.emit(id)
	}
	if known && was == on && !on {
		return nil
	}
	kv, ok := m.o.Store.(KV)
	if !ok {
		return nil // a store without a key/value part: this process only
	}
	var err error
	if on {
		err = kv.PutKV(ctx, signedOutNS, id, []byte("1"))
	} else {
		err = kv.DeleteKV(ctx, signedOutNS, id)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// isSignedOut reports the sign-out mark of id, reading it from the store
// the first time: another process (a CLI command, the daemon) may have
// signed the server out.
func (m *Manager) isSignedOut(ctx context.Context, id string) bool {
	m.marksMu.Lock()
	on, known := m.marks.signedOut[id]
	m.marksMu.Unlock()
	if known {
		return on
	}
	if kv, ok := m.o.Store.(KV); ok {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, err := kv.GetKV(rctx, signedOutNS, id)
		cancel()
		on = err == nil
	}
	m.marksMu.Lock()
	if _, raced := m.marks.signedOut[id]; !raced {
		m.marks.signedOut[id] = on
	}
	on = m.marks.signedOut[id]
	m.marksMu.Unlock()
	return on
}

// connected clears a sign-out mark once the server connected: it
// works again without the person. Called after commit, without locks.
func (m *Manager) connected(e *entry, cfg config.Server) {
	if !cfg.Auth.Kind.OAuthCapable() {
		return
	}
	if !m.isSignedOut(m.ctx, e.id) {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	if err := m.SetSignedOut(ctx, e.id, false); err != nil {
		m.log.Warn("manager: clear the sign-out mark", "server", e.id, "err", err)
	}
}

// noteCall records what a call's answer says about the person: a call
// that needed a sign-in puts its server in needs-auth (naming the scopes
// a step-up asks for) while its session stays; a call that went through
// clears that (SPEC §9 A1, A4).
func (m *Manager) noteCall(id string, err error) {
	var w *Reason
	if err != nil {
		// Only a failed call needs a loginReasoner: its address escapes,
		// and a call that went through should not pay for it.
		var lr loginReasoner
		if !errors.As(err, &lr) {
			return // says nothing about the person
		}
		w = &Reason{Class: ClassAuth, Step: stepAuthorization, Code: CodeNeedsAuth, Message: leadNeedsAuth}
		if sa := scopeAsker(nil); errors.As(err, &sa) {
			w.Step, w.Code = "scope", CodeInsufficientScope
			w.Scopes = slices.Clone(sa.ScopesToAsk())
			w.Message = "the server asks for more permissions (" + strings.Join(sa.MissingScopes(), " ") + "); authorize again to grant them"
		}
	}
	m.marksMu.Lock()
	old, had := m.marks.waiting[id]
	switch {
	case w == nil && !had:
		m.marksMu.Unlock()
		return
	case w == nil:
		delete(m.marks.waiting, id)
	default:
		m.marks.waiting[id] = w
	}
	m.marksMu.Unlock()
	if w != nil && old != nil && w.Message == old.Message {
		return
	}
	m.emit(id)
}

// waitingReason is why a ready server waits for the person, or nil.
func (m *Manager) waitingReason(id string) *Reason {
	m.marksMu.Lock()
	defer m.marksMu.Unlock()
	if r := m.marks.waiting[id]; r != nil {
		cp := *r
		cp.Scopes = slices.Clone(r.Scopes)
		return &cp
	}
	return nil
}

// emit publishes the server's status again: something StateOf reads
// changed.
func (m *Manager) emit(id string) {
	e := m.entry(id)
	if e == nil {
		return
	}
	e.mu.Lock()
	m.emitLocked(e)
	e.mu.Unlock()
}

// Marks is what StateOf adds to a server's status from the person's side:
// why a ready server waits for the person (nil: it does not) and the
// sign-out mark as this process knows it (0 not read yet, 1 off, 2 on).
// A view kept between updates (the engine's server list) is rebuilt when
// they change.
func (m *Manager) Marks(id string) (waiting *Reason, signedOut int) {
	waiting = m.waitingReason(id)
	m.marksMu.Lock()
	defer m.marksMu.Unlock()
	on, known := m.marks.signedOut[id]
	switch {
	case !known:
		return waiting, 0
	case on:
		return waiting, 2
	}
	return waiting, 1
}
