package oauth

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// pgCounter sits between a store and PostgreSQL and counts round trips:
// the frontend messages after which the client waits for the server
// (Sync, ending an extended-protocol exchange, and a simple Query). Of
// those, stmts are the ones that run a statement: not pgx preparing one
// on a connection for the first time (Parse, Describe, Sync), which
// depends on which pooled connection a query gets. It also counts the
// connections opened through it.
type pgCounter struct {
	ln    net.Listener
	dial  func() (net.Conn, error)
	trips atomic.Int64
	stmts atomic.Int64
	conns atomic.Int64

	mu   sync.Mutex
	open []net.Conn
	wg   sync.WaitGroup
}

// startPGCounter returns a DSN like dsn that connects through a counter.
func startPGCounter(t *testing.T, dsn string) (string, *pgCounter) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	host, port := q.Get("host"), q.Get("port")
	if host == "" {
		host = u.Hostname()
	}
	if port == "" {
		port = u.Port()
	}
	if port == "" {
		port = "5432"
	}
	c := &pgCounter{}
	if strings.HasPrefix(host, "/") {
		dir, err := os.MkdirTemp("", "pgc") // short: a socket path has ~100 bytes
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		target := filepath.Join(host, ".s.PGSQL."+port)
		c.dial = func() (net.Conn, error) { return net.Dial("unix", target) }
		c.ln, err = net.Listen("unix", filepath.Join(dir, ".s.PGSQL."+port))
		if err != nil {
			t.Fatal(err)
		}
		q.Set("host", dir)
	} else {
		target := net.JoinHostPort(host, port)
		c.dial = func() (net.Conn, error) { return net.Dial("tcp", target) }
		c.ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		q.Del("host")
		q.Del("port")
		u.Host = c.ln.Addr().String()
		q.Set("sslmode", "disable") // the counter reads the messages
	}
	u.RawQuery = q.Encode()
	c.wg.Add(1)
	go c.accept()
	t.Cleanup(c.close)
	return u.String(), c
}

func (c *pgCounter) accept() {
	defer c.wg.Done()
	for {
		client, err := c.ln.Accept()
		if err != nil {
			return
		}
		server, err := c.dial()
		if err != nil {
			client.Close()
			continue
		}
		c.conns.Add(1)
		c.mu.Lock()
		c.open = append(c.open, client, server)
		c.mu.Unlock()
		c.wg.Add(2)
		go func() {
			defer c.wg.Done()
			io.Copy(client, server)
			client.Close()
		}()
		go func() {
			defer c.wg.Done()
			c.frontend(client, server)
			server.Close()
		}()
	}
}

// frontend copies the client's messages to the server, counting.
func (c *pgCounter) frontend(client, server net.Conn) {
	var hdr [5]byte
	// Untyped messages first: SSL/GSS requests, then the startup message.
	for {
		if _, err := io.ReadFull(client, hdr[:4]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:4]))
		body := make([]byte, n-4)
		if _, err := io.ReadFull(client, body); err != nil {
			return
		}
		if _, err := server.Write(append(hdr[:4:4], body...)); err != nil {
			return
		}
		if code := binary.BigEndian.Uint32(body[:4]); code != 80877103 && code != 80877104 {
			break
		}
	}
	executes := false
	for {
		if _, err := io.ReadFull(client, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		body := make([]byte, n-4)
		if _, err := io.ReadFull(client, body); err != nil {
			return
		}
		switch hdr[0] {
		case 'E':
			executes = true
		case 'S':
			c.trips.Add(1)
			if executes {
				c.stmts.Add(1)
			}
			executes = false
		case 'Q':
			c.trips.Add(1)
			c.stmts.Add(1)
		}
		if _, err := server.Write(append(hdr[:5:5], body...)); err != nil {
			return
		}
	}
}

func (c *pgCounter) close() {
	c.ln.Close()
	c.mu.Lock()
	for _, conn := range c.open {
		conn.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
}
