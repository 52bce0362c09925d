package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/store"
)

// purposeAccessToken keys access tokens in the session (memory) store. It
// is never used with the persistent store (R3.11).
const purposeAccessToken = "oauth-access"

// accessRecord is an access token as kept in memory, under its binding.
type accessRecord struct {
	AccessToken string    `json:"access_token"`
	Expiry      time.Time `json:"expiry"` // zero: unknown
	IssuedAt    time.Time `json:"issued_at"`
	Scopes      []string  `json:"scopes,omitempty"`
}

// refreshRecord is a refresh token as sealed in the store under its binding
// (store.PurposeRefreshToken). It remembers which client obtained it, since
// a refresh token is only good for that client.
type refreshRecord struct {
	RefreshToken string   `json:"refresh_token"`
	ClientID     string   `json:"client_id"`
	Scopes       []string `json:"scopes,omitempty"`
	SavedAt      int64    `json:"saved_at"`
}

// valid reports whether the access token can still be sent at now. It is
// treated as expired a little early (a tenth of its lifetime, at most 30 s)
// so a request does not race the expiry on the wire.
func (r *accessRecord) valid(now time.Time) bool {
	if r == nil || r.AccessToken == "" {
		return false
	}
	if r.Expiry.IsZero() {
		return true
	}
	margin := r.Expiry.Sub(r.IssuedAt) / 10
	if margin > 30*time.Second {
		margin = 30 * time.Second
	}
	return now.Before(r.Expiry.Add(-margin))
}

func (a *Authenticator) loadAccess(serverID string, b config.Binding) *accessRecord {
	raw, ok := a.mem.Get(secretKey(serverID, purposeAccessToken, b))
	if !ok {
		return nil
	}
	var r accessRecord
	if json.Unmarshal(raw, &r) != nil {
		return nil
	}
	return &r
}

func (a *Authenticator) saveAccess(serverID string, b config.Binding, r *accessRecord) {
	raw, err := json.Marshal(r)
	if err != nil {
		return
	}
	var expires time.Time
	if !r.Expiry.IsZero() {
		// The memory store expires by the wall clock; convert our
		// (possibly injected) clock's lifetime to it.
		expires = time.Now().Add(r.Expiry.Sub(a.now()))
	}
	a.mem.Put(secretKey(serverID, purposeAccessToken, b), raw, expires)
}

func (a *Authenticator) loadRefresh(ctx context.Context, serverID string, b config.Binding) (*refreshRecord, error) {
	raw, err := a.store.GetSecret(ctx, secretKey(serverID, store.PurposeRefreshToken, b))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r refreshRecord
	if err := json.Unmarshal(raw, &r); err != nil || r.RefreshToken == "" {
		a.log.Warn("oauth: discarding unreadable stored refresh token", "server", serverID)
		return nil, nil
	}
	return &r, nil
}

func (a *Authenticator) saveRefresh(ctx context.Context, serverID string, b config.Binding, r *refreshRecord) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return a.store.PutSecret(ctx, secretKey(serverID, store.PurposeRefreshToken, b), raw)
}

func (a *Authenticator) dropRefresh(ctx context.Context, serverID string, b config.Binding) error {
	return a.store.DeleteSecret(ctx, secretKey(serverID, store.PurposeRefreshToken, b))
}

// grant is a successful token response, normalized.
type grant struct {
	AccessToken  string
	RefreshToken string // "" when none was issued
	Expiry       time.Time
	Scopes       []string // granted scopes; the requested ones when the response omits scope (RFC 6749 §5.1)
}

// persist stores a grant for a binding. The refresh token is sealed in the
// store BEFORE the access token is made available: when the server rotated
// it, the old one is dead, and a crash between the two steps must leave
// the new one on disk rather than an access token in a memory about to
// vanish. A new authorization (keepOldRefresh false) with a pending
// registered client makes that client the one in use first (promote), so
// the refresh token stored next is refreshed with the client it was
// issued to.
func (a *Authenticator) persist(ctx context.Context, serverID string, b config.Binding, clientID string, g *grant, keepOldRefresh bool) error {
	if !keepOldRefresh {
		if err := a.promote(ctx, serverID, b, clientID); err != nil {
			return err
		}
	}
	if g.RefreshToken != "" {
		rec := &refreshRecord{RefreshToken: g.RefreshToken, ClientID: clientID, Scopes: g.Scopes, SavedAt: a.now().Unix()}
		if err := a.saveRefresh(ctx, serverID, b, rec); err != nil {
			return fmt.Errorf("saving the refresh token: %w", err)
		}
	} else if !keepOldRefresh {
		// A new authorization without a refresh token supersedes any
		// older one of the same binding.
		if err := a.dropRefresh(ctx, serverID, b); err != nil {
			return fmt.Errorf("forgetting the old refresh token: %w", err)
		}
	}
	a.saveAccess(serverID, b, &accessRecord{AccessToken: g.AccessToken, Expiry: g.Expiry, IssuedAt: a.now(), Scopes: g.Scopes})
	return nil
}

// lockServer takes the server's OAuth lock, shared by every process on the
// data directory. Whoever changes the server's stored tokens holds it: a
// refresh (which spends the refresh token and saves its successor), a
// login (saving a new grant) and a logout (forgetting everything), so that
// none of them undoes another's work.
func (a *Authenticator) lockServer(ctx context.Context, serverID string) (func(), error) {
	return a.locker.Lock(ctx, "oauth-"+serverID)
}

// errNoRefreshToken: nothing to refresh with.
var errNoRefreshToken = errors.New("no refresh token is stored for this server")

// refreshHold bounds how long a refresh keeps its refresh token locked
// (in a gateway's PostgreSQL database, the row stays locked in an open
// transaction): the token request, bounded by requestTimeout, and a
// margin for writing its answer in the transaction. A process that
// hangs or is frozen longer loses the row lock (PostgreSQL ends the
// transaction) and, if it wakes up with an answer, saves it by
// compare-and-set (store.SecretLock.Commit).
const refreshHold = requestTimeout + 10*time.Second

// lockRefresh locks the binding's stored refresh token and reads it; nil
// (and nothing held) when there is none or it cannot be read.
func (a *Authenticator) lockRefresh(ctx context.Context, serverID string, b config.Binding) (*store.SecretLock, *refreshRecord, error) {
	h, err := a.store.LockSecret(ctx, secretKey(serverID, store.PurposeRefreshToken, b), refreshHold)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var r refreshRecord
	if err := json.Unmarshal(h.Value(), &r); err != nil || r.RefreshToken == "" {
		h.Release()
		a.log.Warn("oauth: discarding unreadable stored refresh token", "server", serverID)
		return nil, nil, nil
	}
	return h, &r, nil
}

// refresh runs the refresh_token grant for a binding, with `resource`
// (RFC 8707; R3.10), so that only one process spends a refresh token at
// a time (SPEC §9 A11: refresh single-flight by row lock), under two
// locks:
//
//   - the server's lock (lockServer), which a login and a logout take
//     too, so that neither interleaves with a refresh (a login's new
//     grant is stored after the refresh, a logout forgets the rotated
//     token too), and a refresh waiting behind a login sees its token;
//   - the refresh token itself (store.SecretLock: in PostgreSQL its row,
//     SELECT … FOR UPDATE), under which the token is read again — another
//     process may have rotated it while we waited, and the old one would
//     be refused — and its successor is written in the same transaction.
//
// In PostgreSQL the two live on different connections (the advisory
// lock on the process's lock connection, the row on a pooled one), and
// each covers the loss of the other: if the lock connection dies
// mid-refresh, its advisory lock is gone and another replica may take
// it, but it then waits on the row, and reads the rotated token after
// our commit; if the row's connection dies, the row is free, but the
// advisory lock still keeps the others out while Commit writes the
// rotated token by compare-and-set through another connection. Only
// losing both at once (PostgreSQL restarted mid-refresh) can let another
// replica read the old token before the new one is saved.
//
// While the token is held, nothing here writes to the store through
// another connection (store.LockSecret says why): reads only, and
// OnExchange, which does not block; other writes come after Commit or
// Release.
//
// Long: the two locks, the re-read, the request and the handling of each
// refusal (a dead token, a rejected client) must be read in one place to
// see that no path spends a token twice or loses the rotated one.
func (a *Authenticator) refresh(ctx context.Context, srv config.Server, b config.Binding, resource string, tokenURL string, cl *client) (*grant, error) {
	unlock, err := a.lockServer(ctx, srv.ID)
	if err != nil {
		return nil, fmt.Errorf("taking the refresh lock: %w", err)
	}
	defer unlock()

	held, rec, err := a.lockRefresh(ctx, srv.ID, b)
	if err != nil {
		return nil, fmt.Errorf("locking the stored refresh token: %w", err)
	}
	if rec == nil {
		return nil, errNoRefreshToken
	}
	defer held.Release()
	// Writes under the held token are made on a context of their own:
	// they go on even if our caller gives up.
	save := func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		defer cancel()
		return held.Commit(sctx)
	}
	if rec.ClientID != cl.ID && cl.Dynamic {
		// cl was read before the lock: a sign-in may have finished
		// meanwhile, making its client the one in use (promote) and
		// storing a refresh token issued to it. Read the registration
		// again; only the client the refresh token was issued to, and
		// only while it is the one in use, is sent.
		if reg, err := a.loadRegistration(ctx, srv.ID, b); err == nil && reg.usable(a.now()) && reg.ClientID == rec.ClientID {
			cl = reg.client()
		}
	}
	if rec.ClientID != cl.ID {
		// Issued to a client we no longer use (a new registration
		// replaced it after its sign-in finished, the old client was
		// rejected, or the configured id changed): useless, and not to
		// be shown to anyone. (A sign-in that has not finished leaves
		// its new client pending, not in use: resolveClient.)
		held.Delete()
		_ = save()
		return nil, errNoRefreshToken
	}
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {rec.RefreshToken},
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	// From the moment the request is sent, the server may rotate the
	// refresh token: the old one is dead, and the answer carries the only
	// copy of the new one. So the request, and saving its answer, go on
	// even if our caller gives up meanwhile (the context keeps its values:
	// the host permission purpose).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	g, err := a.tokenRequest(withStep(hostperm.WithPurpose(rctx, hostperm.PurposeToken, srv.ID), StepRefresh), tokenURL, cl, form, rec.Scopes)
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) && (te.Code == "invalid_grant" || te.Code == "invalid_client" || te.Code == "unauthorized_client") {
			// The refresh token (or its client) is dead; forget it so
			// no one tries it again — but only that one: it is still
			// the one stored, as it is held (a login waits for us).
			held.Delete()
			if derr := save(); derr != nil {
				a.log.Warn("oauth: could not forget a refused refresh token", "server", srv.ID, "error", derr)
			}
		}
		// Released before writing anything else: a write of the user
		// may be waiting for the held row while holding what our write
		// would wait for.
		held.Release()
		if clientRejected(err) && cl.Dynamic {
			// The registration itself is dead (the authorization server
			// forgot it): the next flow, interactive or the person's
			// login, registers a new client. Only the client that was
			// refused is dropped (a pending one stays).
			if derr := a.dropClient(context.WithoutCancel(ctx), srv.ID, b, cl.ID); derr != nil {
				a.log.Warn("oauth: could not forget the rejected registration", "server", srv.ID, "error", derr)
			} else {
				a.log.Warn("oauth: the token endpoint rejected the registered client; the next authorization registers a new one", "server", srv.ID, "issuer", b.Issuer)
			}
		}
		return nil, err
	}
	if len(g.Scopes) == 0 {
		g.Scopes = rec.Scopes
	}
	// The rotated refresh token is saved BEFORE the access token is made
	// available (see persist).
	if g.RefreshToken != "" {
		raw, err := json.Marshal(&refreshRecord{RefreshToken: g.RefreshToken, ClientID: cl.ID, Scopes: g.Scopes, SavedAt: a.now().Unix()})
		if err == nil {
			err = held.Replace(raw)
		}
		if err == nil {
			err = save()
		}
		if err != nil {
			a.log.Error("oauth: the authorization server issued a new refresh token that could not be saved; the next refresh needs a new sign-in", "server", srv.ID, "issuer", b.Issuer, "error", err)
			return nil, fmt.Errorf("saving the refresh token: %w", err)
		}
	}
	held.Release()
	a.saveAccess(srv.ID, b, &accessRecord{AccessToken: g.AccessToken, Expiry: g.Expiry, IssuedAt: a.now(), Scopes: g.Scopes})
	a.log.Info("oauth: access token refreshed", "server", srv.ID, "issuer", b.Issuer, "rotated", g.RefreshToken != "")
	return g, nil
}

// tokenRequest POSTs a form to the token endpoint with the client's
// authentication (RFC 6749 §2.3.1) and parses the answer. It is used for
// refresh; x/oauth2's refresh cannot send `resource`.
func (a *Authenticator) tokenRequest(ctx context.Context, tokenURL string, cl *client, form url.Values, requested []string) (*grant, error) {
	switch cl.AuthMethod {
	case authPost:
		form.Set("client_id", cl.ID)
		form.Set("client_secret", cl.Secret)
	case authBasic:
	default:
		form.Set("client_id", cl.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if cl.AuthMethod == authBasic {
		// RFC 6749 §2.3.1: id and secret are form-urlencoded before
		// Basic encoding.
		req.SetBasicAuth(url.QueryEscape(cl.ID), url.QueryEscape(cl.Secret))
	}
	resp, err := a.do(req)
	if err != nil {
		return nil, err
	}
	return parseTokenResponse(resp.status, resp.body, a.now(), requested)
}

// parseTokenResponse reads a token endpoint answer (RFC 6749 §5.1, §5.2).
// Success needs a JSON object with a non-empty string access_token of
// printable ASCII and a token_type of Bearer (absent is tolerated; another
// type would be sent wrongly). An error answer becomes a *TokenError.
func parseTokenResponse(status int, body []byte, now time.Time, requested []string) (*grant, error) {
	obj, perr := parseObject(body)
	if status < 200 || status > 299 {
		te := &TokenError{Status: status}
		if perr == nil {
			code, _, _ := obj.str("error")
			desc, _, _ := obj.str("error_description")
			te.Code, te.Description = sanitize(code, 60), sanitize(desc, 200)
		}
		return nil, te
	}
	if perr != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadToken, perr)
	}
	if code, ok, _ := obj.str("error"); ok && code != "" {
		// Some servers answer errors with 200 (x/oauth2 handles this too).
		desc, _, _ := obj.str("error_description")
		return nil, &TokenError{Status: status, Code: sanitize(code, 60), Description: sanitize(desc, 200)}
	}
	at, _, err := obj.str("access_token")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	if err := checkTokenString("access_token", at); err != nil {
		return nil, err
	}
	tt, ok, err := obj.str("token_type")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	if ok && !strings.EqualFold(tt, "bearer") {
		return nil, fmt.Errorf("%w: token_type is %q, not Bearer", ErrBadToken, sanitize(tt, 40))
	}
	rt, _, err := obj.str("refresh_token")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	if rt != "" {
		if err := checkTokenString("refresh_token", rt); err != nil {
			return nil, err
		}
	}
	g := &grant{AccessToken: at, RefreshToken: rt, Scopes: requested}
	if secs, ok, err := obj.integer("expires_in"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadToken, err)
	} else if ok && secs > 0 {
		if secs > 10*365*24*3600 {
			secs = 10 * 365 * 24 * 3600
		}
		g.Expiry = now.Add(time.Duration(secs) * time.Second)
	}
	if sc, ok, err := obj.str("scope"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadToken, err)
	} else if ok {
		g.Scopes = uniq(strings.Fields(sc))
	}
	return g, nil
}

// checkTokenString checks a token we will put in a header or store: non-empty,
// bounded, printable ASCII without spaces (RFC 6750 b64token is stricter;
// real servers issue tokens outside it).
func checkTokenString(field, s string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is missing or empty", ErrBadToken, field)
	}
	if len(s) > 16<<10 {
		return fmt.Errorf("%w: %s is %d bytes long", ErrBadToken, field, len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= 0x20 || s[i] > 0x7e {
			return fmt.Errorf("%w: %s contains a character that cannot be sent in a header", ErrBadToken, field)
		}
	}
	return nil
}

// grantFromOAuth2 normalizes x/oauth2's exchange result with the same checks
// as parseTokenResponse.
func grantFromOAuth2(t *oauth2.Token, now time.Time, requested []string) (*grant, error) {
	if err := checkTokenString("access_token", t.AccessToken); err != nil {
		return nil, err
	}
	if t.TokenType != "" && !strings.EqualFold(t.TokenType, "bearer") {
		return nil, fmt.Errorf("%w: token_type is %q, not Bearer", ErrBadToken, sanitize(t.TokenType, 40))
	}
	if t.RefreshToken != "" {
		if err := checkTokenString("refresh_token", t.RefreshToken); err != nil {
			return nil, err
		}
	}
	g := &grant{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Scopes: requested}
	if t.ExpiresIn > 0 {
		secs := min(t.ExpiresIn, 10*365*24*3600)
		g.Expiry = now.Add(time.Duration(secs) * time.Second)
	} else if !t.Expiry.IsZero() {
		g.Expiry = t.Expiry
	}
	if sc, ok := t.Extra("scope").(string); ok {
		g.Scopes = uniq(strings.Fields(sc))
	}
	return g, nil
}

// tokenSource is what Handler.TokenSource returns: it reads the current
// access token of the handler's binding from memory on every call, so a
// token obtained by Authorize (or by a Login in this process) is picked up
// at once. It never fails and never touches the network: an error would
// abort the request before it is sent and Authorize would never run
// (go-sdk trap, research §1.6). No usable token means (nil, nil), and the
// transport then sends no Authorization header, so the server answers 401
// and Authorize refreshes.
type tokenSource struct{ h *handler }

// Token implements oauth2.TokenSource.
func (ts tokenSource) Token() (*oauth2.Token, error) {
	b, ok := ts.h.binding()
	if !ok {
		return nil, nil
	}
	r := ts.h.a.loadAccess(ts.h.srv.ID, b)
	if !r.valid(ts.h.a.now()) {
		return nil, nil
	}
	return &oauth2.Token{AccessToken: r.AccessToken, TokenType: "Bearer", Expiry: r.Expiry}, nil
}
