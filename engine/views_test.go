package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/remotemcp/remotemcp/localapi"
)

// TestLiveServersRebuildOnlyWhatChanged: the live server list of the
// subscriptions rebuilds the view of the server that changed, not every
// server (issue #21: every event rebuilt every view with two queries
// each, so connecting N servers cost O(N²)); and it is always what
// Servers reads afresh (guard).
func TestLiveServersRebuildOnlyWhatChanged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Open(ctx, Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 20
	no := false
	for i := range n {
		if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: fmt.Sprintf("s%02d", i), URL: fmt.Sprintf("http://127.0.0.1:1/mcp%d", i), ConnectOnStartup: &no}); err != nil {
			t.Fatal(err)
		}
	}
	// step reads the live list and checks how many views it built and
	// that it equals a fresh listing.
	step := func(name string, wantBuilt uint64) {
		t.Helper()
		before := c.views.built
		got, err := c.liveServers(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if built := c.views.built - before; built != wantBuilt {
			t.Errorf("%s: %d views built, want %d", name, built, wantBuilt)
		}
		fresh, err := c.Servers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := marshal(fresh)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the live list differs from a fresh one:\n%s\n%s", name, got, want)
		}
	}
	step("first", n)
	step("unchanged", 0)
	if _, err := c.SetEnabled(ctx, "s05", false); err != nil {
		t.Fatal(err)
	}
	step("one edited", 1)
	if err := c.RemoveServer(ctx, "s07"); err != nil {
		t.Fatal(err)
	}
	step("one removed", 0)
	if err := c.Grant(ctx, "https://other.example", ""); err != nil {
		t.Fatal(err)
	}
	step("a grant (every view shows grants)", n-1)
	var l []localapi.Server
	b, _ := c.liveServers(ctx)
	if err := json.Unmarshal(b, &l); err != nil || len(l) != n-1 || l[5].Enabled {
		t.Fatalf("list: %d servers, s05 enabled %v (%v)", len(l), len(l) > 5 && l[5].Enabled, err)
	}
}
