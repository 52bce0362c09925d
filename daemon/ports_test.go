package daemon

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/testkit"
)

// callbackEngine records the port the daemon says it serves callbacks on.
type callbackEngine struct {
	*engine.Engine
	port atomic.Int64
}

func (e *callbackEngine) ServeCallbacks(port int) {
	e.port.Store(int64(port))
	e.Engine.ServeCallbacks(port)
}

// holdAddr listens on a free loopback port until the test ends, as
// another program would.
func holdAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// Issue #19 item 1: with AddrFallback a daemon whose page address is
// taken listens on a free port of the same IP, records both in
// daemon.json (Running), and serves OAuth callbacks on the port it bound.
// Without it, Listen refuses with ErrAddrInUse and writes nothing.
func TestListenFallsBackOnlyWhenAllowed(t *testing.T) {
	taken := holdAddr(t)
	dir := t.TempDir()
	eng := &callbackEngine{Engine: openEngine(t)}

	s, err := New(Options{Engine: eng, DataDir: dir, Addr: taken, Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Listen(testkit.Context(t))
	if !errors.Is(err, ErrAddrInUse) || !strings.Contains(err.Error(), taken) {
		t.Fatalf("listen on a taken address: %v", err)
	}
	if _, err := Running(testkit.Context(t), dir); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("a refused daemon left daemon.json: %v", err)
	}
	// The lock went with the refusal.
	if err := CheckFree(dir); err != nil {
		t.Fatal(err)
	}

	s, err = New(Options{Engine: eng, DataDir: dir, Addr: taken, AddrFallback: true, Logger: testkit.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if s.URL() == "http://"+taken || s.Port() == 0 {
		t.Fatalf("fallback URL %s on taken %s", s.URL(), taken)
	}
	if got := int(eng.port.Load()); got != s.Port() {
		t.Fatalf("callbacks served on %d, the daemon listens on %d", got, s.Port())
	}
	in, err := Running(testkit.Context(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	if in.RequestedAddr != taken || in.URL != s.URL() || in.Addr != strings.TrimPrefix(s.URL(), "http://") {
		t.Fatalf("daemon.json: %+v (taken %s, url %s)", in, taken, s.URL())
	}
	// A second daemon on the directory is told who owns it.
	err = CheckFree(dir)
	if !errors.Is(err, ErrDataDirOwned) || !strings.Contains(err.Error(), s.URL()) {
		t.Fatalf("CheckFree beside a daemon: %v", err)
	}
}
