package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// SectionGateway measures a gateway (issue #22) beside the personal mode:
// heap per idle person (GatewayUsers people × GatewayServers lazy
// servers, each person's engine open) against a personal engine with the
// same servers on SQLite, and calls per second at concurrency 16 spread
// over 16 people against one personal engine. It needs
// Config.PostgresDSN, a server where it may create a database.
const SectionGateway = "gateway"

// runGateway is the gateway section.
func runGateway(ctx context.Context, cfg *Config, srv *Server, t *Table) error {
	if cfg.PostgresDSN == "" {
		return fmt.Errorf("bench: section %s needs a PostgreSQL server (-pg DSN or $REMOTEMCP_TEST_POSTGRES)", SectionGateway)
	}
	dsn, drop, err := benchDatabase(ctx, cfg.PostgresDSN)
	if err != nil {
		return err
	}
	defer drop()
	users, servers := cfg.GatewayUsers, cfg.GatewayServers
	lazySet := func(tag string) []config.Server {
		var out []config.Server
		for i := range servers {
			out = append(out, serverConfig(fmt.Sprintf("s%d", i), srv.Endpoint(tag, ""), false))
		}
		return out
	}

	perPersonal, err := personalHeap(ctx, cfg, users, lazySet("gw-personal"))
	if err != nil {
		return err
	}
	gw, emails, closeGW, err := gatewayPeople(ctx, cfg, dsn, users, lazySet("gw-gateway"))
	if err != nil {
		return err
	}
	defer closeGW()
	before := snapMem()
	for _, e := range emails {
		if _, _, err := gw.Engine(ctx, e); err != nil {
			return err
		}
	}
	perUser := costPer(before, snapMem(), users)
	t.Add(Row{Measure: fmt.Sprintf("heap per idle person, %d people × %d lazy servers: personal engine on SQLite | gateway person on PostgreSQL", users, servers),
		GoSDK: fmt.Sprintf("%.1f KB", perPersonal.heap/1024), Remote: fmt.Sprintf("%.1f KB", perUser.heap/1024),
		Ratio: fmtRatio(perUser.heap, perPersonal.heap)})
	t.Add(Row{Measure: "goroutines per idle person: personal | gateway",
		GoSDK: fmt.Sprintf("%.1f", perPersonal.goroutines), Remote: fmt.Sprintf("%.1f", perUser.goroutines)})
	return gatewayCalls(ctx, cfg, srv, gw, emails, t)
}

// personalHeap is the heap of one personal engine per data directory,
// n of them, each with servers.
func personalHeap(ctx context.Context, cfg *Config, n int, servers []config.Server) (perServer, error) {
	logf(cfg, "gateway: %d personal engines of %d lazy servers", n, len(servers))
	users := n
	dirs := make([]string, users)
	for i := range dirs {
		dirs[i] = filepath.Join(cfg.TempDir, fmt.Sprintf("personal-%d", i))
		if err := os.MkdirAll(dirs[i], 0o700); err != nil {
			return perServer{}, err
		}
		if err := seedDir(ctx, dirs[i], servers); err != nil {
			return perServer{}, err
		}
	}
	before := snapMem()
	personal := make([]*remotemcp.Client, 0, users)
	for _, d := range dirs {
		c, err := openEngine(ctx, d, true)
		if err != nil {
			return perServer{}, err
		}
		personal = append(personal, c)
	}
	per := costPer(before, snapMem(), users)
	for _, c := range personal {
		c.Close()
	}
	return per, nil
}

// gatewayPeople opens a gateway on dsn with users people, each with
// servers (their engines not opened yet).
func gatewayPeople(ctx context.Context, cfg *Config, dsn string, users int, servers []config.Server) (*gateway.Gateway, []string, func(), error) {
	logf(cfg, "gateway: %d people of %d lazy servers on PostgreSQL", users, len(servers))
	pg, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{KeyDir: filepath.Join(cfg.TempDir, "gateway")})
	if err != nil {
		return nil, nil, nil, err
	}
	fail := func(err error) (*gateway.Gateway, []string, func(), error) {
		pg.Close()
		return nil, nil, nil, err
	}
	emails := make([]string, users)
	for i := range emails {
		emails[i] = fmt.Sprintf("person%d@bench.example", i)
		u, err := pg.AddUser(ctx, emails[i])
		if err != nil {
			return fail(err)
		}
		st, err := pg.User(ctx, u.ID)
		if err != nil {
			return fail(err)
		}
		for _, s := range servers {
			if err := st.AddServer(ctx, s); err != nil {
				st.Close()
				return fail(err)
			}
		}
		st.Close()
	}
	gw := gateway.New(gateway.Options{DB: pg, Engine: engine.Options{HTTPClient: newHTTPClient()}})
	return gw, emails, func() { gw.Close(); pg.Close() }, nil
}

// gatewayCalls times calls of 16 callers spread over 16 people on the
// gateway against one personal engine, in alternating order.
func gatewayCalls(ctx context.Context, cfg *Config, srv *Server, gw *gateway.Gateway, emails []string, t *Table) error {
	const conc = 16
	users := len(emails)
	pc, err := newAgentCaller(ctx, srv, filepath.Join(cfg.TempDir, "gw-agent"))
	if err != nil {
		return err
	}
	defer pc.close()
	engines := make([]*engine.Engine, conc)
	for i := range engines {
		e, _, err := gw.Engine(ctx, emails[i%users])
		if err != nil {
			return err
		}
		if _, err := e.AddServer(ctx, localapi.AddServerRequest{ID: "e", URL: srv.Endpoint("cpu-gateway", "")}); err != nil {
			return err
		}
		if _, err := e.Tools(ctx, localapi.ToolsRequest{ServerID: "e", Connect: true}); err != nil {
			return err
		}
		engines[i] = e
	}
	var next atomic.Int64
	gc := &caller{name: "gateway", call: func(ctx context.Context) error {
		e := engines[int(next.Add(1))%conc]
		res, err := e.Call(ctx, localapi.CallRequest{Tool: "mcp__e__echo", Arguments: echoArgs, Approved: true}, localapi.CallHandler{})
		if err != nil {
			return err
		}
		if res.Outcome != "ok" || res.IsError {
			return fmt.Errorf("gateway call: %s: %s", res.Outcome, res.Message)
		}
		return nil
	}}
	for _, c := range []*caller{pc, gc} {
		if _, err := measure(ctx, c, cfg.Warmup, 4); err != nil {
			return err
		}
	}
	var ps, gs sample
	for range cfg.Rounds {
		for _, c := range []*caller{pc, gc, gc, pc} {
			s, err := measure(ctx, c, (cfg.Calls+1)/2, conc)
			if err != nil {
				return err
			}
			if c == pc {
				ps.add(s)
			} else {
				gs.add(s)
			}
		}
	}
	prate, grate := float64(ps.calls)/ps.wall.Seconds(), float64(gs.calls)/gs.wall.Seconds()
	t.Add(Row{Measure: "calls per second, c16: one personal engine | 16 gateway people (echo, loopback server)",
		GoSDK: fmt.Sprintf("%.0f", prate), Remote: fmt.Sprintf("%.0f", grate), Ratio: fmtRatio(grate, prate)})
	t.Add(Row{Measure: "client CPU per call, c16: personal | gateway",
		GoSDK: fmt.Sprintf("%.1f µs", us(ps.cpuPerCall())), Remote: fmt.Sprintf("%.1f µs", us(gs.cpuPerCall())),
		Ratio: fmtRatio(float64(gs.cpuPerCall()), float64(ps.cpuPerCall()))})
	return nil
}

// benchDatabase creates a database for the run on the server of admin
// (a DSN of a database there, such as postgres) and returns its DSN and
// the function that drops it.
func benchDatabase(ctx context.Context, admin string) (string, func(), error) {
	var b [6]byte
	rand.Read(b[:])
	name := "remotemcp_bench_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("bench: connect to PostgreSQL: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("bench: create database: %w", err)
	}
	cfg := conn.Config()
	dsn := fmt.Sprintf("postgres:///%s?host=%s&port=%d&user=%s", name, cfg.Host, cfg.Port, cfg.User)
	return dsn, func() {
		conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		conn.Close(context.Background())
	}, nil
}
