package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Open wires one guard for every outbound request (R2.2): a server whose
// origin has no grant is never contacted; after the grant it connects.
func TestOpenGuardsEveryRequest(t *testing.T) {
	f, err := fixture.Start(fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	ctx := context.Background()
	c, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.Elicit == nil {
		t.Fatal("the engine keeps no question cards")
	}
	srv := config.Server{ID: "fx", URL: f.URL(), Auth: config.Auth{Kind: config.AuthNone}, Enabled: true}
	if err := c.Store.AddServer(ctx, srv); err != nil {
		t.Fatal(err)
	}
	if err := c.Manager.Connect(ctx, "fx"); !errors.Is(err, hostperm.ErrPermissionRequired) {
		t.Fatalf("connect without a grant: %v", err)
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("%d requests reached a server without a grant", n)
	}
	pending, _ := c.Hosts.Pending(ctx)
	if len(pending) != 1 || pending[0].ServerID != "fx" {
		t.Fatalf("pending approvals: %+v", pending)
	}
	origin, _ := config.Origin(f.URL())
	if err := c.Hosts.Grant(ctx, origin, hostperm.ByCLI); err != nil {
		t.Fatal(err)
	}
	if err := c.Manager.Connect(ctx, "fx"); err != nil {
		t.Fatalf("connect after the grant: %v", err)
	}
}
