package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/localapi"
)

// ScalePath is the bench server's endpoint of servers with many tools:
// ScaleToolsParam tools each (default 50), with a description, a small
// input schema and annotations, like a real server's.
const (
	ScalePath       = "/scale"
	ScaleToolsParam = "tools"
)

// scaleHandler serves ScalePath: one go-sdk server per tool count.
func scaleHandler() http.Handler {
	var mu sync.Mutex
	servers := map[int]*mcp.Server{}
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		n, err := strconv.Atoi(r.URL.Query().Get(ScaleToolsParam))
		if err != nil || n <= 0 || n > 10000 {
			n = 50
		}
		mu.Lock()
		defer mu.Unlock()
		if s := servers[n]; s != nil {
			return s
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "bench-scale", Version: "v0"}, nil)
		for i := range n {
			s.AddTool(&mcp.Tool{
				Name:        fmt.Sprintf("tool_%03d", i),
				Description: fmt.Sprintf("Tool %d of the scale benchmark: looks up a record by its key and returns the fields asked for, newest first.", i),
				InputSchema: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string","description":"the record key"},"fields":{"type":"array","items":{"type":"string"}},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["key"]}`),
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: fmt.Sprintf("Tool %d", i)},
			}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
		}
		servers[n] = s
		return s
	}, nil)
}

// scaleServers are n lazy servers of tools tools each on the bench
// server's ScalePath.
func scaleServers(srv *Server, n, tools int) []config.Server {
	out := make([]config.Server, n)
	for i := range out {
		out[i] = serverConfig(fmt.Sprintf("s%04d", i), fmt.Sprintf("%s%s?%s=%d&i=%d", srv.Origin, ScalePath, ScaleToolsParam, tools, i), false)
	}
	return out
}

// scaleResult is one count's measurements.
type scaleResult struct {
	connect    time.Duration   // cold connect of every server
	connectCPU time.Duration   // this process's CPU meanwhile (the engine)
	list       []time.Duration // warm tools listings through the daemon
	listCPU    []time.Duration // this process's CPU per listing (engine, daemon, client)
	cli        []time.Duration // warm `remotemcp tools --json` runs
	cliCPU     []time.Duration // the command's CPU plus this process's (engine, daemon)
}

// cpuSince is the CPU this process used since start (0 where getrusage
// is missing). On a shared machine CPU time is steadier than wall time:
// the rows give both.
func cpuSince(start time.Duration) time.Duration {
	now, ok := cpuTime()
	if !ok {
		return 0
	}
	return now - start
}

func cpuNow() time.Duration {
	t, _ := cpuTime()
	return t
}

// runScale measures, for each count of servers of cfg.ScaleTools tools:
// a cold connect of all of them through remotemcp.Open (Tools with
// Connect, as `tools` does) while cfg.ScaleSubscribers event
// subscribers (the daemon's own watchers, a settings page) read every
// update, and then warm listings through a daemon on that engine: the
// localapi client's Tools, and with cfg.CLI the real `tools --json`.
func runScale(ctx context.Context, cfg *Config, srv *Server, t *Table) error {
	var per []float64
	for _, n := range cfg.ScaleCounts {
		r, err := scaleOnce(ctx, cfg, srv, n)
		if err != nil {
			return err
		}
		ms := float64(r.connect.Microseconds()) / 1000 / float64(n)
		cpuMS := float64(r.connectCPU.Microseconds()) / 1000 / float64(n)
		per = append(per, cpuMS)
		row := Row{Measure: fmt.Sprintf("%d servers × %d tools: cold connect of all (Open + Tools with connect, %d subscribers); wall, wall and CPU per server", n, cfg.ScaleTools, cfg.ScaleSubscribers),
			Remote: fmt.Sprintf("%s; %.1f ms, CPU %.1f ms", fmtDur(r.connect), ms, cpuMS)}
		if len(per) > 1 && per[0] > 0 {
			ratio := cpuMS / per[0]
			row.Ratio = fmt.Sprintf("CPU ×%.2f of %d", ratio, cfg.ScaleCounts[0])
			row.Goal = verdict("≤ ×1.2 per server", ratio <= 1.2)
		}
		t.Add(row)
		t.Add(Row{Measure: fmt.Sprintf("%d servers × %d tools: warm Tools through the daemon (localapi client, p50 of %d); wall, CPU", n, cfg.ScaleTools, len(r.list)),
			Remote: fmtDur(median(r.list)) + ", CPU " + fmtDur(median(r.listCPU))})
		if len(r.cli) > 0 {
			p50 := median(r.cli)
			row := Row{Measure: fmt.Sprintf("%d servers × %d tools: warm `remotemcp tools --json` with the daemon (p50 of %d); wall, CPU of both processes", n, cfg.ScaleTools, len(r.cli)),
				Remote: fmtDur(p50) + ", CPU " + fmtDur(median(r.cliCPU))}
			if n >= 500 {
				row.Goal = verdict("≤ 300 ms", p50 <= 300*time.Millisecond)
			}
			t.Add(row)
		}
	}
	return nil
}

func scaleOnce(ctx context.Context, cfg *Config, srv *Server, n int) (scaleResult, error) {
	var r scaleResult
	dir := filepath.Join(cfg.TempDir, fmt.Sprintf("scale-%d", n))
	if err := seedDir(ctx, dir, scaleServers(srv, n, cfg.ScaleTools)); err != nil {
		return r, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := openEngine(ctx, dir, true)
	if err != nil {
		return r, err
	}
	defer c.Close()
	// The subscribers read every event, as the daemon's watchers and a
	// settings page do; they end with ctx.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range cfg.ScaleSubscribers {
		ch, err := c.Subscribe(ctx)
		if err != nil {
			return r, err
		}
		wg.Go(func() {
			for range ch {
			}
		})
	}
	t0, c0 := time.Now(), cpuNow()
	tl, err := c.Tools(ctx, localapi.ToolsRequest{Connect: true})
	// A listing waits for its connects only so long (the engine's connect
	// wait); on a loaded machine the last servers may miss it, and the
	// next listing connects those (the others are ready): all of them are
	// connected when a listing has every tool.
	for try := 0; err == nil && len(tl.Errors) > 0 && try < 5; try++ {
		logf(cfg, "scale: %d servers: %d not listed yet, listing again", n, len(tl.Errors))
		tl, err = c.Tools(ctx, localapi.ToolsRequest{Connect: true})
	}
	r.connect, r.connectCPU = time.Since(t0), cpuSince(c0)
	if err != nil {
		return r, err
	}
	if len(tl.Tools) != n*cfg.ScaleTools || len(tl.Errors) > 0 {
		return r, fmt.Errorf("bench: scale %d: %d tools listed, want %d (errors %v)", n, len(tl.Tools), n*cfg.ScaleTools, tl.Errors)
	}
	logf(cfg, "scale: %d servers connected cold in %s", n, r.connect.Round(time.Millisecond))
	return r, warmListings(ctx, cfg, c, dir, n, &r)
}

// warmListings serves the engine through a daemon and times listings.
func warmListings(ctx context.Context, cfg *Config, c *remotemcp.Client, dir string, n int, r *scaleResult) error {
	d, err := daemon.New(daemon.Options{Engine: c, DataDir: dir, Addr: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	if err := d.Listen(ctx); err != nil {
		return err
	}
	dctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- d.Serve(dctx) }()
	defer func() { stop(); <-served }()
	lc, err := daemon.Dial(ctx, dir)
	if err != nil {
		return err
	}
	for range cfg.ScaleReps {
		t0, c0 := time.Now(), cpuNow()
		tl, err := lc.Tools(ctx, localapi.ToolsRequest{Connect: true})
		if err != nil {
			return err
		}
		r.list, r.listCPU = append(r.list, time.Since(t0)), append(r.listCPU, cpuSince(c0))
		if len(tl.Tools) != n*cfg.ScaleTools {
			return fmt.Errorf("bench: scale %d: the daemon listed %d tools", n, len(tl.Tools))
		}
	}
	logf(cfg, "scale: %d servers, warm Tools through the daemon: %v", n, r.list)
	if cfg.CLI == "" {
		return nil
	}
	for range cfg.ScaleReps {
		cmd := exec.CommandContext(ctx, cfg.CLI, "--data-dir", dir, "tools", "--json")
		cmd.Stderr = os.Stderr
		t0, c0 := time.Now(), cpuNow()
		out, err := cmd.Output()
		d, dc := time.Since(t0), cpuSince(c0)
		if err != nil {
			return fmt.Errorf("bench: %s tools --json: %w", cfg.CLI, err)
		}
		var tools []json.RawMessage
		if err := json.Unmarshal(out, &tools); err != nil || len(tools) != n*cfg.ScaleTools {
			return fmt.Errorf("bench: tools --json printed %d tools (%v)", len(tools), err)
		}
		r.cli = append(r.cli, d)
		r.cliCPU = append(r.cliCPU, dc+cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	logf(cfg, "scale: %d servers, warm tools --json: %v", n, r.cli)
	return nil
}
