package hostperm

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/config"
)

// FuzzOrigin checks that Grant and Check read origins the same way: what
// Grant accepts is stored canonically, allows exactly the request to its
// own origin, and is closed again by Revoke; what Grant refuses is never
// allowed by Check on an empty allow-list.
func FuzzOrigin(f *testing.F) {
	for _, s := range []string{
		"https://example.com",
		"HTTPS://Example.COM:443",
		"https://example.com:443/",
		"https://example.com:",
		"http://LOCALHOST:80/",
		"http://127.0.0.1:8080",
		"http://[::1]:3000",
		"http://[0:0:0:0:0:0:0:1]",
		"https://as.example.com/mcp",
		"https://as.example.com?x=1",
		"https://as.example.com/#x",
		"https://user:pw@as.example.com",
		"https://exa%6dple.com",
		"https://010.0.0.1",
		"https://[fe80::1%25eth0]",
		"https://as.example.com:99999",
		"as.example.com",
		"ftp://as.example.com",
		"https://",
		"https:example.com",
		"//example.com",
		"",
		"https://xn--bcher-kva.example",
		"https://example.com.",
		"https://a_b.example:0080",
	} {
		f.Add(s)
	}
	ctx := context.Background()
	b := newBroker(f, openStore(f, f.TempDir()), Options{MaxPending: 5})

	f.Fuzz(func(t *testing.T, s string) {
		if err := b.Grant(ctx, s, ByCLI); err != nil {
			if !errors.Is(err, ErrInvalidOrigin) {
				t.Fatalf("Grant(%q) = %v, want an ErrInvalidOrigin", s, err)
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Grant(%q) = %v: no *config.FieldError saying what is wrong", s, err)
			}
			switch err := b.Check(ctx, s, PurposeMCP, "f"); {
			case err == nil:
				t.Fatalf("Check(%q) allowed with an empty allow-list", s)
			case !errors.Is(err, ErrInvalidOrigin) && !errors.Is(err, ErrPermissionRequired):
				t.Fatalf("Check(%q) = %v", s, err)
			}
			if err := b.DismissPending(ctx, "https://never.invalid"); err != nil {
				t.Fatal(err)
			}
			clearPending(t, b)
			return
		}

		gs, err := b.Grants(ctx)
		if err != nil || len(gs) != 1 {
			t.Fatalf("after Grant(%q): grants %+v, %v", s, gs, err)
		}
		o := gs[0].Origin
		if c, err := config.Origin(o); err != nil || c != o {
			t.Fatalf("Grant(%q) stored %q, whose canonical form is %q (%v)", s, o, c, err)
		}
		if c, err := parseOrigin(o); err != nil || c != o {
			t.Fatalf("stored origin %q does not parse back to itself: %q, %v", o, c, err)
		}
		if err := b.Check(ctx, s, PurposeMCP, "f"); err != nil {
			t.Fatalf("Grant(%q) accepted but Check of the same string = %v", s, err)
		}
		if err := b.Check(ctx, o+"/some/path?q=1", PurposeMCP, "f"); err != nil {
			t.Fatalf("granted %q but Check of a path on it = %v", o, err)
		}
		if err := b.Check(ctx, "https://other.invalid", PurposeMCP, "f"); o != "https://other.invalid" && !errors.Is(err, ErrPermissionRequired) {
			t.Fatalf("granted %q but another origin got %v", o, err)
		}
		if err := b.Revoke(ctx, s); err != nil {
			t.Fatalf("Revoke(%q) = %v", s, err)
		}
		if err := b.Check(ctx, s, PurposeMCP, "f"); !errors.Is(err, ErrPermissionRequired) {
			t.Fatalf("after Revoke(%q), Check = %v", s, err)
		}
		if ps, err := b.Pending(ctx); err != nil || len(ps) == 0 || ps[0].Origin != o {
			t.Fatalf("pending after refusal = %+v, %v; want %s first", ps, err, o)
		}
		clearPending(t, b)
	})
}

func clearPending(t *testing.T, b *Broker) {
	t.Helper()
	ps, err := b.Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if err := b.DismissPending(context.Background(), p.Origin); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDecodeGrant: a stored grant record never panics the reader, and one
// that decodes names exactly the origin it is stored under (a record
// copied to another key grants nothing).
func FuzzDecodeGrant(f *testing.F) {
	f.Add("https://a.example", []byte(`{"origin":"https://a.example","by":"user"}`))
	f.Add("https://a.example", []byte(`{"origin":"https://b.example"}`))
	f.Add("https://a.example", []byte(`{"origin":1}`))
	f.Add("", []byte(`null`))
	f.Add("x", []byte(`{"origin":"x"`))
	f.Fuzz(func(t *testing.T, key string, v []byte) {
		g, err := decodeGrant(key, v)
		if err == nil && g.Origin != key {
			t.Fatalf("grant for %q decoded from the record of %q", g.Origin, key)
		}
		if err != nil && !strings.Contains(err.Error(), "damaged grant record") {
			t.Fatalf("unclear error: %v", err)
		}
	})
}

// FuzzDecodePending: a stored pending approval never panics the reader,
// and one that decodes matches its key in origin, purpose and server.
func FuzzDecodePending(f *testing.F) {
	key := pendingKey("https://as.example", PurposeMCP, "docs")
	f.Add(key, []byte(`{"origin":"https://as.example","purpose":"mcp","serverId":"docs"}`))
	f.Add(key, []byte(`{"origin":"https://as.example","purpose":"token","serverId":"docs"}`))
	f.Add(`["a","b"]`, []byte(`{}`))
	f.Add(`not json`, []byte(`{"origin":"a"}`))
	f.Fuzz(func(t *testing.T, key string, v []byte) {
		p, err := decodePending(key, v)
		if err != nil {
			if !strings.Contains(err.Error(), "damaged pending record") {
				t.Fatalf("unclear error: %v", err)
			}
			return
		}
		o, pu, s, ok := splitPendingKey(key)
		if !ok || o != p.Origin || pu != p.Purpose || s != p.ServerID {
			t.Fatalf("pending %+v decoded from the record of key %q", p, key)
		}
	})
}

// FuzzGuardOrigin: the guard's per-endpoint origin cache answers exactly
// what parsing each request's URL answers, for every URL, whatever was
// cached before it.
func FuzzGuardOrigin(f *testing.F) {
	for _, s := range []string{
		"https://example.com/mcp", "HTTPS://Example.COM:443/a?b", "http://127.0.0.1:8080/x",
		"https://user:pw@example.com/mcp", "https://example.com:99999/", "http://[::1]:3000/mcp",
		"https:example.com", "/relative", "https://exa%6dple.com/", "https://a_b.example:0080/p",
	} {
		f.Add(s)
	}
	g := &guard{}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		want, werr := originOfURL(u.String(), u)
		for range 2 { // the second time from the cache
			got, gerr := g.origin(u)
			if got != want || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
				t.Fatalf("guard origin of %q = %q, %v; want %q, %v", s, got, gerr, want, werr)
			}
		}
	})
}
