package frontend_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

func TestNames(t *testing.T) {
	long := strings.Repeat("t", 60)
	keys := []agent.NameKey{
		{Server: "docs", Name: "search"},
		{Server: "docs", Name: long},
		{Server: "docs", Name: long + "x"},
		{Server: "a.b", Name: "c"}, // sanitises to a_b__c …
		{Server: "a_b", Name: "c"}, // … which this one has exactly
		{Server: "srv", Name: "ünï"},
	}
	got := frontend.Names(keys)
	for _, tc := range []struct {
		key  agent.NameKey
		want string // "" = only checked for length and uniqueness
	}{
		{agent.NameKey{Server: "docs", Name: "search"}, "docs__search"},
		{agent.NameKey{Server: "a_b", Name: "c"}, "a_b__c"},
		{agent.NameKey{Server: "srv", Name: "ünï"}, "srv___n_"},
		{agent.NameKey{Server: "a.b", Name: "c"}, ""},
		{agent.NameKey{Server: "docs", Name: long}, ""},
	} {
		if tc.want != "" && got[tc.key] != tc.want {
			t.Errorf("name of %v = %q, want %q", tc.key, got[tc.key], tc.want)
		}
	}
	seen := map[string]bool{}
	for k, n := range got {
		if len(n) > frontend.MaxNameLength {
			t.Errorf("name of %v is %d characters: %q", k, len(n), n)
		}
		if seen[n] {
			t.Errorf("name %q given twice", n)
		}
		seen[n] = true
	}
	if n := got[agent.NameKey{Server: "a.b", Name: "c"}]; !strings.HasPrefix(n, "a_b__c_") {
		t.Errorf("the mangled loser of the collision is %q, want a_b__c_<hash>", n)
	}
	// Stable across calls and orders.
	slices.Reverse(keys)
	again := frontend.Names(keys)
	for k, n := range got {
		if again[k] != n {
			t.Errorf("name of %v changed: %q then %q", k, n, again[k])
		}
	}
}

func TestExposedURI(t *testing.T) {
	for _, tc := range []struct {
		server, uri string
		unique      bool
		want        string
	}{
		{"a", "test://readme", true, "test://readme"},
		{"a", "test://readme", false, "remotemcp://a/test:%2F%2Freadme"},
		{"a", "file:///x y?q=1", false, "remotemcp://a/file:%2F%2F%2Fx%20y%3Fq=1"},
		{"a", "test://items/{id}", false, "remotemcp://a/test:%2F%2Fitems%2F{id}"},
	} {
		got := frontend.ExposedURI(tc.server, tc.uri, tc.unique)
		if got != tc.want {
			t.Errorf("ExposedURI(%q, %q, %t) = %q, want %q", tc.server, tc.uri, tc.unique, got, tc.want)
		}
		if back := frontend.OriginalURI(tc.server, got); back != tc.uri {
			t.Errorf("OriginalURI(%q, %q) = %q, want %q", tc.server, got, back, tc.uri)
		}
	}
	// A filled-in template of a colliding server routes back too.
	if got := frontend.OriginalURI("a", "remotemcp://a/test:%2F%2Fitems%2F5"); got != "test://items/5" {
		t.Errorf("filled template routes to %q", got)
	}
}

// TestResourceRouting: two servers list the same URIs; each is offered
// as remotemcp://{server}/… and reading it reaches its own server, and
// tools of both are offered under their own prefixes.
func TestResourceRouting(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	eng, err := engine.Open(ctx, engine.Options{DataDir: t.TempDir(), NoStartupConnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	fa, fb := testkit.StartFixture(t, fixture.Options{}), testkit.StartFixture(t, fixture.Options{})
	fb.AddResource("only://b")
	for id, f := range map[string]*fixture.Server{"a": fa, "b": fb} {
		if _, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: id, URL: f.URL(), By: localapi.ByServersAdd}); err != nil {
			t.Fatal(err)
		}
	}
	fe, err := frontend.New(ctx, frontend.Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	rctx, stop := context.WithCancel(ctx)
	go func() { done <- fe.Run(rctx, st) }()
	t.Cleanup(func() { stop(); <-done })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range rl.Resources {
		uris = append(uris, r.URI)
	}
	for _, want := range []string{"remotemcp://a/test:%2F%2Freadme", "remotemcp://b/test:%2F%2Freadme", "only://b"} {
		if !slices.Contains(uris, want) {
			t.Errorf("resources %v lack %s", uris, want)
		}
	}
	if slices.Contains(uris, fixture.ReadmeURI) {
		t.Errorf("the shared URI %s is offered as is", fixture.ReadmeURI)
	}
	for _, uri := range []string{"remotemcp://a/test:%2F%2Freadme", "remotemcp://b/test:%2F%2Freadme", "only://b"} {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].URI != uri {
			t.Fatalf("read %s: %v %+v", uri, err, rr)
		}
	}
	before := len(fb.Requests())
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "remotemcp://a/test:%2F%2Freadme"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range fb.Requests()[before:] {
		if r.RPCMethod == "resources/read" {
			t.Errorf("a read of server a's resource reached server b")
		}
	}
	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tool := range tl.Tools {
		if strings.HasPrefix(tool.Name, "a__") || strings.HasPrefix(tool.Name, "b__") {
			n++
		}
		var schema map[string]any
		if b, _ := json.Marshal(tool.InputSchema); json.Unmarshal(b, &schema) != nil || schema["type"] != "object" {
			t.Errorf("tool %s: schema %v", tool.Name, tool.InputSchema)
		}
	}
	if n != len(tl.Tools) || n == 0 {
		t.Errorf("tools %d, prefixed %d", len(tl.Tools), n)
	}
}
