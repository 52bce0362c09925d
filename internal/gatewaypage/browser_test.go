package gatewaypage

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/remotemcp/remotemcp/internal/oidctest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/localapi"
)

// The gateway's page in a real browser (Debian's chromium driven by
// chromedp, as daemon's browser tests do; REMOTEMCP_SKIP_BROWSER=1 skips
// them, else a missing chromium fails): Alice opens the page, is sent to
// the provider, signs in on its login form, and lands on her own page,
// live, with her server ready and none of Bob's; she makes a host token
// on the page (shown once, hers) and signs out. Screenshots of each step
// are saved for people to look at.
func TestBrowserSignIn(t *testing.T) {
	w := newWorld(t, nil)
	w.addPerson(t, oidctest.Alice.Email, "alice-files")
	w.addPerson(t, oidctest.Bob.Email, "bob-notes")
	alice := w.dial(t, oidctest.Alice.Email)
	if _, err := alice.Connect(w.ctx, "alice-files"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "alice-files ready", func() bool {
		s, err := alice.Server(w.ctx, "alice-files")
		return err == nil && s.State == localapi.StateReady
	})

	b := newChromium(t)
	b.do("open the page", chromedp.Navigate(w.page+"/"))
	b.wait("the provider's login form", `document.querySelector('input[name=username]')`)
	if loc := b.eval(`location.href`); !strings.HasPrefix(loc, w.prov.Issuer+"/login/") {
		t.Fatalf("the page sent the browser to %s, not the provider's login", loc)
	}
	b.shot("1-provider-login")
	b.do("sign in at the provider",
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), oidctest.Alice.Username),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), oidctest.Alice.Password),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)))
	b.wait("Alice's page, live, with her server ready",
		`document.querySelector('#live') && document.querySelector('#live').dataset.state === 'live' && `+
			`document.querySelector('tr[data-server="alice-files"] .state-ready')`)
	if loc := b.eval(`location.href`); loc != w.page+"/" {
		t.Errorf("Alice's page is at %s", loc)
	}
	if who := b.eval(`document.querySelector('#person').textContent`); who != oidctest.Alice.Email {
		t.Errorf("the page says it is %q's", who)
	}
	if rows := b.eval(`[...document.querySelectorAll('tr[data-server]')].map(r => r.dataset.server).join(',')`); rows != "alice-files" {
		t.Errorf("Alice's page lists %q", rows)
	}

	// A host token, made on the page.
	b.do("name a token", chromedp.SendKeys(chromedp.CSS(`#token-form input[name=name]`), "alice-laptop"))
	b.do("create it", chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)))
	b.wait("the new token", `!document.querySelector('#token-new').hidden && document.querySelector('tr[data-token="alice-laptop"]')`)
	tok := b.eval(`document.querySelector('#token-new .token-value').textContent`)
	owner, err := w.gw.TokenOwner(w.ctx, tok)
	if err != nil {
		t.Fatalf("the token the page showed: %v", err)
	}
	if users, _ := w.admin.Users(w.ctx); len(users) != 2 || (users[0].Email == oidctest.Alice.Email) != (users[0].ID == owner) {
		t.Errorf("the token's owner %s is not Alice: %v", owner, users)
	}
	b.shot("2-alice-page")

	b.click(`#signout`)
	b.wait("signed out", `document.title.includes('Signed out')`)
	b.shot("3-signed-out")
	// The session is over: the page sends the browser to sign in again.
	b.do("open the page again", chromedp.Navigate(w.page+"/"))
	b.wait("the provider's login form again", `document.querySelector('input[name=username]')`)
}

// chromium is one headless chromium with one tab.
type chromium struct {
	t   *testing.T
	ctx context.Context
}

// browserHang bounds one browser action: only a hang (chromium under
// -race on a loaded 2-core machine can take many seconds for a step).
const browserHang = 2 * time.Minute

func newChromium(t *testing.T) *chromium {
	t.Helper()
	const path = "/usr/bin/chromium"
	if os.Getenv("REMOTEMCP_SKIP_BROWSER") == "1" {
		t.Skip("REMOTEMCP_SKIP_BROWSER=1")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the browser tests need chromium at %s (%v): run `apt-get install -y chromium`, or set REMOTEMCP_SKIP_BROWSER=1 to skip them", path, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1400),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	quiet := func(string, ...any) {}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(quiet), chromedp.WithErrorf(quiet))
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		acancel()
		t.Fatalf("start chromium: %v", err)
	}
	b := &chromium{t: t, ctx: ctx}
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			if t.Failed() {
				b.shot("failed")
			}
			cancel()
			acancel()
		})
	})
	return b
}

func (b *chromium) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserHang)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

func (b *chromium) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel)))
}

// wait polls a JavaScript predicate from Go, so that it survives
// navigations (the provider's pages, the callback's page).
func (b *chromium) wait(what, expr string) {
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

func (b *chromium) eval(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserHang)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("browser: eval %s: %v", expr, err)
	}
	return v
}

// shot saves a screenshot as <step>.png in $REMOTEMCP_ARTIFACTS/<test>,
// else the test's artifact directory (kept with go test -artifacts). No
// pixel is compared: the pictures are for people.
func (b *chromium) shot(step string) {
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("no screenshot %s: %v", step, err)
		return
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(b.t.Name(), "_")
	dir := b.t.ArtifactDir()
	if root := os.Getenv("REMOTEMCP_ARTIFACTS"); root != "" {
		dir = filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.t.Logf("no screenshot %s: %v", step, err)
			return
		}
	}
	p := filepath.Join(dir, step+".png")
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Logf("no screenshot %s: %v", step, err)
		return
	}
	b.t.Logf("screenshot %s", p)
}
