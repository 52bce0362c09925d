package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// The front end over a daemon client, as "remotemcp mcp" runs it.

// frontEndOverDaemon is a daemon with the fixture server fx and a
// single-server front end over a client of its socket.
func frontEndOverDaemon(t *testing.T) (*fixture.Server, *stack, *frontend.Frontend) {
	t.Helper()
	f := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	s.addFixture(t, "fx", f)
	c, err := Dial(ctx, s.dir)
	if err != nil {
		t.Fatal(err)
	}
	fe, err := frontend.New(ctx, frontend.Options{Engine: c, ServerID: "fx"})
	if err != nil {
		t.Fatal(err)
	}
	return f, s, fe
}

// runHost serves one in-memory host with fe until rctx ends.
func runHost(t *testing.T, ctx, rctx context.Context, fe *frontend.Frontend) (*mcp.ClientSession, chan error) {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- fe.Run(rctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, done
}

// Two hosts served by one front end over one daemon client: host A
// subscribes, host B never does and leaves. A's subscription stays (the
// client's hold stream is its own, not B's).
func TestFrontEndHostLeavingKeepsOthersSubscriptions(t *testing.T) {
	f, _, fe := frontEndOverDaemon(t)
	ctx := testkit.Context(t)
	actx, astop := context.WithCancel(ctx)
	defer astop()
	a, _ := runHost(t, ctx, actx, fe)
	bctx, bstop := context.WithCancel(ctx)
	_, bdone := runHost(t, ctx, bctx, fe)
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: fixture.ReadmeURI}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "subscribed", func() bool { return f.Subscriptions() == 1 })
	bstop()
	<-bdone
	time.Sleep(500 * time.Millisecond) // time for a wrong release to arrive
	if n := f.Subscriptions(); n != 1 {
		t.Fatalf("host B left, and host A's subscription went with it: the server has %d", n)
	}
}

// The daemon stopping ends the front end's event stream; the hosts it
// serves are not closed for that, subscribed or not.
func TestFrontEndOutlivesTheDaemonsStream(t *testing.T) {
	for _, sub := range []bool{false, true} {
		_, s, fe := frontEndOverDaemon(t)
		ctx := testkit.Context(t)
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		cs, done := runHost(t, ctx, rctx, fe)
		if sub {
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: fixture.ReadmeURI}); err != nil {
				t.Fatal(err)
			}
		}
		s.close()
		select {
		case err := <-done:
			t.Fatalf("subscribed=%v: the host was let go when the daemon's stream ended: %v", sub, err)
		case <-time.After(time.Second):
		}
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatalf("subscribed=%v: the host is not served: %v", sub, err)
		}
	}
}
