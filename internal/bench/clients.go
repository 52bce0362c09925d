package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// EchoArgs is the payload of every benchmarked call: the same bytes on
// every side (go-sdk gets them as a json.RawMessage, so neither side pays
// for marshalling a map).
const EchoArgs = `{"text":"the quick brown fox jumps over the lazy dog"}`

var echoArgs = json.RawMessage(EchoArgs)

// newHTTPClient is the base HTTP client of every side: the engine's
// default (http.DefaultTransport's settings, 64 idle connections per
// host), a fresh Transport, so a fresh pool, for each client under test.
func newHTTPClient() *http.Client { return remotemcp.NewHTTPClient() }

// caller is one way of calling the fixture's echo tool.
type caller struct {
	name  string // short name: go-sdk, session, manager, agent
	label string // what the table says
	call  func(ctx context.Context) error
	close func()
}

// serverConfig is a server entry for url: no auth, enabled.
func serverConfig(id, url string, connectOnStartup bool) config.Server {
	return config.Server{ID: id, Name: id, URL: url, Auth: config.Auth{Kind: config.AuthNone},
		Enabled: true, ConnectOnStartup: connectOnStartup}
}

// seedDir writes a data directory holding servers through the public
// API, as a person would: remotemcp.Open and an Import of remotemcp's own
// server list, which grants the servers' origin like `servers add`. An
// engine or (layer benchmarks) a manager opens it afterwards.
func seedDir(ctx context.Context, dir string, servers []config.Server) error {
	doc, err := json.Marshal(map[string][]config.Server{"servers": servers})
	if err != nil {
		return err
	}
	c, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, NoStartupConnect: true})
	if err != nil {
		return err
	}
	res, err := c.Import(ctx, localapi.ImportRequest{Config: string(doc)})
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err == nil && len(res.Added) != len(servers) {
		err = fmt.Errorf("bench: seeding %s imported %d of %d servers", dir, len(res.Added), len(servers))
	}
	return err
}

// goSDKSession connects a bare go-sdk client: mcp.Client over
// StreamableClientTransport, asking for the revision remotemcp pins.
func goSDKSession(ctx context.Context, url string, hc *http.Client) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "remotemcp-bench-gosdk", Version: "v0"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: session.ProtocolVersion})
}

func checkResult(res *mcp.CallToolResult) error {
	if res == nil || res.IsError || len(res.Content) == 0 {
		return fmt.Errorf("bench: unexpected echo result %+v", res)
	}
	return nil
}

func newGoSDKCaller(ctx context.Context, srv *Server) (*caller, error) {
	cs, err := goSDKSession(ctx, srv.Endpoint("cpu-gosdk", ""), newHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("go-sdk connect: %w", err)
	}
	return &caller{name: "go-sdk", label: "bare go-sdk (ClientSession.CallTool)",
		call: func(ctx context.Context) error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
			if err != nil {
				return err
			}
			return checkResult(res)
		},
		close: func() { cs.Close() },
	}, nil
}

func newSessionCaller(ctx context.Context, srv *Server) (*caller, error) {
	s, err := session.Connect(ctx, session.Options{
		Server: serverConfig("sess", srv.Endpoint("cpu-session", ""), true), HTTPClient: newHTTPClient(),
		ClientName: "remotemcp-bench", ClientVersion: "v0",
	})
	if err != nil {
		return nil, fmt.Errorf("session connect: %w", err)
	}
	return &caller{name: "session", label: "session layer (session.Session.CallTool; a layer benchmark, not a user path)",
		call: func(ctx context.Context) error {
			res, err := s.CallTool(ctx, "echo", echoArgs, session.CallOptions{})
			if err != nil {
				return err
			}
			return checkResult(res)
		},
		close: func() { s.Close() },
	}, nil
}

// managerSetup is a store and a manager with one connected server "m".
type managerSetup struct {
	st *store.DB
	m  *manager.Manager
}

func newManagerSetup(ctx context.Context, srv *Server, dir string) (*managerSetup, error) {
	st, err := store.Open(ctx, dir, store.Options{})
	if err != nil {
		return nil, err
	}
	if err := st.AddServer(ctx, serverConfig("m", srv.Endpoint("cpu-manager", ""), false)); err != nil {
		st.Close()
		return nil, err
	}
	m := manager.New(manager.Options{Store: st, HTTPClient: newHTTPClient(), NoStartupConnect: true,
		ClientName: "remotemcp-bench", ClientVersion: "v0"})
	if err := m.Start(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if err := m.Connect(ctx, "m"); err != nil {
		m.Close()
		st.Close()
		return nil, fmt.Errorf("manager connect: %w", err)
	}
	return &managerSetup{st: st, m: m}, nil
}

func (ms *managerSetup) close() {
	ms.m.Close()
	ms.st.Close()
}

func newManagerCaller(ms *managerSetup) *caller {
	return &caller{name: "manager", label: "manager layer (manager.Manager.CallTool; a layer benchmark, not a user path)",
		call: func(ctx context.Context) error {
			res, err := ms.m.CallTool(ctx, "m", "echo", echoArgs, session.CallOptions{})
			if err != nil {
				return err
			}
			return checkResult(res)
		},
		close: func() {},
	}
}

// openEngine opens an engine on dir with a fresh base HTTP client.
func openEngine(ctx context.Context, dir string, lazy bool) (*remotemcp.Client, error) {
	return remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, HTTPClient: newHTTPClient(), NoStartupConnect: lazy})
}

func newAgentCaller(ctx context.Context, srv *Server, dir string) (*caller, error) {
	if err := seedDir(ctx, dir, []config.Server{serverConfig("e", srv.Endpoint("cpu-agent", ""), true)}); err != nil {
		return nil, err
	}
	c, err := openEngine(ctx, dir, false)
	if err != nil {
		return nil, err
	}
	tl, err := c.Tools(ctx, localapi.ToolsRequest{ServerID: "e", Connect: true})
	if err != nil {
		c.Close()
		return nil, err
	}
	const name = "mcp__e__echo"
	found := false
	for _, t := range tl.Tools {
		found = found || t.Name == name
	}
	if !found {
		c.Close()
		return nil, fmt.Errorf("engine: no tool %s (errors %v)", name, tl.Errors)
	}
	return &caller{name: "agent", label: "agent path (remotemcp.Open, Client.Call: approval, budget, fences)",
		call: func(ctx context.Context) error {
			res, err := c.Call(ctx, localapi.CallRequest{Tool: name, Arguments: echoArgs, Approved: true}, localapi.CallHandler{})
			if err != nil {
				return err
			}
			if res.Outcome != "ok" || res.IsError {
				return fmt.Errorf("engine call: %s: %s", res.Outcome, res.Message)
			}
			return nil
		},
		close: func() { c.Close() },
	}, nil
}

// callers is every client of the CPU benchmarks, connected.
type callers struct {
	gosdk  *caller
	remote []*caller // session, manager, agent
	ms     *managerSetup
}

func newCallers(ctx context.Context, srv *Server, tmp string) (_ *callers, err error) {
	cs := &callers{}
	defer func() {
		if err != nil {
			cs.close()
		}
	}()
	if cs.gosdk, err = newGoSDKCaller(ctx, srv); err != nil {
		return nil, err
	}
	s, err := newSessionCaller(ctx, srv)
	if err != nil {
		return nil, err
	}
	cs.remote = append(cs.remote, s)
	mdir := filepath.Join(tmp, "cpu-manager")
	if err := os.MkdirAll(mdir, 0o700); err != nil {
		return nil, err
	}
	if cs.ms, err = newManagerSetup(ctx, srv, mdir); err != nil {
		return nil, err
	}
	cs.remote = append(cs.remote, newManagerCaller(cs.ms))
	edir := filepath.Join(tmp, "cpu-agent")
	a, err := newAgentCaller(ctx, srv, edir)
	if err != nil {
		return nil, err
	}
	cs.remote = append(cs.remote, a)
	return cs, nil
}

// only keeps the remote caller named name (for profiling).
func (cs *callers) only(name string) (*caller, error) {
	if name == "go-sdk" {
		return cs.gosdk, nil
	}
	for _, c := range cs.remote {
		if c.name == name {
			return c, nil
		}
	}
	return nil, errors.New("bench: no path " + name + " (want go-sdk, session, manager or agent)")
}

func (cs *callers) close() {
	// The engine first, then the manager.
	for i := len(cs.remote) - 1; i >= 0; i-- {
		cs.remote[i].close()
	}
	if cs.ms != nil {
		cs.ms.close()
	}
	if cs.gosdk != nil {
		cs.gosdk.close()
	}
}
