package bench

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveEnv makes the test binary the bench server (see TestMain).
const serveEnv = "REMOTEMCP_BENCH_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		os.Exit(ServeMain(nil))
	}
	os.Exit(m.Run())
}

func startTestServer(t *testing.T) *Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(serveEnv, "1") // inherited by the child only
	srv, err := StartServer(context.Background(), exe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// The server counts a go-sdk client's requests under its tag.
func TestServerCountsByTag(t *testing.T) {
	srv := startTestServer(t)
	ctx := context.Background()
	cs, err := goSDKSession(ctx, srv.Endpoint("t1", "i=1"), newHTTPClient())
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := awaitStreams(ctx, srv, "t1", 1); err != nil {
		t.Fatal(err)
	}
	st, err := srv.Tag(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Methods["initialize"] != 1 || st.Methods["notifications/initialized"] != 1 || st.Methods["GET"] != 1 {
		t.Fatalf("counted %v; want one initialize, one initialized and one GET", st.Methods)
	}
	other, err := srv.Tag(ctx, "t2")
	if err != nil {
		t.Fatal(err)
	}
	if other.Requests != 0 {
		t.Fatalf("tag t2 counted %d requests; want 0", other.Requests)
	}
}

// A tiny run of every section completes and fills the table. It checks
// no numbers: benchmarks are measured, not asserted.
func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts engines and a storm: a few seconds")
	}
	srv := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var log bytes.Buffer
	cfg := Config{
		Server: srv, TempDir: t.TempDir(), Sections: append(slices.Clone(AllSections), SectionScale),
		Calls: 10, Rounds: 2, Concurrency: []int{1, 4}, Warmup: 5,
		IdleServers: 2, LazyServers: 5, StartupCounts: []int{0, 3}, StartupReps: 1,
		Embedder: true, StormNotifications: 20, Log: &log,
		ScaleCounts: []int{2, 4}, ScaleTools: 3, ScaleSubscribers: 2, ScaleReps: 1,
	}
	tab, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var out bytes.Buffer
	WriteHeader(&out, "test")
	tab.Write(&out)
	text := out.String()
	for _, want := range []string{
		"client CPU per call, c4, agent path (remotemcp.Open", "allocations per call (bytes), c1, session layer",
		"heap per connected idle server", "heap per hibernated server", "heap per lazy server",
		"startup with 3 lazy servers: remotemcp.Open", "startup with 3 lazy servers: store + manager",
		"list_changed storm", "4 servers × 3 tools: cold connect of all", "4 servers × 3 tools: warm Tools through the daemon",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the table has no row %q:\n%s", want, text)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Log("\n" + text)
	}
}
