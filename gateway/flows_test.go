package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// Sign-ins across replicas (issue #23, SPEC §9 A11): two gateways on one
// PostgreSQL database, each with its page (daemon) on its own port and
// one public URL for both, as behind a load balancer. The test MCP
// server sits behind the bundled OAuth authorization server.

// replica is one gateway with its database handle and page.
type replica struct {
	pg   *store.Postgres
	gw   *gateway.Gateway
	page string // the page's own address (not the public URL)
	stop func()
}

type replicaWorld struct {
	ctx    context.Context
	as     *authserver.Server
	fx     *fixture.Server
	public string // the public URL of both pages
	r      [2]*replica
}

func newReplicaWorld(t *testing.T) *replicaWorld {
	t.Helper()
	ctx := testkit.Context(t)
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	w := &replicaWorld{ctx: ctx, as: as, fx: testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})}
	// The load balancer's address: never dialled (authserver.Approve
	// reads the redirect instead of following it).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.public = "http://" + ln.Addr().String()
	ln.Close()
	dsn, keyDir := pgtest.DSN(t), t.TempDir() // every replica has the same key file
	for i := range w.r {
		w.r[i] = w.startReplica(t, dsn, keyDir)
	}
	return w
}

func (w *replicaWorld) startReplica(t *testing.T, dsn, keyDir string) *replica {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	pg, err := store.OpenPostgres(w.ctx, dsn, store.PostgresOptions{KeyDir: keyDir, Options: store.Options{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	r := &replica{pg: pg, gw: gateway.New(gateway.Options{DB: pg, Engine: engine.Options{Logger: log}, Logger: log})}
	t.Cleanup(func() { r.gw.Close() })
	// A page with a public URL needs a way in; the proxy is never used.
	si := &daemon.SignIn{TrustedUserHeader: "X-Person", TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, PublicURL: w.public}
	srv, err := daemon.New(daemon.Options{Gateway: r.gw, SignIn: si, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(w.ctx); err != nil {
		t.Fatal(err)
	}
	r.page = srv.URL()
	sctx, stop := context.WithCancel(w.ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			stop()
			if err := <-served; err != nil {
				t.Errorf("daemon Serve: %v", err)
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

// addPerson adds a person on replica 0 with the OAuth test server as
// "team", the origins granted.
func (w *replicaWorld) addPerson(t *testing.T, email string) {
	t.Helper()
	if _, err := w.r[0].gw.AddUser(w.ctx, email); err != nil {
		t.Fatal(err)
	}
	eng := w.engine(t, 0, email)
	if _, err := eng.AddServer(w.ctx, localapi.AddServerRequest{ID: "team", URL: w.fx.URL(), Auth: config.AuthOAuth, By: localapi.ByServersAdd}); err != nil {
		t.Fatal(err)
	}
	for _, origin := range []string{"http://" + w.fx.Addr(), w.as.URL()} {
		if err := eng.Grant(w.ctx, origin, ""); err != nil {
			t.Fatal(err)
		}
	}
}

func (w *replicaWorld) engine(t *testing.T, i int, email string) *engine.Engine {
	t.Helper()
	e, _, err := w.r[i].gw.Engine(w.ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// startSignIn starts email's sign-in to "team" on replica i and returns
// the callback's parameters, as the authorization server sent the
// browser back with them.
func (w *replicaWorld) startSignIn(t *testing.T, i int, email string) url.Values {
	t.Helper()
	fl, err := w.engine(t, i, email).Authorize(w.ctx, "team")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize on replica %d: %+v %v", i, fl, err)
	}
	au, err := url.Parse(fl.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := au.Query().Get("redirect_uri"), w.public+"/mcp-oauth"; got != want || fl.RedirectURI != want {
		t.Fatalf("redirect URI %q (flow %q), want the public one %q", got, fl.RedirectURI, want)
	}
	q, err := authserver.Approve(w.ctx, nil, fl.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	if q.Get("code") == "" || q.Get("state") == "" {
		t.Fatalf("callback without code or state: %v", q)
	}
	return q
}

// deliver GETs the callback on replica i's page, as the load balancer
// would forward it, and returns the status and page.
func (w *replicaWorld) deliver(t *testing.T, i int, q url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(w.ctx, http.MethodGet, w.r[i].page+"/mcp-oauth?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// codeExchanges counts the authorization server's code exchanges (not
// the refreshes, which the replicas make as they need).
func (w *replicaWorld) codeExchanges() int {
	n := 0
	for _, r := range w.as.RequestsTo("/token") {
		if r.Form.Get("grant_type") == "authorization_code" {
			n++
		}
	}
	return n
}

// flowRows counts the sign-ins the database keeps.
func (w *replicaWorld) flowRows(t *testing.T) int {
	t.Helper()
	var n int
	if err := w.r[0].pg.DB().QueryRowContext(w.ctx, `SELECT count(*) FROM oauth_flows`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// refreshOwners are the users with a refresh token stored.
func (w *replicaWorld) refreshOwners(t *testing.T) []string {
	t.Helper()
	rows, err := w.r[0].pg.DB().QueryContext(w.ctx, `SELECT user_id FROM secrets WHERE purpose = $1 ORDER BY user_id`, store.PurposeRefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func (w *replicaWorld) userID(t *testing.T, email string) string {
	t.Helper()
	u, err := w.r[0].pg.UserByEmail(w.ctx, email)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// callEcho calls the test server's echo tool as email on replica i.
func (w *replicaWorld) callEcho(t *testing.T, i int, email string) {
	t.Helper()
	text := "through replica " + string(rune('A'+i))
	res, err := w.engine(t, i, email).Call(w.ctx, localapi.CallRequest{Tool: "team/echo", Arguments: json.RawMessage(`{"text":"` + text + `"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != text {
		t.Fatalf("call on replica %d: %+v %v", i, res, err)
	}
}

// The callback of a sign-in started on replica A lands on replica B: B
// takes it from the database, exchanges the code with the stored
// verifier and stores the grant; A's flow ends signed in; the record is
// gone; the person's calls work on both; a replay on A is refused and
// spends nothing.
func TestSignInCallbackOnAnotherReplica(t *testing.T) {
	w := newReplicaWorld(t)
	const alice = "alice@example.com"
	w.addPerson(t, alice)
	q := w.startSignIn(t, 0, alice)
	if n := w.flowRows(t); n != 1 {
		t.Fatalf("%d flows in the database while one waits, want 1", n)
	}
	var stored int
	if err := w.r[0].pg.DB().QueryRowContext(w.ctx, `SELECT count(*) FROM oauth_flows WHERE state_hash = $1 AND position(convert_to($2, 'UTF8') in sealed) = 0`,
		store.AuthStateHash(q.Get("state")), q.Get("state")).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("the flow is not found by its state's hash, or its record shows the state: %d %v", stored, err)
	}
	registered := w.as.RequestsTo("/register")
	if len(registered) != 1 || !strings.Contains(string(registered[0].Body), `"`+w.public+`/mcp-oauth"`) {
		t.Fatalf("registration: %d requests, %+v", len(registered), registered)
	}

	status, page := w.deliver(t, 1, q)
	if status != http.StatusOK || !strings.Contains(page, "Authorization complete") {
		t.Fatalf("callback on replica B: %d %s", status, page)
	}
	fl, err := w.engine(t, 0, alice).WaitAuthorization(w.ctx, "team")
	if err != nil || fl.Phase != localapi.PhaseDone || fl.Result == nil || !fl.Result.RefreshToken {
		t.Fatalf("the flow on replica A: %+v %v", fl, err)
	}
	if n := w.flowRows(t); n != 0 {
		t.Fatalf("%d flows left in the database after the sign-in, want 0", n)
	}
	if got := w.refreshOwners(t); len(got) != 1 || got[0] != w.userID(t, alice) {
		t.Fatalf("refresh tokens stored for %v, want Alice's only", got)
	}
	w.callEcho(t, 0, alice)
	w.callEcho(t, 1, alice)

	tokens := w.codeExchanges()
	for i := range w.r {
		if status, _ := w.deliver(t, i, q); status != http.StatusNotFound && status != http.StatusConflict {
			t.Fatalf("replayed callback on replica %d: %d, want refused", i, status)
		}
		if _, err := w.r[i].gw.CompleteAuthorization(w.ctx, q); err == nil {
			t.Fatalf("replayed callback accepted by replica %d", i)
		}
	}
	if got := w.codeExchanges(); got != tokens {
		t.Fatalf("a replay reached the token endpoint (%d requests, were %d)", got, tokens)
	}
}

// A callback is taken once even when it reaches both replicas at the
// same moment: one completes it, the other refuses it, the code is
// exchanged once.
func TestSignInCallbackTakenOnce(t *testing.T) {
	w := newReplicaWorld(t)
	const alice = "alice@example.com"
	w.addPerson(t, alice)
	w.engine(t, 1, alice) // open on B too: the race is between two engines
	q := w.startSignIn(t, 0, alice)
	var statuses [2]int
	var wg sync.WaitGroup
	for i := range w.r {
		wg.Go(func() { statuses[i], _ = w.deliver(t, i, q) })
	}
	wg.Wait()
	ok := 0
	for i, s := range statuses {
		switch s {
		case http.StatusOK:
			ok++
		case http.StatusNotFound, http.StatusConflict:
		default:
			t.Fatalf("replica %d answered %d", i, s)
		}
	}
	if ok != 1 {
		t.Fatalf("answers %v: want exactly one success", statuses)
	}
	if token := w.codeExchanges(); token != 1 {
		t.Fatalf("%d code exchanges, want 1", token)
	}
	if fl, err := w.engine(t, 0, alice).WaitAuthorization(w.ctx, "team"); err != nil || fl.Phase != localapi.PhaseDone {
		t.Fatalf("the flow on replica A: %+v %v", fl, err)
	}
}

// Alice's callback reaching a replica where Bob's engine is open lands
// in Alice's store: Bob's is unchanged. An unknown state, and the state
// of an expired flow, are 404 on every replica and change nothing.
func TestSignInCallbackPersonAndUnknownState(t *testing.T) {
	w := newReplicaWorld(t)
	const alice, bob = "alice@example.com", "bob@example.com"
	w.addPerson(t, alice)
	w.addPerson(t, bob)
	w.engine(t, 1, bob)
	q := w.startSignIn(t, 0, alice)
	if status, page := w.deliver(t, 1, q); status != http.StatusOK {
		t.Fatalf("callback on replica B: %d %s", status, page)
	}
	if got := w.refreshOwners(t); len(got) != 1 || got[0] != w.userID(t, alice) {
		t.Fatalf("refresh tokens stored for %v, want Alice's (%s) only", got, w.userID(t, alice))
	}
	for i := range w.r {
		st, err := w.engine(t, i, bob).AuthStatus(w.ctx, "team")
		if err != nil || len(st) != 1 || st[0].SignedIn || st[0].Binding != nil {
			t.Fatalf("Bob's sign-in status on replica %d: %+v %v", i, st, err)
		}
	}

	tokens := w.codeExchanges()
	unknown := url.Values{"code": {"c"}, "state": {"no-such-state"}}
	// Bob's flow, expired: its record is there, but no one's.
	expired := w.startSignIn(t, 0, bob)
	if _, err := w.r[0].pg.DB().ExecContext(w.ctx, `UPDATE oauth_flows SET expires = 0`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []url.Values{unknown, expired} {
		for i := range w.r {
			if status, page := w.deliver(t, i, q); status == http.StatusOK || strings.Contains(page, "complete") {
				t.Fatalf("state %q on replica %d: %d %s", q.Get("state"), i, status, page)
			}
			_, err := w.r[i].gw.CompleteAuthorization(w.ctx, q)
			if e, ok := localapi.AsError(err); !ok || e.Code != localapi.CodeNotFound {
				t.Fatalf("state %q on replica %d: %v, want not found", q.Get("state"), i, err)
			}
		}
	}
	if got := w.codeExchanges(); got != tokens {
		t.Fatalf("an unknown or expired state reached the token endpoint")
	}
	if got := w.refreshOwners(t); len(got) != 1 {
		t.Fatalf("refresh tokens stored for %v after unknown states, want Alice's only", got)
	}
}

// The replica that started a sign-in is gone (closed) when the callback
// reaches another: that one completes it all the same.
func TestSignInCallbackOriginatorGone(t *testing.T) {
	w := newReplicaWorld(t)
	const alice = "alice@example.com"
	w.addPerson(t, alice)
	q := w.startSignIn(t, 0, alice)
	w.r[0].stop()
	if err := w.r[0].gw.Close(); err != nil {
		t.Fatal(err)
	}
	if n := w.flowRows(t); n != 1 {
		t.Fatalf("%d flows in the database after the replica closed, want its one", n)
	}
	status, page := w.deliver(t, 1, q)
	if status != http.StatusOK || !strings.Contains(page, "Authorization complete") {
		t.Fatalf("callback on replica B: %d %s", status, page)
	}
	w.callEcho(t, 1, alice)
	if status, _ := w.deliver(t, 1, q); status != http.StatusConflict && status != http.StatusNotFound {
		t.Fatalf("replay on replica B: %d", status)
	}
}
