package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// memSnap is the process's memory after two collections.
type memSnap struct {
	heap, stack uint64
	goroutines  int
}

func snapMem() memSnap {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSnap{heap: ms.HeapAlloc, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// perServer is a memory cost divided by a server count.
type perServer struct {
	heap, stack, goroutines float64
}

func costPer(before, after memSnap, n int) perServer {
	return perServer{
		heap:       (float64(after.heap) - float64(before.heap)) / float64(n),
		stack:      (float64(after.stack) - float64(before.stack)) / float64(n),
		goroutines: float64(after.goroutines-before.goroutines) / float64(n),
	}
}

func (p perServer) minus(o perServer) perServer {
	return perServer{heap: p.heap - o.heap, stack: p.stack - o.stack, goroutines: p.goroutines - o.goroutines}
}

// idleCost is the cost per connected idle server right after connecting
// (withPool: the HTTP pool still holds the connections the handshakes
// used) and once the pool's idle connections are closed, as they are
// after the transport's IdleConnTimeout (steady).
type idleCost struct {
	withPool, steady perServer
}

// measureIdle snapshots memory with the pool's idle connections, closes
// them, and snapshots again.
func measureIdle(before memSnap, hc *http.Client, n int) idleCost {
	var c idleCost
	c.withPool = costPer(before, snapMem(), n)
	hc.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond) // the connections' goroutines end
	c.steady = costPer(before, snapMem(), n)
	return c
}

// awaitStreams waits until the server has seen n standalone streams (GET)
// on tag, then a little longer for the clients to settle.
func awaitStreams(ctx context.Context, srv *Server, tag string, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := srv.Tag(ctx, tag)
		if err != nil {
			return err
		}
		if st.Methods["GET"] >= int64(n) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s: %d of %d standalone streams opened", tag, st.Methods["GET"], n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	return nil
}

func idleServers(srv *Server, tag string, n int) []config.Server {
	out := make([]config.Server, n)
	for i := range out {
		out[i] = serverConfig(fmt.Sprintf("s%04d", i), srv.Endpoint(tag, fmt.Sprintf("i=%d", i)), false)
	}
	return out
}

// idleGoSDK: n bare go-sdk sessions on one shared HTTP client.
func idleGoSDK(ctx context.Context, srv *Server, n int) (idleCost, error) {
	const tag = "idle-gosdk"
	hc := newHTTPClient()
	before := snapMem()
	sessions := make([]*mcp.ClientSession, 0, n)
	defer func() {
		for _, cs := range sessions {
			cs.Close()
		}
		hc.CloseIdleConnections()
	}()
	for i := range n {
		cs, err := goSDKSession(ctx, srv.Endpoint(tag, fmt.Sprintf("i=%d", i)), hc)
		if err != nil {
			return idleCost{}, err
		}
		sessions = append(sessions, cs)
	}
	if err := awaitStreams(ctx, srv, tag, n); err != nil {
		return idleCost{}, err
	}
	return measureIdle(before, hc, n), nil
}

// idleManager: a manager with n lazy servers, then all of them connected;
// the cost is what connecting added.
func idleManager(ctx context.Context, srv *Server, dir string, n int, heapProfile string) (idleCost, error) {
	const tag = "idle-manager"
	st, err := store.Open(ctx, dir, store.Options{})
	if err != nil {
		return idleCost{}, err
	}
	defer st.Close()
	for _, s := range idleServers(srv, tag, n) {
		if err := st.AddServer(ctx, s); err != nil {
			return idleCost{}, err
		}
	}
	hc := newHTTPClient()
	m := manager.New(manager.Options{Store: st, HTTPClient: hc, NoStartupConnect: true,
		ClientName: "remotemcp-bench", ClientVersion: "v0"})
	defer m.Close()
	if err := m.Start(ctx); err != nil {
		return idleCost{}, err
	}
	before := snapMem()
	for i := range n {
		if err := m.Connect(ctx, fmt.Sprintf("s%04d", i)); err != nil {
			return idleCost{}, err
		}
	}
	if err := awaitStreams(ctx, srv, tag, n); err != nil {
		return idleCost{}, err
	}
	c := measureIdle(before, hc, n)
	if heapProfile != "" {
		if err := writeProfile(heapProfile, "heap"); err != nil {
			return idleCost{}, err
		}
	}
	return c, nil
}

// hibernatedManager: a manager with n lazy servers whose idleTimeout is
// short, all of them connected and then left to hibernate; the cost is
// what a hibernated server holds beyond a lazy one.
func hibernatedManager(ctx context.Context, srv *Server, dir string, n int) (perServer, error) {
	const tag = "hibernate-manager"
	st, err := store.Open(ctx, dir, store.Options{})
	if err != nil {
		return perServer{}, err
	}
	defer st.Close()
	idle := config.Duration(200 * time.Millisecond)
	for _, s := range idleServers(srv, tag, n) {
		s.IdleTimeout = &idle
		if err := st.AddServer(ctx, s); err != nil {
			return perServer{}, err
		}
	}
	hc := newHTTPClient()
	m := manager.New(manager.Options{Store: st, HTTPClient: hc, NoStartupConnect: true, Catalogs: manager.KVShelf{KV: st}, Logs: manager.KVShelf{KV: st},
		IdleCheck: 50 * time.Millisecond, ClientName: "remotemcp-bench", ClientVersion: "v0"})
	defer m.Close()
	if err := m.Start(ctx); err != nil {
		return perServer{}, err
	}
	before := snapMem()
	for i := range n {
		if err := m.Connect(ctx, fmt.Sprintf("s%04d", i)); err != nil {
			return perServer{}, err
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		idleN := 0
		for _, s := range m.Status() {
			if s.State == manager.StateIdle {
				idleN++
			}
		}
		if idleN == n {
			break
		}
		if time.Now().After(deadline) {
			return perServer{}, fmt.Errorf("bench: %d of %d servers hibernated", idleN, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	hc.CloseIdleConnections()
	time.Sleep(300 * time.Millisecond) // the connections' goroutines end
	return costPer(before, snapMem(), n), nil
}

// writeProfile writes the named runtime/pprof profile to file.
func writeProfile(file, name string) error {
	runtime.GC()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// idleEngine: an engine with n lazy servers, then all of them connected
// and listed by the engine's registry; the cost is what connecting added
// (sessions, catalogs, registry entries).
func idleEngine(ctx context.Context, srv *Server, dir string, n int) (idleCost, error) {
	const tag = "idle-engine"
	if err := seedDir(ctx, dir, idleServers(srv, tag, n)); err != nil {
		return idleCost{}, err
	}
	hc := newHTTPClient()
	c, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, HTTPClient: hc})
	if err != nil {
		return idleCost{}, err
	}
	defer c.Close()
	if _, err := c.Tools(ctx, localapi.ToolsRequest{}); err != nil {
		return idleCost{}, err
	}
	before := snapMem()
	for i := range n {
		if _, err := c.Connect(ctx, fmt.Sprintf("s%04d", i)); err != nil {
			return idleCost{}, err
		}
	}
	tl, err := c.Tools(ctx, localapi.ToolsRequest{})
	if err != nil {
		return idleCost{}, err
	}
	if len(tl.Tools) == 0 {
		return idleCost{}, fmt.Errorf("bench: engine lists no tools after connecting %d servers (errors: %v)", n, tl.Errors)
	}
	if err := awaitStreams(ctx, srv, tag, n); err != nil {
		return idleCost{}, err
	}
	// The engine's client is a copy of hc around the same Transport, so
	// hc closes its idle connections.
	return measureIdle(before, hc, n), nil
}

// lazyCost opens something on a data directory with 0 servers and on one
// with n lazy servers, and returns the difference per server.
func lazyCost(n int, empty, full string, open func(dir string, count int) (func(), error)) (perServer, error) {
	measureDir := func(dir string, count int) (perServer, error) {
		before := snapMem()
		closeFn, err := open(dir, count)
		if err != nil {
			return perServer{}, err
		}
		time.Sleep(200 * time.Millisecond) // background start-up work
		after := snapMem()
		closeFn()
		return costPer(before, after, 1), nil
	}
	e, err := measureDir(empty, 0)
	if err != nil {
		return perServer{}, err
	}
	f, err := measureDir(full, n)
	if err != nil {
		return perServer{}, err
	}
	d := f.minus(e)
	return perServer{heap: d.heap / float64(n), stack: d.stack / float64(n), goroutines: d.goroutines / float64(n)}, nil
}

func lazyEngine(ctx context.Context, n int, empty, full string) (perServer, error) {
	return lazyCost(n, empty, full, func(dir string, _ int) (func(), error) {
		c, err := openEngine(ctx, dir, false)
		if err != nil {
			return nil, err
		}
		tl, err := c.Tools(ctx, localapi.ToolsRequest{})
		if err != nil {
			c.Close()
			return nil, err
		}
		if len(tl.Tools) != 0 {
			c.Close()
			return nil, fmt.Errorf("bench: lazy servers listed %d tools", len(tl.Tools))
		}
		return func() { c.Close() }, nil
	})
}

func lazyManager(ctx context.Context, n int, empty, full string) (perServer, error) {
	return lazyCost(n, empty, full, func(dir string, count int) (func(), error) {
		st, err := store.Open(ctx, dir, store.Options{})
		if err != nil {
			return nil, err
		}
		m := manager.New(manager.Options{Store: st, HTTPClient: newHTTPClient(), NoStartupConnect: true})
		if err := m.Start(ctx); err != nil {
			st.Close()
			return nil, err
		}
		if got := len(m.Status()); got != count {
			m.Close()
			st.Close()
			return nil, fmt.Errorf("bench: manager knows %d servers, want %d", got, count)
		}
		return func() { m.Close(); st.Close() }, nil
	})
}

// runMemory measures the memory rows: connected idle servers (go-sdk,
// manager, engine), hibernated (not built yet) and lazy servers.
func runMemory(ctx context.Context, cfg *Config, srv *Server, dirs *seeded, t *Table) error {
	n := cfg.IdleServers
	logf(cfg, "memory: %d connected idle servers: go-sdk", n)
	g, err := idleGoSDK(ctx, srv, n)
	if err != nil {
		return err
	}
	logf(cfg, "memory: %d connected idle servers: manager", n)
	mdir := filepath.Join(cfg.TempDir, "idle-manager")
	if err := os.MkdirAll(mdir, 0o700); err != nil {
		return err
	}
	m, err := idleManager(ctx, srv, mdir, n, cfg.HeapProfile)
	if err != nil {
		return err
	}
	logf(cfg, "memory: %d connected idle servers: engine", n)
	e, err := idleEngine(ctx, srv, filepath.Join(cfg.TempDir, "idle-engine"), n)
	if err != nil {
		return err
	}
	logf(cfg, "memory: per connected server with the pool's idle connections: go-sdk %s, manager %s, engine %s",
		fmtBytes(g.withPool.heap), fmtBytes(m.withPool.heap), fmtBytes(e.withPool.heap))
	t.Add(Row{Measure: fmt.Sprintf("heap per connected idle server (%d servers), manager (layer benchmark)", n),
		GoSDK: fmtBytes(g.steady.heap), Remote: fmtBytes(m.steady.heap), Ratio: fmtRatio(m.steady.heap, g.steady.heap)})
	t.Add(Row{Measure: fmt.Sprintf("heap per connected idle server (%d servers), remotemcp.Open engine (+ catalog, registry)", n),
		GoSDK: fmtBytes(g.steady.heap), Remote: fmtBytes(e.steady.heap), Ratio: fmtRatio(e.steady.heap, g.steady.heap)})
	t.Add(Row{Measure: "stack per connected idle server, manager (layer) / engine",
		GoSDK: fmtBytes(g.steady.stack), Remote: fmtBytes(m.steady.stack) + " / " + fmtBytes(e.steady.stack)})
	t.Add(Row{Measure: "goroutines per connected idle server, manager (layer) / engine",
		GoSDK:  fmt.Sprintf("%.1f", g.steady.goroutines),
		Remote: fmt.Sprintf("%.1f / %.1f", m.steady.goroutines, e.steady.goroutines)})
	logf(cfg, "memory: %d hibernated servers: manager", n)
	hdir := filepath.Join(cfg.TempDir, "hibernate-manager")
	if err := os.MkdirAll(hdir, 0o700); err != nil {
		return err
	}
	h, err := hibernatedManager(ctx, srv, hdir, n)
	if err != nil {
		return err
	}

	lz := cfg.LazyServers
	empty, full := dirs.dir(0), dirs.dir(lz)
	logf(cfg, "memory: %d lazy servers: engine", lz)
	le, err := lazyEngine(ctx, lz, empty, full)
	if err != nil {
		return err
	}
	logf(cfg, "memory: %d lazy servers: manager", lz)
	lm, err := lazyManager(ctx, lz, empty, full)
	if err != nil {
		return err
	}
	t.Add(Row{Measure: fmt.Sprintf("heap per lazy server (%d servers), remotemcp.Open engine (store, manager, registry)", lz),
		Remote: fmtBytes(le.heap), Goal: verdict("≤ 600 B", le.heap <= 600)})
	t.Add(Row{Measure: fmt.Sprintf("heap per lazy server (%d servers), manager alone (layer benchmark)", lz),
		Remote: fmtBytes(lm.heap)})
	t.Add(Row{Measure: "goroutines per lazy server, engine / manager (layer)",
		Remote: fmt.Sprintf("%.2f / %.2f", le.goroutines, lm.goroutines)})
	total := h.heap + lm.heap
	t.Add(Row{Measure: fmt.Sprintf("heap per hibernated server (%d servers), manager (layer benchmark): beyond a lazy one + a lazy one's", n),
		Remote: fmtBytes(h.heap) + " + " + fmtBytes(lm.heap) + " = " + fmtBytes(total), Goal: verdict("≤ 2 KB", total <= 2048)})
	t.Add(Row{Measure: "goroutines per hibernated server, manager (layer benchmark)", Remote: fmt.Sprintf("%.2f", h.goroutines), Goal: verdict("0", h.goroutines < 0.01)})
	return nil
}
