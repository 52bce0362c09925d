package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// holdPort listens on a free loopback port until the test ends, as
// another program would: the port is taken.
func holdPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// stdioHost runs "remotemcp ARGS" on pipes as a host launches it and
// connects a go-sdk client; leave closes the client and returns the
// command's result.
func stdioHost(t *testing.T, c *cli, args ...string) (cs *mcp.ClientSession, leave func() result) {
	t.Helper()
	hostIn, cmdOut := io.Pipe()
	cmdIn, hostOut := io.Pipe()
	var errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), append([]string{"--data-dir", c.dir}, args...),
			Streams{In: cmdIn, Out: cmdOut, Err: &errb}, func(string) (string, bool) { return "", false })
		cmdOut.Close()
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, &mcp.IOTransport{Reader: hostIn, Writer: hostOut}, nil)
	if err != nil {
		t.Fatalf("connect to %v: %v\n%s", args, err, errb.String())
	}
	var (
		left bool
		res  result
	)
	leave = func() result {
		if left {
			return res
		}
		left = true
		cs.Close()
		hostOut.Close()
		select {
		case code := <-done:
			res = result{err: errb.String(), code: code}
		case <-time.After(60 * time.Second):
			t.Errorf("%v did not end when the host left: %s", args, errb.String())
		}
		return res
	}
	t.Cleanup(func() { leave() })
	return cs, leave
}

// callEcho calls tool with {"text":"hi"} and checks the answer.
func callEcho(t *testing.T, cs *mcp.ClientSession, tool string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("call %s: %v %+v", tool, err, res)
	}
}

// Issue #19 item 1: a host whose daemon is started in the background on
// a page address another program has still gets its tools: the daemon
// takes a free port, records both in daemon.json, and says so to the
// host's log, in status (daemonLine) and in open.
func TestBackgroundDaemonTakesFreePortWhenPageAddrTaken(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", f.URL())
	taken := holdPort(t)

	cs, leave := stdioHost(t, c, "mcp", "--daemon-addr", taken)
	callEcho(t, cs, "fx__echo")

	in, err := daemon.Running(t.Context(), c.dir)
	if err != nil {
		t.Fatalf("no daemon runs: %v", err)
	}
	if in.RequestedAddr != taken || in.URL == "http://"+taken || !strings.HasPrefix(in.URL, "http://127.0.0.1:") {
		t.Fatalf("daemon.json: requested %q, url %q (taken %s)", in.RequestedAddr, in.URL, taken)
	}
	a := &app{dataDir: c.dir}
	if l := a.daemonLine(t.Context()); !strings.Contains(l, fmt.Sprintf("pid %d", in.PID)) || !strings.Contains(l, in.URL) || !strings.Contains(l, taken+" was taken") {
		t.Fatalf("status line: %q", l)
	}
	r := c.ok("open", "--no-browser")
	if !strings.HasPrefix(strings.TrimSpace(r.out), in.URL+"/login?token=") || !strings.Contains(r.err, taken+" was taken") {
		t.Fatalf("open: %s", r)
	}
	if r := leave(); r.code != exitOK || !strings.Contains(r.err, taken+" was taken") {
		t.Fatalf("host: %s", r)
	}
	// No daemon: no line.
	if l := a.daemonLine(t.Context()); l != "" {
		t.Fatalf("status line without a daemon: %q", l)
	}
}

// Issue #19 item 1: the daemon of "serve --addr X" with X taken refuses,
// naming the cause and the flag, and writes nothing: no daemon.json, and
// with --demo no server (item 8).
func TestServeAddrTakenRefusesNamingTheFlag(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "demo", f.URL())
	before := c.ok("servers", "list", "--json").out
	taken := holdPort(t)
	r := c.fail(exitFail, "--addr", "serve", "--addr", taken, "--demo")
	if !strings.Contains(r.err, "another program has this port") || strings.Contains(r.err, "another daemon") {
		t.Fatalf("serve on a taken address: %s", r)
	}
	if _, err := os.Stat(filepath.Join(c.dir, daemon.InfoFileName)); err == nil {
		t.Fatal("a refused serve left daemon.json")
	}
	if after := c.ok("servers", "list", "--json").out; after != before {
		t.Fatalf("a refused serve changed the servers:\nbefore %s\nafter %s", before, after)
	}
	// mcp names its own flag for a bad address.
	if r := c.fail(exitUsage, "--daemon-addr", "mcp", "--daemon-addr", "nonsense"); strings.Contains(r.err, "--addr ") {
		t.Fatalf("mcp names serve's flag: %s", r)
	}
}

// Issue #19 item 1: "serve --addr" on another port than 7717 sends the
// OAuth redirect to its own page (http://127.0.0.1:PORT/mcp-oauth, the
// port it actually bound), and the sign-in completes against an
// authorization server that checks redirect URIs exactly. Before, the
// redirect went to 7717 whatever --addr said.
func TestServeAddrCarriesTheOAuthRedirect(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	fx := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	c := newCLI(t)
	c.ok("servers", "add", "docs", fx.URL(), "--oauth")
	c.ok("grants", "approve", strings.TrimSuffix(as.URL(), "/"))
	startServe(t, c) // --addr 127.0.0.1:0: never 7717
	in, err := daemon.Running(t.Context(), c.dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := daemon.Dial(t.Context(), c.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer e.CloseIdleConnections()
	fl, err := e.Authorize(t.Context(), "docs")
	if err != nil || fl.Phase != localapi.PhaseWaiting {
		t.Fatalf("authorize: %+v %v", fl, err)
	}
	want := in.URL + "/mcp-oauth"
	au, err := url.Parse(fl.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	if got := au.Query().Get("redirect_uri"); got != want || fl.RedirectURI != want {
		t.Fatalf("redirect URI %q (flow %q), want the daemon's page %q", got, fl.RedirectURI, want)
	}
	// The browser: the authorization server redirects to the daemon's
	// page, which completes the flow.
	resp, err := http.Get(fl.AuthorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("Authorization complete")) {
		t.Fatalf("callback page: %d %s", resp.StatusCode, body)
	}
	fl, err = e.WaitAuthorization(t.Context(), "docs")
	if err != nil || fl.Phase != localapi.PhaseDone {
		t.Fatalf("flow: %+v %v", fl, err)
	}
}
