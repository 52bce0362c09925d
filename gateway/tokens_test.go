package gateway_test

import (
	"testing"

	"github.com/remotemcp/remotemcp/frontend"
)

// The index that finds a host token's owner (store schema 3) names the
// host tokens' namespace and member by their values: they must not drift.
func TestHostTokenIndexNamesTheNamespace(t *testing.T) {
	if frontend.TokenNamespace != "mcp-http-tokens" {
		t.Fatalf("frontend.TokenNamespace is %q: store's index kv_host_token_hash names mcp-http-tokens; add a migration", frontend.TokenNamespace)
	}
}
