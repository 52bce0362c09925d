package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// proxyEnv, set to a server's URL, makes this test binary the go-sdk
// proxy of BenchmarkFrontEndCall instead of running tests (TestMain).
const proxyEnv = "REMOTEMCP_E2E_BENCH_PROXY"

// BenchmarkFrontEndCall measures a tool call as a host sees it: through
// "remotemcp mcp --server fx" (the built binary over stdio, in-process
// engine) against the host calling the same loopback go-sdk server
// directly, in the same run, alternating call by call. It reports the
// wall-clock p50 of each and their ratio (issue #21: the goal is ≤ 2.5×
// at concurrency 1). Not part of the test run:
//
//	go test -run XXX -bench FrontEndCall ./internal/e2e/
//
// Beside them it measures the floor of any front end built on go-sdk: a
// process that passes the server's tools through with nothing but a
// go-sdk stdio server and a go-sdk Streamable HTTP client (runProxy), in
// the same alternation. proxy-ratio is that floor against the direct
// call; frontend-vs-proxy is what remotemcp adds on top of it.
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
	front := connectCommand(ctx, b, cmd)
	proxyCmd := exec.Command(os.Args[0])
	proxyCmd.Env = append(os.Environ(), proxyEnv+"="+f.URL())
	proxy := connectCommand(ctx, b, proxyCmd)

	call := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		// Params of its own: a session may add its _meta to them.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			b.Fatalf("call: %+v %v", res, err)
		}
		return time.Since(start)
	}
	// Warm every path (connections, the front end's session).
	for range 20 {
		call(direct)
		call(proxy)
		call(front)
	}
	var dd, pd, fd []time.Duration
	b.ResetTimer()
	for b.Loop() {
		dd = append(dd, call(direct))
		pd = append(pd, call(proxy))
		fd = append(fd, call(front))
	}
	b.StopTimer()
	reportP50s(b, len(dd), p50(dd), p50(pd), p50(fd))
}

// connectCommand connects a host to the stdio MCP server cmd runs; the
// benchmark's end closes it.
func connectCommand(ctx context.Context, b *testing.B, cmd *exec.Cmd) *mcp.ClientSession {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-host"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("%s: %v", cmd, err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// p50 is the median of d (sorted in place).
func p50(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

// reportP50s reports the medians of the direct, proxy and front-end
// calls and their ratios.
func reportP50s(b *testing.B, n int, direct, proxy, front time.Duration) {
	ratio := float64(front) / float64(direct)
	floor := float64(proxy) / float64(direct)
	over := float64(front) / float64(proxy)
	b.ReportMetric(float64(direct.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(front.Microseconds()), "frontend-p50-µs")
	b.ReportMetric(ratio, "p50-ratio")
	b.ReportMetric(float64(proxy.Microseconds()), "proxy-p50-µs")
	b.ReportMetric(floor, "proxy-ratio")
	b.ReportMetric(over, "frontend-vs-proxy")
	b.Logf("tool call p50 at concurrency 1: direct %s, through remotemcp mcp %s: %.2f× (%d calls each); "+
		"through a bare go-sdk stdio proxy %s: %.2f× direct, remotemcp %.2f× the proxy", direct, front, ratio, n, proxy, floor, over)
}

// runProxy is the floor BenchmarkFrontEndCall holds the front end
// against: a stdio MCP server that passes every tool of the server at url
// through with go-sdk alone (its stdio server, its Streamable HTTP
// client), the two MCP hops the front end makes with remotemcp's engine
// between them. It serves stdin/stdout until the host leaves.
func runProxy(url string) int {
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-proxy"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench proxy: connect:", err)
		return 1
	}
	defer cs.Close()
	// The protocol revisions the front end offers (frontend.New), so the
	// host speaks to both alike.
	var versions []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v <= frontend.MaxProtocolVersion {
			versions = append(versions, v)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench-proxy"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench proxy: list tools:", err)
			return 1
		}
		// Sent on a context of its own: the host's request context has
		// go-sdk's values of the stdio session, and it ends when the
		// handler returns, before go-sdk has read the response stream's
		// end, so net/http would drop the connection after every call
		// (the engine's sessions keep it; see session.reqCtx). The
		// floor is the cheapest way through go-sdk.
		srv.AddTool(t, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	err = srv.Run(ctx, &mcp.StdioTransport{})
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		fmt.Fprintln(os.Stderr, "bench proxy:", err)
		return 1
	}
	return 0
}
