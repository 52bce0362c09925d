// Package testkit holds the helpers that the tests of many packages
// share: a context and waits bounded only against a hang, the test MCP
// server started for one test, and a logger. It keeps to those four jobs;
// a helper that only one package uses stays in that package.
package testkit

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Hang bounds every wait here. Nothing depends on it being short: a
// condition a test waits for must come true, and the bound only turns a
// hang into a failure before go test's own timeout kills the binary.
const Hang = 5 * time.Minute

// Context is a test's context, bounded only against a hang. It is not
// t.Context: that one is done before cleanups run, and cleanups here
// still use it (closing sessions, deleting servers).
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Hang)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor waits until cond holds, failing the test after Hang. It polls:
// first often, so a condition that is nearly true costs little latency,
// then at most every 20 ms, so a long wait costs little CPU on a loaded
// machine. When the code under test announces its changes, prefer
// WaitOn, which re-checks cond only when something changed.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Hang)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, Hang)
		}
		time.Sleep(pause)
	}
}

// WaitOn waits until cond holds, re-checking it each time a value
// arrives on changed (a subscription to the code's own events, such as
// manager.Subscribe). It fails the test when changed closes before cond
// holds, or after Hang.
func WaitOn[T any](t testing.TB, what string, changed <-chan T, cond func() bool) {
	t.Helper()
	hang := time.NewTimer(Hang)
	defer hang.Stop()
	for !cond() {
		select {
		case _, ok := <-changed:
			if !ok {
				t.Fatalf("events ended while waiting for %s", what)
			}
		case <-hang.C:
			t.Fatalf("still waiting for %s after %v", what, Hang)
		}
	}
}

// Recv returns the next value from ch, failing the test when ch is
// closed or nothing arrives within Hang.
func Recv[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	hang := time.NewTimer(Hang)
	defer hang.Stop()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("channel closed while waiting for %s", what)
		}
		return v
	case <-hang.C:
		t.Fatalf("still waiting for %s after %v", what, Hang)
	}
	panic("unreachable") // t.Fatalf does not return
}

// StartFixture starts the test MCP server (internal/testserver/fixture)
// on loopback with o and closes it when the test ends.
func StartFixture(t testing.TB, o fixture.Options) *fixture.Server {
	t.Helper()
	f, err := fixture.Start(o)
	if err != nil {
		t.Fatalf("start test MCP server: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// LogEnv names the environment variable that turns on Logger's output.
const LogEnv = "REMOTEMCP_TEST_LOG"

// Logger is a logger for the code under test. It discards everything
// unless REMOTEMCP_TEST_LOG is set; then it writes debug records to the
// test's own output (shown with -v or when the test fails, under its
// name). Records logged after the test ended, by a goroutine its
// cleanups did not stop, go to stderr: writing to a finished test's
// output would panic.
func Logger(t testing.TB) *slog.Logger {
	if os.Getenv(LogEnv) == "" {
		return slog.New(slog.DiscardHandler)
	}
	w := &testWriter{out: t.Output()}
	t.Cleanup(w.end) // registered before the code under test's own cleanups, so it runs after them
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// testWriter writes to a test's output until the test ends, then to
// stderr.
type testWriter struct {
	mu    sync.Mutex
	out   io.Writer
	ended bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return os.Stderr.Write(p)
	}
	return w.out.Write(p)
}

func (w *testWriter) end() {
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}
