package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// initializes counts the initialize requests the server received: each is
// a new MCP session.
func initializes(f *fixture.Server) int {
	n := 0
	for _, r := range f.Requests() {
		if r.RPCMethod == "initialize" {
			n++
		}
	}
	return n
}

// scenario runs one user story on a prepared data directory and returns
// what the person saw. It must not depend on whether a daemon runs.
type scenario struct {
	name string
	// setup prepares the data directory (before the daemon starts).
	setup func(t *testing.T, e *env, f *fixture.Server)
	// run performs the story and returns the transcript to compare.
	run func(t *testing.T, e *env, f *fixture.Server) string
}

// answerNoTerminal starts a call whose server asks a question, with no
// terminal: the command must print the card id and the exact command to
// answer it at once. The test then runs that command, as a person would
// in another shell, and returns the call's transcript.
func answerNoTerminal(t *testing.T, e *env) string {
	cmd := exec.CommandContext(t.Context(), bin, "call", "mcp__fx__ask", "{}", "--yes")
	cmd.Env = e.environ()
	var out syncBuffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errText strings.Builder
	answerCmd := regexp.MustCompile(`remotemcp elicitations answer (el-[A-Z2-7]{20}) accept`)
	sc := bufio.NewScanner(stderr)
	var card string
	for sc.Scan() {
		errText.WriteString(sc.Text() + "\n")
		if m := answerCmd.FindStringSubmatch(sc.Text()); m != nil {
			card = m[1]
			break
		}
	}
	if card == "" {
		cmd.Wait()
		t.Fatalf("no answer command printed; stderr:\n%s", errText.String())
	}
	ans := e.run("", "elicitations", "answer", card, "accept", `{"name":"Ada"}`)
	if ans.code != 0 {
		t.Fatalf("answer: %s", ans)
	}
	// The rest through the same scanner: it may already hold lines.
	for sc.Scan() {
		errText.WriteString(sc.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("call: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errText.String())
	}
	return "--- answer:\n" + ans.out + ans.err + "--- call stdout:\n" + out.String() + "--- call stderr:\n" + errText.String()
}

// TestSamePathWithAndWithoutDaemon (issue #9 "Must show"): the same user
// stories through the CLI with a daemon running and without one give the
// same output, timing and random ids aside. The CLI is a client of one
// API in both cases; only where the engine runs differs.
func TestSamePathWithAndWithoutDaemon(t *testing.T) {
	scenarios := []scenario{
		{
			name: "call with 3 progress notifications",
			run: func(t *testing.T, e *env, f *fixture.Server) string {
				r := e.run("", "call", "mcp__fx__slow", `{"ms":150,"steps":3}`, "--yes")
				if r.code != 0 || strings.Count(r.err, "step ") != 3 || !strings.Contains(r.out, "done 3 steps") {
					t.Errorf("want 3 progress lines and the result:\n%s", r)
				}
				return r.String()
			},
		},
		{
			name: "question answered on a terminal",
			run: func(t *testing.T, e *env, f *fixture.Server) string {
				r := e.runTerminal([]exchange{
					{regexp.MustCompile(`(?i)\[y/N\]`), "y\n"},
					{regexp.MustCompile(`accept, decline or cancel\?`), "Ada\n"}, // not a keyword: explained, asked again
					{regexp.MustCompile(`accept, decline or cancel\?`), "accept\n"},
					{regexp.MustCompile(`(?i)name`), "Ada\n"},
					{regexp.MustCompile(`(?i)age`), "\n"},
				}, "call", "mcp__fx__ask", "{}")
				if r.code != 0 || !strings.Contains(r.out, "hello Ada (42)") {
					t.Errorf("terminal call:\n%s", r)
				}
				return r.String()
			},
		},
		{
			name: "question with no terminal",
			run: func(t *testing.T, e *env, f *fixture.Server) string {
				s := answerNoTerminal(t, e)
				if !strings.Contains(s, "hello Ada (42)") {
					t.Errorf("no-terminal call:\n%s", s)
				}
				return s
			},
		},
		{
			name: "prompt get",
			run: func(t *testing.T, e *env, f *fixture.Server) string {
				r := e.run("", "prompt", "/fx:greet", "name=Ada")
				if r.code != 0 || !strings.Contains(r.out, "Ada") {
					t.Errorf("prompt:\n%s", r)
				}
				return r.String()
			},
		},
		{
			name: "resource read",
			run: func(t *testing.T, e *env, f *fixture.Server) string {
				r := e.run("", "read", "@fx:"+fixture.ReadmeURI)
				if r.code != 0 || !strings.Contains(r.out, "remotemcp test server") {
					t.Errorf("read:\n%s", r)
				}
				return r.String()
			},
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := map[bool]string{}
			for _, withDaemon := range []bool{true, false} {
				f := testkit.StartFixture(t, fixture.Options{})
				e := newEnv(t)
				e.mustRun("", "servers", "add", "fx", f.URL())
				if sc.setup != nil {
					sc.setup(t, e, f)
				}
				if withDaemon {
					e.startDaemon()
				}
				got[withDaemon] = normalize(sc.run(t, e, f), e.dir)
			}
			if got[true] != got[false] {
				t.Fatalf("output differs\n=== with the daemon:\n%s\n=== without:\n%s", got[true], got[false])
			}
		})
	}
}

// TestDaemonCommandsOpenNoNewSession (issue #9 "Must show"): with the
// daemon running, tools, prompts, resources, prompt, read and call use
// the daemon's session: the server sees no new initialize.
func TestDaemonCommandsOpenNoNewSession(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t)
	e.mustRun("", "servers", "add", "fx", f.URL())
	e.startDaemon()
	e.mustRun("", "connect", "fx")
	before := initializes(f)
	for _, args := range [][]string{
		{"tools"},
		{"prompts"},
		{"resources"},
		{"prompt", "/fx:greet", "name=Ada"},
		{"read", "@fx:" + fixture.ReadmeURI},
		{"call", "mcp__fx__echo", `{"text":"hi"}`, "--yes"},
	} {
		e.mustRun("", args...)
	}
	if n := initializes(f) - before; n != 0 {
		t.Fatalf("the commands opened %d new MCP sessions; want 0 (they must use the daemon's)", n)
	}
}

// oauthServer starts the fixture behind the test authorization server
// (no refresh tokens: the access token lives only in the memory of the
// process that signed in).
func oauthServer(t *testing.T) (*fixture.Server, *authserver.Server) {
	t.Helper()
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	as.Set(func(k *authserver.Knobs) { k.NoRefreshTokens = true })
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	return f, as
}

// signIn runs `auth login` without a browser and plays the browser: the
// test authorization server approves at once and redirects to the
// loopback callback.
func signIn(t *testing.T, e *env, id string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, "auth", "login", id, "--no-browser")
	cmd.Env = e.environ()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb syncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		out.WriteString(line + "\n")
		if strings.HasPrefix(line, "http://") || strings.HasPrefix(line, "https://") {
			// The authorization page (or the local redirect page) —
			// follow every redirect to the loopback callback.
			resp, err := http.Get(line)
			if err != nil {
				t.Fatalf("browser: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			break
		}
	}
	go io.Copy(io.Discard, stdout)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("auth login: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("auth login did not finish\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// addOAuthServer adds the fixture behind its authorization server as "fx"
// with its own redirect port, and grants the authorization server's
// origin.
func addOAuthServer(t *testing.T, e *env, f *fixture.Server, as *authserver.Server) {
	t.Helper()
	e.mustRun("", "servers", "add", "fx", f.URL(), "--oauth", "--port", freePort(t), "--lazy")
	e.mustRun("", "grants", "approve", as.URL())
}

// TestLogoutSamePath (issue #9 "Must show"): auth status and status after
// auth logout say the same with and without a daemon: signed out, the
// server needs authorization, and status exits non-zero.
func TestLogoutSamePath(t *testing.T) {
	got := map[bool]string{}
	for _, withDaemon := range []bool{true, false} {
		as, err := authserver.Start(authserver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(as.Close)
		f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
		e := newEnv(t)
		addOAuthServer(t, e, f, as)
		if withDaemon {
			e.startDaemon()
		}
		signIn(t, e, "fx")
		e.mustRun("", "call", "mcp__fx__echo", `{"text":"hi"}`, "--yes")
		logout := e.run("", "auth", "logout", "fx")
		authStatus := e.run("", "auth", "status", "fx", "--json")
		status := e.run("", "status", "fx")
		if logout.code != 0 || status.code != localapi.ExitNotReady || !strings.Contains(status.out+status.err, string(localapi.StateNeedsAuth)) ||
			!strings.Contains(authStatus.out, `"hasAccessToken": false`) || !strings.Contains(authStatus.out, `"hasRefreshToken": false`) {
			t.Errorf("daemon=%v after logout:\n%s\n%s\n%s", withDaemon, logout, authStatus, status)
		}
		// The logout's own words differ by design: only the daemon held an
		// access token to forget. What follows must not.
		got[withDaemon] = normalize(authStatus.String()+status.String(), e.dir)
	}
	if got[true] != got[false] {
		t.Fatalf("output differs\n=== with the daemon:\n%s\n=== without:\n%s", got[true], got[false])
	}
}

// TestOAuthTokenOnlyInDaemon (issue #9 "Must show", Decided: the OAuth
// scenario): the access token exists only in the daemon's memory (no
// refresh token is issued). With the daemon the call works; in-process the
// command says a login is needed, names the step, and says nothing was
// sent.
func TestOAuthTokenOnlyInDaemon(t *testing.T) {
	f, as := oauthServer(t)
	e := newEnv(t)
	addOAuthServer(t, e, f, as)
	e.startDaemon()
	signIn(t, e, "fx")

	r := e.run("", "call", "mcp__fx__echo", `{"text":"through the daemon"}`, "--yes")
	if r.code != 0 || !strings.Contains(r.out, "through the daemon") {
		t.Fatalf("call through the daemon:\n%s", r)
	}
	before := f.Executions("echo")
	r = e.run("", "--no-daemon", "call", "mcp__fx__echo", `{"text":"in-process"}`, "--yes")
	msg := strings.ToLower(r.out + r.err)
	if r.code == 0 || !strings.Contains(msg, "login") || !strings.Contains(msg, "auth login fx") ||
		!strings.Contains(msg, "nothing was sent") || strings.Contains(msg, "may or may not") {
		t.Fatalf("in-process call without a token:\n%s", r)
	}
	if n := f.Executions("echo"); n != before {
		t.Fatalf("the in-process call ran the tool (%d → %d executions)", before, n)
	}
}
