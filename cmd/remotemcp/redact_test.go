package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// A credential in a server URL's query never shows: not in status, the
// server listing and details, the add confirmation or a failure's reason
// and hint, and not in the verbose log.
func TestServerURLSecretsRedacted(t *testing.T) {
	const secret, jwt = "S1sEcReTq7", "J1jWtVaLq7"
	query := "?secret=" + secret + "&jwt=" + jwt + "&page=2"
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	for _, r := range []result{
		c.ok("servers", "add", "fx", srv.URL()+query),
		c.ok("servers", "add", "down", deadURL(t)+query),
		c.run("", "-v", "status", "--timeout", "5s"),
		c.run("", "--verbose", "status", "fx", "down", "--timeout", "5s"),
		c.ok("status", "fx", "--timeout", "5s"),
		c.ok("servers", "list"),
		c.ok("servers", "show", "fx"),
		c.ok("servers", "show", "down"),
		c.run("", "-v", "connect", "down"),
	} {
		all := r.out + r.err
		if strings.Contains(all, secret) || strings.Contains(all, jwt) {
			t.Errorf("a URL secret shows:\n%s", r)
		}
	}
	r := c.ok("servers", "show", "fx")
	if !strings.Contains(r.out, "secret=[redacted]&jwt=[redacted]&page=2") {
		t.Errorf("servers show does not show the redacted URL:\n%s", r)
	}
}

// The -v log redacts a server URL however it is logged: in the message,
// as a string, a *url.URL, an error, or inside a struct.
func TestVerboseLogRedactsServerURL(t *testing.T) {
	const secret, jwt = "S1sEcReTq7", "J1jWtVaLq7"
	raw := "https://h.example/mcp?secret=" + secret + "&jwt=" + jwt + "&page=2"
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := newLogger(&buf, true)
	log.Debug("connecting to " + raw)
	log.Debug("connect", "url", raw, "parsed", u, "server", struct{ URL string }{raw},
		"err", fmt.Errorf("connect: %w", &url.Error{Op: "Post", URL: raw, Err: errors.New("refused")}))
	out := buf.String()
	if strings.Contains(out, secret) || strings.Contains(out, jwt) {
		t.Fatalf("a URL secret in the log:\n%s", out)
	}
	if n := strings.Count(out, "secret=[redacted]&jwt=[redacted]&page=2"); n != 5 {
		t.Fatalf("%d redacted URLs in the log, want 5:\n%s", n, out)
	}
}
