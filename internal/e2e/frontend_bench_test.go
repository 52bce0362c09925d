package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// BenchmarkFrontEndCall measures a tool call as a host sees it: through
// "remotemcp mcp --server fx" (the built binary over stdio, in-process
// engine) against the host calling the same loopback go-sdk server
// directly, in the same run, alternating call by call. It reports the
// wall-clock p50 of each and their ratio (issue #13: the goal is ≤ 1.3×
// at concurrency 1). Not part of the test run:
//
//	go test -run XXX -bench FrontEndCall ./internal/e2e/
func BenchmarkFrontEndCall(b *testing.B) {
	f, err := fixture.Start(fixture.Options{NoRecord: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	dir := b.TempDir()
	if out, err := exec.Command(bin, "--data-dir", dir, "servers", "add", "fx", f.URL()).CombinedOutput(); err != nil {
		b.Fatalf("servers add: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench-host"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.URL()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	cmd := exec.Command(bin, "--data-dir", dir, "mcp", "--no-daemon", "--server", "fx")
	cmd.Env = append(os.Environ(), "REMOTEMCP_HOME="+filepath.Join(dir, "unused"))
	front, err := mcp.NewClient(&mcp.Implementation{Name: "bench-host"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer front.Close()

	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}
	call := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("call: %+v %v", res, err)
		}
		return time.Since(start)
	}
	// Warm both paths (connections, the front end's session).
	for range 20 {
		call(direct)
		call(front)
	}
	var dd, fd []time.Duration
	b.ResetTimer()
	for b.Loop() {
		dd = append(dd, call(direct))
		fd = append(fd, call(front))
	}
	b.StopTimer()
	p50 := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	pd, pf := p50(dd), p50(fd)
	ratio := float64(pf) / float64(pd)
	b.ReportMetric(float64(pd.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(pf.Microseconds()), "frontend-p50-µs")
	b.ReportMetric(ratio, "p50-ratio")
	b.Logf("tool call p50 at concurrency 1: direct %s, through remotemcp mcp %s: %.2f× (%d calls each)", pd, pf, ratio, len(dd))
}
