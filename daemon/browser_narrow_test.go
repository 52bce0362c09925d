package daemon

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// longURL is a server URL as long as real gateways' are: on a phone it
// must wrap at its slashes, not run off the screen.
const longURL = "https://mcp.gateway-of-a-rather-long-company-name.example.com/v1/organizations/acme-corporation-international/projects/a-project-with-a-long-name/mcp"

// overflowing is a JavaScript expression: the elements (buttons, inputs,
// cells, code) whose right edge is past the viewport's, or that are cut
// by their own box, as "tag.class text" lines; "" when none is.
const overflowing = `(() => {
  const out = [];
  for (const e of document.querySelectorAll('button, input, select, textarea, td, th, code, a, .url, li, summary, h2, dt, dd')) {
    if (e.getClientRects().length === 0) continue;
    const r = e.getBoundingClientRect();
    const clipped = e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible' && e.tagName !== 'TD';
    if (r.right > window.innerWidth + 0.5 || r.left < -0.5 || (e.tagName === 'BUTTON' && clipped)) {
      out.push(e.tagName.toLowerCase() + '.' + e.className + ' ' + JSON.stringify((e.textContent || '').slice(0, 40)) + ' right=' + Math.round(r.right));
    }
  }
  return out.join('\n');
})()`

// Issue #19 item 11: at 390 px (a phone) nothing is clipped or past the
// edge — the pending approval's Approve and Dismiss, every row's buttons —
// the rows keep their labels, a long URL wraps at its slashes, and
// opening a server's Catalog brings it into view; the tool count and the
// words match the CLI's. Screenshots at 390 and 1280 px are saved for
// people to look at.
func TestBrowserNarrow390(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	if _, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL(), By: localapi.BySettingsPage}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Connect(ctx, "fx"); err != nil {
		t.Fatal(err)
	}
	lazy := false
	if _, err := s.c.AddServer(ctx, localapi.AddServerRequest{ID: "gateway-with-a-long-id", URL: longURL, ConnectOnStartup: &lazy, By: localapi.BySettingsPage}); err != nil {
		t.Fatal(err)
	}
	// Revoke the gateway's origin and connect: the refusal waits as a
	// pending approval with Approve and Dismiss, in the row and below.
	gwOrigin := "https://mcp.gateway-of-a-rather-long-company-name.example.com"
	if err := s.c.Revoke(ctx, gwOrigin); err != nil {
		t.Fatal(err)
	}
	_, _ = s.c.Connect(ctx, "gateway-with-a-long-id")
	if p, err := s.c.Pending(ctx); err != nil || len(p) != 1 {
		t.Fatalf("pending %+v %v", p, err)
	}

	b := newBrowser(t)
	b.login(s)
	b.wait("fx ready", `(() => { const r = document.querySelector('`+row("fx")+`'); return r && r.dataset.state === 'ready'; })()`)
	b.wait("the pending approval", visible(`#pending-rows tr[data-origin="`+gwOrigin+`"] button[data-action=dismiss]`))
	b.shot("1280-servers")

	b.do("390 px", chromedp.EmulateViewport(390, 900))
	b.wait("the narrow layout", `window.innerWidth === 390`)
	b.shot("390-servers")
	if w := b.eval(`String(document.documentElement.scrollWidth)`); w != "390" {
		t.Errorf("at 390 px the page is %s px wide: it scrolls sideways", w)
	}
	if o := b.eval(overflowing); o != "" {
		t.Errorf("at 390 px these are past the edge or clipped:\n%s", o)
	}
	// Every cell of a server's row says what it is.
	if l := b.eval(`Array.from(document.querySelectorAll('` + row("fx") + ` > td')).filter(td => td.textContent.trim() !== '' && !td.dataset.label).map(td => td.className || td.textContent.slice(0, 20)).join(', ')`); l != "" {
		t.Errorf("row cells without a label at 390 px: %s", l)
	}
	for _, sel := range []string{row("fx") + ` td.tool-count`, row("fx") + ` td.state-cell`, `#pending-rows td[data-label=Origin]`, `#grant-rows td[data-label=Since]`} {
		if lb := b.eval(`getComputedStyle(document.querySelector('` + sel + `'), '::before').content`); !strings.Contains(lb, ": ") {
			t.Errorf("%s shows no label at 390 px: %s", sel, lb)
		}
	}
	// The long URL wraps at its slashes only: it spans several lines, the
	// text is the URL, and every piece of it (one per "/") is one line
	// unless it is longer than the line by itself (the host name here).
	if got := b.eval(`(() => {
	  const u = document.querySelector('` + row("gateway-with-a-long-id") + ` .url');
	  const segs = Array.from(u.querySelectorAll('.seg'));
	  const line = segs[segs.length - 1].getBoundingClientRect().height;
	  const tops = new Set(segs.map(s => Math.round(s.getBoundingClientRect().top)));
	  // A piece split inside itself must be one wider than the line.
	  const full = u.parentElement.getBoundingClientRect().width;
	  const split = segs.filter(s => s.getBoundingClientRect().height > line * 1.5 && s.getBoundingClientRect().width < full - 2).map(s => s.textContent);
	  return [u.textContent === ` + "`" + longURL + "`" + `, tops.size > 1, split.join(' ')].join('|');
	})()`); got != "true|true|" {
		t.Errorf("the long URL (text equal|several lines|pieces split inside): %s", got)
	}
	// The tool counts are the CLI's status column: 7 for the ready
	// server, "-" for one whose catalog is not known.
	if n := b.eval(`document.querySelector('` + row("fx") + ` .tool-count').textContent + ' ' + document.querySelector('` + row("gateway-with-a-long-id") + ` .tool-count').textContent`); n != "7 -" {
		t.Errorf("tool counts %q, want the CLI's \"7 -\"", n)
	}

	// Catalog: opening it scrolls it into view.
	b.eval(`window.scrollTo(0, 0), ""`)
	b.click(row("fx") + ` button[data-action=catalog]`)
	b.do("catalog", chromedp.WaitVisible(chromedp.CSS(`#catalog input[data-tool=echo]`)))
	b.wait("the catalog in view", `(() => { const r = document.querySelector('#catalog-section').getBoundingClientRect(); return r.top >= -1 && r.top < window.innerHeight / 2; })()`)
	b.shotView("390-catalog")
	if o := b.eval(overflowing); o != "" {
		t.Errorf("at 390 px with the catalog open these are past the edge or clipped:\n%s", o)
	}

	b.do("1280 px", chromedp.EmulateViewport(1280, 1000))
	b.wait("the wide layout", `window.innerWidth === 1280`)
	b.shot("1280-catalog")
	if o := b.eval(overflowing); o != "" {
		t.Errorf("at 1280 px these are past the edge or clipped:\n%s", o)
	}
	b.checkConsole()
}
