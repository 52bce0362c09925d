// Package netlimit bounds what a local TCP listener of remotemcp (the
// settings page, the MCP endpoint of "mcp --http", an OAuth callback) can
// be made to hold by anyone on the machine, without a credential: the
// number of connections open at once, how long an idle keep-alive
// connection stays, and how long a request's header and body may take to
// arrive (issue #20 item 2). The Unix socket of the local API is not
// capped: its peer is checked, and the caps here leave it file
// descriptors (Headroom), so the owner's CLI always reaches the daemon.
package netlimit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The limits of every local TCP listener, unless its caller says
// otherwise.
const (
	// ReadHeaderTimeout bounds the arrival of a request's header.
	ReadHeaderTimeout = 10 * time.Second
	// BodyReadTimeout bounds the arrival of a whole request, header and
	// body: the largest body the MCP endpoint takes (4 MiB) arrives in
	// well under a second over loopback.
	BodyReadTimeout = 30 * time.Second
	// IdleTimeout closes a keep-alive connection that carries no request
	// for this long. Hosts reuse connections between requests that come
	// seconds apart; one idle for a minute is cheap to open again.
	IdleTimeout = 60 * time.Second
	// Headroom is the file descriptors the TCP listeners never take
	// together: for the local API's Unix socket, the store, the log and
	// the connections to the servers (see Cap).
	Headroom = 256
)

// refuseWriteWait bounds a refusal: the write of a few hundred bytes into
// an empty socket buffer, then the read of what the peer sent.
const refuseWriteWait = 100 * time.Millisecond

// Listener is a net.Listener that holds at most Max connections at once.
// A connection over the cap is answered at once with an HTTP 503 that
// names the limit, then closed: refused fast, rather than left waiting in
// the kernel's backlog for a slot that a slow peer may never free (what
// golang.org/x/net/netutil.LimitListener does), so the peer learns why.
type Listener struct {
	net.Listener
	max  int
	name string
	open atomic.Int64
	// refused counts the connections turned away, for the logs and tests.
	refused atomic.Int64
	// refusing counts the refusals still writing their 503.
	refusing atomic.Int64
}

// Limit caps ln at max connections open at once (max < 1: 1). name says
// in the refusal whose limit it is ("the settings page").
func Limit(ln net.Listener, max int, name string) *Listener {
	if max < 1 {
		max = 1
	}
	return &Listener{Listener: ln, max: max, name: name}
}

// Accept returns the next connection under the cap; those over it are
// refused (and counted) in the loop.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > int64(l.max) {
			l.open.Add(-1)
			l.refused.Add(1)
			l.refuse(c)
			continue
		}
		return &conn{Conn: c, l: l}, nil
	}
}

// refuse answers c with a 503 naming the limit and closes it.
//
// The request the peer sent is read (a little, briefly) before the close:
// closing a socket with unread data makes the kernel send a reset, and a
// client that gets the reset may never read the 503. That wait runs on
// its own goroutine, at most maxRefusing at once, so the accept loop
// never waits; past that, a refused connection is just closed.
func (l *Listener) refuse(c net.Conn) {
	if l.refusing.Add(1) > maxRefusing {
		l.refusing.Add(-1)
		_ = c.Close()
		return
	}
	go func() {
		defer l.refusing.Add(-1)
		body := fmt.Sprintf("remotemcp: %s already has %d connections open, its limit; a client holding connections open (idle keep-alives, event streams) must close some, then try again\n", l.name, l.max)
		_ = c.SetDeadline(time.Now().Add(refuseWriteWait))
		_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.CopyN(io.Discard, c, refuseDrain)
		_ = c.Close()
	}()
}

// maxRefusing bounds the refusals under way; refuseDrain is how much of a
// refused peer's request is read before its socket closes.
const (
	maxRefusing = 16
	refuseDrain = 16 << 10
)

// Open is the number of connections open now.
func (l *Listener) Open() int { return int(l.open.Load()) }

// Refused is the number of connections refused so far.
func (l *Listener) Refused() int { return int(l.refused.Load()) }

// Max is the cap.
func (l *Listener) Max() int { return l.max }

// conn gives its slot back when closed, once.
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// Options are one listener's limits; a zero field takes the package's
// constant.
type Options struct {
	ReadHeaderTimeout time.Duration
	BodyReadTimeout   time.Duration
	IdleTimeout       time.Duration
}

func (o Options) withDefaults() Options {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = ReadHeaderTimeout
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = BodyReadTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = IdleTimeout
	}
	return o
}

// Server is an http.Server for h with o's timeouts: ReadHeaderTimeout,
// ReadTimeout (BodyReadTimeout: the header and body together) and
// IdleTimeout. ReadTimeout does not cut a long response (an SSE stream, a
// long tool call): net/http lifts the connection's read deadline once the
// body has been read to its end (TestBodyDeadline holds it to that). The
// caller sets BaseContext and ErrorLog.
func Server(h http.Handler, o Options) *http.Server {
	o = o.withDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       max(o.BodyReadTimeout, o.ReadHeaderTimeout),
		IdleTimeout:       o.IdleTimeout,
	}
}
