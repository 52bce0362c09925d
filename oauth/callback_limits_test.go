package oauth

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/netlimit"
)

// Issue #20 item 2: the sign-in's callback listener holds at most
// netlimit.MaxCallbackConns connections; one over it is answered 503
// naming the limit and closed (before, a local page could hold any
// number), and the callback still arrives once a place is free.
func TestListenLoopbackBrowserConnCap(t *testing.T) {
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cb := "http://" + addr + CallbackPath
	authURL := "https://as.example.com/authorize?state=good-state&redirect_uri=" + cb
	max := netlimit.Cap(netlimit.MaxCallbackConns)
	b := ListenLoopbackBrowser(port, func(string) error {
		var held []net.Conn
		for range max {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return nil
			}
			held = append(held, c)
		}
		extra, err := net.Dial("tcp", addr)
		if err != nil {
			t.Error(err)
			return nil
		}
		extra.SetReadDeadline(time.Now().Add(2 * time.Minute)) // only a hang
		got, _ := io.ReadAll(extra)
		extra.Close()
		if want := "the OAuth callback already has " + strconv.Itoa(max) + " connections open, its limit"; !strings.Contains(string(got), "503") || !strings.Contains(string(got), want) {
			t.Errorf("the connection over the cap got %q, want a 503 with %q", got, want)
		}
		for _, c := range held {
			c.Close()
		}
		go func() {
			// The browser, until a place is free again (the server
			// notices the closed ones a moment later).
			for range 1000 {
				resp, err := http.Get(cb + "?code=c&state=good-state")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusServiceUnavailable {
						return
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only a hang
	defer cancel()
	res, err := b(ctx, authURL)
	if err != nil || res.Code != "c" {
		t.Fatalf("the callback after the cap: %v %+v", err, res)
	}
}
