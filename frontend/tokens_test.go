package frontend_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/store"
)

// TestTokens: a created token checks as its name until revoked; the store
// holds its hash, never the token.
func TestTokens(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tk := frontend.NewTokens(st)
	a, err := tk.Create(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := tk.Create(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Create(ctx, "a"); !errors.Is(err, frontend.ErrTokenExists) {
		t.Fatalf("duplicate: %v", err)
	}
	raw, err := st.ListKV(ctx, frontend.TokenNamespace)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range raw {
		if strings.Contains(string(v), a) || strings.Contains(string(v), b) {
			t.Fatalf("record %s holds a token", k)
		}
	}
	for _, tc := range []struct {
		tok, name string
		ok        bool
	}{
		{a, "a", true},
		{b, "b", true},
		{"", "", false},
		{a + "x", "", false},
		{strings.TrimPrefix(a, frontend.TokenPrefix), "", false},
	} {
		name, ok, err := tk.Check(ctx, tc.tok)
		if err != nil || ok != tc.ok || name != tc.name {
			t.Errorf("Check(%.8s…) = %q %v %v, want %q %v", tc.tok, name, ok, err, tc.name, tc.ok)
		}
	}
	if err := tk.Revoke(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := tk.Check(ctx, a); ok {
		t.Fatal("a revoked token still checks")
	}
	if err := tk.Revoke(ctx, "a"); !errors.Is(err, frontend.ErrNoToken) {
		t.Fatalf("revoke twice: %v", err)
	}
	list, err := tk.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "b" || list[0].Created.IsZero() {
		t.Fatalf("list: %v %+v", err, list)
	}
}

// Issue #13: revoking a token ends the streams opened with it, not only
// the requests that come after.
func TestRevokeEndsOpenStreams(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tk := frontend.NewTokens(st)
	tk.Recheck = 20 * time.Millisecond
	keep, err := tk.Create(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := tk.Create(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	// A stream: it lasts until its request ends.
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	hs := httptest.NewServer(tk.Require(stream, nil))
	defer hs.Close()
	rctx, stop := context.WithCancel(ctx)
	defer stop() // before hs.Close, which waits for the streams
	open := func(tok string) chan error {
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, hs.URL, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("open a stream: %v %v", err, resp)
		}
		ended := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ended <- err
		}()
		return ended
	}
	kept, revoked := open(keep), open(gone)
	if err := tk.Revoke(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-revoked:
	case <-time.After(2 * time.Minute): // only a hang
		t.Fatal("the stream of a revoked token is still open")
	}
	select {
	case <-kept:
		t.Fatal("the stream of a valid token ended")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestRequireChallenges (issue #19 item 13): a request without a bearer
// token gets 401 with the challenge Bearer realm="remotemcp" alone (RFC
// 6750 §3.1: no error code) and a body naming the command that creates
// one; a wrong or revoked token gets error="invalid_token" and a body
// saying so; a valid one passes.
func TestRequireChallenges(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tk := frontend.NewTokens(st)
	good, err := tk.Create(ctx, "good")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := tk.Create(ctx, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Revoke(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(tk.Require(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "through")
	}), nil))
	t.Cleanup(hs.Close)
	const (
		missing = `Bearer realm="remotemcp"`
		invalid = `Bearer realm="remotemcp", error="invalid_token", error_description="the bearer token is unknown or revoked"`
	)
	for _, tc := range []struct {
		name, auth string
		status     int
		challenge  string
		body       []string
	}{
		{"no header", "", http.StatusUnauthorized, missing, []string{`remotemcp mcp token create NAME`, `Authorization: Bearer TOKEN`, `remotemcp hosts connect HOST --http URL`}},
		{"empty bearer", "Bearer ", http.StatusUnauthorized, missing, []string{`remotemcp mcp token create NAME`}},
		{"basic", "Basic dXNlcjpwYXNz", http.StatusUnauthorized, missing, []string{`remotemcp mcp token create NAME`}},
		{"wrong token", "Bearer rmcp_" + strings.Repeat("A", 43), http.StatusUnauthorized, invalid, []string{"invalid_token", "unknown or revoked", `remotemcp mcp token list`, `remotemcp mcp token create NAME`}},
		{"revoked token", "Bearer " + gone, http.StatusUnauthorized, invalid, []string{"unknown or revoked"}},
		{"valid token", "bearer " + good, http.StatusOK, "", []string{"through"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader("{}"))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("WWW-Authenticate") != tc.challenge {
				t.Fatalf("status %d, WWW-Authenticate %q; want %d, %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.status, tc.challenge)
			}
			for _, want := range tc.body {
				if !strings.Contains(string(b), want) {
					t.Errorf("body %q lacks %q", b, want)
				}
			}
			if strings.Contains(string(b), good) || strings.Contains(string(b), gone) {
				t.Errorf("body %q shows a token", b)
			}
		})
	}
}
