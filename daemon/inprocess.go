package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/internal/netlimit"
	"github.com/remotemcp/remotemcp/localapi"
)

// InProcess serves the API of eng for the length of one command, when no
// daemon runs: the very handlers the daemon serves, over in-memory
// connections (net.Pipe) that only the returned Client can open. So a
// command takes one code path whether the engine is in the daemon or in
// its own process, and leaves nothing behind: no temporary directory, no
// socket file, no port. Requests end when ctx does. stop shuts the server
// down (cancelling calls in flight); the caller then closes eng.
func InProcess(ctx context.Context, eng localapi.Engine) (*localapi.Client, func(), error) {
	if eng == nil {
		return nil, nil, fmt.Errorf("daemon: InProcess needs an engine")
	}
	log := slog.New(slog.DiscardHandler)
	ln := newPipeListener()
	sctx, cancel := context.WithCancel(ctx)
	scrub := newScrubber()
	scrub.refresh(ctx, eng)
	a := newAPI(eng, log, scrub)
	a.inProcess = true
	h := socketHandler(a)
	if testWrap != nil {
		h = testWrap(h)
	}
	hs := netlimit.Server(h, netlimit.Options{})
	hs.BaseContext = func(net.Listener) context.Context { return sctx }
	hs.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln)
	}()
	c := localapi.NewClientWithTransport(&http.Transport{DialContext: ln.dial, MaxIdleConnsPerHost: 8})
	stop := sync.OnceFunc(func() {
		c.CloseIdleConnections()
		cancel()
		shctx, shcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if hs.Shutdown(shctx) != nil {
			hs.Close()
		}
		shcancel()
		<-done
	})
	return c, stop, nil
}

// pipeListener is a net.Listener of in-memory connections: each dial
// makes a net.Pipe and hands its server end to Accept.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for the next dial, until Close.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and later dials fail; connections already made stay.
func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr names the listener: it has no network address.
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial is the client transport's DialContext: a new pipe, once the server
// takes its end.
func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		err := net.ErrClosed
		server.Close()
		client.Close()
		return nil, fmt.Errorf("daemon: in-process API: %w", err)
	case <-ctx.Done():
		server.Close()
		client.Close()
		return nil, ctx.Err()
	}
}

// pipeAddr is the address of a pipeListener and its connections.
type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "in-process" }
