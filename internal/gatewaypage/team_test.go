package gatewaypage

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/internal/oidctest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// The team, end to end (issue #22 acceptance): PostgreSQL, a real OpenID
// provider and the bundled test server behind a real OAuth authorization
// server, shared by the admins. Two people sign in on the page, each
// signs in to the shared server with their own account through their
// page, makes a host token there, and each host (go-sdk) sees only its
// person's servers and calls a tool with its person's access token.
func TestTeamEndToEnd(t *testing.T) {
	w := newWorld(t, nil)
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	team := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	w.addPerson(t, oidctest.Alice.Email, "alice-files")
	w.addPerson(t, oidctest.Bob.Email, "bob-notes")
	if _, err := w.admin.AddSharedServer(w.ctx, localapi.AddServerRequest{ID: "team", URL: team.URL(), Auth: config.AuthOAuth}); err != nil {
		t.Fatal(err)
	}

	// The gateway's MCP endpoint for hosts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String() + "/mcp"
	// Hosts may also sign in by OAuth against the same provider (the
	// example provider's access tokens name their client as audience:
	// the hosts' client is registered under the endpoint's URL).
	hosts, err := w.gw.Hosts(w.ctx, gateway.HostsOptions{HTTP: frontend.HTTPOptions{}, Name: "remotemcp", Version: "test",
		Issuer: w.prov.Issuer, PublicURL: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	hctx, stop := context.WithCancel(w.ctx)
	served := make(chan error, 1)
	go func() { served <- hosts.Serve(hctx, ln, "/mcp") }()
	t.Cleanup(func() { stop(); <-served })

	people := []struct {
		user oidctest.User
		own  string // their own server
	}{{oidctest.Alice, "alice-files"}, {oidctest.Bob, "bob-notes"}}
	tokens := map[string]string{}
	for _, p := range people {
		tokens[p.user.Email] = teamMemberInBrowser(t, w, p.user, p.own, as.URL())
	}

	// Each host sees only its person's servers and calls the shared tool
	// with its person's own access token.
	for _, p := range people {
		cs := hostSession(t, w.ctx, endpoint, tokens[p.user.Email])
		tl, err := cs.ListTools(w.ctx, nil)
		if err != nil {
			t.Fatalf("%s's host lists tools: %v", p.user.Email, err)
		}
		var names []string
		for _, tool := range tl.Tools {
			names = append(names, tool.Name)
		}
		joined := strings.Join(names, " ")
		for _, other := range people {
			mine := other.user.Email == p.user.Email
			if got := strings.Contains(joined, other.own+"__"); got != mine {
				t.Fatalf("%s's host sees %s's server: %v (tools %v)", p.user.Email, other.own, got, names)
			}
		}
		if !strings.Contains(joined, "team__echo") {
			t.Fatalf("%s's host has no shared tool: %v", p.user.Email, names)
		}
		before := len(team.Requests())
		res, err := cs.CallTool(w.ctx, &mcp.CallToolParams{Name: "team__echo", Arguments: map[string]any{"text": p.user.Email}})
		if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != p.user.Email {
			t.Fatalf("%s's host calls team__echo: %+v %v", p.user.Email, res, err)
		}
		var used []string
		for _, r := range team.Requests()[before:] {
			if r.RPCMethod == "tools/call" {
				used = append(used, r.Header.Get("Authorization"))
			}
		}
		if len(used) != 1 || used[0] == "" {
			t.Fatalf("%s's call reached the server with %v", p.user.Email, used)
		}
		tokens["access "+p.user.Email] = used[0]
	}
	if a, b := tokens["access "+oidctest.Alice.Email], tokens["access "+oidctest.Bob.Email]; a == b {
		t.Fatal("Alice's and Bob's calls used one access token: each person's sign-in must be their own")
	}

	// A third host signs in by OAuth with the provider, as Alice: her
	// servers, nobody else's.
	const hostSecret, hostRedirect = "team-host-secret", "http://127.0.0.1:1/host-callback"
	w.prov.AddJWTClient(oidctest.JWTClient{ID: endpoint, Secret: hostSecret, RedirectURIs: []string{hostRedirect}})
	at, err := w.prov.AccessToken(w.ctx, endpoint, hostSecret, hostRedirect, oidctest.Alice, "openid", "email")
	if err != nil {
		t.Fatal(err)
	}
	cs := hostSession(t, w.ctx, endpoint, at)
	tl, err := cs.ListTools(w.ctx, nil)
	if err != nil {
		t.Fatalf("the OAuth host lists tools: %v", err)
	}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
	}
	if joined := strings.Join(names, " "); !strings.Contains(joined, "alice-files__") || strings.Contains(joined, "bob-notes__") {
		t.Fatalf("the OAuth host (Alice) sees %v", names)
	}
	if res, err := cs.CallTool(w.ctx, &mcp.CallToolParams{Name: "team__echo", Arguments: map[string]any{"text": "by oauth"}}); err != nil || res.IsError {
		t.Fatalf("the OAuth host calls team__echo: %+v %v", res, err)
	}
}

// teamMemberInBrowser is one person in headless Chromium: they sign in
// on the page through the provider's login form, see their own server
// and the shared one, sign in to the shared server (allowing its
// authorization server's origin when the page asks), and make a host
// token on the page, which it returns.
func teamMemberInBrowser(t *testing.T, w *world, u oidctest.User, own, asOrigin string) string {
	t.Helper()
	b := newChromium(t)
	b.do("open the page", chromedp.Navigate(w.page+"/"))
	b.wait("the provider's login form", `document.querySelector('input[name=username]')`)
	b.do("sign in at the provider",
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), u.Username),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), u.Password),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	b.wait(u.Email+"'s page with the shared server", `document.querySelector('#live') && document.querySelector('#live').dataset.state === 'live' && `+
		`document.querySelector('tr[data-server="team"]')`)
	if rows := b.eval(`[...document.querySelectorAll('tr[data-server]')].map(r => r.dataset.server).sort().join(',')`); rows != own+",team" {
		t.Fatalf("%s's page lists %q", u.Email, rows)
	}
	// The shared server is the admins' to remove: no Delete on it.
	if del := b.eval(`String(document.querySelector('tr[data-server="team"] button[data-action="delete"]').hidden) + ',' + ` +
		`String(document.querySelector('tr[data-server="` + own + `"] button[data-action="delete"]').hidden)`); del != "true,false" {
		t.Fatalf("%s's page: Delete hidden on the shared server, on their own: %s", u.Email, del)
	}
	authorize := `tr[data-server="team"] button[data-action="authorize"]`
	jsClick(b, authorize)
	grant := `button[data-action="grant"][data-origin="` + asOrigin + `"]`
	b.wait("the page to ask for the authorization server's origin", `document.querySelector('`+grant+`')`)
	b.shot("1-" + own + "-allow-origin")
	jsClick(b, grant)
	b.wait("the origin allowed", `!document.querySelector('`+grant+`')`)
	// The authorization server approves at once: the new tab comes back
	// to the gateway's redirect URI, and the server becomes ready.
	jsClick(b, authorize)
	b.wait("the shared server ready after "+u.Email+"'s sign-in", `document.querySelector('tr[data-server="team"] .state-ready')`)
	b.shot("2-" + own + "-signed-in")
	b.do("name a token", chromedp.SendKeys(chromedp.CSS(`#token-form input[name=name]`), "laptop"))
	b.do("create it", chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)))
	b.wait("the new token", `!document.querySelector('#token-new').hidden && document.querySelector('tr[data-token="laptop"]')`)
	return b.eval(`document.querySelector('#token-new .token-value').textContent`)
}

// jsClick clicks the element sel in the page's own script, once it is
// there: the live page re-renders its rows on every event, so a node the
// browser protocol found a moment before may be gone when it clicks.
func jsClick(b *chromium, sel string) {
	b.t.Helper()
	b.wait("click "+sel, `(() => { const e = document.querySelector('`+sel+`'); if (!e || e.hidden) return false; e.click(); return true })()`)
}

// hostSession is a go-sdk host on the gateway's endpoint with a bearer
// token.
func hostSession(t *testing.T, ctx context.Context, endpoint, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearerTransport{token: token}}
	c := mcp.NewClient(&mcp.Implementation{Name: "team-host", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("host connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
