package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// sample is what one measurement (or a sum of them) cost the process.
type sample struct {
	calls   int64
	cpu     time.Duration // getrusage user+sys
	wall    time.Duration
	mallocs uint64 // runtime.MemStats.Mallocs
	bytes   uint64 // runtime.MemStats.TotalAlloc
}

func (s *sample) add(o sample) {
	s.calls += o.calls
	s.cpu += o.cpu
	s.wall += o.wall
	s.mallocs += o.mallocs
	s.bytes += o.bytes
}

func (s sample) cpuPerCall() time.Duration { return s.cpu / time.Duration(max(s.calls, 1)) }
func (s sample) allocsPerCall() float64    { return float64(s.mallocs) / float64(max(s.calls, 1)) }
func (s sample) bytesPerCall() float64     { return float64(s.bytes) / float64(max(s.calls, 1)) }

// measure makes calls calls of c from conc goroutines and returns what they
// cost: the process's CPU time (getrusage, all threads, so GC included)
// and its allocations. A GC runs first, outside the window, so every
// measurement starts from a collected heap.
func measure(ctx context.Context, c *caller, calls, conc int) (sample, error) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0, _ := cpuTime()
	t0 := time.Now()
	var (
		next    atomic.Int64
		errOnce sync.Once
		callErr error
		wg      sync.WaitGroup
	)
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(calls) {
				if err := c.call(ctx); err != nil {
					errOnce.Do(func() { callErr = fmt.Errorf("%s: %w", c.name, err) })
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	c1, _ := cpuTime()
	runtime.ReadMemStats(&m1)
	if callErr != nil {
		return sample{}, callErr
	}
	return sample{calls: int64(calls), cpu: c1 - c0, wall: wall,
		mallocs: m1.Mallocs - m0.Mallocs, bytes: m1.TotalAlloc - m0.TotalAlloc}, nil
}

// pair is a remotemcp path and the go-sdk runs it alternated with.
type pair struct {
	base, remote sample
}

// runCPU measures every remotemcp path against bare go-sdk at each
// concurrency: per round and path, cfg.Calls go-sdk calls and cfg.Calls
// calls of the path, in alternating order (go-sdk, path, path, go-sdk in
// even rounds; path, go-sdk, go-sdk, path in odd ones; half the calls
// each). The ratios compare each path with the go-sdk runs of its own
// pairs.
func runCPU(ctx context.Context, cfg *Config, cs *callers, t *Table) error {
	_, haveCPU := cpuTime()
	logf(cfg, "warming up (%d calls per client)", cfg.Warmup)
	for _, c := range append([]*caller{cs.gosdk}, cs.remote...) {
		if _, err := measure(ctx, c, cfg.Warmup, 4); err != nil {
			return err
		}
	}
	res := map[int]map[string]*pair{}
	for _, conc := range cfg.Concurrency {
		res[conc] = map[string]*pair{}
		for round := range cfg.Rounds {
			for _, p := range cs.remote {
				// ABBA within the round (BAAB in odd rounds): each side
				// runs twice, half the calls each time, so a load change
				// on the machine during the round hits both sides alike.
				order := []*caller{cs.gosdk, p, p, cs.gosdk}
				if round%2 == 1 {
					order = []*caller{p, cs.gosdk, cs.gosdk, p}
				}
				var got [2]sample // go-sdk, path
				for _, c := range order {
					s, err := measure(ctx, c, (cfg.Calls+1)/2, conc)
					if err != nil {
						return err
					}
					if c == cs.gosdk {
						got[0].add(s)
					} else {
						got[1].add(s)
					}
				}
				pr := res[conc][p.name]
				if pr == nil {
					pr = &pair{}
					res[conc][p.name] = pr
				}
				pr.base.add(got[0])
				pr.remote.add(got[1])
				logf(cfg, "c%-2d round %d %-8s go-sdk %6.1f µs %5.0f allocs %6.0f calls/s | remotemcp %6.1f µs %5.0f allocs %6.0f calls/s | %.2f×",
					conc, round+1, p.name,
					us(got[0].cpuPerCall()), got[0].allocsPerCall(), float64(got[0].calls)/got[0].wall.Seconds(),
					us(got[1].cpuPerCall()), got[1].allocsPerCall(), float64(got[1].calls)/got[1].wall.Seconds(),
					float64(got[1].cpu)/float64(max(got[0].cpu, 1)))
			}
		}
	}
	for _, conc := range cfg.Concurrency {
		for _, p := range cs.remote {
			pr := res[conc][p.name]
			row := Row{Measure: fmt.Sprintf("client CPU per call, c%d, %s", conc, p.label)}
			if haveCPU {
				row.GoSDK = fmt.Sprintf("%.1f µs", us(pr.base.cpuPerCall()))
				row.Remote = fmt.Sprintf("%.1f µs", us(pr.remote.cpuPerCall()))
				row.Ratio = fmtRatio(float64(pr.remote.cpu), float64(pr.base.cpu))
			} else {
				row.GoSDK, row.Remote = "n/a (no getrusage)", "n/a (no getrusage)"
			}
			if p.name == "agent" {
				row.Goal = "≤ 1.08×" // issue #21
				if haveCPU {
					row.Goal = verdict(row.Goal, float64(pr.remote.cpu) <= 1.08*float64(pr.base.cpu))
				}
			}
			t.Add(row)
		}
	}
	for _, conc := range cfg.Concurrency {
		for _, p := range cs.remote {
			pr := res[conc][p.name]
			t.Add(Row{
				Measure: fmt.Sprintf("allocations per call (bytes), c%d, %s", conc, p.label),
				GoSDK:   fmt.Sprintf("%.0f (%s)", pr.base.allocsPerCall(), fmtBytes(pr.base.bytesPerCall())),
				Remote:  fmt.Sprintf("%.0f (%s)", pr.remote.allocsPerCall(), fmtBytes(pr.remote.bytesPerCall())),
				Ratio:   fmtRatio(pr.remote.allocsPerCall(), pr.base.allocsPerCall()),
			})
		}
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
