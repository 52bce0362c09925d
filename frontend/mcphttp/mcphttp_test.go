package mcphttp

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/remotemcp/remotemcp/frontend"
)

// URL is what a host is configured with; a listener that is not TCP on
// loopback is refused for the no-token endpoint (guard).
func TestURLAndLoopbackOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := fmt.Sprintf("http://127.0.0.1:%d/mcp", ln.Addr().(*net.TCPAddr).Port)
	if got := URL(ln); got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
	un, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Skip(err)
	}
	defer un.Close()
	if _, err := NoTokenHandler(context.Background(), nil, un, frontend.HTTPOptions{}); err == nil {
		t.Fatal("NoTokenHandler took a Unix socket")
	}
}
