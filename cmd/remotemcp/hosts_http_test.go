package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/hosttoken"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// tokenNames runs "mcp token list --json" and returns the names.
func (c *hostsCLI) tokenNames() []string {
	c.t.Helper()
	var list []frontend.TokenInfo
	if err := json.Unmarshal([]byte(c.ok("mcp", "token", "list", "--json").out), &list); err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, i := range list {
		names = append(names, i.Name)
	}
	return names
}

// entry is host id's "remotemcp" entry as the file holds it.
func (c *hostsCLI) entry(id string) hosts.Entry {
	c.t.Helper()
	h, _ := hosts.Lookup(id)
	e, ok, err := hosts.File{Host: h, Path: c.file(id)}.Entry()
	if err != nil || !ok {
		c.t.Fatalf("%s entry: %v, %v", id, ok, err)
	}
	return e
}

// headerTransport sends a host's configured headers with every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestHostsConnectHTTP (issue #19 item 13): "hosts connect HOST --http
// URL" writes each host's remote entry (golden files in
// testdata/hosts-http, the token as $TOKEN) with a token it creates,
// named host-HOST, printed nowhere; the file is 0600; a second run keeps
// it; and a host configured so reaches the tools of "mcp --http" at once:
// no 401 to meet.
func TestHostsConnectHTTP(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newHostsCLI(t)
	c.ok("servers", "add", "fx", f.URL())
	port := freePort(t)
	url := startMcpHTTP(t, c.cli, port, "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", port))
	var want []string
	for _, h := range hosts.All() {
		if h.Remote == nil {
			continue
		}
		t.Run(h.ID, func(t *testing.T) {
			r := c.ok("hosts", "connect", h.ID, "--http", url)
			path := c.file(h.ID)
			if !strings.Contains(r.out, "connected "+h.ID+": "+path) || !strings.Contains(r.err, `created the token "host-`+h.ID+`"`) {
				t.Fatalf("connect: %s", r)
			}
			e := c.entry(h.ID)
			tok, ok := e.Bearer()
			if !ok || e.URL != url || !strings.HasPrefix(tok, frontend.TokenPrefix) {
				t.Fatalf("entry %+v", e)
			}
			if strings.Contains(r.out+r.err, tok) {
				t.Fatalf("the token was printed: %s", r)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
			}
			b, _ := os.ReadFile(path)
			goldenFile(t, filepath.Join("hosts-http", h.ID+hostFileExt(h)),
				[]byte(strings.NewReplacer(tok, "$TOKEN", url, "http://127.0.0.1:PORT/mcp").Replace(string(b))))

			// again: unchanged, the same token, no new one
			r = c.ok("hosts", "connect", h.ID, "--http", url)
			if !strings.Contains(r.out, "already connected") || strings.Contains(r.err, "created") {
				t.Fatalf("second connect: %s", r)
			}
			if again, _ := c.entry(h.ID).Bearer(); again != tok {
				t.Fatal("the second connect changed the token")
			}

			// the host's view: its headers, the endpoint, every tool
			cs, err := mcp.NewClient(&mcp.Implementation{Name: h.ID}, nil).Connect(t.Context(),
				&mcp.StreamableClientTransport{Endpoint: e.URL, HTTPClient: &http.Client{Transport: headerTransport(e.Headers)}, MaxRetries: -1}, nil)
			if err != nil {
				t.Fatalf("%s connects with its entry: %v", h.ID, err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil || !slices.ContainsFunc(tools.Tools, func(x *mcp.Tool) bool { return x.Name == "fx__echo" }) {
				t.Fatalf("tools: %v, %v", tools, err)
			}
		})
		want = append(want, "host-"+h.ID)
	}
	slices.Sort(want)
	if got := c.tokenNames(); !slices.Equal(got, want) {
		t.Fatalf("tokens %v, want %v", got, want)
	}
}

// TestHostsConnectHTTPLifecycle: a dry run creates no token and prints a
// placeholder; a file of mode 0644 becomes 0600; a new URL replaces the
// entry with a new token and revokes the old one; a stdio connect over
// it and a disconnect revoke theirs; a token the user named is left
// alone.
func TestHostsConnectHTTPLifecycle(t *testing.T) {
	c := newHostsCLI(t)
	path := c.file("gemini-cli")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{\n  \"theme\": \"dark\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const a, b = "http://127.0.0.1:8765/mcp", "http://[::1]:8766/mcp"

	r := c.ok("hosts", "connect", "gemini-cli", "--http", a, "--dry-run")
	if !strings.Contains(r.out, hosttoken.DryRunToken) || strings.Contains(r.out, frontend.TokenPrefix) || !strings.Contains(r.err, "no token was created") {
		t.Fatalf("dry run: %s", r)
	}
	if names := c.tokenNames(); len(names) != 0 {
		t.Fatalf("a dry run created tokens %v", names)
	}

	c.ok("hosts", "connect", "gemini-cli", "--http", a)
	for _, p := range []string{path, path + hosts.BackupSuffix} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v; want 0600", p, fi.Mode(), err)
		}
	}
	first, _ := c.entry("gemini-cli").Bearer()

	// a dry run over an entry holding a token never shows it
	r = c.ok("hosts", "connect", "gemini-cli", "--http", b, "--dry-run")
	if strings.Contains(r.out, first) || !strings.Contains(r.out, frontend.TokenPrefix+"[redacted]") {
		t.Fatalf("dry run over a token: %s", r)
	}
	r = c.ok("hosts", "connect", "gemini-cli", "--http", a, "--dry-run")
	if !strings.Contains(r.out, "already connected") {
		t.Fatalf("dry run of the same entry: %s", r)
	}

	r = c.ok("hosts", "connect", "gemini-cli", "--http", b)
	if !strings.Contains(r.err, `created the token "host-gemini-cli-2"`) || !strings.Contains(r.err, `revoked the token "host-gemini-cli"`) {
		t.Fatalf("new URL: %s", r)
	}
	if e := c.entry("gemini-cli"); e.URL != b {
		t.Fatalf("entry %+v", e)
	}
	if got := c.tokenNames(); !slices.Equal(got, []string{"host-gemini-cli-2"}) {
		t.Fatalf("tokens %v", got)
	}

	// stdio over it: its token goes
	c.ok("hosts", "connect", "gemini-cli", "--command", c.exe)
	if got := c.tokenNames(); len(got) != 0 {
		t.Fatalf("tokens after stdio connect: %v", got)
	}
	c.ok("hosts", "connect", "gemini-cli", "--http", a)
	r = c.ok("hosts", "disconnect", "gemini-cli")
	if !strings.Contains(r.err, `revoked the token "host-gemini-cli"`) {
		t.Fatalf("disconnect: %s", r)
	}
	if got := c.tokenNames(); len(got) != 0 {
		t.Fatalf("tokens after disconnect: %v", got)
	}

	// the user's own token in the entry is not ours to revoke
	mine := createToken(t, c.cli, "mine")
	if _, err := (hosts.File{Host: c.hostOf("gemini-cli"), Path: path}).Connect(hosts.NewHTTPEntry(a, mine), false); err != nil {
		t.Fatal(err)
	}
	c.ok("hosts", "disconnect", "gemini-cli")
	if got := c.tokenNames(); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("tokens %v, want the user's own kept", got)
	}
}

// hostOf is the row of host id.
func (c *hostsCLI) hostOf(id string) hosts.Host {
	h, _ := hosts.Lookup(id)
	return h
}

// TestHostsConnectHTTPRefusals: a URL that is not the loopback endpoint,
// a host whose file takes no remote servers, --project and --command are
// refused with exit 2, before any token or file is made.
func TestHostsConnectHTTPRefusals(t *testing.T) {
	c := newHostsCLI(t)
	proj := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cursor", "--http", "https://127.0.0.1:8765/mcp"}, "scheme must be http"},
		{[]string{"cursor", "--http", "http://example.com:8765/mcp"}, "loopback"},
		{[]string{"cursor", "--http", "http://192.0.2.1:8765/mcp"}, "loopback"},
		{[]string{"cursor", "--http", "http://127.0.0.1/mcp"}, "give the port"},
		{[]string{"cursor", "--http", "http://127.0.0.1:8765/"}, "path must be /mcp"},
		{[]string{"cursor", "--http", "http://127.0.0.1:8765/mcp/x"}, "path must be /mcp"},
		{[]string{"cursor", "--http", "http://127.0.0.1:8765/mcp?a=b"}, "query"},
		{[]string{"cursor", "--http", "http://u:p@127.0.0.1:8765/mcp"}, "user name"},
		{[]string{"cursor", "--http", "127.0.0.1:8765"}, "--http"},
		{[]string{"claude-desktop", "--http", "http://127.0.0.1:8765/mcp"}, `run "remotemcp hosts connect claude-desktop" without --http`},
		{[]string{"cursor", "--http", "http://127.0.0.1:8765/mcp", "--project=" + proj}, "--project"},
		{[]string{"cursor", "--http", "http://127.0.0.1:8765/mcp", "--command", c.exe}, "--command"},
	} {
		c.fail(exitUsage, tc.want, append([]string{"hosts", "connect"}, tc.args...)...)
	}
	if got := c.tokenNames(); len(got) != 0 {
		t.Fatalf("refusals created tokens %v", got)
	}
	for _, id := range []string{"cursor", "claude-desktop"} {
		if _, err := os.Stat(c.file(id)); err == nil {
			t.Fatalf("a refusal wrote %s", c.file(id))
		}
	}
	if _, err := os.Stat(filepath.Join(proj, ".cursor")); err == nil {
		t.Fatal("a refusal wrote the project file")
	}
}
