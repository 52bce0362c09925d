package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/clocktest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// cliLogJSON is what `remotemcp logs ID --json` prints for a log: the
// command's clitext.WriteJSON (internal/clitext) over the same client's
// Log, i.e. Go's encoder with a two-space indent and no HTML escaping.
func cliLogJSON(t *testing.T, l []localapi.LogEntry) []byte {
	t.Helper()
	if l == nil {
		l = []localapi.LogEntry{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(l); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// allowDownloads makes the browser save downloads in a new temporary
// directory, which it returns.
func (b *browser) allowDownloads() string {
	b.t.Helper()
	dir := b.t.TempDir()
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
	}); err != nil {
		b.t.Fatalf("allow downloads: %v", err)
	}
	return dir
}

// downloaded waits for the one finished file in dir whose name matches
// pattern, and returns its path and contents.
func downloaded(t *testing.T, dir, pattern string) (string, []byte) {
	t.Helper()
	var path string
	testkit.WaitFor(t, "the download of "+pattern, func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		if len(m) != 1 {
			return false
		}
		part, _ := filepath.Glob(filepath.Join(dir, "*.crdownload"))
		path = m[0]
		return len(part) == 0
	})
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, body
}

// logRow is one row of the request log drawer, as the person sees it.
type logRow struct {
	Time, Conn, HTTP, Request, Status, MS, Error string
	// DateTime is the row's machine-readable time.
	DateTime string
}

func (b *browser) logRows() []logRow {
	b.t.Helper()
	raw := b.eval(`JSON.stringify(Array.from(document.querySelectorAll('#log-rows tr:not(.empty)')).map((tr) => {
		const c = tr.querySelectorAll('td');
		return {Time: c[0].innerText, Conn: c[1].innerText, HTTP: c[2].innerText, Request: c[3].innerText,
			Status: c[4].innerText, MS: c[5].innerText, Error: c[6].innerText,
			DateTime: tr.querySelector('time').dateTime};
	}))`)
	var rows []logRow
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		b.t.Fatalf("log rows %s: %v", raw, err)
	}
	return rows
}

// checkLogRows compares the drawer's rows with the API's log: every
// exchange, newest first, each field as the person reads it.
func checkLogRows(t *testing.T, rows []logRow, l []localapi.LogEntry) {
	t.Helper()
	if len(rows) != len(l) {
		t.Fatalf("the drawer shows %d rows, the log holds %d exchanges", len(rows), len(l))
	}
	for i, r := range rows {
		x := l[len(l)-1-i]
		want := logRow{
			Time: x.Time.Local().Format("15:04:05.000"), Conn: x.ConnectionID, HTTP: x.HTTPMethod,
			Request: x.RPCMethod, Status: "—", MS: r.MS, Error: x.Error,
			DateTime: x.Time.Format(time.RFC3339Nano),
		}
		if x.Status != 0 {
			want.Status = strconv.Itoa(x.Status)
		}
		if x.RPCMethod == "" {
			want.Request = map[string]string{"GET": "event stream", "DELETE": "end of session"}[x.HTTPMethod]
		}
		if x.Kind != "" {
			// An OAuth request or a server's log message: its tags, then
			// its text.
			var parts []string
			for _, p := range []string{string(x.Kind), x.Step, x.Level, x.Message, x.URL, x.RPCMethod} {
				if p != "" {
					parts = append(parts, p)
				}
			}
			want.Request = strings.Join(parts, " ")
		}
		if x.ConnectionID == "" {
			want.Conn = "—"
		}
		// One decimal, rounded (JavaScript rounds a tie up, Go to even).
		if ms, err := strconv.ParseFloat(r.MS, 64); err != nil || math.Abs(ms-x.Millis) > 0.051 {
			t.Errorf("row %d: ms %q for %v", i, r.MS, x.Millis)
		}
		if r != want {
			t.Errorf("row %d reads %+v, want %+v", i, r, want)
		}
	}
}

// The request log drawer (B1): a row's "Request log" opens the server's
// last exchanges, newest first, updating by itself; Export saves them as
// JSON built in the page, the same bytes `remotemcp logs ID --json`
// prints, and nothing of the bearer token is in either.
func TestBrowserRequestLog(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	// The log must change only by what the test does, or what the page
	// shows and what the test read a moment later differ: on the manual
	// clock no retry follows the failed connect below (on the real one
	// the backoff's first came after about a second, into the export).
	s := newStack(t, stackOpts{clock: clocktest.New(time.Now())})
	ctx := testkit.Context(t)
	token := "log-bearer-" + time.Now().Format("150405.000000000")
	secrets.add("bearer token of the logged server", token)
	if _, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", Name: "Fixture <b>bold</b>", URL: f.URL(), Auth: config.AuthBearer, Token: token}); err != nil {
		t.Fatal(err)
	}
	// Ready, and the standalone stream's GET answered: go-sdk opens it
	// beside the handshake, so under load its exchange may come after
	// the server is ready, and after the log was read.
	testkit.WaitFor(t, "fx ready with its stream open", func() bool {
		v, err := s.c.Server(ctx, "fx")
		if err != nil || v.State != localapi.StateReady {
			return false
		}
		l, err := s.c.Log(ctx, "fx")
		return err == nil && slices.ContainsFunc(l, func(x localapi.LogEntry) bool { return x.HTTPMethod == http.MethodGet && x.Status != 0 })
	})
	call := func(text string) {
		t.Helper()
		r, err := s.c.Call(ctx, localapi.CallRequest{Tool: "fx/echo", Arguments: json.RawMessage(`{"text":"` + text + `"}`), Approved: true}, localapi.CallHandler{})
		if err != nil || r.Outcome != localapi.OutcomeOK {
			t.Fatalf("call: %+v %v", r, err)
		}
	}
	call("one")
	call("two")

	b := newBrowser(t)
	dl := b.allowDownloads()
	b.login(s)
	b.click(row("fx") + ` button[data-action=log]`)
	b.do("the drawer", chromedp.WaitVisible(chromedp.CSS(`#log-drawer #log-rows tr`)))
	if got := b.text(`#log-title`); got != "Request log of Fixture <b>bold</b>" {
		t.Errorf("the drawer's title reads %q", got)
	}
	if n := b.eval(`String(document.querySelectorAll('#log-drawer b').length)`); n != "0" {
		t.Errorf("the server's name became markup (%s <b> elements)", n)
	}
	l, err := s.c.Log(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	b.wait("every exchange listed", fmt.Sprintf(`document.querySelectorAll('#log-rows tr:not(.empty)').length === %d`, len(l)))
	checkLogRows(t, b.logRows(), l)
	calls := 0
	for _, x := range l {
		if x.RPCMethod == "tools/call" && x.Status == 200 {
			calls++
		}
	}
	if calls != 2 {
		t.Fatalf("the log holds %d tools/call exchanges: %+v", calls, l)
	}
	if body := b.text(`#log-drawer`); !strings.Contains(body, "tools/call") || !strings.Contains(body, l[0].ConnectionID) {
		t.Errorf("the drawer reads:\n%s", body)
	}
	b.shotView("01-drawer")

	// A new call shows on top by itself.
	call("three")
	l, _ = s.c.Log(ctx, "fx")
	b.wait("the new call on top", fmt.Sprintf(`(() => { const t = document.querySelector('#log-rows tr time'); return t && t.dateTime === %q; })()`, l[len(l)-1].Time.Format(time.RFC3339Nano)))
	checkLogRows(t, b.logRows(), l)

	// A server's log message (notifications/message) shows with its
	// level and text, as text.
	if r, err := s.c.Call(ctx, localapi.CallRequest{Tool: "fx/fail", Arguments: json.RawMessage(`{}`), Approved: true}, localapi.CallHandler{}); err != nil {
		t.Fatalf("fail: %+v %v", r, err)
	}
	b.wait("the server's log message", `document.querySelector('#log-rows').innerText.includes(`+strconv.Quote(fixture.FailLogText)+`)`)
	if got := b.text(`#log-rows`); !strings.Contains(got, "log") || !strings.Contains(got, "error") {
		t.Errorf("the log message's row lacks its kind or level:\n%s", got)
	}

	// The log stops changing once the server is disconnected (its DELETE
	// is the last exchange); Refresh shows it at once.
	if _, err := s.c.Disconnect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	b.click(`#log-drawer button[data-page-action=log-refresh]`)
	b.wait("the end of the session listed", `(() => { const c = document.querySelector('#log-rows tr td:nth-child(3)'); return c && c.innerText === 'DELETE'; })()`)

	// A connect that fails shows its error, in the failure's color.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Connect(ctx, "fx"); err == nil {
		t.Fatal("connecting to a closed server worked")
	}
	b.click(`#log-drawer button[data-page-action=log-refresh]`)
	// Any row, and the transport's own words: under load another
	// exchange may be listed above it, and a pooled connection the
	// closing server had not yet cut fails with EOF or a reset rather
	// than "connection refused". What matters is that the failure shows,
	// with its error, in red.
	b.wait("the failed exchange listed", `[...document.querySelectorAll('#log-rows tr.failed td.error')].some(td => /connection refused|EOF|reset|closed/.test(td.innerText))`)
	if c := b.eval(`getComputedStyle(document.querySelector('#log-rows tr.failed td.error')).color`); c != badColor {
		t.Errorf("a failed exchange's error is not in red (%s)", c)
	}

	// Export: the file is what the page shows, and what the CLI prints.
	b.click(`#log-drawer button[data-page-action=log-export]`)
	path, got := downloaded(t, dl, "remotemcp-log-fx-*.json")
	l, err = s.c.Log(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	if want := cliLogJSON(t, l); !bytes.Equal(got, want) {
		t.Fatalf("the exported %s differs from `logs fx --json`:\n%s\nwant:\n%s", filepath.Base(path), got, want)
	}
	var parsed []map[string]any
	if err := json.Unmarshal(got, &parsed); err != nil || len(parsed) != len(l) || parsed[0]["connectionId"] == "" {
		t.Fatalf("the export is not the log as JSON (%v): %s", err, got)
	}
	if bytes.Contains(got, []byte(token)) || bytes.Contains(got, []byte("Bearer")) {
		t.Fatalf("the export carries the bearer token: %s", got)
	}
	checkLogRows(t, b.logRows(), l)
	if st := b.text(`#log-status`); !strings.Contains(st, "Exported "+strconv.Itoa(len(l))+" exchanges as "+filepath.Base(path)) {
		t.Errorf("after the export the drawer says %q", st)
	}
	b.shotView("02-exported")

	// On a phone the drawer takes the width, and its rows fit.
	b.do("narrow", chromedp.EmulateViewport(360, 800))
	b.wait("the narrow layout", `window.innerWidth === 360`)
	for _, sel := range []string{"document.documentElement", "document.querySelector('#log-drawer')"} {
		if w := b.eval(`String(` + sel + `.scrollWidth)`); w != "360" {
			t.Errorf("at 360 px %s is %s px wide: it scrolls sideways", sel, w)
		}
	}
	// Each value is labelled, since the table's head is gone.
	labels := b.eval(`Array.from(document.querySelectorAll('#log-rows tr:first-child td')).map((td) => getComputedStyle(td, '::before').content + td.innerText).join(' | ')`)
	// The transport's words, as above: a pooled connection the closing
	// server had not yet cut fails with EOF or a reset.
	if !strings.Contains(labels, `"HTTP: "POST`) || !regexp.MustCompile(`connection refused|EOF|reset|closed`).MatchString(labels) {
		t.Errorf("at 360 px the newest row reads %s", labels)
	}
	if w, _ := strconv.Atoi(b.eval(`String(Math.ceil(document.querySelector('#log-rows tr').getBoundingClientRect().right))`)); w == 0 || w > 360 {
		t.Errorf("at 360 px a log row reaches %d px", w)
	}
	b.shotView("03-narrow-360")
	b.do("wide", chromedp.EmulateViewport(1280, 1600))

	// Close closes it, and the page stops asking for the log.
	b.click(`#log-drawer button[data-page-action=log-close]`)
	b.wait("the drawer closed", `!document.querySelector('#log-drawer').open`)
	b.checkConsole()
}

// The sign-in banner (B2): a server paused in needs-auth is named at the
// top of the page with why and an Authorize button, which starts the same
// flow as the row's; the banner goes once the state changes, and comes
// back with the new reason when background work finds the sign-in gone.
func TestBrowserNeedsAuthBanner(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	secure := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	plainFx := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	s.addFixture(t, "fx", plainFx)
	if _, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: "secure", Name: "Secure docs", URL: secure.URL(), Auth: config.AuthOAuth, RedirectPort: s.srv.Port()}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.login(s)

	banner := `#auth-banner`
	item := banner + ` li[data-server=secure]`
	b.wait("the banner", visible(item))
	if got := b.text(item); !strings.Contains(got, "Secure docs") || !strings.Contains(got, "needs you to sign in: it has not been signed in yet.") {
		t.Errorf("the banner reads %q", got)
	}
	if n := b.eval(`String(document.querySelectorAll('` + banner + ` li').length)`); n != "1" {
		t.Errorf("the banner lists %s servers, want only the one waiting", n)
	}
	if top := b.eval(`String(document.querySelector('` + banner + `').getBoundingClientRect().top < document.querySelector('#servers-section').getBoundingClientRect().top)`); top != "true" {
		t.Error("the banner is not above the server list")
	}
	if got := b.text(item); strings.Contains(got, "Allow the origin") {
		t.Errorf("before any sign-in the banner asks for an origin: %q", got)
	}
	b.shot("01-banner")

	// The banner's Authorize runs the row's flow. The first stops at the
	// authorization server's origin, which the row asks for and the
	// banner points at, until it is allowed.
	b.click(item + ` button[data-action=authorize]`)
	asOrigin := originOf(t, as.URL())
	grantSel := row("secure") + ` .auth-flow button[data-action=grant][data-origin="` + asOrigin + `"]`
	b.do("permission needed", chromedp.WaitVisible(chromedp.CSS(grantSel)))
	b.wait("the banner pointing at the origin", `(() => { const e = document.querySelector('`+item+`'); return e && e.innerText.includes("Allow the origin beside the server's name first."); })()`)
	b.shot("02-banner-origin-first")
	b.click(grantSel)
	b.wait("the banner's pointer to go", `!document.querySelector('`+item+`').innerText.includes('Allow the origin')`)

	// Then the banner's Authorize signs in: a new tab, the authorization
	// server's redirect to /mcp-oauth, ready.
	before := completedCallbacks()
	b.click(item + ` button[data-action=authorize]`)
	b.wait("authorized", `(() => { const r = document.querySelector('`+row("secure")+`'); return r && r.querySelector('.auth-flow.done') && r.dataset.state === 'ready'; })()`)
	b.wait("the banner to go", `document.querySelector('`+banner+`').hidden`)
	if n := completedCallbacks() - before; n != 1 {
		t.Fatalf("%d completed callbacks after the banner's Authorize", n)
	}
	fl, err := s.c.Authorization(ctx, "secure")
	if err != nil || fl.Phase != localapi.PhaseDone {
		t.Fatalf("flow after the banner's Authorize: %+v %v", fl, err)
	}
	if got := b.text("body"); strings.Contains(got, "needs you to sign in") {
		t.Errorf("after the sign-in the page still says it is needed:\n%s", got)
	}
	b.shot("03-authorized")
	for _, r := range as.RequestsTo("/token") {
		for _, k := range []string{"code", "code_verifier", "refresh_token"} {
			if v := r.Form.Get(k); len(v) >= 6 {
				secrets.add("OAuth "+k, v)
			}
		}
	}
	access, refresh := as.IssuedTokens()
	for _, tok := range append(access, refresh...) {
		secrets.add("OAuth token", tok)
	}

	// Connecting again finds the sign-in gone for good (the access token
	// refused, the refresh token revoked): the server pauses, and the
	// banner says why.
	as.ExpireAccessTokens()
	as.RevokeRefreshTokens()
	if _, err := s.c.Disconnect(ctx, "secure"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Connect(ctx, "secure"); err == nil {
		t.Fatal("connecting with a revoked refresh token worked")
	}
	b.wait("the banner again", visible(item))
	if got := b.text(item); !strings.Contains(got, "needs you to sign in: its sign-in expired and could not be renewed.") {
		v, _ := s.c.Server(ctx, "secure")
		t.Errorf("the banner reads %q for %+v", got, v.Reason)
	}
	if got := b.text(row("secure") + ` td.state-cell .state`); got != "needs authorization" {
		t.Errorf("the row's state reads %q", got)
	}
	b.shot("04-banner-expired")
	b.do("narrow", chromedp.EmulateViewport(360, 800))
	b.wait("the narrow layout", `window.innerWidth === 360`)
	if w := b.eval(`String(document.documentElement.scrollWidth)`); w != "360" {
		t.Errorf("at 360 px the page is %s px wide: it scrolls sideways", w)
	}
	b.shot("05-banner-narrow-360")
	b.do("wide", chromedp.EmulateViewport(1280, 1600))

	// Disabling the server changes its state: the banner goes. Enabled
	// again and signed out, it is back, saying so.
	b.click(row("secure") + ` button[data-action=disable]`)
	b.wait("the banner to go on disable", `document.querySelector('`+banner+`').hidden`)
	if _, err := s.c.Logout(ctx, "secure"); err != nil {
		t.Fatal(err)
	}
	b.click(row("secure") + ` button[data-action=enable]`)
	b.wait("signed out in the banner", `(() => { const e = document.querySelector('`+item+`'); return e && e.innerText.includes('needs you to sign in: you signed out.'); })()`)
	b.checkConsole()
}
