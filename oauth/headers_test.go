package oauth

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/store"
)

// gatewayHeader is the API key a gateway in front of the MCP server wants
// before anything else, OAuth included (issue #19 item 5).
const (
	gatewayHeader = "X-Gateway-Key"
	gatewayKey    = "gw-secret-4711"
)

// sentLog records, for every request the authenticator put on the wire,
// its method, URL and whether it carried the gateway header. It is the
// bottom of the client's transport stack, so it sees each request exactly
// as the server receives it.
type sentLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []sentReq
}

type sentReq struct {
	method, url string
	hasKey      bool
}

func (l *sentLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.reqs = append(l.reqs, sentReq{r.Method, r.URL.String(), r.Header.Get(gatewayHeader) != ""})
	l.mu.Unlock()
	return l.base.RoundTrip(r)
}

func (l *sentLog) all() []sentReq {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sentReq(nil), l.reqs...)
}

// gatewayWorld is an MCP server (package fixture) behind a gateway that
// refuses, with 403, every request to the MCP endpoint that lacks the
// gateway key; with oauth, an authorization server protects it as well.
// The server's config carries the key as a custom header, sealed in a
// real store like any other.
type gatewayWorld struct {
	mcp     *fixture.Server
	as      *authserver.Server // nil without oauth
	st      *store.DB
	a       *Authenticator
	sent    *sentLog
	prmSeen func() (total, withKey int)
	srv     config.Server
}

func newGatewayWorld(t *testing.T, oauth bool) *gatewayWorld {
	t.Helper()
	w := &gatewayWorld{sent: &sentLog{base: http.DefaultTransport}}
	var mu sync.Mutex
	var prmTotal, prmWithKey int
	w.prmSeen = func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return prmTotal, prmWithKey
	}
	fo := fixture.Options{}
	var gate func(http.ResponseWriter, *http.Request) bool
	gate = func(rw http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get(gatewayHeader) != gatewayKey {
			http.Error(rw, "gateway: missing API key", http.StatusForbidden)
			return false
		}
		return true
	}
	fo.Authorize = gate
	if oauth {
		as, err := authserver.Start(authserver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(as.Close)
		w.as = as
		fo.Authorize = func(rw http.ResponseWriter, r *http.Request) bool {
			return gate(rw, r) && as.Authorize(rw, r)
		}
		prm := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			mu.Lock()
			prmTotal++
			if r.Header.Get(gatewayHeader) != "" {
				prmWithKey++
			}
			mu.Unlock()
			as.PRMHandler().ServeHTTP(rw, r)
		})
		fo.Extra = map[string]http.Handler{
			"/.well-known/oauth-protected-resource/mcp": prm,
			"/.well-known/oauth-protected-resource":     prm,
		}
	}
	m, err := fixture.Start(fo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	w.mcp = m

	st, err := store.Open(context.Background(), t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	w.st = st
	kind := config.AuthOAuth
	if !oauth {
		kind = config.AuthAuto
	}
	srv := config.Server{ID: "gw", Name: "behind a gateway", URL: m.URL(), Enabled: true,
		Auth: config.Auth{Kind: kind}, Headers: map[string]string{gatewayHeader: gatewayKey}}
	if err := st.AddServer(context.Background(), srv); err != nil {
		t.Fatal(err)
	}
	// As the engine does: the config comes from the store, headers opened.
	if w.srv, err = st.GetServer(context.Background(), srv.ID); err != nil {
		t.Fatal(err)
	}
	if w.srv.Headers[gatewayHeader] != gatewayKey {
		t.Fatalf("stored server's headers %v; want the gateway key", w.srv.Headers)
	}
	w.a = New(Options{Store: st, HTTPClient: &http.Client{Transport: w.sent}})
	return w
}

// checkMCPRequests fails unless the MCP endpoint got at least one request
// and every one of them carried the gateway key (none was refused).
func (w *gatewayWorld) checkMCPRequests(t *testing.T, wantMethods ...string) {
	t.Helper()
	reqs := w.mcp.Requests()
	if len(reqs) == 0 {
		t.Fatal("the MCP endpoint got no request")
	}
	seen := map[string]bool{}
	for _, r := range reqs {
		seen[r.Method] = true
		if r.Header.Get(gatewayHeader) != gatewayKey {
			t.Errorf("%s %s %s reached the MCP endpoint without the gateway header (denied=%v)", r.Method, r.Path, r.RPCMethod, r.Denied)
		}
	}
	for _, m := range wantMethods {
		if !seen[m] {
			t.Errorf("the MCP endpoint got no %s request; got %+v", m, reqs)
		}
	}
}

// Issue #19 item 5: the custom headers of a server go with every request
// to its MCP endpoint — the unauthenticated initialize that a sign-in sends
// first to find the authorization server, and the DELETE that ends the
// probe's session — and never to protected resource metadata, authorization
// server metadata, registration or token endpoints.
func TestLoginSendsCustomHeadersToMCPEndpointOnly(t *testing.T) {
	t.Run("oauth server behind a gateway", func(t *testing.T) {
		w := newGatewayWorld(t, true)
		res, err := w.a.Login(context.Background(), w.srv, HeadlessBrowser(nil))
		if err != nil {
			t.Fatalf("Login: %v", err)
		}
		if res.NotNeeded || res.Binding.Issuer != w.as.Issuer() {
			t.Fatalf("Login result %+v; want a binding to %s", res, w.as.Issuer())
		}
		w.checkMCPRequests(t, http.MethodPost)
		var toAS, mcp int
		for _, r := range w.sent.all() {
			switch {
			case strings.HasPrefix(r.url, w.mcp.URL()):
				mcp++
				if !r.hasKey {
					t.Errorf("%s %s was sent without the gateway header", r.method, r.url)
				}
			case r.hasKey:
				t.Errorf("%s %s carried the gateway header; it belongs to the MCP endpoint only", r.method, redactURL(r.url))
			case strings.HasPrefix(r.url, w.as.URL()):
				toAS++
			}
		}
		if toAS == 0 || mcp == 0 {
			t.Fatalf("sent %d requests to the authorization server and %d to the MCP endpoint; want both", toAS, mcp)
		}
		// What the servers themselves saw: the metadata, registration
		// and token endpoints were used, and none of them got the key.
		total, withKey := w.prmSeen()
		if total == 0 || withKey != 0 {
			t.Errorf("protected resource metadata: %d requests, %d with the gateway header; want some, none with it", total, withKey)
		}
		for _, suffix := range []string{"/.well-known/oauth-authorization-server", "/register", "/token"} {
			if len(w.as.RequestsTo(suffix)) == 0 {
				t.Errorf("the authorization server got no request to %s", suffix)
			}
		}
	})
	t.Run("open server behind a gateway: the probe session is ended", func(t *testing.T) {
		w := newGatewayWorld(t, false)
		res, err := w.a.Login(context.Background(), w.srv, HeadlessBrowser(nil))
		if err != nil {
			t.Fatalf("Login: %v", err)
		}
		if !res.NotNeeded {
			t.Fatalf("Login result %+v; want NotNeeded", res)
		}
		// The probe opened a session (POST initialize) and ended it
		// (DELETE), both through the gateway.
		w.checkMCPRequests(t, http.MethodPost, http.MethodDelete)
		for _, r := range w.sent.all() {
			if !strings.HasPrefix(r.url, w.mcp.URL()) && r.hasKey {
				t.Errorf("%s %s carried the gateway header; it belongs to the MCP endpoint only", r.method, redactURL(r.url))
			}
		}
	})
}
