package oauth

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// SPEC §7: the loopback redirect listener waits for the callback of its own
// state, ignores others, shows a page without secrets, and is closed when
// it returns.
func TestListenLoopbackBrowser(t *testing.T) {
	port := freePort(t)
	cb := "http://127.0.0.1:" + strconv.Itoa(port) + CallbackPath
	authURL := "https://as.example.com/authorize?state=good-state&redirect_uri=" + cb
	var opened string
	b := ListenLoopbackBrowser(port, func(u string) error {
		opened = u
		if code, _ := get(t, cb+"?code=stray-code&state=other"); code != http.StatusBadRequest {
			t.Errorf("stray callback answered %d", code)
		}
		if code, _ := get(t, "http://127.0.0.1:"+strconv.Itoa(port)+"/favicon.ico"); code != http.StatusNotFound {
			t.Errorf("favicon answered %d", code)
		}
		code, page := get(t, cb+"?code=the-secret-code&state=good-state&iss=https%3A%2F%2Fas.example.com")
		if code != http.StatusOK || !strings.Contains(page, "You can close this tab") {
			t.Errorf("callback answered %d: %s", code, page)
		}
		if strings.Contains(page, "the-secret-code") || strings.Contains(page, "good-state") {
			t.Error("the page echoes the callback parameters")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // only a hang
	defer cancel()
	res, err := b(ctx, authURL)
	if err != nil {
		t.Fatal(err)
	}
	if opened != authURL {
		t.Errorf("opened %q", opened)
	}
	if res.Code != "the-secret-code" || res.State != "good-state" || res.Iss != "https://as.example.com" {
		t.Fatalf("result %+v", res)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
		c.Close()
		t.Fatal("listener still open after the browser returned")
	}
}

func TestListenLoopbackBrowserCancelled(t *testing.T) {
	port := freePort(t)
	b := ListenLoopbackBrowser(port, func(string) error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := b(ctx, "https://as.example.com/authorize?state=s")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
	// The port is free again.
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port not released: %v", err)
	}
	ln.Close()
}

func TestListenLoopbackBrowserPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	opened := false
	_, err = ListenLoopbackBrowser(port, func(string) error { opened = true; return nil })(context.Background(), "https://as.example.com/authorize?state=s")
	if err == nil || !strings.Contains(err.Error(), "redirectPort") || opened {
		t.Fatalf("error %v, opened %v", err, opened)
	}
}

func TestCallbackHandler(t *testing.T) {
	var got []CallbackResult
	srv := httptest.NewServer(CallbackHandler(func(r CallbackResult) { got = append(got, r) }))
	defer srv.Close()
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/elsewhere?code=a&state=b", http.StatusNotFound},
		{CallbackPath + "?state=b", http.StatusBadRequest},
		{CallbackPath + "?code=a&code=b&state=b", http.StatusBadRequest},
		{CallbackPath + "?error=access_denied&state=b", http.StatusOK},
		{CallbackPath + "?code=a&state=b", http.StatusOK},
	} {
		if code, _ := get(t, srv.URL+tc.path); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.path, code, tc.want)
		}
	}
	resp, err := http.Post(srv.URL+CallbackPath+"?code=a&state=b", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
	if len(got) != 2 || got[0].Error != "access_denied" || got[1].Code != "a" {
		t.Fatalf("delivered %+v", got)
	}
}

// HeadlessBrowser refuses a redirect that does not go back to the
// redirect_uri of the request.
func TestHeadlessBrowserChecksRedirectTarget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://evil.example.com/cb?code=x&state=s", http.StatusFound)
	}))
	defer srv.Close()
	_, err := HeadlessBrowser(nil)(context.Background(), srv.URL+"/authorize?state=s&redirect_uri="+RedirectURI(0))
	if !errors.Is(err, ErrBadCallback) {
		t.Fatalf("error %v", err)
	}
}
