package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
)

// The settings page in a real browser: Debian's chromium driven by
// chromedp. Set REMOTEMCP_SKIP_BROWSER=1 to skip these tests; otherwise a
// missing chromium is a failure, since the page would go untested.

const chromiumPath = "/usr/bin/chromium"

// browser is one headless chromium with one tab, its console collected.
type browser struct {
	t       *testing.T
	ctx     context.Context
	mu      sync.Mutex
	console []chromedp.ConsoleMessage
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if os.Getenv("REMOTEMCP_SKIP_BROWSER") == "1" {
		t.Skip("REMOTEMCP_SKIP_BROWSER=1")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("the browser tests need chromium at %s (%v): run `apt-get install -y chromium`, or set REMOTEMCP_SKIP_BROWSER=1 to skip them", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// The page keeps working while the authorization tab is in front.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1600),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	quiet := func(string, ...any) {}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(quiet), chromedp.WithErrorf(quiet))
	b := &browser{t: t, ctx: ctx}
	// Start the browser without a deadline (a deadline on the first Run
	// would be the browser's lifetime).
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		acancel()
		t.Fatalf("start chromium: %v", err)
	}
	var wg sync.WaitGroup
	messages := chromedp.Console(ctx)
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			b.screenshot()
		}
		cancel()
		acancel()
		wg.Wait()
	})
	return b
}

// artifactDir is where a test's screenshots go: a directory per test in
// $REMOTEMCP_ARTIFACTS when it is set, else the test's artifact directory
// (kept with go test -artifacts).
func artifactDir(t *testing.T) string {
	name := regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "_")
	if root := os.Getenv("REMOTEMCP_ARTIFACTS"); root != "" {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir
		}
	}
	return t.ArtifactDir()
}

// shot saves a screenshot of the page as <step>.png in the test's
// artifact folder. No pixel is compared: the pictures are for people.
func (b *browser) shot(step string) {
	b.save(step, chromedp.FullScreenshot(100)) // quality 100: PNG
}

// shotView saves what the viewport shows as <step>.png: a modal dialog
// (the request log drawer) covers the viewport, not the whole page.
func (b *browser) shotView(step string) {
	b.save(step, chromedp.CaptureScreenshot())
}

func (b *browser) save(step string, capture chromedp.Action[[]byte]) {
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	// A tab the page opened (the authorization page) may be in front,
	// and a tab behind paints no frame to capture.
	if _, err := chromedp.Call(ctx, page.BringToFront, cdp.Empty{}); err != nil {
		b.t.Logf("no screenshot %s: %v", step, err)
		return
	}
	buf, err := chromedp.Run(ctx, capture)
	if err != nil {
		b.t.Logf("no screenshot %s: %v", step, err)
		return
	}
	p := filepath.Join(artifactDir(b.t), step+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Logf("no screenshot %s: %v", step, err)
		return
	}
	b.t.Logf("screenshot %s", p)
}

// screenshot saves the page as it is when a test failed, with the
// console.
func (b *browser) screenshot() {
	b.shot("failed")
	b.mu.Lock()
	for _, m := range b.console {
		b.t.Logf("console %s: %s", m.Type, m)
	}
	b.mu.Unlock()
}

// browserHang bounds one browser action: only a hang. Chromium under
// -race on a loaded 2-core machine can take many seconds for a step.
const browserHang = 2 * time.Minute

// do runs steps with a deadline, failing the test with what was tried.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserHang)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// wait polls a JavaScript predicate on the page from Go, so that it
// survives navigations (the login page moves on by itself).
func (b *browser) wait(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(browserHang)
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("browser: timed out waiting for %s (last error: %v)", what, lastErr)
}

func (b *browser) eval(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserHang)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("browser: eval %s: %v", expr, err)
	}
	return v
}

func (b *browser) click(sel string) {
	b.t.Helper()
	// The page draws the server list anew on every change: a row's button
	// found a moment ago may be gone when the click is placed (before any
	// mouse event). Then the new one is clicked.
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(b.ctx, browserHang)
		err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return
		}
		if try < 5 && strings.Contains(err.Error(), "Could not find node") {
			continue
		}
		b.t.Fatalf("browser: click %s: %v", sel, err)
	}
}

// login opens a login URL and waits until the page is live.
func (b *browser) login(s *stack) {
	b.t.Helper()
	u := s.srv.LoginURL()
	secrets.add(loginSecret, strings.TrimPrefix(u, s.srv.URL()+"/login?token="))
	b.do("login", chromedp.Navigate(u))
	b.wait("the settings page, live", `document.querySelector('#live') && document.querySelector('#live').dataset.state === 'live'`)
	if loc := b.eval(`location.href`); loc != s.page() {
		b.t.Fatalf("after login the page is %s, want %s", loc, s.page())
	}
	ctx, cancel := context.WithTimeout(b.ctx, browserHang)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{s.page()}})
	if err != nil {
		b.t.Fatal(err)
	}
	found := false
	for _, c := range res.Cookies {
		if c.Name == CookieName {
			found = true
			secrets.add(sessionSecret, c.Value)
			if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != s.srv.prefix {
				b.t.Errorf("session cookie %+v", c)
			}
		}
	}
	if !found {
		b.t.Fatal("no session cookie in the browser")
	}
}

// checkConsole fails on page exceptions and Content-Security-Policy
// violations: the page must work under its own CSP.
func (b *browser) checkConsole() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.console {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Refused to") {
			b.t.Errorf("browser console %s: %s (%s:%d)", m.Type, m, m.URL, m.Line+1)
		}
	}
}

// completedCallbacks counts the successful /mcp-oauth pages served in
// this run, by every daemon.
func completedCallbacks() int {
	recorded.mu.Lock()
	defer recorded.mu.Unlock()
	n := 0
	for _, r := range recorded.recs {
		if r.path == "/mcp-oauth" && r.status == 200 && strings.Contains(r.body.String(), "Authorization complete") {
			n++
		}
	}
	return n
}

func row(id string) string { return fmt.Sprintf(`tr[data-server=%q]`, id) }

// visible is a JavaScript expression: the element of sel is displayed.
func visible(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden'; })()`, sel)
}

// The settings page end to end: log in, paste-import a mixed config (the
// import allows the server's origin), revoke and allow the origin again,
// switch a tool off, answer a server's question, delete; at 1280 px and
// at 360 px wide.
func TestBrowserSettingsPage(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	b := newBrowser(t)
	ctx := testkit.Context(t)
	b.login(s)
	b.shot("01-empty")

	// Paste-import: one remote server, one stdio and one legacy SSE entry.
	doc := `{"mcpServers": {
	  "fx": {"type": "http", "url": "` + f.URL() + `"},
	  "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
	  "old": {"type": "sse", "url": "https://old.example/sse"}
	}}`
	b.do("paste the config", chromedp.SetValue(chromedp.CSS(`#import-form textarea`), doc))
	b.click(`#import-form button[type=submit]`)
	b.do("import result", chromedp.WaitVisible(chromedp.CSS(`#import-result li[data-import=added][data-id=fx]`)))
	if n := b.eval(`String(document.querySelectorAll('#import-result li[data-import=skipped]').length)`); n != "2" {
		t.Fatalf("%s skipped entries listed, want 2: %s", n, b.eval(`document.querySelector('#import-result').textContent`))
	}
	origin := originOf(t, f.URL())
	if txt := b.eval(`document.querySelector('#import-result').textContent`); !strings.Contains(txt, "Allowed "+origin) {
		t.Fatalf("the import result does not say it allowed %s: %s", origin, txt)
	}
	b.wait("ready with 7 tools", `(() => { const r = document.querySelector('`+row("fx")+`'); return r && r.dataset.state === 'ready' && r.querySelector('.tool-count').textContent === '7'; })()`)
	b.do("grant listed", chromedp.WaitVisible(chromedp.CSS(`#grant-rows tr[data-origin="`+origin+`"]`)))
	b.shot("02-imported")

	// Revoke on the page: the server's session ends, and connecting again
	// is refused locally until the origin is allowed again.
	b.click(`#grant-rows tr[data-origin="` + origin + `"] button[data-action=revoke]`)
	b.wait("the grant to go", `!document.querySelector('#grant-rows tr[data-origin="`+origin+`"]')`)
	b.wait("disconnected", `document.querySelector('`+row("fx")+`').dataset.state !== 'ready'`)
	f.ResetRequests()
	b.click(row("fx") + ` button[data-action=connect]`)
	b.do("origin warning", chromedp.WaitVisible(chromedp.CSS(row("fx")+` .origin-warning button[data-action=grant]`)))
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the server saw %d requests without a grant", n)
	}
	b.shot("03-origin-needed")
	b.click(row("fx") + ` .origin-warning button[data-action=grant]`)
	b.wait("the origin warning to go", `document.querySelector('`+row("fx")+` .origin-warning').hidden`)
	g, err := s.c.Grants(ctx)
	if err != nil || len(g) != 1 || g[0].By != localapi.BySettingsPage {
		t.Fatalf("grants after approval: %+v %v", g, err)
	}
	if _, err := s.c.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	b.wait("ready again", `document.querySelector('`+row("fx")+`').dataset.state === 'ready'`)

	// The catalog, and a tool switched off vanishes from the agent tools
	// but keeps its switch.
	b.click(row("fx") + ` button[data-action=catalog]`)
	b.do("catalog", chromedp.WaitVisible(chromedp.CSS(`#catalog input[data-tool=echo]`)))
	if n := b.eval(`String(document.querySelectorAll('#catalog input[data-tool]').length)`); n != "7" {
		t.Fatalf("catalog shows %s tools", n)
	}
	if txt := b.eval(`document.querySelector('#catalog').textContent`); !strings.Contains(txt, "/fx:greet") || !strings.Contains(txt, fixture.ReadmeURI) {
		t.Fatalf("catalog without prompts or resources: %s", txt)
	}
	b.shot("04-catalog")
	b.click(`#catalog input[data-tool=echo]`)
	testkit.WaitFor(t, "echo to vanish from the tools API", func() bool {
		tl, err := s.c.Tools(ctx, localapi.ToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(tl.Tools, func(tl localapi.Tool) bool { return tl.Name == "mcp__fx__echo" }) && len(tl.Tools) == 6
	})
	v, _ := s.c.Server(ctx, "fx")
	if !slices.Equal(v.DisabledTools, []string{"echo"}) {
		t.Fatalf("disabledTools %v", v.DisabledTools)
	}
	b.click(`#catalog-section button[data-action=close-catalog]`)
	b.click(row("fx") + ` button[data-action=catalog]`)
	b.wait("echo listed, off", `(() => { const e = document.querySelector('#catalog input[data-tool=echo]'); return e && !e.checked; })()`)

	// A server question during a call: the card's form comes from the
	// requested schema; the answer lets the call finish.
	done := make(chan *localapi.ToolResult, 1)
	go func() {
		r, err := s.c.Call(ctx, localapi.CallRequest{Tool: "fx/ask", Approved: true}, localapi.CallHandler{})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	card := `#cards .card`
	b.do("card", chromedp.WaitVisible(chromedp.CSS(card+` .field[data-field=name] input`)))
	if msg := b.eval(`document.querySelector('#cards .card blockquote').textContent`); msg != "What is your name?" {
		t.Fatalf("card message %q", msg)
	}
	if meta := b.eval(`document.querySelector('#cards .card .meta').textContent`); !strings.HasPrefix(meta, "fx") {
		t.Fatalf("card meta %q", meta)
	}
	if age := b.eval(`document.querySelector('#cards .card .field[data-field=age] input').value`); age != "42" {
		t.Fatalf("age default %q", age)
	}
	b.do("fill the card",
		chromedp.SendKeys(chromedp.CSS(card+` .field[data-field=name] input`), "Ada"),
		chromedp.SetValue(chromedp.CSS(card+` .field[data-field=age] input`), "30"))
	b.shot("05-question")
	b.click(card + ` button[data-answer=accept]`)
	select {
	case r := <-done:
		if r == nil || r.Outcome != localapi.OutcomeOK || len(r.Content) == 0 || r.Content[0].Text != "hello Ada (30)" {
			t.Fatalf("the call after the answer: %+v", r)
		}
	case <-time.After(2 * time.Minute): // only a hang
		t.Fatal("the call did not continue after the answer")
	}
	b.wait("the card to go", `document.querySelectorAll('#cards .card').length === 0`)

	// On a narrow screen the page still fits.
	b.do("narrow", chromedp.EmulateViewport(360, 800))
	b.wait("the narrow layout", `window.innerWidth === 360`)
	if w := b.eval(`String(document.documentElement.scrollWidth)`); w != "360" {
		t.Errorf("at 360 px the page is %s px wide: it scrolls sideways", w)
	}
	b.shot("06-narrow-360")
	b.do("wide", chromedp.EmulateViewport(1280, 1600))

	// Delete asks first; Keep keeps it, Delete deletes it.
	b.click(row("fx") + ` button[data-action=delete]`)
	b.do("confirmation", chromedp.WaitVisible(chromedp.CSS(row("fx")+` .confirm button[data-action=confirm-delete]`)))
	b.click(row("fx") + ` button[data-action=cancel-delete]`)
	b.do("confirmation closed", chromedp.WaitNotVisible(chromedp.CSS(row("fx")+` .confirm`)))
	if l, _ := s.c.Servers(ctx); len(l) != 1 {
		t.Fatal("Keep deleted the server")
	}
	b.click(row("fx") + ` button[data-action=delete]`)
	b.click(row("fx") + ` button[data-action=confirm-delete]`)
	b.wait("the row to go", `!document.querySelector('`+row("fx")+`')`)
	if l, err := s.c.Servers(ctx); err != nil || len(l) != 0 {
		t.Fatalf("servers after delete: %+v %v", l, err)
	}
	b.shot("07-deleted")
	b.checkConsole()
}

// The add form: only the chosen auth type's fields show; a bearer
// server's token goes to the engine and to the server, never back into
// the page.
func TestBrowserAddServer(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	b := newBrowser(t)
	ctx := testkit.Context(t)
	b.login(s)
	fields := map[string]string{"token": "bearer", "clientId": "oauth", "clientSecret": "oauth", "scopes": "oauth"}
	for _, kind := range []string{"none", "bearer", "oauth"} {
		b.do("choose "+kind,
			chromedp.SetValue(chromedp.CSS(`#add-form select[name=auth]`), kind),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('#add-form select[name=auth]').dispatchEvent(new Event('change'))`))
		for name, of := range fields {
			sel := `#add-form input[name=` + name + `]`
			if got, want := b.eval(`String(`+visible(sel)+`)`), fmt.Sprint(of == kind); got != want {
				t.Errorf("auth %s: field %s visible %s, want %s", kind, name, got, want)
			}
		}
		b.shot("01-auth-" + kind)
	}
	token := "page-bearer-" + time.Now().Format("150405.000000000")
	secrets.add("bearer token typed into the page", token)
	b.do("fill the add form",
		chromedp.SetValue(chromedp.CSS(`#add-form input[name=id]`), "fx"),
		chromedp.SetValue(chromedp.CSS(`#add-form input[name=url]`), f.URL()),
		chromedp.SetValue(chromedp.CSS(`#add-form select[name=auth]`), "bearer"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#add-form select[name=auth]').dispatchEvent(new Event('change'))`),
		chromedp.SendKeys(chromedp.CSS(`#add-form input[name=token]`), token))
	b.click(`#add-form button[type=submit]`)
	b.wait("ready", `(() => { const r = document.querySelector('`+row("fx")+`'); return r && r.dataset.state === 'ready'; })()`)
	b.shot("02-added")
	if v := b.eval(`document.querySelector('#add-form input[name=token]').value`); v != "" {
		t.Fatal("the token stays in the form")
	}
	if strings.Contains(b.eval(`document.documentElement.outerHTML`), token) {
		t.Fatal("the token is in the page")
	}
	g, _ := s.c.Grants(ctx)
	if len(g) != 1 || g[0].By != localapi.BySettingsPage {
		t.Fatalf("grants %+v", g)
	}
	var sent bool
	for _, r := range f.Requests() {
		sent = sent || r.Header.Get("Authorization") == "Bearer "+token
	}
	if !sent {
		t.Fatal("the server did not get the token")
	}
	b.checkConsole()
}

// Authorize against a real authorization server: the AS origin shows up
// beside the server, is approved, and the browser follows the real
// redirect to the daemon's /mcp-oauth.
func TestBrowserAuthorize(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	s := newStack(t, stackOpts{})
	b := newBrowser(t)
	ctx := testkit.Context(t)
	// Added through the API (as `remotemcp servers add --oauth` would): the
	// MCP origin is granted, the authorization server's is not.
	added, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: s.srv.Port()})
	if err != nil {
		t.Fatal(err)
	}
	if !added.Server.OriginGranted {
		t.Fatal("the MCP origin was not granted")
	}
	b.login(s)
	b.wait("needs authorization", `document.querySelector('`+row("secure")+`') && document.querySelector('`+row("secure")+`').dataset.state === 'needs-auth'`)
	b.shot("01-needs-auth")

	if got := b.text(row("secure") + ` td.state-cell .state`); got != "needs authorization" {
		t.Fatalf("a fresh OAuth server's state reads %q", got)
	}

	// First Authorize: discovery reaches the authorization server's origin,
	// which is refused and shown beside the server, once: not again in a
	// banner, not again as a waiting approval in the row, and in the
	// page's words, the technical chain folded away.
	asOrigin := originOf(t, as.URL())
	b.click(row("secure") + ` button[data-action=authorize]`)
	note := row("secure") + ` .auth-flow`
	grantSel := note + ` button[data-action=grant][data-origin="` + asOrigin + `"]`
	b.do("permission needed", chromedp.WaitVisible(chromedp.CSS(grantSel)))
	if n := len(as.Requests()); n != 0 {
		t.Fatalf("the authorization server saw %d requests before the grant", n)
	}
	b.wait("the starting notice to go", `document.querySelector('#notice').hidden`)
	checkOnce := func(step string) {
		t.Helper()
		body := b.text("body")
		if n := strings.Count(body, "Authorization needs your permission to contact"); n != 1 {
			t.Errorf("%s: the failure shows %d times:\n%s", step, n, body)
		}
		if n := b.eval(`String(document.querySelectorAll('` + row("secure") + ` .server-pending li').length)`); n != "0" {
			t.Errorf("%s: the row lists the origin again as waiting (%s entries)", step, n)
		}
		for _, never := range []string{`"remotemcp `, "remotemcp grants", "remotemcp auth", "discovery-AS:", "permission required:"} {
			if strings.Contains(body, never) {
				t.Errorf("%s: the page shows %q:\n%s", step, never, body)
			}
		}
		if got := b.text(row("secure") + ` .state-hint`); got != "Allow the origin beside the server's name, then click Authorize." {
			t.Errorf("%s: the state's hint reads %q", step, got)
		}
		if c := b.eval(`getComputedStyle(document.querySelector('` + note + `')).color`); c == badColor {
			t.Errorf("%s: a sign-in waiting for a permission is shown as a failure", step)
		}
		detail := b.eval(`document.querySelector('` + note + ` details.reason .reason-text').textContent`)
		if !strings.Contains(detail, "permission required") || strings.Contains(detail, "remotemcp grants") {
			t.Errorf("%s: the folded detail reads %q", step, detail)
		}
	}
	checkOnce("first failure")
	b.shot("02-permission")

	// The note is about that moment: once the server's state changes
	// (disabled here), it goes, and does not come back with the state.
	b.click(row("secure") + ` button[data-action=disable]`)
	b.wait("the note to go on disable", `document.querySelector('`+note+`').hidden`)
	b.click(row("secure") + ` button[data-action=enable]`)
	b.wait("needs authorization again", `document.querySelector('`+row("secure")+`').dataset.state === 'needs-auth'`)
	if b.eval(`String(document.querySelector('`+note+`').hidden)`) != "true" {
		t.Error("the stale note came back with the state")
	}
	// Without the note, the row lists the origin as waiting, once.
	b.do("the origin waits in the row", chromedp.WaitVisible(chromedp.CSS(row("secure")+` .server-pending li[data-origin="`+asOrigin+`"]`)))
	b.shot("03-note-gone-after-state-change")

	// Authorize again: the same failure, a new note; Allow in the note
	// allows the origin and the note goes at once.
	b.click(row("secure") + ` button[data-action=authorize]`)
	b.do("permission needed again", chromedp.WaitVisible(chromedp.CSS(grantSel)))
	b.wait("the starting notice to go", `document.querySelector('#notice').hidden`)
	checkOnce("second failure")
	b.click(grantSel)
	b.wait("the note to go on Allow", `document.querySelector('`+note+`').hidden && !document.querySelector('`+row("secure")+` .server-pending li')`)
	if got := b.text(row("secure") + ` td.state-cell`); !strings.Contains(got, "needs authorization") || !strings.Contains(got, "Click Authorize to sign in.") {
		t.Errorf("after Allow the state cell reads %q", got)
	}
	b.shot("04-allowed")

	// Third Authorize: a new tab opens the authorization page, which
	// redirects to /mcp-oauth; the flow finishes and the server connects.
	// The notice that pointed at the new tab goes with the flow.
	before := completedCallbacks()
	b.click(row("secure") + ` button[data-action=authorize]`)
	b.wait("authorized", `(() => { const r = document.querySelector('`+row("secure")+`'); return r && r.querySelector('.auth-flow.done') && r.dataset.state === 'ready'; })()`)
	b.wait("the notice about the new tab to go", `document.querySelector('#notice').hidden`)
	if got := b.text(row("secure")); strings.Contains(got, "failed") || strings.Contains(got, "Allow") {
		t.Errorf("after the sign-in the row reads %q", got)
	}
	b.shot("05-authorized")
	fl, err := s.c.Authorization(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseDone || fl.Result == nil || !fl.Result.Registered || fl.Result.Binding == nil {
		t.Fatalf("flow %+v %v", fl, err)
	}
	v, _ := s.c.Server(ctx, "secure")
	if v.State != localapi.StateReady || v.ToolCount != 7 {
		t.Fatalf("server after authorization %+v", v)
	}
	// The callback went through the daemon, in the browser.
	if n := completedCallbacks() - before; n != 1 {
		t.Fatalf("%d completed callbacks served", n)
	}
	// Nothing the authorization server issued may appear in any response.
	access, refresh := as.IssuedTokens()
	for _, tok := range access {
		secrets.add("OAuth access token", tok)
	}
	for _, tok := range refresh {
		secrets.add("OAuth refresh token", tok)
	}
	for _, r := range as.RequestsTo("/token") {
		if c := r.Form.Get("code"); c != "" {
			secrets.add("authorization code", c)
		}
		if c := r.Form.Get("code_verifier"); c != "" {
			secrets.add("PKCE verifier", c)
		}
	}
	raw, _ := json.Marshal(fl)
	if strings.Contains(string(raw), "code=") {
		t.Fatalf("the flow view carries a code: %s", raw)
	}
	b.checkConsole()
}

// A server's question whose fields are named like the form's own methods
// (append, remove, querySelectorAll, addEventListener): the names come
// from the server, and must not become properties of the form (as a
// control's name attribute would make them), or building, reading and
// removing the card fail — for every card on the page. Both cards render,
// the hostile one is answered with every field, the other declined.
func TestBrowserCardFieldNamesAreInert(t *testing.T) {
	s := newStack(t, stackOpts{})
	b := newBrowser(t)
	b.login(s)
	ctx, cancel := context.WithCancel(testkit.Context(t))
	defer cancel()
	// A server's question is taken only during a tool call to it: one is
	// in flight for as long as the cards are open.
	adm, err := s.eng.Elicit.Admit(ctx, elicit.CallInfo{ServerID: "fx", Tool: "ask", OperationID: "op-inert"})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Finish()

	type answer struct {
		r   *mcp.ElicitResult
		err error
	}
	ask := func(msg string, schema map[string]any) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			r, err := s.eng.Elicit.Handle(ctx, manager.ElicitInfo{ServerID: "fx", OperationID: "op-inert"}, &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: msg, RequestedSchema: schema}})
			ch <- answer{r, err}
		}()
		return ch
	}
	hostile := ask("Hostile field names", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"append":           map[string]any{"type": "string"},
			"querySelectorAll": map[string]any{"type": "integer"},
			"addEventListener": map[string]any{"type": "boolean"},
			"remove":           map[string]any{"type": "string", "enum": []any{"a", "b"}},
		},
		"required": []any{"append"},
	})
	hc := `#cards .card:has(.field[data-field=append])`
	b.do("the hostile card", chromedp.WaitVisible(chromedp.CSS(hc+` .field[data-field=append] input`)))
	plain := ask("A plain question", map[string]any{
		"type":       "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}},
	})
	pc := `#cards .card:has(.field[data-field=name])`
	b.do("the plain card", chromedp.WaitVisible(chromedp.CSS(pc+` .field[data-field=name] input`)))
	if n := b.eval(`String(document.querySelectorAll('#cards [name], #cards [id]').length)`); n != "0" {
		t.Fatalf("%s card controls carry a name or id", n)
	}
	b.shot("01-cards")

	b.do("fill the hostile card",
		chromedp.SendKeys(chromedp.CSS(hc+` .field[data-field=append] input`), "Ada"),
		chromedp.SetValue(chromedp.CSS(hc+` .field[data-field=querySelectorAll] input`), "3"),
		chromedp.SetValue(chromedp.CSS(hc+` .field[data-field=remove] select`), "b"))
	b.click(hc + ` .field[data-field=addEventListener] input`)
	b.click(hc + ` button[data-answer=accept]`)
	select {
	case a := <-hostile:
		if a.err != nil || a.r == nil || a.r.Action != "accept" {
			t.Fatalf("hostile card answer: %+v %v", a.r, a.err)
		}
		got, _ := json.Marshal(a.r.Content)
		if want := `{"addEventListener":true,"append":"Ada","querySelectorAll":3,"remove":"b"}`; string(got) != want {
			t.Fatalf("hostile card content %s, want %s", got, want)
		}
	case <-time.After(2 * time.Minute): // only a hang
		t.Fatal("the hostile card was not answered")
	}
	b.click(pc + ` button[data-answer=decline]`)
	select {
	case a := <-plain:
		if a.err != nil || a.r == nil || a.r.Action != "decline" {
			t.Fatalf("plain card answer: %+v %v", a.r, a.err)
		}
	case <-time.After(2 * time.Minute): // only a hang
		t.Fatal("the plain card was not answered")
	}
	b.wait("the cards to go", `document.querySelectorAll('#cards .card').length === 0`)
	b.checkConsole()
}

// Browsers share cookies among all ports of 127.0.0.1: the session cookie
// must not reach another local web server the person visits, at its root
// or at its /api/.
func TestBrowserCookieStaysWithTheDaemon(t *testing.T) {
	s := newStack(t, stackOpts{})
	var mu sync.Mutex
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+": "+r.Header.Get("Cookie"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!doctype html><title>another local server</title>"))
	}))
	defer other.Close()
	b := newBrowser(t)
	b.login(s)
	for _, p := range []string{"/", "/api/health", "/api/servers", "/login"} {
		b.do("visit another local server", chromedp.Navigate(other.URL+p))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 4 {
		t.Fatalf("the other server saw %d requests", len(got))
	}
	for _, g := range got {
		if strings.Contains(g, CookieName) {
			t.Errorf("another local server received the session cookie: %s", g)
		}
	}
}
