package oauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/store"
)

// syncBuffer collects log output from concurrent goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is one test world on loopback: an authorization server, an MCP server
// (package fixture) protected by it, a real SQLite store with the server
// config, and an Authenticator logging at debug level into logs.
type env struct {
	t    *testing.T
	as   *authserver.Server
	rs   atomic.Pointer[authserver.Server] // the AS the MCP server trusts and its PRM names
	mcp  *fixture.Server
	dir  string
	st   *store.DB
	logs *syncBuffer
	a    *Authenticator
	srv  config.Server
	ases []*authserver.Server
}

type envOption func(*envConfig)

type envConfig struct {
	asOpts    authserver.Options
	noAuth    bool // the MCP server demands no token and publishes no PRM
	mutateSrv func(*config.Server)
	knobs     func(*authserver.Knobs)
}

func withAS(o authserver.Options) envOption         { return func(c *envConfig) { c.asOpts = o } }
func withKnobs(f func(*authserver.Knobs)) envOption { return func(c *envConfig) { c.knobs = f } }
func withServer(f func(*config.Server)) envOption   { return func(c *envConfig) { c.mutateSrv = f } }
func withoutAuth() envOption                        { return func(c *envConfig) { c.noAuth = true } }

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	var cfg envConfig
	for _, o := range opts {
		o(&cfg)
	}
	e := &env{t: t, logs: &syncBuffer{}}
	e.as = e.startAS(cfg.asOpts)
	if cfg.knobs != nil {
		e.as.Set(cfg.knobs)
	}
	e.rs.Store(e.as)

	fo := fixture.Options{}
	if !cfg.noAuth {
		prm := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.rs.Load().PRMHandler().ServeHTTP(w, r) })
		fo.Authorize = func(w http.ResponseWriter, r *http.Request) bool { return e.rs.Load().Authorize(w, r) }
		fo.Extra = map[string]http.Handler{
			"/.well-known/oauth-protected-resource/mcp": prm,
			"/.well-known/oauth-protected-resource":     prm,
		}
	}
	m, err := fixture.Start(fo)
	if err != nil {
		t.Fatal(err)
	}
	e.mcp = m
	t.Cleanup(func() { _ = m.Close() })

	e.dir = t.TempDir()
	e.st = e.openStore()
	e.srv = config.Server{
		ID: "srv1", Name: "test server", URL: m.URL(), Enabled: true,
		Auth: config.Auth{Kind: config.AuthOAuth},
	}
	if cfg.mutateSrv != nil {
		cfg.mutateSrv(&e.srv)
	}
	if err := e.st.AddServer(context.Background(), e.srv); err != nil {
		t.Fatal(err)
	}
	e.a = e.newAuthenticator(e.st, nil)
	t.Cleanup(e.checkNoSecretsLeaked)
	return e
}

func (e *env) startAS(o authserver.Options) *authserver.Server {
	as, err := authserver.Start(o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(as.Close)
	e.ases = append(e.ases, as)
	return as
}

func (e *env) openStore() *store.DB {
	st, err := store.Open(context.Background(), e.dir, store.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = st.Close() })
	return st
}

// newAuthenticator makes an Authenticator over st (a fresh memory when mem
// is nil), logging into e.logs.
func (e *env) newAuthenticator(st *store.DB, mem SessionStore) *Authenticator {
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return New(Options{Store: st, Memory: mem, Logger: log})
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only a hang
	e.t.Cleanup(cancel)
	return ctx
}

// server returns the stored config of the test server.
func (e *env) server() config.Server {
	s, err := e.st.GetServer(context.Background(), e.srv.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) login() *LoginResult {
	e.t.Helper()
	res, err := e.a.Login(e.ctx(), e.server(), HeadlessBrowser(nil))
	if err != nil {
		e.t.Fatalf("Login: %v", err)
	}
	return res
}

// connect opens a go-sdk client session through h, as the session layer will.
func (e *env) connect(ctx context.Context, h auth.OAuthHandler) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "remotemcp-test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.mcp.URL(), OAuthHandler: h, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		e.t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// post401 sends a real request to the MCP server with token (may be "")
// and returns the request and its 401/403 response for Authorize.
func (e *env) post401(token string) (*http.Request, *http.Response) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.mcp.URL(), strings.NewReader(probeBody))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp.Body.Close()
		e.t.Fatalf("expected 401/403, got %d", resp.StatusCode)
	}
	return req, resp
}

// secrets lists every secret value any AS issued or received: tokens,
// codes, verifiers, client secrets, Basic credentials.
func (e *env) secrets() []string {
	var out []string
	for _, as := range e.ases {
		at, rt := as.IssuedTokens()
		out = append(out, at...)
		out = append(out, rt...)
		for _, r := range as.Requests() {
			for _, k := range []string{"code", "code_verifier", "refresh_token", "client_secret"} {
				out = append(out, r.Form[k]...)
			}
			if c, ok := strings.CutPrefix(r.Authorization, "Basic "); ok {
				if raw, err := base64.StdEncoding.DecodeString(c); err == nil {
					if _, sec, ok := strings.Cut(string(raw), ":"); ok {
						if s, err := url.QueryUnescape(sec); err == nil {
							out = append(out, s)
						}
					}
				}
			}
			if strings.HasSuffix(r.Path, "/authorize") {
				out = append(out, r.Query["state"]...)
				out = append(out, r.Query["code_challenge"]...)
			}
		}
	}
	return slices.DeleteFunc(out, func(s string) bool { return len(s) < 8 })
}

// checkNoSecretsLeaked: no log line carries a token, code, verifier, state
// or secret (SPEC B1, Options.Logger), and no access token was ever
// written to the persistent store (R3.11).
func (e *env) checkNoSecretsLeaked() {
	logs := e.logs.String()
	for _, s := range e.secrets() {
		if strings.Contains(logs, s) {
			e.t.Errorf("a secret (%.12s…) appears in the logs", s)
		}
	}
	keys, err := e.st.ListSecrets(context.Background(), e.srv.ID)
	if err != nil {
		return // the test may have closed or replaced the store
	}
	for _, k := range keys {
		if k.Purpose == purposeAccessToken {
			e.t.Errorf("an access token was written to the store: %+v", k)
		}
	}
}

// tokenRequests returns the AS's token requests of one grant type.
func tokenRequests(as *authserver.Server, grant string) []authserver.Request {
	var out []authserver.Request
	for _, r := range as.RequestsTo("/token") {
		if r.Form.Get("grant_type") == grant {
			out = append(out, r)
		}
	}
	return out
}

func mustErrorStep(t *testing.T, err error, step Step) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error at step %s, got nil", step)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error is not an *oauth.Error: %T %v", err, err)
	}
	if e.Step != step {
		t.Fatalf("step = %s, want %s (error: %v)", e.Step, step, err)
	}
	t.Logf("error: %v", err)
	return e
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// accessToken is the access token a holds in memory for the stored binding.
func (e *env) accessToken(a *Authenticator) string {
	e.t.Helper()
	b := e.server().Auth.Binding
	if b == nil {
		e.t.Fatal("no binding")
	}
	r := a.loadAccess(e.srv.ID, *b)
	if r == nil {
		e.t.Fatal("no access token in memory")
	}
	return r.AccessToken
}

// HeadlessBrowser is a Browser for tests: it approves at an
// authorization server that approves at once (authserver.Approve) and
// reads the callback parameters of its redirect. hc is the client to use.
func HeadlessBrowser(hc *http.Client) Browser {
	return func(ctx context.Context, authURL string) (*CallbackResult, error) {
		q, err := authserver.Approve(hostperm.WithPurpose(ctx, hostperm.PurposeAuthorization, ""), hc, authURL)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadCallback, err)
		}
		return ParseCallback(q)
	}
}
