package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
)

// The races between a refresh in flight and whoever else changes a
// server's tokens: the caller giving up, other callers waiting for the same
// refresh, a login and a logout.

// gate holds the answer of a refresh request after the server has given
// it (so the server has rotated the refresh token and the answer is the
// only copy of the new one), until the test releases it, and reports
// every attempt to take a lock. It is installed by env.gated.
type gate struct {
	hold     atomic.Bool
	held     chan struct{}
	release  chan struct{}
	attempts chan string
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	refresh := false
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/token") && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		refresh = form.Get("grant_type") == "refresh_token"
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if !refresh || !g.hold.CompareAndSwap(true, false) {
		return resp, err
	}
	g.held <- struct{}{}
	select {
	case <-g.release:
		return resp, err
	case <-req.Context().Done():
		if resp != nil {
			resp.Body.Close()
		}
		return nil, req.Context().Err()
	}
}

type gateLocker struct {
	g *gate
	l Locker
}

func (gl gateLocker) Lock(ctx context.Context, name string) (func(), error) {
	select {
	case gl.g.attempts <- name:
	default:
	}
	return gl.l.Lock(ctx, name)
}

// gated replaces e.a (call it before logging in) with an authenticator
// whose HTTP traffic and locks go through a gate.
func (e *env) gated() *gate {
	g := &gate{held: make(chan struct{}, 1), release: make(chan struct{}), attempts: make(chan string, 16)}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.a = New(Options{Store: e.st, Logger: log, HTTPClient: &http.Client{Transport: g}, Locker: gateLocker{g, e.st}})
	return g
}

// holdNextRefresh starts a background Authorize for a 401 to token whose
// refresh request is held once the server has answered it; it returns
// when the refresh is held (holding the server's lock) and forgets the
// lock attempts so far.
func (e *env) holdNextRefresh(ctx context.Context, g *gate, token string) <-chan error {
	e.t.Helper()
	g.hold.Store(true)
	req, resp := e.post401(token)
	done := make(chan error, 1)
	h := e.a.Handler(e.server(), nil)
	go func() { done <- h.Authorize(ctx, req, resp) }()
	select {
	case <-g.held:
	case err := <-done:
		e.t.Fatalf("Authorize ended before its refresh was answered: %v", err)
	case <-time.After(2 * time.Minute): // only a hang
		e.t.Fatal("no refresh request")
	}
	g.forgetAttempts()
	return done
}

// forgetAttempts forgets the lock attempts made so far.
func (g *gate) forgetAttempts() {
	for len(g.attempts) > 0 {
		<-g.attempts
	}
}

// flightWaiters is the number of callers waiting for a's shared runs.
func flightWaiters(a *Authenticator) int {
	a.flights.mu.Lock()
	defer a.flights.mu.Unlock()
	n := 0
	for _, f := range a.flights.m {
		n += f.waiters
	}
	return n
}

// waitLockOrDone waits until another lock attempt is made or done ends.
func waitLockOrDone(t *testing.T, g *gate, done <-chan error) (ended bool, err error) {
	t.Helper()
	select {
	case <-g.attempts:
		return false, nil
	case err := <-done:
		return true, err
	case <-time.After(2 * time.Minute): // only a hang
		t.Fatal("neither a lock attempt nor the end")
		return false, nil
	}
}

// R3.11: a caller that gives up while its refresh request is on the wire
// does not lose the refresh token. The server has rotated it by then; the
// answer carries the only copy of the new one, and it is saved anyway, so
// the next 401 refreshes with it instead of asking for a new login.
func TestRefreshSurvivesCallerGivingUp_R3_11(t *testing.T) {
	e := newEnv(t)
	g := e.gated()
	e.login()
	old := e.accessToken(e.a)
	e.as.ExpireAccessTokens()

	ctx, cancel := context.WithCancel(context.Background())
	done := e.holdNextRefresh(ctx, g, old)
	cancel()
	err := <-done
	var oe *Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &oe) || oe.Step != StepRefresh {
		t.Fatalf("Authorize of a caller that gave up: %v, want context.Canceled at the refresh step", err)
	}
	close(g.release)
	// The refresh goes on without the caller and saves what it got.
	b := *e.server().Auth.Binding
	testkit.WaitFor(t, "the refreshed access token", func() bool {
		r := e.a.loadAccess(e.srv.ID, b)
		return r.valid(time.Now()) && r.AccessToken != old
	})

	// The next 401 is fixed by the saved token; the one after that
	// refreshes with the rotated refresh token.
	h := e.a.Handler(e.server(), nil)
	req, resp := e.post401(old)
	if err := h.Authorize(e.ctx(), req, resp); err != nil {
		t.Fatalf("Authorize after the caller gave up: %v", err)
	}
	e.as.ExpireAccessTokens()
	req, resp = e.post401(e.accessToken(e.a))
	if err := h.Authorize(e.ctx(), req, resp); err != nil {
		t.Fatalf("refresh with the rotated refresh token: %v", err)
	}
	refreshes := tokenRequests(e.as, "refresh_token")
	if len(refreshes) != 2 {
		t.Fatalf("%d refreshes, want 2", len(refreshes))
	}
	for _, r := range refreshes {
		if r.Status != http.StatusOK {
			t.Fatalf("a refresh was answered %d: the rotated refresh token was lost", r.Status)
		}
	}
}

// R3.12: concurrent 401s share one refresh, and the first caller giving
// up does not fail the others: the shared work does not run on its
// context.
func TestFirstCallerGivingUpDoesNotFailOthers_R3_12(t *testing.T) {
	e := newEnv(t)
	g := e.gated()
	e.login()
	old := e.accessToken(e.a)
	e.as.ExpireAccessTokens()

	// Another process holds the refresh lock, so the shared refresh
	// waits while the first caller gives up.
	unlock, err := e.st.Lock(e.ctx(), "oauth-"+e.srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	h := e.a.Handler(e.server(), nil)
	req1, resp1 := e.post401(old)
	req2, resp2 := e.post401(old)
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	g.forgetAttempts()
	first := make(chan error, 1)
	go func() { first <- h.Authorize(ctx1, req1, resp1) }()
	if ended, _ := waitLockOrDone(t, g, first); ended {
		t.Fatal("the first caller ended before the refresh")
	}
	second := make(chan error, 1)
	go func() { second <- h.Authorize(e.ctx(), req2, resp2) }()
	testkit.WaitFor(t, "the second caller to join the refresh", func() bool { return flightWaiters(e.a) == 2 })
	cancel1()
	err = <-first
	var oe *Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &oe) || oe.Step != StepRefresh {
		t.Fatalf("first caller: %v, want context.Canceled at the refresh step", err)
	}
	unlock()
	if err := <-second; err != nil {
		t.Fatalf("second caller, after the first gave up: %v", err)
	}
	if n := len(tokenRequests(e.as, "refresh_token")); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	if e.accessToken(e.a) == old {
		t.Fatal("token not replaced")
	}
}

// R3.12: a refresh that is refused while a login stores a new grant does
// not delete the login's refresh token: the login saves under the
// server's lock, after the refresh has finished.
func TestRefusedRefreshKeepsConcurrentLogin_R3_12(t *testing.T) {
	e := newEnv(t)
	g := e.gated()
	e.login()
	old := e.accessToken(e.a)
	e.as.ExpireAccessTokens()
	e.as.RevokeRefreshTokens()

	refreshed := e.holdNextRefresh(e.ctx(), g, old)
	login := make(chan error, 1)
	go func() {
		_, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
		login <- err
	}()
	// The login has its grant and waits for the lock (or, without the
	// lock, has stored it already).
	ended, loginErr := waitLockOrDone(t, g, login)
	close(g.release)
	if err := <-refreshed; !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("refresh with a revoked refresh token: %v", err)
	}
	if !ended {
		loginErr = <-login
	}
	if loginErr != nil {
		t.Fatalf("Login: %v", loginErr)
	}
	b := *e.server().Auth.Binding
	rec, err := e.a.loadRefresh(context.Background(), e.srv.ID, b)
	if err != nil || rec == nil {
		t.Fatalf("the refresh token the login stored is gone (%v, %v)", rec, err)
	}
	// And it works.
	e.as.ExpireAccessTokens()
	req, resp := e.post401(e.accessToken(e.a))
	if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); err != nil {
		t.Fatalf("refresh with the login's refresh token: %v", err)
	}
}

// R3.12: a login during a successful refresh is not overwritten by the
// refresh's older grant (a login for more scopes would lose them).
func TestRefreshDoesNotOverwriteConcurrentLogin_R3_12(t *testing.T) {
	e := newEnv(t, withKnobs(func(k *authserver.Knobs) { k.ChallengeScope = "read" }))
	g := e.gated()
	e.login()
	old := e.accessToken(e.a)
	e.as.ExpireAccessTokens()

	refreshed := e.holdNextRefresh(e.ctx(), g, old)
	e.as.Set(func(k *authserver.Knobs) { k.ChallengeScope = "read write" })
	login := make(chan error, 1)
	go func() {
		res, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
		if err == nil && !slices.Contains(res.Scopes, "write") {
			err = fmt.Errorf("login scopes %v", res.Scopes)
		}
		login <- err
	}()
	ended, loginErr := waitLockOrDone(t, g, login)
	close(g.release)
	if err := <-refreshed; err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if !ended {
		loginErr = <-login
	}
	if loginErr != nil {
		t.Fatalf("Login: %v", loginErr)
	}
	b := *e.server().Auth.Binding
	rec, err := e.a.loadRefresh(context.Background(), e.srv.ID, b)
	if err != nil || rec == nil || !slices.Contains(rec.Scopes, "write") {
		t.Fatalf("stored refresh token after login + refresh: %+v, %v; want the login's (scopes read write)", rec, err)
	}
	if r := e.a.loadAccess(e.srv.ID, b); r == nil || !slices.Contains(r.Scopes, "write") {
		t.Fatalf("access token after login + refresh: %+v; want the login's", r)
	}
}

// R3.11: a refresh that is refused deletes the stored refresh token only
// if it is still the one refused; one stored meanwhile (by a writer the
// lock does not cover) stays.
func TestRefusedRefreshDeletesOnlyRefusedToken_R3_11(t *testing.T) {
	e := newEnv(t)
	g := e.gated()
	e.login()
	old := e.accessToken(e.a)
	e.as.ExpireAccessTokens()
	e.as.RevokeRefreshTokens()
	b := *e.server().Auth.Binding
	prev, err := e.a.loadRefresh(e.ctx(), e.srv.ID, b)
	if err != nil || prev == nil {
		t.Fatal(prev, err)
	}

	refreshed := e.holdNextRefresh(e.ctx(), g, old)
	newer := &refreshRecord{RefreshToken: "stored-meanwhile-refresh-token", ClientID: prev.ClientID, SavedAt: time.Now().Unix()}
	if err := e.a.saveRefresh(e.ctx(), e.srv.ID, b, newer); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if err := <-refreshed; !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("refresh with a revoked refresh token: %v", err)
	}
	rec, err := e.a.loadRefresh(e.ctx(), e.srv.ID, b)
	if err != nil || rec == nil || rec.RefreshToken != newer.RefreshToken {
		t.Fatalf("stored refresh token after the refusal: %+v, %v", rec, err)
	}

	// Without a newer one, the refused token is forgotten.
	req, resp := e.post401("")
	if err := e.a.Handler(e.server(), nil).Authorize(e.ctx(), req, resp); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("refresh with an unknown refresh token: %v", err)
	}
	if rec, err := e.a.loadRefresh(e.ctx(), e.srv.ID, b); err != nil || rec != nil {
		t.Fatalf("a refused refresh token was kept: %+v, %v", rec, err)
	}
}

// R3.11: a logout during a refresh is not undone by the refresh: the
// logout waits for the refresh to save, then forgets everything.
func TestLogoutDuringRefreshForgetsEverything_R3_11(t *testing.T) {
	e := newEnv(t)
	g := e.gated()
	e.login()
	old := e.accessToken(e.a)
	e.as.ExpireAccessTokens()

	refreshed := e.holdNextRefresh(e.ctx(), g, old)
	logout := make(chan error, 1)
	go func() { logout <- e.a.Logout(e.ctx(), e.srv.ID) }()
	ended, logoutErr := waitLockOrDone(t, g, logout)
	close(g.release)
	if err := <-refreshed; err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if !ended {
		logoutErr = <-logout
	}
	if logoutErr != nil {
		t.Fatalf("Logout: %v", logoutErr)
	}
	if st := e.a.Status(e.ctx(), e.server()); st.HasRefreshToken || st.HasAccessToken || st.ClientID != "" {
		t.Fatalf("state after logout: %+v", st)
	}
}

// The flight group behind R3.12: joiners share one run; one caller giving
// up neither fails the others nor cancels the run; the run is cancelled
// only when every caller has given up, and the next caller starts afresh.
func TestFlightGroup_R3_12(t *testing.T) {
	var g flightGroup
	type ctxKey struct{}
	release := make(chan struct{})
	var runs atomic.Int32
	fn := func(ctx context.Context) (any, error) {
		markStep(ctx, StepDiscoveryAS)
		runs.Add(1)
		if ctx.Value(ctxKey{}) != "v" {
			return nil, errors.New("the run lost the caller's values")
		}
		select {
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	base := context.WithValue(context.Background(), ctxKey{}, "v")

	// One of two callers gives up: the other gets the result.
	ctx1, cancel1 := context.WithCancel(base)
	r1 := make(chan error, 1)
	go func() {
		_, at, err := g.do(ctx1, "k", fn)
		if at != StepDiscoveryAS {
			err = fmt.Errorf("gave up at step %q: %w", at, err)
		}
		r1 <- err
	}()
	testkit.WaitFor(t, "the run", func() bool { return runs.Load() == 1 })
	r2 := make(chan any, 1)
	go func() { v, _, err := g.do(base, "k", fn); r2 <- []any{v, err} }()
	testkit.WaitFor(t, "the second caller", func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.m["k"].waiters == 2 })
	cancel1()
	if err := <-r1; !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "gave up at") {
		t.Fatalf("caller that gave up: %v", err)
	}
	close(release)
	if got := (<-r2).([]any); got[0] != "done" || got[1] != nil {
		t.Fatalf("caller that waited: %v", got)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d runs", runs.Load())
	}

	// The only caller gives up: the run is cancelled, and the next caller
	// starts a new one.
	block := func(ctx context.Context) (any, error) {
		runs.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var ended atomic.Bool
	ctx3, cancel3 := context.WithCancel(base)
	r3 := make(chan error, 1)
	go func() {
		_, _, err := g.do(ctx3, "k2", func(ctx context.Context) (any, error) {
			defer ended.Store(true)
			return block(ctx)
		})
		r3 <- err
	}()
	testkit.WaitFor(t, "the run", func() bool { return runs.Load() == 2 })
	cancel3()
	if err := <-r3; !errors.Is(err, context.Canceled) {
		t.Fatalf("caller that gave up: %v", err)
	}
	testkit.WaitFor(t, "the abandoned run to end", ended.Load)
	v, _, err := g.do(base, "k2", func(context.Context) (any, error) { return "fresh", nil })
	if v != "fresh" || err != nil {
		t.Fatalf("after an abandoned run: %v, %v", v, err)
	}
}
