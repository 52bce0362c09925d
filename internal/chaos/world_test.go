//go:build chaos

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// --- the servers people use -------------------------------------------

// servers are the bundled test servers behind one OAuth authorization
// server, in this process: each person signs in to each of them as
// their own subject.
type servers struct {
	as  *authserver.Server
	fxs []*fixture.Server
}

// startServers starts the authorization server (access tokens live ttl,
// refresh tokens rotate) and n test servers with the tool "once", whose
// caller is the subject of the bearer token each call carried.
func startServers(t *testing.T, n int, ttl time.Duration) *servers {
	t.Helper()
	as, err := authserver.Start(authserver.Options{Name: "chaos"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	as.Set(func(k *authserver.Knobs) { k.AccessTokenTTL = ttl })
	s := &servers{as: as}
	caller := func(h http.Header) string {
		sub, ok := as.Subject(strings.TrimPrefix(h.Get("Authorization"), "Bearer "))
		if !ok {
			return "?"
		}
		return sub
	}
	for range n {
		fx, err := fixture.Start(fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes(), NoRecord: true, Once: true, Caller: caller})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fx.Close() })
		s.fxs = append(s.fxs, fx)
	}
	return s
}

// --- people, through the load balancer's page frontend ----------------

// pageTransport is the way of one person's requests to the page through
// the load balancer, as the authenticating proxy in front of it would
// send them: it names the person in X-Remote-User and gives
// state-changing requests the page's Origin. The load balancer connects
// to the replicas from 127.0.0.1, their --trusted-proxy.
type pageTransport struct {
	email, host string
	next        http.RoundTripper
}

func (p pageTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = "http", p.host, p.host
	r.Header.Set("X-Remote-User", p.email)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		r.Header.Set("Origin", "http://"+p.host)
	}
	return p.next.RoundTrip(r)
}

// person is the page API of email through the load balancer.
func (c *cluster) person(email string) *localapi.Client {
	return localapi.NewClientWithTransport(pageTransport{email: email, host: fmt.Sprintf("127.0.0.1:%d", c.lbPage), next: pageRT})
}

// pageRT carries every page request of the test.
var pageRT = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}

func email(u int) string    { return fmt.Sprintf("u%02d@chaos.test", u) }
func subject(u int) string  { return fmt.Sprintf("subject-u%02d", u) }
func serverID(s int) string { return fmt.Sprintf("s%d", s) }

// spare is the person whose servers the editor changes.
const spare = "spare@chaos.test"

// setUpPeople adds the people (the admin on the page), and for each:
// the authorization server's origin allowed, one server per test server,
// a sign-in to each (started on the page, approved as the person's own
// subject, the redirect delivered where it points), and a host token.
// It returns the host tokens, and how many sign-ins came back to the
// gateway's public URL (the load balancer: any replica) rather than to
// the replica that started them.
func setUpPeople(t *testing.T, c *cluster, srv *servers, users int) ([]string, int) {
	t.Helper()
	ctx := context.Background()
	adm := c.person(admin)
	for u := range users {
		if _, err := adm.AddUser(ctx, email(u)); err != nil {
			t.Fatalf("add %s: %v", email(u), err)
		}
	}
	if _, err := adm.AddUser(ctx, spare); err != nil {
		t.Fatalf("add %s: %v", spare, err)
	}
	tokens := make([]string, users)
	errs := make([]error, users)
	var public atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for u := range users {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			tokens[u], errs[u] = setUpPerson(ctx, c, srv, u, &public)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return tokens, int(public.Load())
}

func setUpPerson(ctx context.Context, c *cluster, srv *servers, u int, public *atomic.Int64) (string, error) {
	p := c.person(email(u))
	if err := p.Grant(ctx, srv.as.URL(), ""); err != nil {
		return "", fmt.Errorf("%s: allow the authorization server: %w", email(u), err)
	}
	for i, fx := range srv.fxs {
		if _, err := p.AddServer(ctx, localapi.AddServerRequest{ID: serverID(i), URL: fx.URL(), Auth: config.AuthOAuth}); err != nil {
			return "", fmt.Errorf("%s: add %s: %w", email(u), serverID(i), err)
		}
		back, err := signIn(ctx, p, serverID(i), subject(u))
		if err != nil {
			return "", fmt.Errorf("%s: %w", email(u), err)
		}
		if back.Host == fmt.Sprintf("127.0.0.1:%d", c.lbPage) && back.Path == "/mcp-oauth" {
			public.Add(1)
		}
	}
	tok, err := p.CreateHostToken(ctx, "chaos-host")
	if err != nil {
		return "", fmt.Errorf("%s: host token: %w", email(u), err)
	}
	return tok.Token, nil
}

// signIn signs a person in to a server from their page: start it, open
// the authorization URL as the person's browser (the authorization
// server approves at once, as sub), and deliver the redirect where it
// points: a replica's own /mcp-oauth, or the public URL's (the load
// balancer, so any replica) once callbacks may land on any of them.
// It returns the redirect URI.
func signIn(ctx context.Context, p *localapi.Client, id, sub string) (*url.URL, error) {
	fl, err := p.Authorize(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("start the sign-in to %s: %w", id, err)
	}
	if fl.Phase != localapi.PhaseWaiting || fl.AuthorizationURL == "" {
		return nil, fmt.Errorf("the sign-in to %s is %s, not waiting: %s", id, fl.Phase, fl.Error)
	}
	au, err := url.Parse(fl.AuthorizationURL)
	if err != nil {
		return nil, err
	}
	q := au.Query()
	q.Set("login_hint", sub)
	au.RawQuery = q.Encode()
	back, err := authserver.Approve(ctx, nil, au.String())
	if err != nil {
		return nil, fmt.Errorf("approve the sign-in to %s: %w", id, err)
	}
	cb, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		return nil, fmt.Errorf("the sign-in's redirect URI: %w", err)
	}
	redirect := *cb
	cb.RawQuery = back.Encode()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cb.String(), nil)
	resp, err := pageRT.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("deliver the sign-in's redirect to %s: %w", cb.Host, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "complete") {
		return nil, fmt.Errorf("the sign-in's redirect to %s%s: %s: %.300s", cb.Host, cb.Path, resp.Status, body)
	}
	return &redirect, nil
}

// --- hosts --------------------------------------------------------------

// call is one tool call of a host: never sent again once it failed (a
// failed call "may have run").
type call struct {
	host, user int
	nonce      string
	start, end time.Time
	ok         bool
	caller     string // who the server says made it (from the result)
	replica    string // who answered (HAProxy's X-Replica), "" when none did
	err        string
}

// hostTransport puts the person's bearer token on every request and
// remembers which replica answered the last tool call.
type hostTransport struct {
	token   string
	next    http.RoundTripper
	replica atomic.Value // string
}

func (h *hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := h.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost && resp.StatusCode == http.StatusOK {
		h.replica.Store(resp.Header.Get("X-Replica"))
	}
	return resp, err
}

// hostTimeout bounds one tool call or initialize of a host: a call to a
// frozen replica fails after it (and is never re-sent).
const hostTimeout = 10 * time.Second

// load is the hosts calling tools at a steady rate, and what each call
// did.
type load struct {
	endpoint string
	tokens   []string
	servers  int

	mu        sync.Mutex
	calls     []call
	reinits   atomic.Int64
	initFails atomic.Int64
	// epoch, when it changes, makes every host start a new session
	// (the benchmark spreads them over the replicas up); paused holds
	// the hosts between two calls (the benchmark's idle window).
	epoch  atomic.Int64
	paused atomic.Bool
}

// run runs hosts until ctx ends: host h acts for user h % users and
// calls one of its person's servers' tool "once" every 100–300 ms with
// a nonce of its own, re-initializing (a new session) when the session
// is gone (404) or two calls in a row failed.
func (l *load) run(ctx context.Context, hosts int) *sync.WaitGroup {
	var wg sync.WaitGroup
	rt := &http.Transport{MaxIdleConnsPerHost: 2 * hosts, IdleConnTimeout: 30 * time.Second}
	for h := range hosts {
		wg.Go(func() { l.host(ctx, h, h%len(l.tokens), rt) })
	}
	return &wg
}

func (l *load) host(ctx context.Context, h, u int, rt http.RoundTripper) {
	ht := &hostTransport{token: l.tokens[u], next: rt}
	hc := &http.Client{Transport: ht}
	var cs *mcp.ClientSession
	defer func() {
		if cs != nil {
			cs.Close()
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(h), 23))
	fails := 0
	epoch := l.epoch.Load()
	for seq := 0; ctx.Err() == nil; seq++ {
		for l.paused.Load() && ctx.Err() == nil {
			sleep(ctx, 50*time.Millisecond)
		}
		if e := l.epoch.Load(); e != epoch && cs != nil {
			// The benchmark spreads the hosts again over the replicas.
			epoch = e
			cs.Close()
			cs = nil
		}
		if cs == nil {
			ictx, cancel := context.WithTimeout(ctx, hostTimeout)
			c := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("chaos-host-%d", h), Version: "1"}, nil)
			s, err := c.Connect(ictx, &mcp.StreamableClientTransport{Endpoint: l.endpoint, HTTPClient: hc}, nil)
			cancel()
			if err != nil {
				l.initFails.Add(1)
				sleep(ctx, 200*time.Millisecond)
				continue
			}
			l.reinits.Add(1)
			cs, fails = s, 0
		}
		nonce := fmt.Sprintf("u%02d-h%02d-%06d", u, h, seq)
		c := call{host: h, user: u, nonce: nonce, start: time.Now()}
		cctx, cancel := context.WithTimeout(ctx, hostTimeout)
		ht.replica.Store("")
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: serverID(seq%l.servers) + "__once", Arguments: map[string]any{"nonce": nonce}})
		cancel()
		c.end = time.Now()
		c.replica, _ = ht.replica.Load().(string)
		switch {
		case err != nil:
			c.err = err.Error()
		case res.IsError:
			c.err = "tool error: " + text(res)
		default:
			c.ok = true
			if m, ok := res.StructuredContent.(map[string]any); ok {
				c.caller, _ = m["caller"].(string)
			}
		}
		if ctx.Err() != nil && !c.ok {
			return // the run ended under the call: not a failure of the gateway
		}
		l.mu.Lock()
		l.calls = append(l.calls, c)
		l.mu.Unlock()
		if c.ok {
			fails = 0
		} else {
			fails++
			if errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed) || fails >= 2 {
				cs.Close()
				cs = nil
			}
		}
		sleep(ctx, time.Duration(100+rng.IntN(201))*time.Millisecond)
	}
}

// snapshot is every call so far.
func (l *load) snapshot() []call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]call(nil), l.calls...)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// --- the editor -----------------------------------------------------------

// edit is one change the editor asked for through the load balancer.
type edit struct {
	at, end time.Time
	op      string // rename, add, remove, signin
	id      string // the server
	value   string // the new name (rename)
	// outcome: ok; refused (the gateway answered an error: nothing was
	// written); unknown (no answer: it may have been written).
	outcome string
	err     string
}

// editor changes the spare person's servers through the load balancer
// (so through any replica) until ctx ends: renames of three fixed
// servers with the revision it read (a late write of a frozen replica
// must be refused by it), adds of new servers and removes of added ones.
type editor struct {
	c            *cluster
	fxURL, asURL string

	mu    sync.Mutex
	edits []edit
	// paused stops the editing between two edits; idle says it has.
	paused, idle atomic.Bool
}

// pause waits until the editor is between two edits and keeps it there
// until resume: the database holds still while a replica catches up.
func (e *editor) pause() {
	e.paused.Store(true)
	for !e.idle.Load() {
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *editor) resume() { e.paused.Store(false) }

// editTimeout bounds one edit: one that reached a frozen replica ends
// without an answer ("unknown") and the editor goes on.
const editTimeout = 5 * time.Second

func (e *editor) setUp(ctx context.Context) error {
	p := e.c.person(spare)
	no := false
	for i := range 3 {
		if _, err := p.AddServer(ctx, localapi.AddServerRequest{ID: fmt.Sprintf("fixed-%d", i), Name: "initial", URL: e.fxURL, Auth: config.AuthOAuth, Enabled: &no}); err != nil {
			return fmt.Errorf("the editor's servers: %w", err)
		}
	}
	// The server of the frozen replica's late write.
	if _, err := p.AddServer(ctx, localapi.AddServerRequest{ID: "late", Name: "initial", URL: e.fxURL, Auth: config.AuthOAuth, Enabled: &no}); err != nil {
		return fmt.Errorf("the editor's servers: %w", err)
	}
	// A server the spare person signs in to during the database's outage.
	if _, err := p.AddServer(ctx, localapi.AddServerRequest{ID: "signin", URL: e.fxURL, Auth: config.AuthOAuth}); err != nil {
		return fmt.Errorf("the editor's servers: %w", err)
	}
	return p.Grant(ctx, e.asURL, "")
}

func (e *editor) run(ctx context.Context) {
	p := e.c.person(spare)
	no := false
	var added []string
	for i := 0; ctx.Err() == nil; i++ {
		for e.paused.Load() && ctx.Err() == nil {
			e.idle.Store(true)
			sleep(ctx, 10*time.Millisecond)
		}
		e.idle.Store(false)
		var ed edit
		ectx, cancel := context.WithTimeout(ctx, editTimeout)
		ed.at = time.Now()
		var err error
		switch i % 4 {
		case 0, 2:
			ed.op, ed.id, ed.value = "rename", fmt.Sprintf("fixed-%d", (i/2)%3), fmt.Sprintf("name-%d", i)
			var s *localapi.Server
			if s, err = p.Server(ectx, ed.id); err == nil {
				_, err = p.UpdateServer(ectx, ed.id, localapi.UpdateServerRequest{Revision: s.Revision, Name: &ed.value})
			} else {
				ed.op = "rename-read"
			}
		case 1:
			ed.op, ed.id = "add", fmt.Sprintf("added-%d", i)
			_, err = p.AddServer(ectx, localapi.AddServerRequest{ID: ed.id, URL: e.fxURL, Auth: config.AuthOAuth, Enabled: &no})
			added = append(added, ed.id)
		case 3:
			if len(added) < 2 {
				cancel()
				continue
			}
			ed.op, ed.id = "remove", added[0]
			added = added[1:]
			err = p.RemoveServer(ectx, ed.id)
		}
		cancel()
		ed.end = time.Now()
		switch le := (*localapi.Error)(nil); {
		case err == nil:
			ed.outcome = "ok"
		case errors.As(err, &le):
			ed.outcome, ed.err = "refused", le.Message
		default:
			ed.outcome, ed.err = "unknown", err.Error()
		}
		stopped := ctx.Err() != nil
		if stopped && ed.outcome != "ok" {
			// The load ended under this edit: the request may have been
			// carried out all the same (a remove sent just before the
			// end), so it counts as unanswered, not as never made.
			ed.outcome = "unknown"
		}
		e.mu.Lock()
		e.edits = append(e.edits, ed)
		e.mu.Unlock()
		if stopped {
			return
		}
		sleep(ctx, 250*time.Millisecond)
	}
}

// trySignIn starts a sign-in of the spare person (during the database's
// outage: it must fail clearly) and records it.
func (e *editor) trySignIn(ctx context.Context) {
	p := e.c.person(spare)
	ed := edit{at: time.Now(), op: "signin", id: "signin"}
	ectx, cancel := context.WithTimeout(ctx, editTimeout)
	fl, err := p.Authorize(ectx, "signin")
	cancel()
	ed.end = time.Now()
	switch le := (*localapi.Error)(nil); {
	case err == nil && fl.Phase == localapi.PhaseFailed:
		ed.outcome, ed.err = "refused", fl.Error
	case err == nil:
		ed.outcome = "ok"
	case errors.As(err, &le):
		ed.outcome, ed.err = "refused", le.Message
	default:
		ed.outcome, ed.err = "unknown", err.Error()
	}
	e.mu.Lock()
	e.edits = append(e.edits, ed)
	e.mu.Unlock()
}

func (e *editor) snapshot() []edit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]edit(nil), e.edits...)
}
