//go:build unix

package daemon

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/localapi"
)

// The socket is 0600 in the 0700 data directory; daemon.json (0600)
// records where it is, and no credential.
func TestSocketIsPrivate(t *testing.T) {
	s := newStack(t, stackOpts{})
	p := s.srv.SocketPath()
	if p != filepath.Join(s.dir, localapi.SocketName) {
		t.Fatalf("socket %s, want it in the data directory %s", p, s.dir)
	}
	for path, want := range map[string]os.FileMode{p: 0o600, s.dir: 0o700, filepath.Join(s.dir, InfoFileName): 0o600} {
		st, err := os.Lstat(path)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", path, st, err, want)
		}
	}
	st, _ := os.Lstat(p)
	if st.Mode().Type() != os.ModeSocket {
		t.Fatalf("%s is %v", p, st.Mode())
	}
	b, err := os.ReadFile(filepath.Join(s.dir, InfoFileName))
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	if in["socket"] != p || in["url"] != s.srv.URL() || in["pid"] != float64(os.Getpid()) || in["token"] != nil {
		t.Fatalf("daemon.json %s", b)
	}
	// A data directory opened to others is made private again at start.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s2 := newStack(t, stackOpts{dir: dir})
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data directory after start: %v %v", st.Mode(), err)
	}
	s2.close()
}

// A data directory whose socket path would be too long puts the socket in
// the per-user runtime directory, and daemon.json says where.
func TestLongDataDirUsesRuntimeDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "") // see TestRuntimeSocketPlaces
	t.Setenv("TMPDIR", shortTemp(t))
	dir := filepath.Join(t.TempDir(), strings.Repeat("long-directory-name-", 6))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackOpts{dir: dir})
	ctx := testkit.Context(t)
	p := s.srv.SocketPath()
	canon, _ := filepath.EvalSymlinks(dir)
	if len(filepath.Join(canon, localapi.SocketName)) <= maxSocketPath || len(p) > maxSocketPath {
		t.Fatalf("socket %s (%d bytes) for %s", p, len(p), dir)
	}
	want := filepath.Join(os.TempDir(), "remotemcp-"+strconv.Itoa(os.Getuid()), dirHash(canon), localapi.SocketName)
	if p != want {
		t.Fatalf("socket %s, want %s", p, want)
	}
	for path, mode := range map[string]os.FileMode{p: 0o600, filepath.Dir(p): 0o700, filepath.Dir(filepath.Dir(p)): 0o700} {
		if st, err := os.Lstat(path); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want mode %v", path, st, err, mode)
		}
	}
	in, err := readInfo(canon)
	if err != nil || in.Socket != p {
		t.Fatalf("daemon.json socket %q, %v", in.Socket, err)
	}
	if h, err := s.c.Health(ctx); err != nil || !h.OK {
		t.Fatalf("health over the runtime socket %+v %v", h, err)
	}
	s.close()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the runtime socket is left after shutdown: %v", err)
	}
}

// Dial sends nothing to a socket that is not private to this user: one
// open to others, one in an open directory, one owned by someone else,
// a file that is not a socket, a path that is not this data directory's.
func TestDialRefusesUntrustedSocket(t *testing.T) {
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	p := s.srv.SocketPath()
	restore := func() {
		os.Chmod(p, 0o600)
		os.Chmod(s.dir, 0o700)
	}
	for _, c := range []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"socket mode 0666", func(t *testing.T) { os.Chmod(p, 0o666) }},
		{"socket mode 0660", func(t *testing.T) { os.Chmod(p, 0o660) }},
		{"directory mode 0755", func(t *testing.T) { os.Chmod(s.dir, 0o755) }},
		{"directory mode 0711", func(t *testing.T) { os.Chmod(s.dir, 0o711) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer restore()
			c.setup(t)
			if _, err := Dial(ctx, s.dir); !errors.Is(err, ErrUntrustedSocket) {
				t.Fatalf("Dial: %v", err)
			}
		})
	}
	if _, err := Dial(ctx, s.dir); err != nil {
		t.Fatalf("Dial after restoring: %v", err)
	}

	// Owned by someone else: needs root to arrange (chown).
	t.Run("socket owned by another user", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("chown needs root")
		}
		if err := os.Lchown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		defer os.Lchown(p, 0, 0)
		if _, err := Dial(ctx, s.dir); !errors.Is(err, ErrUntrustedSocket) {
			t.Fatalf("Dial: %v", err)
		}
	})

	// daemon.json naming another socket, or a plain file, or loose itself.
	in, err := readInfo(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer writeInfo(s.dir, in)
	other := filepath.Join(t.TempDir(), localapi.SocketName)
	ln, err := net.Listen("unix", other)
	if err != nil {
		t.Fatal(err)
	}
	var got sync.WaitGroup
	got.Go(func() {
		if c, err := ln.Accept(); err == nil {
			t.Error("Dial connected to a socket daemon.json named elsewhere")
			c.Close()
		}
	})
	bad := in
	bad.Socket = other
	if err := writeInfo(s.dir, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(ctx, s.dir); !errors.Is(err, ErrUntrustedSocket) {
		t.Fatalf("Dial with a foreign socket path: %v", err)
	}
	ln.Close()
	got.Wait()
	if err := writeInfo(s.dir, in); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(s.dir, InfoFileName), 0o644)
	if _, err := Dial(ctx, s.dir); !errors.Is(err, ErrUntrustedSocket) {
		t.Fatalf("Dial with daemon.json 0644: %v", err)
	}
	os.Chmod(filepath.Join(s.dir, InfoFileName), 0o600)
	if c, err := Dial(ctx, s.dir); err != nil {
		t.Fatalf("Dial at the end: %v", err)
	} else {
		c.CloseIdleConnections()
	}
}

// Dial says ErrNotRunning when there is no daemon: no data directory, no
// daemon.json, a socket that is gone, one that refuses, or a daemon.json
// of an older remotemcp.
func TestDialNotRunning(t *testing.T) {
	ctx := testkit.Context(t)
	dir := t.TempDir()
	if _, err := Dial(ctx, filepath.Join(dir, "missing")); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("no data directory: %v", err)
	}
	if _, err := Dial(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("no daemon.json: %v", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	canon, _ := filepath.EvalSymlinks(dir)
	p := filepath.Join(canon, localapi.SocketName)
	if err := writeInfo(canon, info{URL: "http://127.0.0.1:1", Socket: p, PID: 999999}); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("no socket: %v", err)
	}
	// A socket left behind: bound, never listening.
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	os.Chmod(p, 0o600)
	if _, err := Dial(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("stale socket: %v", err)
	}
	if err := writeInfo(canon, info{URL: "http://127.0.0.1:1", PID: 999999}); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("old daemon.json: %v", err)
	}
}

// Impersonation: after the daemon is killed (-9), a process that takes
// its TCP port receives nothing: Dial says no daemon runs, and sends not
// a byte to TCP (nor to the socket, which refuses).
func TestImpersonationAfterKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	ready := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "READY ") {
				ready <- strings.TrimPrefix(l, "READY ")
			}
		}
		close(ready)
	}()
	var port string
	select {
	case port = <-ready:
	case <-time.After(3 * time.Minute):
		t.Fatal("the child daemon did not start")
	}
	ctx := testkit.Context(t)
	c, err := Dial(ctx, dir)
	if err != nil {
		t.Fatalf("Dial the live child: %v", err)
	}
	if h, err := c.Health(ctx); err != nil || h.PID != cmd.Process.Pid {
		t.Fatalf("health %+v %v", h, err)
	}
	c.CloseIdleConnections()

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// Its files stay behind.
	if _, err := os.Stat(filepath.Join(dir, InfoFileName)); err != nil {
		t.Fatalf("daemon.json after kill -9: %v", err)
	}
	// Another process takes the port and records whatever reaches it.
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("take the port %s: %v", port, err)
	}
	var mu sync.Mutex
	received := 0
	var conns sync.WaitGroup
	conns.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer conn.Close()
				conn.SetReadDeadline(time.Now().Add(2 * time.Second))
				n, _ := io.Copy(io.Discard, conn)
				mu.Lock()
				received += int(n) + 1 // a connection counts, even empty
				mu.Unlock()
			})
		}
	})
	for range 3 {
		if _, err := Dial(ctx, dir); !errors.Is(err, ErrNotRunning) {
			t.Fatalf("Dial after kill -9: %v", err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	ln.Close()
	conns.Wait()
	mu.Lock()
	defer mu.Unlock()
	if received != 0 {
		t.Fatalf("the listener on the old port received %d bytes and connections", received)
	}
	// A new daemon takes over the data directory and its stale socket.
	s := newStack(t, stackOpts{dir: dir})
	if h, err := s.c.Health(ctx); err != nil || h.PID != os.Getpid() {
		t.Fatalf("the new daemon: %+v %v", h, err)
	}
}
