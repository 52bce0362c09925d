package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// text is what the person sees of sel: its innerText, which leaves out
// what is not rendered (a hidden note, the body of a closed "details").
// "" when there is no such element.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return b.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : ""; })()`, sel))
}

// badColor is the page's --bad (#c62828), the color of a failure.
const badColor = "rgb(198, 40, 40)"

// Each server's state cell says its state in the page's own words, with
// what to do about it on this page: never the raw error chain (it stays
// folded under "details") and never a CLI command, although the engine's
// reasons carry both. A freshly added OAuth server is waiting for its
// sign-in, not failing.
func TestBrowserStateInPageWords(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	secure := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	const goodToken = "the-right-bearer-token"
	locked := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") == "Bearer "+goodToken {
			return true
		}
		w.WriteHeader(http.StatusUnauthorized)
		return false
	}})
	gone := testkit.StartFixture(t, fixture.Options{})
	goneURL := gone.URL()
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}

	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	wrong := "wrong-bearer-" + time.Now().Format("150405.000000000")
	secrets.add("bearer token of the locked server", wrong)
	for _, req := range []localapi.AddServerRequest{
		{ID: "locked", URL: locked.URL(), Auth: config.AuthBearer, Token: wrong},
		{ID: "gone", URL: goneURL},
	} {
		if _, err := s.c.AddServer(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t)
	b.login(s)

	// The OAuth server is added on the page, as a person would.
	b.do("fill the add form",
		chromedp.SetValue(chromedp.CSS(`#add-form input[name=id]`), "secure"),
		chromedp.SetValue(chromedp.CSS(`#add-form input[name=url]`), secure.URL()),
		chromedp.SetValue(chromedp.CSS(`#add-form select[name=auth]`), "oauth"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#add-form select[name=auth]').dispatchEvent(new Event('change'))`))
	b.click(`#add-form button[type=submit]`)

	cases := []struct {
		id, state string
		// label and hint are the words the state cell shows.
		label, hint string
		// detail is in the folded technical detail.
		detail string
		// action is the button the hint points at.
		action string
	}{
		{id: "secure", state: "needs-auth", label: "needs authorization", hint: "Click Authorize to sign in.", detail: "needs authorization", action: "authorize"},
		{id: "locked", state: "error", label: "token refused", hint: "Delete the server and add it again", detail: "refused the credentials", action: "delete"},
		{id: "gone", state: "error", label: "can't reach the server", hint: "Check the URL", detail: "network", action: "connect"},
	}
	for _, tc := range cases {
		b.wait(tc.id+" "+tc.state, fmt.Sprintf(`(() => { const r = document.querySelector(%q); return r && r.dataset.state === %q; })()`, row(tc.id), tc.state))
	}
	b.shot("01-states")
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			cell := row(tc.id) + ` td.state-cell`
			seen := b.text(cell)
			if got := b.text(cell + ` .state`); got != tc.label {
				t.Errorf("state %q, want %q (cell %q)", got, tc.label, seen)
			}
			if !strings.Contains(b.text(cell+` .state-hint`), tc.hint) {
				t.Errorf("hint %q does not say %q", b.text(cell+` .state-hint`), tc.hint)
			}
			// Issue #20 item 1: a server that cannot be reached says when
			// its backoff tries again (waited for: while a background
			// attempt is under way no wait is ahead, and none is shown).
			if tc.id == "gone" {
				b.wait("the next try in the hint", fmt.Sprintf(`document.querySelector(%q).textContent.includes("Not tried again before")`, cell+` .state-hint`))
			}
			// A server waiting for its sign-in is moved by Authorize, not by
			// the clock.
			if tc.state == "needs-auth" && strings.Contains(b.text(cell+` .state-hint`), "tried again") {
				t.Errorf("a server waiting for its sign-in speaks of a retry: %q", b.text(cell+` .state-hint`))
			}
			for _, never := range []string{"remotemcp ", "initialize", "dial tcp", "oauth:", "run \""} {
				if strings.Contains(seen, never) {
					t.Errorf("the state cell shows %q: %q", never, seen)
				}
			}
			if !strings.Contains(b.eval(`String(`+visible(row(tc.id)+` button[data-action=`+tc.action+`]`)+`)`), "true") {
				t.Errorf("the hint points at %s, which is not on the row", tc.action)
			}
			// The detail is there, folded, and says the technical truth.
			if b.eval(fmt.Sprintf(`String(document.querySelector(%q).open)`, cell+` details.reason`)) != "false" {
				t.Error("the detail is open by itself")
			}
			detail := b.eval(fmt.Sprintf(`document.querySelector(%q).textContent`, cell+` details.reason .reason-text`))
			if !strings.Contains(detail, tc.detail) {
				t.Errorf("detail %q does not say %q", detail, tc.detail)
			}
		})
	}
	// Waiting for a sign-in is not a failure: not in the failure's red,
	// and not Connect (which would only fail again) but Authorize.
	if c := b.eval(`getComputedStyle(document.querySelector('` + row("secure") + ` .state')).color`); c == badColor {
		t.Errorf("needs authorization is shown in red (%s)", c)
	}
	if b.eval(`String(`+visible(row("secure")+` button[data-action=connect]`)+`)`) != "false" {
		t.Error("a server waiting for its sign-in offers Connect")
	}
	if c := b.eval(`getComputedStyle(document.querySelector('` + row("gone") + ` .state')).color`); c != badColor {
		t.Errorf("a failure is not shown in red (%s)", c)
	}

	// Connect on the page fails again: the row says so, and no banner
	// says it a second time.
	b.click(row("gone") + ` button[data-action=connect]`)
	b.wait("the connecting notice to go", `document.querySelector('#notice').hidden`)
	if body := b.text("body"); strings.Count(body, "can't reach the server") != 1 || strings.Contains(body, "connection refused") {
		t.Errorf("after a failed Connect the page reads:\n%s", body)
	}

	// Opened, the detail shows the chain, and stays open across the
	// re-renders of live updates.
	b.click(row("locked") + ` details.reason summary`)
	b.wait("the detail open", `document.querySelector('`+row("locked")+` details.reason').open`)
	if !strings.Contains(b.text(row("locked")+` details.reason`), "refused the credentials") {
		t.Fatalf("the opened detail shows %q", b.text(row("locked")+` details.reason`))
	}
	if _, err := s.c.Connect(ctx, "gone"); err == nil {
		t.Fatal("connecting to a closed port worked")
	}
	time.Sleep(300 * time.Millisecond) // the servers event of the failed connect
	if b.eval(`String(document.querySelector('`+row("locked")+` details.reason').open)`) != "true" {
		t.Error("a live update folded the detail the person opened")
	}
	b.shot("02-detail-open")

	// On a phone the words, hints and an opened detail (long URLs) fit.
	b.do("narrow", chromedp.EmulateViewport(360, 800))
	b.wait("the narrow layout", `window.innerWidth === 360`)
	if w := b.eval(`String(document.documentElement.scrollWidth)`); w != "360" {
		t.Errorf("at 360 px the page is %s px wide: it scrolls sideways", w)
	}
	b.shot("03-narrow-360")
	b.do("wide", chromedp.EmulateViewport(1280, 1600))

	// No visible text anywhere on the page, opened details included,
	// sends the person to the CLI.
	if body := b.text("body"); strings.Contains(body, `"remotemcp `) || strings.Contains(body, "remotemcp auth") || strings.Contains(body, "remotemcp grants") {
		t.Errorf("the page tells the person to run a command:\n%s", body)
	}
	b.checkConsole()
}

// An interrupted call (its daemon died with the server's question open)
// shows as a card with a Re-send button. Clicking it re-sends the call
// once, through the daemon: the server runs the tool again, asks again,
// and the answer given on the page finishes the re-sent call.
func TestBrowserResendInterruptedCall(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	dir := t.TempDir()
	first := newStack(t, stackOpts{dir: dir})
	ctx := testkit.Context(t)
	first.addFixture(t, "fx", f)
	type outcome struct {
		r   *localapi.ToolResult
		err error
	}
	called := make(chan outcome, 1)
	go func() {
		r, err := first.c.Call(ctx, localapi.CallRequest{Tool: "fx/ask", Approved: true}, localapi.CallHandler{})
		called <- outcome{r, err}
	}()
	var pending localapi.Card
	testkit.WaitFor(t, "the question", func() bool {
		cards, err := first.c.Cards(ctx)
		if err == nil && len(cards) == 1 && cards[0].Status == localapi.CardPending {
			pending = cards[0]
			return true
		}
		return false
	})
	// A crash: the daemon dies with the question open. A clean stop would
	// cancel the call and close the card as cancelled, so the card is put
	// back as the crash leaves it.
	raw, err := first.eng.Store.GetKV(ctx, elicit.Namespace, pending.ID)
	if err != nil {
		t.Fatal(err)
	}
	first.close()
	if o := <-called; o.err == nil && o.r.Outcome == localapi.OutcomeOK {
		t.Fatalf("the call succeeded although its daemon stopped: %+v", o.r)
	}
	st, err := store.Open(ctx, dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutKV(ctx, elicit.Namespace, pending.ID, raw); err != nil {
		t.Fatal(err)
	}
	st.Close()

	s := newStack(t, stackOpts{dir: dir})
	b := newBrowser(t)
	b.login(s)
	card := fmt.Sprintf(`#cards .card.interrupted[data-card=%q]`, pending.ID)
	b.do("the interrupted card", chromedp.WaitVisible(chromedp.CSS(card+` button[data-retry]`)))
	if n := f.Executions("ask"); n != 1 {
		t.Fatalf("ask ran %d times before the re-send", n)
	}
	if txt := b.text(card); !strings.Contains(txt, "fx") || !strings.Contains(txt, "ask") || !strings.Contains(txt, "Re-send") {
		t.Fatalf("the interrupted card shows %q", txt)
	}
	b.shot("01-interrupted")

	b.click(card + ` button[data-retry]`)
	// The re-sent call reaches the server, which asks its question again:
	// a new card, answered on the page like any other.
	again := `#cards form.card`
	b.do("the question of the re-sent call", chromedp.WaitVisible(chromedp.CSS(again+` .field[data-field=name] input`)))
	if n := f.Executions("ask"); n != 2 {
		t.Fatalf("ask ran %d times after the re-send, want 2", n)
	}
	if b.eval(`String(`+visible(card)+`)`) != "false" {
		t.Error("the interrupted card stays after its call was re-sent")
	}
	b.shot("02-asked-again")
	b.do("answer", chromedp.SendKeys(chromedp.CSS(again+` .field[data-field=name] input`), "Bob"))
	b.click(again + ` button[data-answer=accept]`)
	b.wait("the re-send's outcome", `(() => { const n = document.querySelector('#notice'); return !n.hidden && n.textContent.startsWith('Re-sent '); })()`)
	if got := b.text("#notice"); got != "Re-sent ask of fx: the server ran it and answered." {
		t.Errorf("notice after the re-send: %q", got)
	}
	b.wait("no card left", `document.querySelectorAll('#cards .card').length === 0`)
	b.shot("03-resent")
	if n := f.Executions("ask"); n != 2 {
		t.Fatalf("ask ran %d times, want 2 (the original and one re-send)", n)
	}
	c, err := s.c.Card(ctx, pending.ID)
	if err != nil || c.Status != localapi.CardInterrupted || !c.Resent {
		t.Fatalf("the card after the re-send: %+v %v", c, err)
	}
	// Once: the daemon refuses a second re-send.
	if _, err := s.c.Retry(ctx, pending.ID, true); err == nil {
		t.Fatal("a second re-send was accepted")
	}
	if n := f.Executions("ask"); n != 2 {
		t.Fatalf("ask ran %d times after a refused second re-send", n)
	}
	b.checkConsole()
}

// A server's settings that the CLI and the API change (approval, trust,
// pinned tools, idle timeout, limits, header names) show on the page too,
// read-only: one engine, every surface.
func TestBrowserServerSettings(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	if _, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL(), Approval: config.ApprovalAsk, Trusted: true}); err != nil {
		t.Fatal(err)
	}
	idle := "0"
	if _, err := s.c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{PinTools: []string{"echo"}, IdleTimeout: &idle,
		Limits: map[string]string{"maxMessageBytes": "8MiB"}}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.login(s)
	b.click(row("fx") + ` details.settings summary`)
	b.wait("the settings", visible(row("fx")+` .settings-list dd`))
	got := b.text(row("fx") + ` .settings-list`)
	for _, want := range []string{"ask: remotemcp asks before each call", "yes: hosts see its tool annotations", "echo", "never hibernates", "maxMessageBytes=8388608"} {
		if !strings.Contains(got, want) {
			t.Errorf("the settings read %q, without %q", got, want)
		}
	}
	b.shotView("settings")
}

// The page re-renders the server list on every change. A row that reads
// the same keeps its node, so a click pressed on its button before
// another server changed and released after still counts: the person's
// click is not lost to an unrelated re-render (it was, and it made
// TestBrowserNeedsAuthBanner flaky under load).
func TestBrowserClickSurvivesOtherRowsChange(t *testing.T) {
	fx, fy := testkit.StartFixture(t, fixture.Options{}), testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	s.addFixture(t, "fx", fx)
	s.addFixture(t, "fy", fy)
	b := newBrowser(t)
	b.login(s)
	ready := func(id string) string {
		return `(() => { const r = document.querySelector('` + row(id) + `'); return r && r.dataset.state === 'ready'; })()`
	}
	b.wait("both ready", ready("fx")+" && "+ready("fy"))
	btn := row("fx") + ` button[data-action=disconnect]`
	// The rows settle first (a late catalog event may still redraw fx's
	// row for its own reasons): the same nodes for half a second.
	for try := 0; ; try++ {
		b.do("mark the rows", chromedp.Evaluate[chromedp.Void](`window.keptButton = document.querySelector('`+btn+`'); window.changedRow = document.querySelector('`+row("fy")+`')`))
		time.Sleep(500 * time.Millisecond)
		if b.eval(`String(window.keptButton === document.querySelector('`+btn+`') && window.changedRow === document.querySelector('`+row("fy")+`'))`) == "true" {
			break
		}
		if try == 20 {
			t.Fatal("the server rows never settled")
		}
	}
	box := b.eval(`(() => { const r = document.querySelector('` + btn + `').getBoundingClientRect(); return (r.left + r.width / 2) + ' ' + (r.top + r.height / 2); })()`)
	var x, y float64
	if _, err := fmt.Sscanf(box, "%g %g", &x, &y); err != nil {
		t.Fatalf("button box %q: %v", box, err)
	}
	mouse := func(typ input.DispatchMouseEventType) {
		t.Helper()
		cctx, cancel := context.WithTimeout(b.ctx, browserHang)
		defer cancel()
		if _, err := chromedp.Call(cctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: typ, X: x, Y: y,
			Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1}); err != nil {
			t.Fatalf("mouse %s: %v", typ, err)
		}
	}
	mouse(input.DispatchMouseEventTypeMousePressed)
	if _, err := s.c.Disconnect(ctx, "fy"); err != nil {
		t.Fatal(err)
	}
	b.wait("fy's row redrawn", `(() => { const r = document.querySelector('`+row("fy")+`'); return r && r.dataset.state !== 'ready' && r !== window.changedRow; })()`)
	if got := b.eval(`String(window.keptButton.isConnected && window.keptButton === document.querySelector('` + btn + `'))`); got != "true" {
		t.Errorf("fx's row did not change, yet its button was replaced (kept: %s)", got)
	}
	mouse(input.DispatchMouseEventTypeMouseReleased)
	b.wait("fx disconnected by the click", `(() => { const r = document.querySelector('`+row("fx")+`'); return r && r.dataset.state === 'disconnected'; })()`)
	if v, err := s.c.Server(ctx, "fx"); err != nil || v.State != localapi.StateDisconnected {
		t.Fatalf("fx after the click: %+v %v", v, err)
	}
	b.checkConsole()
}

// The page changes a server's settings through the same API as the CLI:
// a dialog filled from the server's view sends only what changed, with
// the revision it was filled from. Bad input is refused with the API's
// words and changes nothing; an edit made elsewhere meanwhile is not
// overwritten (the form shows it, and a second save applies).
func TestBrowserEditSettings(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	s.addFixture(t, "fx", f)
	b := newBrowser(t)
	b.login(s)
	dialog := `#edit-dialog`
	open := func() {
		t.Helper()
		// The row is drawn once the page has the server list: after
		// login on a loaded machine it may not be there yet.
		b.wait("the server's row", `!!document.querySelector('`+row("fx")+` details.settings')`)
		if b.eval(`String(document.querySelector('`+row("fx")+` details.settings').open)`) != "true" {
			b.click(row("fx") + ` details.settings summary`)
		}
		b.click(row("fx") + ` button[data-action=edit]`)
		b.wait("the settings dialog", `document.querySelector('`+dialog+`').open`)
	}
	save := func() {
		t.Helper()
		b.click(dialog + ` button[type=submit]`)
	}
	open()
	b.do("change approval, idle timeout and trust",
		chromedp.SetValue(chromedp.CSS(dialog+` select[name=approval]`), "ask"),
		chromedp.SetValue(chromedp.CSS(dialog+` input[name=idleTimeout]`), "0"))
	b.click(dialog + ` input[name=trusted]`)
	b.shotView("01-edit-dialog")
	save()
	b.wait("the dialog to close", `!document.querySelector('`+dialog+`').open`)
	v, err := s.c.Server(ctx, "fx")
	if err != nil {
		t.Fatal(err)
	}
	if v.Approval != config.ApprovalAsk || !v.Trusted || v.IdleTimeout != "0s" || v.Name != "fx" || !v.ConnectOnStartup {
		t.Fatalf("after the save: approval %q trusted %v idle %q name %q connect %v", v.Approval, v.Trusted, v.IdleTimeout, v.Name, v.ConnectOnStartup)
	}
	b.wait("the settings list to say so", `document.querySelector('`+row("fx")+` .settings-list').innerText.includes('never hibernates')`)
	rev := v.Revision

	// Bad input: the API's message in the dialog, nothing changed.
	open()
	b.do("a bad idle timeout", chromedp.SetValue(chromedp.CSS(dialog+` input[name=idleTimeout]`), "soon"))
	save()
	b.wait("the error", visible(dialog+` .edit-error`))
	if got := b.text(dialog + ` .edit-error`); !strings.Contains(got, "idle") {
		t.Errorf("the error reads %q", got)
	}
	b.shotView("02-edit-error")
	if v, _ := s.c.Server(ctx, "fx"); v.Revision != rev || v.IdleTimeout != "0s" {
		t.Fatalf("a refused edit changed the server: revision %d→%d, idle %q", rev, v.Revision, v.IdleTimeout)
	}
	b.click(dialog + ` .edit-cancel`)
	b.wait("the dialog to close", `!document.querySelector('`+dialog+`').open`)

	// Changed elsewhere while the dialog is open: not overwritten.
	open()
	other := "Changed by the CLI"
	if _, err := s.c.UpdateServer(ctx, "fx", localapi.UpdateServerRequest{Name: &other}); err != nil {
		t.Fatal(err)
	}
	b.do("a tool timeout", chromedp.SetValue(chromedp.CSS(dialog+` input[name=toolTimeout]`), "90s"))
	save()
	b.wait("the conflict", `document.querySelector('`+dialog+` .edit-error').innerText.includes('changed elsewhere')`)
	if got := b.eval(`document.querySelector('` + dialog + ` input[name=name]').value`); got != other {
		t.Errorf("after the conflict the form's name is %q, want the new %q", got, other)
	}
	if v, _ := s.c.Server(ctx, "fx"); v.ToolTimeout != "" {
		t.Fatalf("the conflicting edit was applied: tool timeout %q", v.ToolTimeout)
	}
	b.do("the tool timeout again", chromedp.SetValue(chromedp.CSS(dialog+` input[name=toolTimeout]`), "90s"))
	save()
	b.wait("the dialog to close", `!document.querySelector('`+dialog+`').open`)
	if v, _ := s.c.Server(ctx, "fx"); v.ToolTimeout != "1m30s" || v.Name != other {
		t.Fatalf("after the second save: tool timeout %q, name %q", v.ToolTimeout, v.Name)
	}
	b.checkConsole()
}
