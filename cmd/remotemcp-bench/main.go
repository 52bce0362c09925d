// Command remotemcp-bench measures remotemcp against bare go-sdk and
// prints one table (package internal/bench; issue #12). Run it through
// scripts/bench.sh, which builds it and passes its arguments on:
//
//	scripts/bench.sh                          # everything, about 3 minutes on 2 cores
//	scripts/bench.sh -sections calls -calls 500 -rounds 1
//	scripts/bench.sh -profile agent -cpuprofile cpu.out -memprofile mem.out
//
// The test server runs in a second process: this binary started again as
// `remotemcp-bench serve`, so getrusage here counts the client alone.
// Progress goes to stderr, the table to stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/internal/bench"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(bench.ServeMain(os.Args[2:]))
	}
	os.Exit(run())
}

// run parses the flags, starts the benchmark server and runs the
// benchmark (or one -profile), returning the exit code.
//
// Long: a flat main: 22 flag definitions, their copy into bench.Config and
// their checks, then the start-up steps (server, temp dir, profiles) whose
// defers must all run before the exit code returns, which os.Exit in main
// would skip.
func run() int {
	def := bench.DefaultConfig()
	calls := flag.Int("calls", def.Calls, "calls per side per round, at each concurrency")
	rounds := flag.Int("rounds", def.Rounds, "rounds of alternating go-sdk / remotemcp runs")
	conc := flag.String("concurrency", joinInts(def.Concurrency), "concurrency levels, comma-separated")
	warmup := flag.Int("warmup", def.Warmup, "warm-up calls per client")
	idle := flag.Int("idle-servers", def.IdleServers, "connected idle servers for the memory rows")
	lazy := flag.Int("lazy-servers", def.LazyServers, "lazy servers for the lazy heap row")
	startup := flag.String("startup", joinInts(def.StartupCounts), "server counts of the start-up rows, comma-separated")
	reps := flag.Int("startup-reps", def.StartupReps, "engine starts measured per count")
	embedder := flag.Bool("embedder", def.Embedder, "also time an embedder's own store + manager start on the lazy servers (a layer benchmark)")
	storm := flag.Int("storm", def.StormNotifications, "list_changed notifications in the storm")
	sections := flag.String("sections", strings.Join(bench.AllSections, ","), "sections to run: "+strings.Join(bench.AllSections, ",")+" (and "+bench.SectionScale+", minutes long, and "+bench.SectionGateway+", which needs -pg, only when named)")
	scale := flag.String("scale", joinInts(def.ScaleCounts), "server counts of the scale rows, comma-separated (the first is the per-server base)")
	scaleTools := flag.Int("scale-tools", def.ScaleTools, "tools per server in the scale rows")
	scaleSubs := flag.Int("scale-subscribers", def.ScaleSubscribers, "event subscribers during the scale rows' cold connect")
	scaleReps := flag.Int("scale-reps", def.ScaleReps, "warm listings timed per scale count")
	pg := flag.String("pg", os.Getenv("REMOTEMCP_TEST_POSTGRES"), "section gateway: a PostgreSQL server's DSN where a database may be created (default $REMOTEMCP_TEST_POSTGRES)")
	gwUsers := flag.Int("gateway-users", def.GatewayUsers, "section gateway: people, each with -gateway-servers lazy servers")
	gwServers := flag.Int("gateway-servers", def.GatewayServers, "section gateway: lazy servers per person")
	cli := flag.String("cli", "", "a remotemcp binary: the scale rows also time its `tools --json` against a daemon")
	command := flag.String("command", "", "the command line to print on top (default: this one)")
	quiet := flag.Bool("q", false, "no progress on stderr")
	profile := flag.String("profile", "", "profile one path instead (go-sdk, session, manager, agent): -calls × -rounds calls at the first -concurrency")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile (of the profiled path with -profile, else of the whole run)")
	memprofile := flag.String("memprofile", "", "with -profile: write an allocation profile (and FILE.base before the calls)")
	heapprofile := flag.String("heapprofile", "", "with the memory section: write an in-use heap profile of the manager's connected idle servers")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "remotemcp-bench: unexpected arguments %q\n", flag.Args())
		return 2
	}
	if *memprofile != "" || *heapprofile != "" {
		runtime.MemProfileRate = 4096
	}
	cfg := def
	cfg.Calls, cfg.Rounds, cfg.Warmup = *calls, *rounds, *warmup
	cfg.IdleServers, cfg.LazyServers, cfg.StartupReps = *idle, *lazy, *reps
	cfg.Embedder, cfg.StormNotifications, cfg.HeapProfile = *embedder, *storm, *heapprofile
	cfg.Sections = strings.Split(*sections, ",")
	cfg.PostgresDSN, cfg.GatewayUsers, cfg.GatewayServers = *pg, *gwUsers, *gwServers
	cfg.ScaleTools, cfg.ScaleSubscribers, cfg.ScaleReps, cfg.CLI = *scaleTools, *scaleSubs, *scaleReps, *cli
	var err error
	if cfg.Concurrency, err = parseInts(*conc); err != nil {
		fmt.Fprintln(os.Stderr, "remotemcp-bench: -concurrency:", err)
		return 2
	}
	if cfg.ScaleCounts, err = parseInts(*scale); err != nil || len(cfg.ScaleCounts) == 0 {
		fmt.Fprintln(os.Stderr, "remotemcp-bench: -scale: give at least one count", err)
		return 2
	}
	if cfg.StartupCounts, err = parseInts(*startup); err != nil {
		fmt.Fprintln(os.Stderr, "remotemcp-bench: -startup:", err)
		return 2
	}
	if !*quiet {
		cfg.Log = os.Stderr
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "remotemcp-bench:", err)
		return 1
	}
	srv, err := bench.StartServer(ctx, exe, "serve")
	if err != nil {
		fmt.Fprintln(os.Stderr, "remotemcp-bench:", err)
		return 1
	}
	defer srv.Close()
	tmp, err := os.MkdirTemp("", "remotemcp-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "remotemcp-bench:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	cfg.Server, cfg.TempDir = srv, tmp

	if *profile != "" {
		err := bench.Profile(ctx, srv, tmp, *profile, cfg.Calls*cfg.Rounds, cfg.Concurrency[0], *cpuprofile, *memprofile, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "remotemcp-bench:", err)
			return 1
		}
		return 0
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "remotemcp-bench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "remotemcp-bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	t0 := time.Now()
	t, err := bench.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "remotemcp-bench:", err)
		return 1
	}
	cmd := *command
	if cmd == "" {
		cmd = strings.Join(os.Args, " ")
	}
	bench.WriteHeader(os.Stdout, cmd)
	fmt.Printf("took:    %s\n\n", time.Since(t0).Round(time.Second))
	t.Write(os.Stdout)
	return 0
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n)
	}
	return out, nil
}
