package manager

import (
	"context"
	"errors"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/session"
)

// Issue #12: a session closes for idleness only when no call is in
// flight, and a call that reaches it after that is sent, once, on a fresh
// session: hibernation never cuts a call nor loses one.
func TestHibernationNeverCutsACall(t *testing.T) {
	f, err := fixture.Start(fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e := newEnv(t, srvCfg("a", f.URL(), false))
	e.start()
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	en := e.m.entry("a")
	en.mu.Lock()
	sess := en.sess
	en.mu.Unlock()

	// A call in flight keeps the session.
	ctx, cancel := context.WithCancel(testkit.Context(t))
	done := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(ctx, "slow", []byte(`{"ms":10000}`), session.CallOptions{})
		done <- err
	}()
	testkit.WaitFor(t, "the slow call in flight", func() bool { return sess.Busy() })
	if sess.CloseIfIdle() {
		t.Fatal("CloseIfIdle with a call in flight")
	}
	cancel()
	<-done

	// Idle: closing; a call that comes now is not sent on it...
	if !sess.CloseIfIdle() {
		t.Fatal("CloseIfIdle of an idle session: false")
	}
	_, err = sess.CallTool(testkit.Context(t), "echo", argsEcho, session.CallOptions{})
	if !errors.Is(err, session.ErrCancelledBeforeDispatch) || !errors.Is(err, session.ErrClosed) {
		t.Fatalf("a call on a closing session: %v, want not dispatched", err)
	}
	// ...and through the manager it goes out once on a fresh session.
	before := f.Executions("echo")
	if _, err := e.m.CallTool(testkit.Context(t), "a", "echo", argsEcho, session.CallOptions{}); err != nil {
		t.Fatalf("a call while the session closes: %v", err)
	}
	if n := f.Executions("echo") - before; n != 1 {
		t.Fatalf("echo ran %d times, want 1", n)
	}
}
