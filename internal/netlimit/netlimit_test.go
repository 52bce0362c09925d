package netlimit_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/netlimit"
	"github.com/remotemcp/remotemcp/internal/testkit"
)

// hang bounds only a hang: nothing here depends on it being short.
const hang = 2 * time.Minute

// serve runs h behind netlimit.Server(o) on a capped 127.0.0.1 listener
// until the test ends.
func serve(t *testing.T, h http.Handler, max int, o netlimit.Options) (*netlimit.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := netlimit.Limit(ln, max, "the test listener")
	hs := netlimit.Server(h, o)
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(l) }()
	t.Cleanup(func() { hs.Close(); <-done })
	return l, ln.Addr().String()
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	io.WriteString(w, "ok")
})

// Issue #20 item 2: a listener holds at most its cap of connections; the
// one over it is answered at once with a 503 naming the limit and closed
// (not queued), and a slot freed is a slot usable again.
func TestLimitRefusesOverCap(t *testing.T) {
	const max = 3
	l, addr := serve(t, ok, max, netlimit.Options{})
	var held []net.Conn
	for range max {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		held = append(held, c)
	}
	testkit.WaitFor(t, "the held connections to be accepted", func() bool { return l.Open() == max })
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(hang))
	b, err := io.ReadAll(extra)
	if err != nil {
		t.Fatalf("the refused connection: %v (read %q)", err, b)
	}
	for _, want := range []string{"HTTP/1.1 503", "the test listener already has 3 connections open, its limit"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("refusal %q lacks %q", b, want)
		}
	}
	if l.Refused() != 1 || l.Open() != max {
		t.Errorf("refused %d, open %d; want 1, %d", l.Refused(), l.Open(), max)
	}
	held[0].Close()
	testkit.WaitFor(t, "the closed connection's slot", func() bool { return l.Open() == max-1 })
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("under the cap again: %s", resp.Status)
	}
}

// Issue #20 item 2: an idle keep-alive connection is closed by the
// server after IdleTimeout (before, it was held forever).
func TestIdleKeepAliveClosed(t *testing.T) {
	l, addr := serve(t, ok, 10, netlimit.Options{IdleTimeout: 20 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("keep-alive response: %v %+v", err, resp)
	}
	resp.Body.Close()
	testkit.WaitFor(t, "the server to close the idle connection", func() bool { return l.Open() == 0 })
	c.SetReadDeadline(time.Now().Add(hang))
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a connection the server closed", n)
	}
}

// Issue #20 item 2: a header that does not arrive in ReadHeaderTimeout
// ends the connection.
func TestSlowHeaderClosed(t *testing.T) {
	l, addr := serve(t, ok, 10, netlimit.Options{ReadHeaderTimeout: 20 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost:") // and nothing more
	testkit.WaitFor(t, "the server to close the slow connection", func() bool { return l.Open() == 0 })
}

// Issue #20 item 2: a body that does not arrive in BodyReadTimeout fails
// its read and ends the connection; a body that did arrive lifts the
// deadline, so a response that takes longer than it is not cut.
func TestBodyDeadline(t *testing.T) {
	const d = 30 * time.Millisecond
	readErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
		if err != nil {
			return
		}
		// Well past the body's deadline: a deadline left on the
		// connection would cancel this request (net/http's background
		// read fails and cancels the context).
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusInternalServerError)
		case <-time.After(10 * d):
			io.WriteString(w, "done")
		}
	})
	l, addr := serve(t, h, 10, netlimit.Options{ReadHeaderTimeout: d, BodyReadTimeout: d})

	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n1")
		select {
		case err := <-readErr:
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("read of a slow body: %v", err)
			}
		case <-time.After(hang):
			t.Fatal("the slow body is still being read")
		}
		testkit.WaitFor(t, "the server to close the slow connection", func() bool { return l.Open() == 0 })
	})
	t.Run("long response", func(t *testing.T) {
		resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader("0123456789"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if err := <-readErr; err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || string(b) != "done" {
			t.Fatalf("a response longer than the body deadline: %s %q", resp.Status, b)
		}
	})
}

// Cap leaves Headroom descriptors when the limit on open files is low.
func TestCap(t *testing.T) {
	for _, tc := range []struct {
		want int
		soft uint64
		out  int
	}{
		{128, 1 << 20, 128},
		{512, 1024, 256}, // (1024-256)/3
		{512, 400, 48},   // (400-256)/3
		{16, 300, 14},    // (300-256)/3
		{128, 270, 8},    // at least 8
		{128, 100, 8},    // below the headroom: 8
		{4, 100, 4},      // never above want
	} {
		if got := netlimit.CapFor(tc.want, tc.soft); got != tc.out {
			t.Errorf("Cap(%d) with %d files = %d, want %d", tc.want, tc.soft, got, tc.out)
		}
	}
}
