//go:build chaos

package chaos

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/remotemcp/remotemcp/internal/pgtest"
)

// ready bounds every wait for a process to come up: far above what any
// start takes on a loaded 2-core machine, it only turns a process that
// never comes up into an error instead of a hang.
const ready = 90 * time.Second

// freePort is a free loopback TCP port (closed again: the process that
// gets it binds it a moment later).
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// child is a process of the test's own: it gets SIGKILL when the test
// process dies (Pdeathsig), so nothing outlives a test killed by go
// test's -timeout.
type child struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startChild starts cmd with its output in logPath.
func startChild(name string, cmd *exec.Cmd, logPath string) (*child, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: open its log: %w", name, err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	c := &child{name: name, cmd: cmd, exited: make(chan struct{})}
	started := make(chan error)
	go func() {
		// Pdeathsig belongs to the thread that started the child: keep
		// it until the child has exited.
		runtime.LockOSThread()
		err := cmd.Start()
		logf.Close() // the child has its own copy
		started <- err
		if err != nil {
			return
		}
		cmd.Wait()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("%s: start: %w", name, err)
	}
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// stop sends sig and waits for the exit (SIGKILL after ready).
func (c *child) stop(sig syscall.Signal) {
	if !c.alive() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGCONT) // a frozen process cannot exit
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.exited:
	case <-time.After(ready):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// tail is the end of a log file, for failure messages.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

// --- PostgreSQL ------------------------------------------------------

// startPostgres starts the test's own cluster (internal/pgtest: trust on
// its Unix socket only, no durability, run as the user postgres when
// root, stopped with the test process) with pg_stat_statements loaded
// for the benchmark, and returns it with its database for the replicas.
func startPostgres(t *testing.T) (*pgtest.Cluster, string) {
	t.Helper()
	pg := pgtest.NewClusterWith(t, pgtest.ClusterOptions{Settings: []string{
		"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=top"}})
	dsn := pg.DSN(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	return pg, dsn
}

// --- replicas --------------------------------------------------------

// admin is the gateway's admin (serve --admin): adds people on the page.
const admin = "admin@chaos.test"

// replica is one `remotemcp serve --store` process with its data
// directory (the same key file in each), its page and its MCP endpoint.
type replica struct {
	name      string
	dir       string
	page, mcp int
	logPath   string

	mu sync.Mutex
	ch *child
}

func (r *replica) current() *child {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ch
}

// args are the replica's serve flags: the page behind the load
// balancer's page frontend (the public URL; the trusted proxy names the
// person), the MCP endpoint behind its MCP frontend.
func (r *replica) args(c *cluster) []string {
	return []string{"serve", "--data-dir", r.dir, "--store", c.dsn,
		"--listen", fmt.Sprintf("127.0.0.1:%d", r.page),
		"--public-url", fmt.Sprintf("http://127.0.0.1:%d", c.lbPage),
		"--trusted-user-header", "X-Remote-User", "--trusted-proxy", "127.0.0.1/32", "--admin", admin,
		"--mcp-http", fmt.Sprintf("127.0.0.1:%d", r.mcp),
		"--mcp-public-url", fmt.Sprintf("http://127.0.0.1:%d/mcp", c.lbMCP)}
}

// start runs the replica and waits until its page and endpoint answer.
func (r *replica) start(c *cluster) error {
	cmd := exec.Command(c.bin, r.args(c)...)
	cmd.Env = append(os.Environ(), "REMOTEMCP_HOME="+r.dir, "HOME="+r.dir)
	ch, err := startChild(r.name, cmd, r.logPath)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.ch = ch
	r.mu.Unlock()
	deadline := time.Now().Add(ready)
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		if !ch.alive() {
			return fmt.Errorf("%s exited at start:\n%s", r.name, tail(r.logPath, 30))
		}
		if pageUp(hc, r.page, c.lbPage) && tcpUp(r.mcp) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not up after %v:\n%s", r.name, ready, tail(r.logPath, 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pageUp reports whether the page on port answers its static assets (as
// the load balancer's health check asks).
func pageUp(hc *http.Client, port, lbPage int) bool {
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/static/style.css", port), nil)
	req.Host = fmt.Sprintf("127.0.0.1:%d", lbPage)
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func tcpUp(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// --- HAProxy ---------------------------------------------------------

// haproxyConfig is the load balancer's configuration (README "Replicas"
// shows it): pages round robin; MCP endpoints round robin for a new
// host session, then sticky by the Mcp-Session-Id the replica answered
// (learned from the response: initialize carries no id, so a hash of the
// request's id could not point back to the issuer). Health checks ask
// each replica's page for a static asset with a short timeout, so a
// frozen process (whose kernel still accepts connections) is marked
// down; on-marked-down shutdown-sessions ends the connections to it, and
// option redispatch sends a session's next request to another replica,
// which answers 404: the host initializes again (the MCP spec's rule).
// retry-on stays at its default (conn-failure): a request is re-sent
// only when it never reached a replica, never after, so no tool call
// runs twice.
func haproxyConfig(c *cluster, stats string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 4096
    stats socket %s mode 600 level admin

defaults
    mode http
    log stdout format raw local0 err
    option httplog
    option dontlog-normal
    option redispatch
    retries 3
    timeout connect 1s
    timeout client 10m
    timeout server 10m
    timeout http-request 10s
    timeout queue 5s
    timeout check 2s
    default-server inter 1s fall 3 rise 2 on-marked-down shutdown-sessions

frontend pages
    bind 127.0.0.1:%d
    default_backend pages

frontend mcp
    bind 127.0.0.1:%d
    default_backend mcp

backend pages
    balance roundrobin
    option httpchk
    http-check send meth GET uri /static/style.css ver HTTP/1.1 hdr Host 127.0.0.1:%d
    http-response set-header X-Replica %%[srv_name]
`, stats, c.lbPage, c.lbMCP, c.lbPage)
	for _, r := range c.replicas {
		fmt.Fprintf(&b, "    server %s 127.0.0.1:%d check\n", r.name, r.page)
	}
	fmt.Fprintf(&b, `
backend mcp
    balance roundrobin
    stick-table type string len 128 size 100k expire 30m
    stick store-response res.hdr(mcp-session-id)
    stick match req.hdr(mcp-session-id)
    option httpchk
    http-check send meth GET uri /static/style.css ver HTTP/1.1 hdr Host 127.0.0.1:%d
    http-response set-header X-Replica %%[srv_name]
`, c.lbPage)
	for _, r := range c.replicas {
		fmt.Fprintf(&b, "    server %s 127.0.0.1:%d check port %d\n", r.name, r.mcp, r.page)
	}
	return b.String()
}

// startHAProxy writes the configuration, checks it and runs haproxy in
// the foreground (-db) as the test's child.
func (c *cluster) startHAProxy(t *testing.T) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if _, e := os.Stat("/usr/sbin/haproxy"); e != nil {
			t.Fatal("haproxy is not installed: apt-get install haproxy (scripts/chaos.sh does)")
		}
		bin = "/usr/sbin/haproxy"
	}
	cfg := filepath.Join(c.dir, "haproxy.cfg")
	c.haStats = filepath.Join(c.dir, "haproxy.sock")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(c, c.haStats)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	ch, err := startChild("haproxy", exec.Command(bin, "-f", cfg, "-db"), filepath.Join(c.dir, "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.stop(syscall.SIGTERM) })
	deadline := time.Now().Add(ready)
	for !c.allUp() {
		if !ch.alive() || time.Now().After(deadline) {
			t.Fatalf("haproxy does not see the replicas up:\n%s\n%s", c.haproxyStat("mcp"), tail(filepath.Join(c.dir, "haproxy.log"), 20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// haproxyStat asks HAProxy's stats socket for "show stat" and returns
// the lines of backend (name,server,status).
func (c *cluster) haproxyStat(backend string) string {
	conn, err := net.DialTimeout("unix", c.haStats, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprint(conn, "show stat\n")
	var out []string
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) > 17 && f[0] == backend && f[1] != "BACKEND" && f[1] != "FRONTEND" {
			out = append(out, f[1]+"="+f[17])
		}
	}
	return strings.Join(out, " ")
}

// upIn reports whether HAProxy sees replica name UP in both backends.
func (c *cluster) upIn(name string) bool {
	for _, b := range []string{"mcp", "pages"} {
		if !strings.Contains(" "+c.haproxyStat(b)+" ", " "+name+"=UP ") {
			return false
		}
	}
	return true
}

func (c *cluster) allUp() bool {
	for _, r := range c.replicas {
		if r.current() != nil && r.current().alive() && !c.upIn(r.name) {
			return false
		}
	}
	return true
}

// waitUp waits until HAProxy sees replica r up again.
func (c *cluster) waitUp(r *replica) error {
	deadline := time.Now().Add(ready)
	for !c.upIn(r.name) {
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy does not see %s up after %v: %s", r.name, ready, c.haproxyStat("mcp"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// --- the cluster -----------------------------------------------------

// cluster is PostgreSQL, the replicas and HAProxy.
type cluster struct {
	dir           string
	bin           string
	pg            *pgtest.Cluster
	dsn           string
	replicas      []*replica
	lbPage, lbMCP int
	haStats       string
}

// newCluster starts PostgreSQL, n replicas (the first creates the key
// file, the others get a copy of it) and HAProxy.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{dir: workDir(t), bin: remotemcpBinary(t)}
	c.pg, c.dsn = startPostgres(t)
	c.lbPage, c.lbMCP = freePort(t), freePort(t)
	for i := range n {
		r := &replica{name: fmt.Sprintf("r%d", i+1), dir: filepath.Join(c.dir, fmt.Sprintf("r%d", i+1)),
			page: freePort(t), mcp: freePort(t), logPath: filepath.Join(c.dir, fmt.Sprintf("r%d.log", i+1))}
		if err := os.MkdirAll(r.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		c.replicas = append(c.replicas, r)
	}
	t.Cleanup(func() {
		for _, r := range c.replicas {
			if ch := r.current(); ch != nil {
				ch.stop(syscall.SIGTERM)
			}
		}
		if t.Failed() {
			for _, r := range c.replicas {
				t.Logf("the end of %s's log:\n%s", r.name, tail(r.logPath, 40))
			}
			t.Logf("the end of PostgreSQL's log:\n%s", c.pg.Log())
		}
	})
	// The first replica creates the key file; every other gets a copy
	// (store: every process serving one database needs the same key).
	if err := c.replicas[0].start(c); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(c.replicas[0].dir, "key"))
	if err != nil {
		t.Fatalf("the first replica's key file: %v", err)
	}
	for _, r := range c.replicas[1:] {
		if err := os.WriteFile(filepath.Join(r.dir, "key"), key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.replicas))
	for i, r := range c.replicas[1:] {
		wg.Go(func() { errs[i+1] = r.start(c) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	c.startHAProxy(t)
	return c
}

// workDir is the run's directory: CHAOS_WORKDIR (scripts/chaos.sh's, so
// its trap can stop PostgreSQL), else a new one under the system's
// temporary directory (not t.TempDir: the user postgres must be able to
// reach it). It is removed after a passing run.
func workDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("CHAOS_WORKDIR")
	if base != "" {
		if err := os.MkdirAll(base, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp(base, "run-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// remotemcpBinary is CHAOS_REMOTEMCP (scripts/chaos.sh builds it), else
// a build of ./cmd/remotemcp.
func remotemcpBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("CHAOS_REMOTEMCP"); b != "" {
		return b
	}
	out := filepath.Join(t.TempDir(), "remotemcp")
	cmd := exec.Command("go", "build", "-o", out, "github.com/remotemcp/remotemcp/cmd/remotemcp")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build remotemcp: %v\n%s", err, stderr.String())
	}
	return out
}

// cpuTicks is utime+stime of pid in clock ticks (/proc/PID/stat fields
// 14 and 15), or 0 when it is gone.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}
