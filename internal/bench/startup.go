package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// seeded holds data directories with 0, 200, 2,000 … lazy servers
// (enabled, connectOnStartup false, origin granted), all on the bench
// server with one tag per count ("start<count>") and a distinct query per
// server, so the server can count what each start costs on the wire.
type seeded struct {
	dirs map[int]string
}

func startTag(n int) string { return fmt.Sprintf("start%d", n) }

func (s *seeded) dir(n int) string { return s.dirs[n] }

func seedCounts(ctx context.Context, cfg *Config, srv *Server, counts []int) (*seeded, error) {
	s := &seeded{dirs: map[int]string{}}
	for _, n := range counts {
		if _, ok := s.dirs[n]; ok {
			continue
		}
		dir := filepath.Join(cfg.TempDir, fmt.Sprintf("lazy-%d", n))
		t0 := time.Now()
		if err := seedDir(ctx, dir, idleServers(srv, startTag(n), n)); err != nil {
			return nil, err
		}
		logf(cfg, "seeded %d lazy servers in %s", n, time.Since(t0).Round(time.Millisecond))
		s.dirs[n] = dir
	}
	return s, nil
}

// requestsSince waits until the tag's request count has not moved for
// quiet (at most 10 s), and returns how many requests it saw since before.
func requestsSince(ctx context.Context, srv *Server, tag string, before TagStats, quiet time.Duration) (int64, map[string]int64, error) {
	deadline := time.Now().Add(10 * time.Second)
	last := int64(-1)
	for {
		st, err := srv.Tag(ctx, tag)
		if err != nil {
			return 0, nil, err
		}
		if st.Requests == last || time.Now().After(deadline) {
			d := map[string]int64{}
			for m, n := range st.Methods {
				if k := n - before.Methods[m]; k != 0 {
					d[m] = k
				}
			}
			return st.Requests - before.Requests, d, nil
		}
		last = st.Requests
		time.Sleep(quiet)
	}
}

// engineStart times remotemcp.Open (default options: servers start per
// their connectOnStartup, here all lazy) and the first Tools listing of
// the engine's registry, and counts the requests the server saw.
func engineStart(ctx context.Context, srv *Server, dir string, n int) (time.Duration, int64, error) {
	tag := startTag(n)
	before, err := srv.Tag(ctx, tag)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	c, err := openEngine(ctx, dir, false)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	tl, err := c.Tools(ctx, localapi.ToolsRequest{})
	d := time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	if len(tl.Tools) != 0 {
		return 0, 0, fmt.Errorf("bench: %d lazy servers listed %d tools at start", n, len(tl.Tools))
	}
	reqs, _, err := requestsSince(ctx, srv, tag, before, 300*time.Millisecond)
	return d, reqs, err
}

// embedderStart is what an agent embedding the packages does: open the
// store and start a manager on it. It times that and counts the requests.
func embedderStart(ctx context.Context, srv *Server, dir string, n int) (time.Duration, int64, map[string]int64, error) {
	tag := startTag(n)
	before, err := srv.Tag(ctx, tag)
	if err != nil {
		return 0, 0, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	st, err := store.Open(ctx, dir, store.Options{})
	if err != nil {
		return 0, 0, nil, err
	}
	defer st.Close()
	m := manager.New(manager.Options{Store: st, HTTPClient: newHTTPClient(), ClientName: "remotemcp-bench", ClientVersion: "v0"})
	defer m.Close()
	if err := m.Start(ctx); err != nil {
		return 0, 0, nil, err
	}
	d := time.Since(t0)
	reqs, methods, err := requestsSince(ctx, srv, tag, before, 300*time.Millisecond)
	return d, reqs, methods, err
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// runStartup measures the start of the engine, and of an embedder's own
// store and manager, with each count of lazy servers.
func runStartup(ctx context.Context, cfg *Config, srv *Server, dirs *seeded, t *Table) error {
	for _, n := range cfg.StartupCounts {
		var times []time.Duration
		var maxReqs int64
		for range cfg.StartupReps {
			d, reqs, err := engineStart(ctx, srv, dirs.dir(n), n)
			if err != nil {
				return err
			}
			times = append(times, d)
			maxReqs = max(maxReqs, reqs)
		}
		logf(cfg, "startup: engine, %d servers: %v, %d requests", n, times, maxReqs)
		row := Row{Measure: fmt.Sprintf("startup with %d lazy servers: remotemcp.Open + first Tools (median of %d); network requests", n, cfg.StartupReps),
			Remote: fmt.Sprintf("%s; %d requests", fmtDur(median(times)), maxReqs)}
		if n >= 2000 {
			row.Goal = verdict("0 requests", maxReqs == 0)
		}
		t.Add(row)
	}
	if !cfg.Embedder {
		return nil
	}
	for _, n := range cfg.StartupCounts {
		logf(cfg, "startup: embedder store + manager, %d servers", n)
		d, reqs, methods, err := embedderStart(ctx, srv, dirs.dir(n), n)
		if err != nil {
			return err
		}
		logf(cfg, "startup: embedder, %d servers: %s, %d requests %v", n, d, reqs, methods)
		row := Row{Measure: fmt.Sprintf("startup with %d lazy servers: store + manager.Start (layer benchmark: an embedder of the packages); network requests", n),
			Remote: fmt.Sprintf("%s; %d requests", fmtDur(d), reqs)}
		if n >= 2000 {
			row.Goal = verdict("0 requests", reqs == 0)
		}
		t.Add(row)
	}
	return nil
}
