package e2e

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Issue #19 item 4: a host that launched "remotemcp mcp" (the built
// binary, relaying to the daemon it starts) is offered every field of
// the server's tool, prompt, resource and template definitions as a
// direct go-sdk client is (only the names differ in aggregate mode), in
// --server and aggregate mode; and, once the daemon is gone and the
// server unreachable, the same from the stored catalog.
func TestMcpFrontEndWholeDefinitions(t *testing.T) {
	srv := fixture.Definitions()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	ctx := t.Context()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := fixture.List(ctx, cs, "")
	cs.Close()
	if err != nil {
		t.Fatal(err)
	}

	e := newEnv(t)
	// Trusted: its tool annotations pass whole (SPEC §9 A8).
	e.mustRun("", "servers", "add", "full", hs.URL, "--trusted")
	t.Cleanup(func() { stopDaemon(t, e.dir) })
	modes := []struct {
		name, prefix string
		args         []string
	}{
		{"--server", "", []string{"mcp", "--server", "full", "--daemon-addr", "127.0.0.1:0"}},
		{"aggregate", "full__", []string{"mcp", "--daemon-addr", "127.0.0.1:0"}},
	}
	check := func(t *testing.T) {
		for _, m := range modes {
			h := launch(t, e, m.args...)
			got, err := fixture.List(ctx, h.cs, m.prefix)
			if err != nil {
				t.Fatalf("%s: %v", m.name, err)
			}
			for _, d := range fixture.Diff(got, direct) {
				t.Errorf("%s: %s", m.name, d)
			}
			h.cs.Close()
		}
	}
	t.Run("live", check)
	t.Run("stored", func(t *testing.T) {
		stopDaemon(t, e.dir)
		hs.CloseClientConnections()
		hs.Close()
		check(t)
	})
}
