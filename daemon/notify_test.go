package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// fakeNotifySend puts a notify-send first on PATH that records the
// arguments of each run in a file of its own; it returns a function
// listing the runs so far, oldest first.
func fakeNotifySend(t *testing.T) func() [][]string {
	t.Helper()
	bin, out := t.TempDir(), t.TempDir()
	script := "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"" + out + "/run.$(date +%s%N).$$\"\n"
	if err := os.WriteFile(filepath.Join(bin, NotifyCommand), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() [][]string {
		m, _ := filepath.Glob(filepath.Join(out, "run.*"))
		slices.Sort(m)
		var runs [][]string
		for _, p := range m {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"))
		}
		return runs
	}
}

// serversEvent is the engine's servers event for list.
func serversEvent(t *testing.T, list ...localapi.Server) localapi.Event {
	t.Helper()
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return localapi.Event{Type: localapi.EventServers, Data: b}
}

func srvIn(id, name string, st localapi.State, r *localapi.Reason) localapi.Server {
	return localapi.Server{ID: id, Name: name, Enabled: true, State: st, Reason: r}
}

// The notifier announces a server the daemon knew entering needs-auth,
// once, with notify-send's arguments after "--" and the server's text
// made plain and short; not a server that shows up waiting, not a
// sign-out, not a disabled server, not again within the cooldown.
func TestNotifierAnnouncesNeedsAuth(t *testing.T) {
	runs := fakeNotifySend(t)
	ctx := context.Background()
	n := &notifier{log: testkit.Logger(t), cooldown: time.Hour, run: func(f func()) { f() }, last: map[string]time.Time{}}
	expired := &localapi.Reason{Class: "auth", Step: "authorization", Code: localapi.ReasonRefreshRefused, Message: "needs authorization: oauth: authorization: login required: the stored refresh token was refused (token request refused: HTTP 400: invalid_grant)"}
	hostile := "-x --icon=/etc/passwd <b>bold</b> & <a href=\"http://evil\">x</a>\n\u202Egnp.exe " + strings.Repeat("long ", 40)

	steps := []struct {
		what string
		list []localapi.Server
		want []string // the summaries announced by this step
	}{
		{"the first list: already waiting is not news", []localapi.Server{
			srvIn("a", "A", localapi.StateReady, nil), srvIn("w", "W", localapi.StateNeedsAuth, &localapi.Reason{Code: localapi.ReasonNotSignedIn, Message: "needs authorization"}),
			srvIn("h", hostile, localapi.StateReady, nil), srvIn("o", "O", localapi.StateReady, nil), srvIn("d", "D", localapi.StateReady, nil),
		}, nil},
		{"a pauses", []localapi.Server{
			srvIn("a", "A", localapi.StateNeedsAuth, expired), srvIn("w", "W", localapi.StateNeedsAuth, nil),
			srvIn("h", hostile, localapi.StateReady, nil), srvIn("o", "O", localapi.StateReady, nil), srvIn("d", "D", localapi.StateReady, nil),
		}, []string{"remotemcp: A needs you to sign in"}},
		{"still paused, a new server waiting, a sign-out, a hostile name asking for scopes", []localapi.Server{
			srvIn("a", "A", localapi.StateNeedsAuth, expired), srvIn("w", "W", localapi.StateNeedsAuth, nil),
			srvIn("new", "New", localapi.StateNeedsAuth, &localapi.Reason{Code: localapi.ReasonNotSignedIn, Message: "needs authorization"}),
			srvIn("o", "O", localapi.StateNeedsAuth, &localapi.Reason{Code: localapi.ReasonSignedOut, Message: "signed out"}),
			srvIn("h", hostile, localapi.StateNeedsAuth, &localapi.Reason{Step: "scope", Code: localapi.ReasonInsufficientScope, Scopes: []string{"files:write", "<i>admin</i>\n--urgency=critical"}}),
			{ID: "d", Name: "D", Enabled: false, State: localapi.StateReady},
		}, []string{"remotemcp: -x --icon=/etc/passwd ‹b›bold‹/b› ＆ ‹a href=\"http://evil\"›x‹/a›  gnp.exe long lo… needs you to sign in"}},
		{"a recovers and pauses again within the cooldown; d, disabled, comes back paused", []localapi.Server{
			srvIn("a", "A", localapi.StateReady, nil),
			srvIn("d", "D", localapi.StateNeedsAuth, expired),
		}, []string{"remotemcp: D needs you to sign in"}},
		{"", []localapi.Server{srvIn("a", "A", localapi.StateNeedsAuth, expired), srvIn("d", "D", localapi.StateNeedsAuth, expired)}, nil},
	}
	seen := 0
	for _, st := range steps {
		n.event(ctx, serversEvent(t, st.list...))
		got := runs()[seen:]
		seen += len(got)
		var sums []string
		for _, r := range got {
			if len(r) != 4 || r[0] != "--app-name=remotemcp" || r[1] != "--" {
				t.Fatalf("%s: notify-send ran with %q", st.what, r)
			}
			sums = append(sums, r[2])
		}
		if !slices.Equal(sums, st.want) {
			t.Fatalf("%s: announced %q, want %q", st.what, sums, st.want)
		}
	}
	all := runs()
	if len(all) != 3 {
		t.Fatalf("%d notifications, want 3 (a, h, then d, which was disabled): %q", len(all), all)
	}
	if body := all[0][3]; body != "Its sign-in expired and could not be renewed. It is paused until you sign in: open the settings page (remotemcp open) and click Authorize." {
		t.Errorf("a's body %q", body)
	}
	for _, r := range all[1][2:] {
		if strings.ContainsAny(r, "<>&\n\u202E") {
			t.Errorf("server text reached notify-send as is: %q", r)
		}
	}
	if sum := all[1][2]; utf8.RuneCountInString(sum) > len("remotemcp: ")+notifyMaxName+1+len(" needs you to sign in") {
		t.Errorf("the hostile name was not cut: %q", sum)
	}
	if body := all[1][3]; !strings.HasPrefix(body, "It asks for more permissions (files:write ‹i›admin‹/i› --urgency=critical). ") {
		t.Errorf("h's body %q", body)
	}

	// Without notify-send nothing runs and nothing fails.
	t.Setenv("PATH", t.TempDir())
	n.event(ctx, serversEvent(t, srvIn("z", "Z", localapi.StateReady, nil)))
	n.event(ctx, serversEvent(t, srvIn("z", "Z", localapi.StateNeedsAuth, expired)))
	if got := len(runs()); got != 3 {
		t.Fatalf("%d notifications after notify-send went away", got)
	}
}

// `remotemcp serve --notify` end to end: a signed-in server whose sign-in
// is gone for good when the daemon connects it again is announced on the
// desktop, with why; adding a server that waits for its first sign-in is
// not, nor is a daemon without the option.
func TestServeNotifiesNeedsAuth(t *testing.T) {
	runs := fakeNotifySend(t)
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	ctx := testkit.Context(t)
	quiet := newStack(t, stackOpts{})
	s := newStack(t, stackOpts{notify: true})
	for _, st := range []*stack{quiet, s} {
		if err := st.c.Grant(ctx, as.URL(), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := st.c.AddServer(ctx, localapi.AddServerRequest{ID: "secure", Name: "Secure docs", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: st.srv.Port()}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "a fresh OAuth server waiting for its sign-in", func() bool {
			v, err := st.c.Server(ctx, "secure")
			return err == nil && v.State == localapi.StateNeedsAuth
		})
		// Sign in, with a plain HTTP client playing the browser.
		fl, err := st.c.Authorize(ctx, "secure")
		if err != nil || fl.AuthorizationURL == "" {
			t.Fatalf("authorize: %+v %v", fl, err)
		}
		rc := newRawClient(t)
		r := rc.do(t, http.MethodGet, fl.AuthorizationURL, nil, nil)
		loc := r.header.Get("Location")
		if lu, err := url.Parse(loc); err == nil && len(lu.Query().Get("code")) >= 6 {
			secrets.add("authorization code", lu.Query().Get("code"))
		}
		if r := rc.do(t, http.MethodGet, loc, nil, nil); r.status != http.StatusOK {
			t.Fatalf("callback: %d %s", r.status, r.body)
		}
		if fl, err := st.c.WaitAuthorization(ctx, "secure"); err != nil || fl.Phase != localapi.PhaseDone {
			t.Fatalf("flow %+v %v", fl, err)
		}
		testkit.WaitFor(t, "ready", func() bool {
			v, err := st.c.Server(ctx, "secure")
			return err == nil && v.State == localapi.StateReady
		})
	}
	access, refresh := as.IssuedTokens()
	for _, tok := range append(access, refresh...) {
		secrets.add("OAuth token", tok)
	}
	if n := len(runs()); n != 0 {
		t.Fatalf("%d notifications before anything needed the person: %q", n, runs())
	}

	// The sign-in is gone for good: connecting again pauses the server.
	as.ExpireAccessTokens()
	as.RevokeRefreshTokens()
	for _, st := range []*stack{quiet, s} {
		if _, err := st.c.Disconnect(ctx, "secure"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.c.Connect(ctx, "secure"); err == nil {
			t.Fatal("connecting with a revoked refresh token worked")
		}
	}
	testkit.WaitFor(t, "the notification", func() bool { return len(runs()) > 0 })
	time.Sleep(200 * time.Millisecond) // a second one would be a bug
	got := runs()
	want := []string{"--app-name=remotemcp", "--", "remotemcp: Secure docs needs you to sign in",
		"Its sign-in expired and could not be renewed. It is paused until you sign in: open the settings page (remotemcp open) and click Authorize."}
	if len(got) != 1 || !slices.Equal(got[0], want) {
		t.Fatalf("notify-send ran with %q, want once with %q", got, want)
	}
}
