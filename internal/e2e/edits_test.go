package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// TestNoLostToolEdits (issue #9 "Must show", compare-and-swap edits): 50
// `servers set ID --disable-tool tK` from separate processes and 50 API
// toggles of other tools at the same moment — with a daemon running, and
// without one (the processes then race directly on the store). Afterwards
// all 100 edits are present: disabledTools is a safety control.
func TestNoLostToolEdits(t *testing.T) {
	for _, withDaemon := range []bool{true, false} {
		t.Run(map[bool]string{true: "with daemon", false: "without daemon"}[withDaemon], func(t *testing.T) {
			f := testkit.StartFixture(t, fixture.Options{})
			e := newEnv(t)
			e.mustRun("", "servers", "add", "fx", f.URL(), "--lazy")
			var api localapi.Engine
			if withDaemon {
				e.startDaemon()
				c, err := daemon.Dial(t.Context(), e.dir)
				if err != nil {
					t.Fatal(err)
				}
				api = c
			} else {
				c, err := remotemcp.Open(t.Context(), remotemcp.Options{DataDir: e.dir, NoStartupConnect: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				api = c
			}

			const n = 50
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan string, 2*n)
			for i := range n {
				cmd := exec.Command(bin, "servers", "set", "fx", "--disable-tool", fmt.Sprintf("cli%d", i))
				cmd.Env = e.environ()
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if out, err := cmd.CombinedOutput(); err != nil {
						errs <- fmt.Sprintf("%v: %v\n%s", cmd.Args, err, out)
					}
				}()
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only a hang
					defer cancel()
					if _, err := api.SetTool(ctx, "fx", fmt.Sprintf("api%d", i), false); err != nil {
						errs <- fmt.Sprintf("SetTool api%d: %v", i, err)
					}
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			for msg := range errs {
				t.Error(msg)
			}
			r := e.mustRun("", "servers", "show", "fx", "--json")
			var missing []string
			for i := range n {
				for _, name := range []string{fmt.Sprintf("cli%d", i), fmt.Sprintf("api%d", i)} {
					if !strings.Contains(r.out, `"`+name+`"`) {
						missing = append(missing, name)
					}
				}
			}
			if len(missing) > 0 {
				slices.Sort(missing)
				t.Fatalf("%d of %d edits lost: %v\n%s", len(missing), 2*n, missing, r.out)
			}
		})
	}
}

// TestKilledDaemonPortIsNotTrusted (issue #9 "Must show", impersonation):
// after the daemon is killed with -9, a listener that takes its old TCP
// port receives nothing from the CLI — no token, cookie or call — and the
// CLI says the daemon is not running and works in-process.
func TestKilledDaemonPortIsNotTrusted(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t)
	e.mustRun("", "servers", "add", "fx", f.URL())
	e.startDaemon()
	c, err := daemon.Dial(t.Context(), e.dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_ = h
	port := daemonPort(t, e)
	e.killDaemon()

	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("take the daemon's old port %s: %v", port, err)
	}
	t.Cleanup(func() { ln.Close() })
	var (
		mu       sync.Mutex
		received []byte
		conns    int
	)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns++
			mu.Unlock()
			go func() {
				defer conn.Close()
				buf := make([]byte, 4096)
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, _ := conn.Read(buf)
				mu.Lock()
				received = append(received, buf[:n]...)
				mu.Unlock()
			}()
		}
	}()

	r := e.run("", "call", "mcp__fx__echo", `{"text":"secret-arguments"}`, "--yes")
	if r.code != 0 || !strings.Contains(r.out, "secret-arguments") {
		t.Fatalf("the call did not work in-process:\n%s", r)
	}
	if !strings.Contains(r.err, "not running") {
		t.Errorf("the CLI did not say the daemon is not running:\n%s", r)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if conns != 0 || len(received) != 0 {
		t.Fatalf("the impostor on the old port got %d connections and %q", conns, received)
	}
}

// daemonPort is the TCP port of the running daemon's settings page, from
// the login URL `remotemcp open` prints.
func daemonPort(t *testing.T, e *env) string {
	t.Helper()
	r := e.mustRun("", "open", "--no-browser")
	for _, f := range strings.Fields(r.out) {
		if rest, ok := strings.CutPrefix(f, "http://127.0.0.1:"); ok {
			port, _, _ := strings.Cut(rest, "/")
			return port
		}
	}
	t.Fatalf("no login URL in:\n%s", r)
	return ""
}

// TestServeDemo (issue #8 item 18): `serve --demo` gives a newcomer a
// ready server at once, and a second start points it at the new port.
func TestServeDemo(t *testing.T) {
	e := newEnv(t)
	e.startDaemon("--demo")
	r := e.mustRun("", "call", "demo/echo", `{"text":"first page"}`, "--yes")
	if !strings.Contains(r.out, "first page") {
		t.Fatalf("demo call:\n%s", r)
	}
	st := e.mustRun("", "status", "demo")
	if !strings.Contains(st.out, "ready") {
		t.Fatalf("demo status:\n%s", st)
	}
}
