// Package bench measures remotemcp against bare go-sdk (issue #12, item
// 5): client CPU and allocations per tool call, memory per connected and
// lazy server, engine start-up with many servers and the requests it
// makes, a list_changed storm, and (section scale) hundreds of servers of
// many tools. The users' path runs through the public API only
// (remotemcp.Open, the localapi types, a daemon in front of the engine);
// rows on the session and manager alone are labelled layer
// benchmarks: they locate a cost, no user takes that path.
//
// Every measurement talks to one bench server (ServeMain: the test
// fixture's MCP server with request counting) that runs in a separate
// process, so getrusage in the benchmark process counts only the client.
// Every client gets a fresh http.Client with the engine's default
// transport settings (remotemcp.NewHTTPClient: 64 idle connections per
// host). CPU runs alternate: for every round and path, a go-sdk run and a
// run of the path, go-sdk first in even rounds and second in odd ones.
//
// Run it with scripts/bench.sh (or cmd/remotemcp-bench); it is not part
// of the tests, and nothing in it asserts a timing.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
)

// Sections of a run.
const (
	SectionCalls   = "calls"
	SectionMemory  = "memory"
	SectionStartup = "startup"
	SectionStorm   = "storm"
	SectionScale   = "scale"
)

// AllSections is every section, in the order a run measures them.
// (scale is not among them: it takes minutes; ask for it by name).
var AllSections = []string{SectionCalls, SectionMemory, SectionStartup, SectionStorm}

// Config sizes a run.
type Config struct {
	// Server is the bench server (in another process).
	Server *Server
	// TempDir holds the data directories the run creates.
	TempDir string
	// Sections to run (default AllSections).
	Sections []string

	// Calls per measurement (one side of one round at one concurrency).
	Calls int
	// Rounds of alternating go-sdk / remotemcp measurements.
	Rounds int
	// Concurrency levels (goroutines calling at once).
	Concurrency []int
	// Warmup calls per client before the first measurement.
	Warmup int

	// IdleServers is how many connected idle servers the memory rows use.
	IdleServers int
	// LazyServers is how many lazy servers the lazy heap row uses.
	LazyServers int
	// StartupCounts are the server counts of the start-up rows.
	StartupCounts []int
	// StartupReps is how many times each engine start is measured.
	StartupReps int
	// Embedder also measures an embedder's own store and manager start
	// (a layer benchmark; it connects no lazy server).
	Embedder bool
	// StormNotifications is the size of the list_changed storm.
	StormNotifications int

	// ScaleCounts are the server counts of the scale rows (servers of
	// ScaleTools tools each); the first is the base of the per-server
	// ratio. ScaleSubscribers event subscribers read every update during
	// the cold connect; ScaleReps warm listings are timed per count.
	ScaleCounts      []int
	ScaleTools       int
	ScaleSubscribers int
	ScaleReps        int
	// PostgresDSN is a PostgreSQL server where the gateway section may
	// create a database; GatewayUsers people of GatewayServers lazy
	// servers each.
	PostgresDSN                  string
	GatewayUsers, GatewayServers int

	// CLI, when set, is a remotemcp binary: the scale rows also time its
	// `tools --json` against a daemon on the engine.
	CLI string

	// HeapProfile, when set, receives an in-use heap profile taken with
	// the manager's IdleServers connected (set runtime.MemProfileRate
	// low, early, for a useful one).
	HeapProfile string

	// Log receives progress and per-round details (nil: none).
	Log io.Writer
}

// DefaultConfig is what scripts/bench.sh runs: about two to four minutes
// on two cores.
func DefaultConfig() Config {
	return Config{
		Sections: AllSections, Calls: 2000, Rounds: 3, Concurrency: []int{1, 16, 64}, Warmup: 300,
		IdleServers: 100, LazyServers: 2000, StartupCounts: []int{0, 200, 2000}, StartupReps: 3,
		Embedder: true, StormNotifications: 1000,
		ScaleCounts: []int{100, 500}, ScaleTools: 50, ScaleSubscribers: 2, ScaleReps: 5,
		GatewayUsers: 100, GatewayServers: 5,
	}
}

func logf(cfg *Config, format string, args ...any) {
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "bench: "+format+"\n", args...)
	}
}

// Run measures the configured sections and returns the table.
func Run(ctx context.Context, cfg Config) (*Table, error) {
	if cfg.Server == nil || cfg.TempDir == "" {
		return nil, fmt.Errorf("bench: Config.Server and Config.TempDir are required")
	}
	if len(cfg.Sections) == 0 {
		cfg.Sections = AllSections
	}
	t := &Table{}
	srv := cfg.Server
	has := func(s string) bool { return slices.Contains(cfg.Sections, s) }
	if has(SectionCalls) {
		cs, err := newCallers(ctx, srv, cfg.TempDir)
		if err != nil {
			return nil, err
		}
		err = runCPU(ctx, &cfg, cs, t)
		cs.close()
		if err != nil {
			return nil, err
		}
	}
	var dirs *seeded
	if has(SectionMemory) || has(SectionStartup) {
		counts := []int{0}
		if has(SectionMemory) {
			counts = append(counts, cfg.LazyServers)
		}
		if has(SectionStartup) {
			counts = append(counts, cfg.StartupCounts...)
		}
		var err error
		if dirs, err = seedCounts(ctx, &cfg, srv, counts); err != nil {
			return nil, err
		}
	}
	if has(SectionMemory) {
		if err := runMemory(ctx, &cfg, srv, dirs, t); err != nil {
			return nil, err
		}
	}
	if has(SectionStartup) {
		if err := runStartup(ctx, &cfg, srv, dirs, t); err != nil {
			return nil, err
		}
	}
	if has(SectionStorm) {
		if err := runStorm(ctx, &cfg, srv, t); err != nil {
			return nil, err
		}
	}
	if has(SectionGateway) {
		if err := runGateway(ctx, &cfg, srv, t); err != nil {
			return nil, err
		}
	}
	if has(SectionScale) {
		if err := runScale(ctx, &cfg, srv, t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Profile calls the echo tool through one path (go-sdk, session, manager
// or agent) calls times at concurrency conc, with a CPU profile
// written to cpuFile and an allocation profile to memFile (either may be
// ""). The allocation profile counts from program start; memFile+".base"
// holds one taken just before the calls, for `go tool pprof -base`. Set
// runtime.MemProfileRate early (before the clients are made) for finer
// allocation samples.
func Profile(ctx context.Context, srv *Server, tmp, path string, calls, conc int, cpuFile, memFile string, log io.Writer) error {
	cs, err := newCallers(ctx, srv, tmp)
	if err != nil {
		return err
	}
	defer cs.close()
	c, err := cs.only(path)
	if err != nil {
		return err
	}
	if _, err := measure(ctx, c, 500, conc); err != nil {
		return err
	}
	writeHeap := func(name string) error {
		if name == "" {
			return nil
		}
		return writeProfile(name, "allocs")
	}
	if memFile != "" {
		if err := writeHeap(memFile + ".base"); err != nil {
			return err
		}
	}
	if cpuFile != "" {
		f, err := os.Create(cpuFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	s, err := measure(ctx, c, calls, conc)
	if cpuFile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	if log != nil {
		fmt.Fprintf(log, "bench: profiled %s: %d calls at c%d: %.1f µs CPU/call, %.0f allocs/call, %s/call, %.0f calls/s\n",
			path, calls, conc, us(s.cpuPerCall()), s.allocsPerCall(), fmtBytes(s.bytesPerCall()), float64(s.calls)/s.wall.Seconds())
	}
	return writeHeap(memFile)
}
