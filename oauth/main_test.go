package oauth

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/internal/pgtest"
)

// TestMain fails the package if a test leaves goroutines behind (the
// loopback listener, flights, servers). Idle keep-alive connections of
// http.DefaultTransport are not ours to close. The PostgreSQL cluster
// pgtest may have started for the replica tests is stopped first.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(pgtest.Wrap(m),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}
