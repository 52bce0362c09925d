package hostperm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgtest.Wrap(m))
}

// testPoll keeps cross-process tests fast.
const testPoll = 10 * time.Millisecond

func openStore(t testing.TB, dir string) *store.DB {
	t.Helper()
	s, err := store.Open(context.Background(), dir, store.Options{PollInterval: testPoll})
	if err != nil {
		t.Fatalf("store.Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newBroker(t testing.TB, kv KV, opts Options) *Broker {
	t.Helper()
	b := New(kv, opts)
	t.Cleanup(func() { b.Close() })
	return b
}

// fakeClock advances one second per reading, so every event has its own
// time and ordering by time is deterministic.
type fakeClock struct{ n atomic.Int64 }

func (c *fakeClock) Now() time.Time {
	return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(c.n.Add(1)) * time.Second)
}

// countingServer is a loopback server that counts the requests it gets.
type countingServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	cs := &countingServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(cs.Close)
	return cs
}

// guardedClient is an http.Client whose transport is b's guard over a
// private http.Transport, closed at cleanup so no connection goroutine
// outlives the test.
func guardedClient(t *testing.T, b *Broker) *http.Client {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: b.Transport(base), Timeout: 10 * time.Second}
}

// closeTracker records whether a request body was closed.
type closeTracker struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeTracker) Close() error { c.closed.Store(true); return nil }

func do(ctx context.Context, c *http.Client, method, url string, body io.ReadCloser) error {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func findPending(ps []Pending, origin string, purpose Purpose, serverID string) (Pending, bool) {
	for _, p := range ps {
		if p.Origin == origin && p.Purpose == purpose && p.ServerID == serverID {
			return p, true
		}
	}
	return Pending{}, false
}

func TestTransportGuard(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		path     string
		body     string
		purpose  Purpose
		serverID string
	}{
		{"mcp POST", http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, PurposeMCP, "docs"},
		{"PRM GET", http.MethodGet, "/.well-known/oauth-protected-resource/mcp", "", PurposeDiscoveryPRM, "docs"},
		{"AS metadata GET", http.MethodGet, "/.well-known/oauth-authorization-server", "", PurposeDiscoveryAS, "docs"},
		{"registration POST", http.MethodPost, "/register", `{}`, PurposeRegistration, "wiki"},
		{"token POST", http.MethodPost, "/token", "grant_type=refresh_token", PurposeToken, "wiki"},
		{"no purpose in context", http.MethodGet, "/", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := newBroker(t, openStore(t, t.TempDir()), Options{})
			srv := newCountingServer(t, nil)
			client := guardedClient(t, b)
			origin := srv.URL // httptest gives http://127.0.0.1:port, already canonical
			url := srv.URL + tc.path
			rctx := ctx
			if tc.purpose != "" || tc.serverID != "" {
				rctx = WithPurpose(ctx, tc.purpose, tc.serverID)
			}
			var body *closeTracker
			send := func() error {
				var rc io.ReadCloser
				if tc.body != "" {
					body = &closeTracker{Reader: strings.NewReader(tc.body)}
					rc = body
				}
				return do(rctx, client, tc.method, url, rc)
			}

			// No grant: refused before anything leaves, loopback included.
			err := send()
			var perr *PermissionRequiredError
			if !errors.As(err, &perr) {
				t.Fatalf("without grant: err = %v, want *PermissionRequiredError", err)
			}
			if !errors.Is(err, ErrPermissionRequired) {
				t.Errorf("errors.Is(err, ErrPermissionRequired) = false for %v", err)
			}
			if perr.Origin != origin || perr.Purpose != tc.purpose || perr.ServerID != tc.serverID {
				t.Errorf("error = %+v, want origin %s purpose %q server %q", perr, origin, tc.purpose, tc.serverID)
			}
			if n := srv.hits.Load(); n != 0 {
				t.Fatalf("server got %d requests without a grant, want 0", n)
			}
			if body != nil && !body.closed.Load() {
				t.Errorf("refused request's body was not closed")
			}
			ps, err := b.Pending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := findPending(ps, origin, tc.purpose, tc.serverID); !ok || p.Count != 1 || len(ps) != 1 {
				t.Fatalf("pending = %+v, want one entry for %s %q %q", ps, origin, tc.purpose, tc.serverID)
			}

			// Granted: the same request goes through, and the pending
			// approval is gone.
			if err := b.Grant(ctx, origin, BySettingsPage); err != nil {
				t.Fatal(err)
			}
			if err := send(); err != nil {
				t.Fatalf("after grant: %v", err)
			}
			if err := send(); err != nil { // served from the cache
				t.Fatalf("after grant, second request: %v", err)
			}
			if n := srv.hits.Load(); n != 2 {
				t.Fatalf("server got %d requests after grant, want 2", n)
			}
			if ps, err := b.Pending(ctx); err != nil || len(ps) != 0 {
				t.Fatalf("pending after grant = %+v, %v; want none", ps, err)
			}

			// Revoked: closed again.
			if err := b.Revoke(ctx, origin); err != nil {
				t.Fatal(err)
			}
			if err := send(); !errors.As(err, &perr) {
				t.Fatalf("after revoke: err = %v, want *PermissionRequiredError", err)
			}
			if n := srv.hits.Load(); n != 2 {
				t.Fatalf("server got %d requests, want still 2 after revoke", n)
			}
		})
	}
}

func TestRedirectStoppedAtSecondHop(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, openStore(t, t.TempDir()), Options{})
	target := newCountingServer(t, nil)
	// target and start are both 127.0.0.1 but on different ports: different
	// origins.
	start := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/.well-known/oauth-authorization-server", http.StatusFound)
	})
	if err := b.Grant(ctx, start.URL, ByServersAdd); err != nil {
		t.Fatal(err)
	}
	client := guardedClient(t, b)

	err := do(WithPurpose(ctx, PurposeDiscoveryAS, "docs"), client, http.MethodGet, start.URL+"/x", nil)
	var perr *PermissionRequiredError
	if !errors.As(err, &perr) || perr.Origin != target.URL {
		t.Fatalf("err = %v, want *PermissionRequiredError for %s", err, target.URL)
	}
	if start.hits.Load() != 1 || target.hits.Load() != 0 {
		t.Fatalf("hits: start %d target %d, want 1 and 0", start.hits.Load(), target.hits.Load())
	}
	ps, err := b.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := findPending(ps, target.URL, PurposeDiscoveryAS, "docs"); !ok || len(ps) != 1 {
		t.Fatalf("pending = %+v, want the redirect target", ps)
	}

	// Once the user grants the target too, the redirect is followed.
	if err := b.Grant(ctx, target.URL, ByCLI); err != nil {
		t.Fatal(err)
	}
	if err := do(ctx, client, http.MethodGet, start.URL+"/x", nil); err != nil {
		t.Fatal(err)
	}
	if target.hits.Load() != 1 {
		t.Fatalf("target hits = %d, want 1", target.hits.Load())
	}
}

func TestOriginNormalization(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		grant, want string
		same        []string // URLs that must be allowed by the grant
		other       []string // URLs that must not
	}{
		{
			grant: "HTTPS://Example.COM:443",
			want:  "https://example.com",
			same:  []string{"https://example.com", "https://example.com/", "https://EXAMPLE.com/mcp?x=1", "https://example.com:443/a#frag", "https://example.com:/p"},
			other: []string{"http://example.com", "https://example.com:8443", "https://www.example.com", "https://example.com.evil.test"},
		},
		{
			grant: "http://LOCALHOST:80/",
			want:  "http://localhost",
			same:  []string{"http://localhost/mcp", "HTTP://localhost:80"},
			other: []string{"http://localhost:8080", "https://localhost", "http://127.0.0.1"},
		},
		{
			grant: "http://[0:0:0:0:0:0:0:1]:8080",
			want:  "http://[::1]:8080",
			same:  []string{"http://[::1]:8080/mcp"},
			other: []string{"http://[::1]", "http://127.0.0.1:8080"},
		},
		{
			grant: "https://as.example.com:8443",
			want:  "https://as.example.com:8443",
			same:  []string{"https://AS.example.com:8443/token"},
			other: []string{"https://as.example.com", "https://as.example.com:443"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.grant, func(t *testing.T) {
			b := newBroker(t, openStore(t, t.TempDir()), Options{})
			if err := b.Grant(ctx, tc.grant, ByCLI); err != nil {
				t.Fatal(err)
			}
			gs, err := b.Grants(ctx)
			if err != nil || len(gs) != 1 || gs[0].Origin != tc.want || gs[0].By != ByCLI || gs[0].GrantedAt.IsZero() {
				t.Fatalf("grants = %+v, %v; want one for %s", gs, err, tc.want)
			}
			for _, u := range tc.same {
				if err := b.Check(ctx, u, PurposeMCP, "s"); err != nil {
					t.Errorf("Check(%s) = %v, want allowed", u, err)
				}
				if ok, err := b.Allowed(ctx, u); !ok || err != nil {
					t.Errorf("Allowed(%s) = %v, %v", u, ok, err)
				}
			}
			for _, u := range tc.other {
				if err := b.Check(ctx, u, PurposeMCP, "s"); !errors.Is(err, ErrPermissionRequired) {
					t.Errorf("Check(%s) = %v, want permission required", u, err)
				}
			}
			// Granting another spelling of the same origin changes nothing.
			if err := b.Grant(ctx, strings.ToUpper(tc.want), BySettingsPage); err != nil {
				t.Fatal(err)
			}
			if gs2, err := b.Grants(ctx); err != nil || len(gs2) != 1 || gs2[0] != gs[0] {
				t.Fatalf("grants after re-grant = %+v, %v; want unchanged %+v", gs2, err, gs)
			}
			// Revoke accepts any spelling too.
			if err := b.Revoke(ctx, tc.grant); err != nil {
				t.Fatal(err)
			}
			if err := b.Check(ctx, tc.same[0], PurposeMCP, "s"); !errors.Is(err, ErrPermissionRequired) {
				t.Errorf("after revoke Check(%s) = %v", tc.same[0], err)
			}
		})
	}
}

func TestLoopbackGetsNoPass(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, openStore(t, t.TempDir()), Options{})
	for _, u := range []string{"http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:3000", "http://127.0.0.1/mcp-oauth"} {
		if err := b.Check(ctx, u, PurposeMCP, "local"); !errors.Is(err, ErrPermissionRequired) {
			t.Errorf("Check(%s) = %v, want permission required", u, err)
		}
	}
}

func TestCrossProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Two *DB over one data directory behave as two processes: writes
	// of one reach the other's change feed only through the poller.
	daemon := newBroker(t, openStore(t, dir), Options{})
	cli := newBroker(t, openStore(t, dir), Options{})
	const origin = "https://mcp.example.com"

	if err := daemon.Check(ctx, origin+"/mcp", PurposeMCP, "docs"); !errors.Is(err, ErrPermissionRequired) {
		t.Fatalf("before grant: %v", err)
	}
	// The other process sees the daemon's pending approval ...
	if ps, err := cli.Pending(ctx); err != nil || len(ps) != 1 || ps[0].Origin != origin {
		t.Fatalf("pending seen by cli = %+v, %v", ps, err)
	}
	// ... and its grant is honoured by the daemon at once (a miss re-reads).
	if err := cli.Grant(ctx, origin, ByCLI); err != nil {
		t.Fatal(err)
	}
	if err := daemon.Check(ctx, origin+"/mcp", PurposeMCP, "docs"); err != nil {
		t.Fatalf("after grant in other process: %v", err)
	}
	if ps, err := daemon.Pending(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("pending after grant = %+v, %v", ps, err)
	}

	// A revoke in the other process closes the daemon's cached grant within
	// a few poll intervals.
	if err := cli.Revoke(ctx, origin); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the daemon to notice the revoke in another process", func() bool {
		err := daemon.Check(ctx, origin+"/mcp", PurposeMCP, "docs")
		if err != nil && !errors.Is(err, ErrPermissionRequired) {
			t.Fatal(err)
		}
		return err != nil
	})
}

func TestCloseKeepsWorkingUncached(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := New(openStore(t, dir), Options{})
	other := newBroker(t, openStore(t, dir), Options{})
	if err := other.Grant(ctx, "https://x.example", ByCLI); err != nil {
		t.Fatal(err)
	}
	if err := a.Check(ctx, "https://x.example", PurposeMCP, ""); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := other.Revoke(ctx, "https://x.example"); err != nil {
		t.Fatal(err)
	}
	// Without the feed nothing may be cached: the revoke is seen at once.
	if err := a.Check(ctx, "https://x.example", PurposeMCP, ""); !errors.Is(err, ErrPermissionRequired) {
		t.Fatalf("after Close and revoke elsewhere: %v", err)
	}
}

// plainKV hides Subscribe, as a KV without a change feed.
type plainKV struct{ KV }

func TestKVWithoutFeed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := New(plainKV{openStore(t, dir)}, Options{})
	other := New(plainKV{openStore(t, dir)}, Options{})
	if err := other.Grant(ctx, "https://x.example", ByCLI); err != nil {
		t.Fatal(err)
	}
	if err := b.Check(ctx, "https://x.example/a", PurposeMCP, ""); err != nil {
		t.Fatal(err)
	}
	if err := other.Revoke(ctx, "https://x.example"); err != nil {
		t.Fatal(err)
	}
	if err := b.Check(ctx, "https://x.example/a", PurposeMCP, ""); !errors.Is(err, ErrPermissionRequired) {
		t.Fatalf("after revoke: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, openStore(t, t.TempDir()), Options{})
	tests := []struct {
		in   string
		want string // part of the message
		// checkOK: Check/Allowed accept it (a full URL is fine there)
		checkOK bool
	}{
		{"", "is empty", false},
		{"as.example.com", "has no scheme; write it in full, such as https://as.example.com", false},
		{"ftp://as.example.com", `scheme "ftp" is not supported`, false},
		{"https://", "no host", false},
		{"https://user:pw@as.example.com", "user information", false},
		{"https://as.example.com:99999", "out of range", false},
		{"https://as example.com", "whitespace", false},
		{" https://as.example.com", "whitespace", false},
		{"https://exa%6dple.com", "not allowed in a host name", false},
		{"https://010.0.0.1", "not a valid IPv4 address", false},
		{"https://[fe80::1%25eth0]", "zone", false},
		{"https://as.example.com/mcp", "give only the origin https://as.example.com", true},
		{"https://as.example.com?x=1", "give only the origin", true},
		{"https://as.example.com/#x", "fragment", true},
		{strings.Repeat("a", 5000), "...", false},
	}
	for _, tc := range tests {
		name := tc.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			for _, op := range []struct {
				name string
				fn   func() error
			}{
				{"Grant", func() error { return b.Grant(ctx, tc.in, ByCLI) }},
				{"Revoke", func() error { return b.Revoke(ctx, tc.in) }},
				{"DismissPending", func() error { return b.DismissPending(ctx, tc.in) }},
			} {
				err := op.fn()
				if !errors.Is(err, ErrInvalidOrigin) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s(%q) = %v; want ErrInvalidOrigin mentioning %q", op.name, tc.in, err, tc.want)
				}
				if len(err.Error()) > 600 {
					t.Errorf("%s: message is %d bytes long", op.name, len(err.Error()))
				}
			}
			err := b.Check(ctx, tc.in, PurposeMCP, "s")
			_, aerr := b.Allowed(ctx, tc.in)
			if tc.checkOK {
				if !errors.Is(err, ErrPermissionRequired) || aerr != nil {
					t.Errorf("Check = %v, Allowed err = %v; want permission required and nil", err, aerr)
				}
			} else {
				var fe *config.FieldError
				if !errors.Is(err, ErrInvalidOrigin) || !errors.As(err, &fe) || !errors.Is(aerr, ErrInvalidOrigin) {
					t.Errorf("Check = %v, Allowed err = %v; want ErrInvalidOrigin with a *config.FieldError", err, aerr)
				}
			}
		})
	}
	// Only refusals of well-formed URLs become pending approvals.
	ps, err := b.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Origin != "https://as.example.com" {
			t.Errorf("unexpected pending %+v", p)
		}
	}
	if gs, err := b.Grants(ctx); err != nil || len(gs) != 0 {
		t.Errorf("grants = %+v, %v; want none", gs, err)
	}
}

func TestGrantNeedsUserAction(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, openStore(t, t.TempDir()), Options{})
	for _, by := range []string{"", "auto", "discovery", "User: cli"} {
		if err := b.Grant(ctx, "https://as.example.com", by); err == nil || !strings.Contains(err.Error(), "user action") {
			t.Errorf("Grant(by=%q) = %v, want refused", by, err)
		}
	}
	for _, by := range []string{BySettingsPage, ByCLI, ByServersAdd} {
		o := "https://" + strings.ReplaceAll(strings.TrimPrefix(by, "user: "), " ", "-") + ".example"
		if err := b.Grant(ctx, o, by); err != nil {
			t.Errorf("Grant(by=%q) = %v", by, err)
		}
	}
}

func TestRevokeWithoutGrant(t *testing.T) {
	b := newBroker(t, openStore(t, t.TempDir()), Options{})
	if err := b.Revoke(context.Background(), "https://nothing.example"); !errors.Is(err, ErrNotGranted) {
		t.Fatalf("Revoke = %v, want ErrNotGranted", err)
	}
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  PermissionRequiredError
		want string
	}{
		{
			PermissionRequiredError{"https://as.example.com", PurposeDiscoveryAS, "docs"},
			`permission required: remotemcp has no grant for https://as.example.com (authorization-server metadata for server "docs")`,
		},
		{
			PermissionRequiredError{"https://mcp.example.com", PurposeMCP, ""},
			`permission required: remotemcp has no grant for https://mcp.example.com (MCP endpoint)`,
		},
		{
			PermissionRequiredError{"http://127.0.0.1:9", "", ""},
			`permission required: remotemcp has no grant for http://127.0.0.1:9 (request)`,
		},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

func TestPendingDedupAndBound(t *testing.T) {
	ctx := context.Background()
	clk := &fakeClock{}
	b := newBroker(t, openStore(t, t.TempDir()), Options{MaxPending: 3, Now: clk.Now})
	check := func(u string, p Purpose, s string) {
		t.Helper()
		if err := b.Check(ctx, u, p, s); !errors.Is(err, ErrPermissionRequired) {
			t.Fatalf("Check(%s) = %v", u, err)
		}
	}
	check("https://a.example/x", PurposeMCP, "s1")
	check("HTTPS://A.example:443/y", PurposeMCP, "s1") // same triple
	check("https://a.example", PurposeToken, "s1")     // other purpose
	check("https://a.example", PurposeMCP, "s2")       // other server
	ps, err := b.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("pending = %+v, want 3 entries", ps)
	}
	p, _ := findPending(ps, "https://a.example", PurposeMCP, "s1")
	if p.Count != 2 || !p.LastSeen.After(p.FirstSeen) {
		t.Errorf("deduplicated entry = %+v, want count 2 and LastSeen after FirstSeen", p)
	}
	// Most recent first.
	if ps[0].ServerID != "s2" {
		t.Errorf("pending[0] = %+v, want the latest (server s2)", ps[0])
	}

	// A fourth triple evicts the least recently seen one (a/token), not the
	// oldest-created one (a/mcp/s1, refreshed now).
	check("https://a.example/z", PurposeMCP, "s1")
	check("https://b.example", PurposeMCP, "s3")
	ps, err = b.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("pending = %+v, want bound 3", ps)
	}
	if _, ok := findPending(ps, "https://a.example", PurposeToken, "s1"); ok {
		t.Errorf("least recently seen entry was kept: %+v", ps)
	}
	for _, want := range []struct {
		o string
		p Purpose
		s string
	}{{"https://a.example", PurposeMCP, "s1"}, {"https://a.example", PurposeMCP, "s2"}, {"https://b.example", PurposeMCP, "s3"}} {
		if _, ok := findPending(ps, want.o, want.p, want.s); !ok {
			t.Errorf("missing pending %v in %+v", want, ps)
		}
	}

	// Many more: still bounded.
	for i := range 20 {
		check(fmt.Sprintf("https://h%d.example", i), PurposeDiscoveryPRM, "")
	}
	if ps, err := b.Pending(ctx); err != nil || len(ps) != 3 {
		t.Fatalf("pending after flood = %d entries, %v; want 3", len(ps), err)
	}
}

func TestDismissAndGrantClearPending(t *testing.T) {
	ctx := context.Background()
	b := newBroker(t, openStore(t, t.TempDir()), Options{})
	for _, u := range []string{"https://a.example/mcp", "https://b.example/token", "https://b.example/reg"} {
		_ = b.Check(ctx, u, PurposeMCP, "s")
	}
	_ = b.Check(ctx, "https://b.example", PurposeToken, "s")
	if err := b.DismissPending(ctx, "https://B.example/"); err != nil {
		t.Fatal(err)
	}
	ps, err := b.Pending(ctx)
	if err != nil || len(ps) != 1 || ps[0].Origin != "https://a.example" {
		t.Fatalf("pending after dismiss = %+v, %v", ps, err)
	}
	// Dismissing does not grant.
	if ok, err := b.Allowed(ctx, "https://b.example"); ok || err != nil {
		t.Fatalf("Allowed after dismiss = %v, %v", ok, err)
	}
	if err := b.Grant(ctx, "https://a.example", BySettingsPage); err != nil {
		t.Fatal(err)
	}
	if ps, err := b.Pending(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("pending after grant = %+v, %v", ps, err)
	}
}

func TestDamagedGrantFailsClosed(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	b := newBroker(t, s, Options{})
	// A record whose content names another origin (copied, or written by a
	// buggy tool) grants nothing.
	if err := s.PutKV(ctx, NamespaceGrants, "https://evil.example", []byte(`{"origin":"https://good.example","by":"user: cli"}`)); err != nil {
		t.Fatal(err)
	}
	err := b.Check(ctx, "https://evil.example/x", PurposeMCP, "")
	if err == nil || errors.Is(err, ErrPermissionRequired) || !strings.Contains(err.Error(), "damaged grant") {
		t.Fatalf("Check = %v, want a damaged-record error", err)
	}
	if err := b.Grant(ctx, "https://ok.example", ByCLI); err != nil {
		t.Fatal(err)
	}
	gs, err := b.Grants(ctx)
	if err == nil || len(gs) != 1 || gs[0].Origin != "https://ok.example" {
		t.Fatalf("Grants = %+v, %v; want the good one and an error", gs, err)
	}
	// The user can remove it, or overwrite it by granting.
	if err := b.Grant(ctx, "https://evil.example", ByCLI); err != nil {
		t.Fatal(err)
	}
	if err := b.Check(ctx, "https://evil.example/x", PurposeMCP, ""); err != nil {
		t.Fatalf("after re-grant: %v", err)
	}
}

func TestPurposeFrom(t *testing.T) {
	p, s := PurposeFrom(context.Background())
	if p != "" || s != "" {
		t.Errorf("empty context: %q %q", p, s)
	}
	p, s = PurposeFrom(WithPurpose(context.Background(), PurposeToken, "docs"))
	if p != PurposeToken || s != "docs" {
		t.Errorf("got %q %q", p, s)
	}
}

// TestConcurrent runs checks against grants and revokes from two brokers
// on one data directory, for the race detector and to see that the cache
// settles on the stored truth.
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := newBroker(t, openStore(t, dir), Options{})
	other := newBroker(t, openStore(t, dir), Options{})
	origins := []string{"https://a.example", "https://b.example", "https://c.example"}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 30 {
				o := origins[(i+j)%len(origins)]
				if err := a.Check(ctx, o+"/mcp", PurposeMCP, "s"); err != nil && !errors.Is(err, ErrPermissionRequired) {
					t.Error(err)
				}
			}
		})
	}
	for _, br := range []*Broker{a, other} {
		wg.Go(func() {
			for j := range 20 {
				o := origins[j%len(origins)]
				if j%2 == 0 {
					if err := br.Grant(ctx, o, ByCLI); err != nil {
						t.Error(err)
					}
				} else if err := br.Revoke(ctx, o); err != nil && !errors.Is(err, ErrNotGranted) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// Revoke everything through the other store; a must converge.
	for _, o := range origins {
		if err := other.Revoke(ctx, o); err != nil && !errors.Is(err, ErrNotGranted) {
			t.Fatal(err)
		}
	}
	for _, o := range origins {
		testkit.WaitFor(t, o+" to be refused after the revoke", func() bool { return a.Check(ctx, o, PurposeMCP, "s") != nil })
	}
}

// BenchmarkCheck compares a granted check served by the cache with one
// that reads the store (a KV without a change feed).
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		kv   func(*store.DB) KV
	}{
		{"cached", func(s *store.DB) KV { return s }},
		{"uncached", func(s *store.DB) KV { return plainKV{s} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			br := newBroker(b, tc.kv(openStore(b, b.TempDir())), Options{})
			if err := br.Grant(ctx, "https://mcp.example.com", ByCLI); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := br.Check(ctx, "https://mcp.example.com/mcp", PurposeMCP, "docs"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Options.Ask: the person's yes at a prompt is a grant; a no leaves the
// request refused and pending.
func TestAskGrantsOnlyOnYes(t *testing.T) {
	st, err := store.Open(context.Background(), t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	answer := false
	var asked []PermissionRequiredError
	b := New(st, Options{Ask: func(_ context.Context, p PermissionRequiredError) bool {
		asked = append(asked, p)
		return answer
	}})
	defer b.Close()
	hc := &http.Client{Transport: b.Transport(nil)}
	ctx := WithPurpose(context.Background(), PurposeToken, "docs")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := hc.Do(req); !errors.Is(err, ErrPermissionRequired) {
		t.Fatalf("refused at the prompt: err = %v", err)
	}
	if hits.Load() != 0 || len(asked) != 1 || asked[0].Purpose != PurposeToken || asked[0].ServerID != "docs" {
		t.Fatalf("hits %d, asked %+v", hits.Load(), asked)
	}
	answer = true
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("granted at the prompt: %v", err)
	}
	resp.Body.Close()
	grants, _ := b.Grants(context.Background())
	if hits.Load() != 1 || len(grants) != 1 || grants[0].By != ByPrompt {
		t.Fatalf("hits %d, grants %+v", hits.Load(), grants)
	}
}

// Issue #19 item 10: pending records stored before the times were named
// firstSeenAt and lastSeenAt still read, times and all; new ones are
// written with the new names.
func TestPendingReadsOldTimeNames(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	later := at.Add(time.Hour)
	for _, tc := range []struct{ name, stored string }{
		{"old", `{"origin":"https://a.example","purpose":"mcp","serverId":"s","firstSeen":"2025-03-04T05:06:07Z","lastSeen":"2025-03-04T06:06:07Z","count":2}`},
		{"new", `{"origin":"https://a.example","purpose":"mcp","serverId":"s","firstSeenAt":"2025-03-04T05:06:07Z","lastSeenAt":"2025-03-04T06:06:07Z","count":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Pending
			if err := json.Unmarshal([]byte(tc.stored), &p); err != nil {
				t.Fatal(err)
			}
			if !p.FirstSeen.Equal(at) || !p.LastSeen.Equal(later) || p.Count != 2 || p.Origin != "https://a.example" || p.ServerID != "s" {
				t.Fatalf("read %+v", p)
			}
			out, _ := json.Marshal(p)
			if !strings.Contains(string(out), `"firstSeenAt":"2025-03-04T05:06:07Z"`) || strings.Contains(string(out), `"firstSeen"`) {
				t.Fatalf("written as %s", out)
			}
		})
	}
}
