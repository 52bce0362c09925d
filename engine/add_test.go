package engine_test

import (
	"testing"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// A listing right after an add finds the server: the add returns once the
// manager knows it (a front end started at once offered no tools).
func TestToolsRightAfterAdd(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	for i := range 20 {
		ctx := testkit.Context(t)
		c, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir(), NoStartupConnect: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: f.URL(), By: localapi.ByServersAdd}); err != nil {
			t.Fatal(err)
		}
		tl, err := c.Tools(ctx, localapi.ToolsRequest{Connect: true})
		v, _ := c.Server(ctx, "fx")
		if err != nil || len(tl.Tools) == 0 {
			t.Errorf("round %d: %d tools, %v; state %s", i, len(tl.Tools), err, v.State)
		}
		c.Close()
	}
}
