package daemon

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
)

// pageGet sends one keep-alive request on c and reads its answer.
func pageGet(t *testing.T, c net.Conn, r *bufio.Reader, host string) {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("a request on the page's listener: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// Issue #20 item 2: the settings page's listener closes an idle
// keep-alive connection (before, any local user could hold thousands,
// without a credential, until the daemon ran out of descriptors).
func TestPageClosesIdleConns(t *testing.T) {
	s := newStack(t, stackOpts{idleTimeout: 20 * time.Millisecond})
	host := s.srv.tcp.Addr().String()
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	pageGet(t, c, r, host)
	c.SetReadDeadline(time.Now().Add(2 * time.Minute)) // only a hang
	if b, err := io.ReadAll(r); err != nil || len(b) != 0 {
		t.Fatalf("an idle keep-alive connection: %v, read %q; want the server's close", err, b)
	}
	testkit.WaitFor(t, "the idle connection's place", func() bool { return s.srv.tcpLimit.Open() == 0 })
}

// Issue #20 item 2: the settings page's listener holds at most
// MaxPageConns connections; the next is answered 503 naming the limit
// and closed, while the local API on the Unix socket still answers.
func TestPageConnCapKeepsSocket(t *testing.T) {
	const max = 4
	s := newStack(t, stackOpts{maxPageConns: max})
	host := s.srv.tcp.Addr().String()
	for range max {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		pageGet(t, c, bufio.NewReader(c), host) // accepted, and kept alive
	}
	if n := s.srv.tcpLimit.Open(); n != max {
		t.Fatalf("%d connections open, want %d", n, max)
	}
	extra, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(2 * time.Minute)) // only a hang
	b, _ := io.ReadAll(extra)
	for _, want := range []string{"HTTP/1.1 503", "the settings page already has 4 connections open, its limit"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("the connection over the cap got %q, lacking %q", b, want)
		}
	}
	h, err := s.c.Health(testkit.Context(t))
	if err != nil || h == nil {
		t.Fatalf("the socket API with the page's listener full: %v", err)
	}
}
