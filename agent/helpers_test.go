package agent

import (
	"maps"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serverView is a test's short form of one server's ServerCatalog: the
// server is left out of the snapshot when it is not enabled.
type serverView struct {
	enabled  bool
	disabled []string
	catalog  *session.Catalog
	err      error
}

// buildSnapshot is NewSnapshot of views (by server id).
func buildSnapshot(gen uint64, views map[string]*serverView, maxDesc int) *Snapshot {
	var servers []ServerCatalog
	for _, id := range slices.Sorted(maps.Keys(views)) {
		v := views[id]
		if v.enabled {
			servers = append(servers, ServerCatalog{ID: id, DisabledTools: v.disabled, Catalog: v.catalog, Err: v.err})
		}
	}
	return NewSnapshot(gen, servers, maxDesc)
}

// opensFenceTag reports whether s, the text right after a '<' or a
// look-alike of it, continues as a fence tag (fenceTagScan).
func opensFenceTag(s string) bool {
	opens, _ := fenceTagScan(s)
	return opens
}
