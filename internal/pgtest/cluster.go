package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// debianBins is where Debian's postgresql packages put the server's
// programs: one directory per major version, none of them on PATH.
const debianBins = "/usr/lib/postgresql/*/bin"

// hang bounds the waits for the server to start and stop. Nothing
// depends on it being short: it only turns a server that never comes up
// (or down) into an error instead of a hang until go test's timeout.
const hang = 2 * time.Minute

// port is the private cluster's port. It only names the socket file
// (listen_addresses is empty), and the socket directory is the cluster's
// own, so it cannot clash with another server; it is given explicitly
// so that a PGPORT in the environment changes neither side.
const port = "5432"

// private is this test process's own cluster, started on first use.
var private clusterOnce

// clusterOnce starts the cluster at most once and remembers a failure,
// so every test gets the same error instead of each trying again.
type clusterOnce struct {
	mu      sync.Mutex
	tried   bool
	stopped bool
	c       *cluster
	err     error
}

func (o *clusterOnce) get() (*cluster, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return nil, errors.New("the private PostgreSQL cluster is already stopped (DSN called after the tests ended)")
	}
	if !o.tried {
		o.tried = true
		o.c, o.err = startCluster(os.Getenv("PATH"), debianBins, nil)
	}
	return o.c, o.err
}

// stop stops the cluster if it started and removes its directory.
func (o *clusterOnce) stop() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	if o.c == nil {
		return nil
	}
	c := o.c
	o.c = nil
	return c.stop()
}

// cluster is a running postgres process and its directory: the data
// directory, the socket and the server's log.
type cluster struct {
	dir    string
	bin    string
	cred   *syscall.Credential
	cmd    *exec.Cmd
	exited chan struct{} // closed when the postgres process has exited
	// settings are more server settings (name=value) given by
	// NewClusterWith.
	settings []string
}

func (c *cluster) adminURL() *url.URL {
	return &url.URL{
		Scheme:   "postgres",
		Path:     "/postgres",
		RawQuery: url.Values{"host": {c.dir}, "port": {port}, "user": {"postgres"}}.Encode(),
	}
}

// findBins returns the directory of pg_ctl, initdb and postgres: pg_ctl's
// on path (through symlinks: Debian's are in its version's directory),
// else the newest of the directories matching glob.
func findBins(path, glob string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			continue
		}
		p, err := filepath.EvalSymlinks(filepath.Join(d, "pg_ctl"))
		if err != nil || !executable(p) {
			continue
		}
		if dir := filepath.Dir(p); hasServer(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob(glob) // the only error is a malformed pattern
	dirs = slices.DeleteFunc(dirs, func(d string) bool { return !executable(filepath.Join(d, "pg_ctl")) || !hasServer(d) })
	if len(dirs) == 0 {
		return "", &noPostgresError{looked: glob}
	}
	// Newest by version number: 9.6 is older than 15, though it sorts after it.
	return slices.MaxFunc(dirs, func(a, b string) int { return slices.Compare(versionOf(a), versionOf(b)) }), nil
}

func hasServer(dir string) bool {
	return executable(filepath.Join(dir, "initdb")) && executable(filepath.Join(dir, "postgres"))
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// versionOf is the version in a directory like /usr/lib/postgresql/15/bin.
func versionOf(binDir string) []int {
	var v []int
	for f := range strings.SplitSeq(filepath.Base(filepath.Dir(binDir)), ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil
		}
		v = append(v, n)
	}
	return v
}

// startCluster makes a cluster in a new temporary directory and starts
// it: trust authentication on its Unix socket only, no TCP, and no
// durability (fsync off), which tests do not need and a loaded CI
// machine pays dearly for.
func startCluster(path, glob string, settings []string) (c *cluster, err error) {
	bin, err := findBins(path, glob)
	if err != nil {
		return nil, err
	}
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "remotemcp-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("making the private cluster's directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("giving %s to the postgres user: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth-local=trust", "--auth-host=reject", "-E", "UTF8", "--locale=C", "--no-sync")
	setUp(initdb, dir, cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb for the private cluster in %s: %w\n%s%s", dir, err, out, rootHint(cred, dir))
	}
	c = &cluster{dir: dir, bin: bin, cred: cred, settings: settings}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

// start runs postgres on the cluster's directory and waits until it
// accepts connections.
func (c *cluster) start() error {
	logf, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("creating the private cluster's log: %w", err)
	}
	defer logf.Close() // the server has its own copy of the descriptor
	data := filepath.Join(c.dir, "data")
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", data, "-k", c.dir, "-p", port,
		"-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "max_connections=200")
	for _, kv := range c.settings {
		cmd.Args = append(cmd.Args, "-c", kv)
	}
	setUp(cmd, c.dir, c.cred)
	cmd.Stdout, cmd.Stderr = logf, logf
	// If the test process dies without stopping the server (go test's
	// -timeout panic, a kill), the kernel sends the server SIGQUIT, its
	// immediate shutdown, rather than leave it running.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	c.cmd, c.exited = cmd, make(chan struct{})
	exited := c.exited
	started := make(chan error)
	go func() {
		// Pdeathsig is tied to the thread that started the child, not to
		// the process: this goroutine keeps its thread until the server
		// has exited, and the runtime ends the thread after that.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("starting the private cluster's postgres: %w", err)
	}
	if err := c.waitReady(); err != nil {
		c.halt()
		return err
	}
	return nil
}

// waitReady waits until the server says in postmaster.pid that it
// accepts connections (what pg_ctl start -w waits for), or has exited.
func (c *cluster) waitReady() error {
	pidFile := filepath.Join(c.dir, "data", "postmaster.pid")
	deadline := time.Now().Add(hang)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			lines := strings.Split(string(b), "\n")
			// Line 1 is the pid, line 8 the status.
			if len(lines) >= 8 && lines[0] == strconv.Itoa(c.cmd.Process.Pid) && strings.TrimSpace(lines[7]) == "ready" {
				return nil
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading %s: %w", pidFile, err)
		}
		select {
		case <-c.exited:
			return fmt.Errorf("the private cluster's postgres exited at start (%v):\n%s", c.cmd.ProcessState, c.log())
		case <-time.After(pause):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the private cluster's postgres is not ready after %v:\n%s", hang, c.log())
		}
	}
}

// stop ends the server with SIGQUIT, the immediate shutdown of pg_ctl
// stop -m immediate (the data is thrown away, so there is nothing to
// write out), and removes its directory.
func (c *cluster) stop() error {
	c.halt()
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("removing the private cluster's directory: %w", err)
	}
	return nil
}

// halt ends the server at once (SIGQUIT) and waits for it, keeping its
// directory, so start can run it again.
func (c *cluster) halt() { c.shutdown(syscall.SIGQUIT) }

// shutdown sends the server sig (SIGQUIT: immediate; SIGINT: fast, what
// pg_ctl stop -m fast sends) and waits until it has exited.
func (c *cluster) shutdown(sig syscall.Signal) {
	c.cmd.Process.Signal(sig)
	select {
	case <-c.exited:
	case <-time.After(hang):
		c.cmd.Process.Kill()
		<-c.exited
	}
}

// log is the end of the server's log, for errors.
func (c *cluster) log() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// serverUser is who runs initdb and postgres: nobody else when this
// process is not root; the postgres user (Debian's package makes it)
// when it is, since both refuse to run as root.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and initdb and postgres refuse root: they run as the user postgres, "+
			"which Debian's postgresql package creates: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("the postgres user's ids: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// rootHint explains the usual cause of initdb failing as another user.
func rootHint(cred *syscall.Credential, dir string) string {
	if cred == nil {
		return ""
	}
	return fmt.Sprintf("\n(initdb ran as the user postgres: every directory above %s must be searchable by it; set TMPDIR to another directory if not)", dir)
}

// setUp runs cmd in dir as cred (nil: as this process), without the PG*
// variables of the environment, which initdb and postgres would follow
// (PGPORT, PGDATA) where the flags here say otherwise.
func setUp(cmd *exec.Cmd, dir string, cred *syscall.Credential) {
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PG") })
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
}
