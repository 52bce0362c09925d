package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// DefaultAddr is where the daemon listens when Options.Addr is empty. Its
// port is also config.DefaultRedirectPort, so the daemon itself serves the
// OAuth redirect URI http://127.0.0.1:7717/mcp-oauth (SPEC §7).
const DefaultAddr = "127.0.0.1:7717"

// Store is what the daemon needs of the store; *store.SQLite has it.
type Store interface {
	ListServers(ctx context.Context) ([]config.Server, error)
	GetServer(ctx context.Context, id string) (config.Server, error)
	AddServer(ctx context.Context, s config.Server) error
	UpdateServer(ctx context.Context, s config.Server) error
	DeleteServer(ctx context.Context, id string) error
	Subscribe(ctx context.Context) <-chan store.Change
}

// Locker is a lock shared by every process on the data directory;
// *store.SQLite has it. With one, Listen refuses to start a second daemon
// on the same data directory.
type Locker interface {
	Lock(ctx context.Context, name string) (unlock func(), err error)
}

// Manager is what the daemon needs of the connection manager;
// *manager.Manager has it.
type Manager interface {
	agent.Backend
	Connect(ctx context.Context, id string) error
	Disconnect(ctx context.Context, id string) error
	Reconnect(ctx context.Context, id string) error
	// Log is the server's request log (R5.3): metadata only, no secrets.
	Log(id string) ([]session.Exchange, error)
}

// Broker is the host permission broker; *hostperm.Broker has it.
type Broker interface {
	Check(ctx context.Context, rawURL string, purpose hostperm.Purpose, serverID string) error
	Grant(ctx context.Context, origin, by string) error
	Revoke(ctx context.Context, origin string) error
	Grants(ctx context.Context) ([]hostperm.Grant, error)
	Pending(ctx context.Context) ([]hostperm.Pending, error)
	DismissPending(ctx context.Context, origin string) error
}

// Authenticator runs the interactive OAuth login; *oauth.Authenticator
// has it.
type Authenticator interface {
	Login(ctx context.Context, srv config.Server, b oauth.Browser) (*oauth.LoginResult, error)
	Logout(ctx context.Context, serverID string) error
}

// OAuthStatuser is implemented by authenticators that can say what they
// know about a server without revealing it (*oauth.Authenticator); the
// server list then shows it.
type OAuthStatuser interface {
	Status(ctx context.Context, srv config.Server) oauth.Status
}

// Options configure New. Store, Manager, Broker and Cards are required;
// they are the parts remotemcp.Open wires together, and the daemon never
// closes them: their owner does, after Serve has returned (calls in flight
// first, then Cards, then the manager, then the store — see package
// elicit).
type Options struct {
	Store   Store
	Manager Manager
	Broker  Broker
	// Cards holds the elicitation cards; it must be the Cards whose Handle
	// is the manager's Elicit callback.
	Cards *elicit.Cards
	// Registry is the agent registry behind /api/tools and /api/call. It
	// must have been made with an Approver that consults ApprovalFrom
	// (see NewApprover). nil: the daemon makes its own, starts it on the
	// first tools request and closes it when Serve returns.
	Registry *agent.Registry
	// OAuth runs the Authorize button's login; nil answers Authorize with
	// an error.
	OAuth Authenticator
	// DataDir is where daemon.json is written; "" means the store's Dir()
	// when it has one.
	DataDir string
	// Addr is the loopback address to listen on; "" means DefaultAddr.
	// Port 0 picks a free port (tests). Only loopback addresses are
	// accepted: the settings page must never be reachable from the
	// network.
	Addr string
	// Version is reported by /api/health; "" means remotemcp.Version.
	Version string
	Logger  *slog.Logger
}

// ClientOptions returns the Options for the parts of an opened
// remotemcp.Client (which must have been opened with Cards: true, and
// with AskHost nil, so that a refused origin becomes a pending approval
// the page shows). Set Addr and Logger on the result as needed.
func ClientOptions(c *remotemcp.Client) Options {
	return Options{
		Store: c.Store, Manager: c.Manager, Broker: c.Hosts, Cards: c.Cards, OAuth: c.OAuth,
		DataDir: c.DataDir,
	}
}

// Server is the daemon's HTTP side: the local JSON API, the settings page
// and the OAuth callback, behind the local-access checks of security.go.
// Make it with New, then Listen (optional) and Serve, once.
type Server struct {
	o        Options
	log      *slog.Logger
	dataDir  string
	registry *agent.Registry
	ownReg   bool // the daemon made the registry: it starts and closes it
	started  time.Time

	// Set by Listen.
	ln      net.Listener
	port    int
	baseURL string // http://127.0.0.1:PORT
	token   string // the API token, also in daemon.json
	unlock  func() // the data directory's daemon lock

	// ctx is cancelled when Serve begins its shutdown; request contexts,
	// flows and background work derive from it.
	ctx    context.Context
	cancel context.CancelFunc
	// closing is closed at the same moment, for the long-lived SSE
	// streams and callback waits.
	closing chan struct{}
	wg      sync.WaitGroup // every goroutine the server starts
	bgMu    sync.Mutex     // orders wg.Add against the shutdown's wg.Wait
	stopped bool           // guarded by bgMu: no new goroutines

	// prefix is the settings page's secret path prefix, "/s/<random>/"
	// (security.go): the page and the cookie-authenticated API live below
	// it, and the session cookie's Path is it. New at every start.
	prefix   string
	sessions *sessions
	hub      *hub
	flows    *flows
	secrets  atomic.Pointer[[]string] // known bearer tokens and client secrets, scrubbed from responses

	editMu sync.Mutex // serializes read-modify-write of server configs

	regOnce  sync.Once
	regReady chan struct{}

	// wrap, when set (tests), wraps the handler served by Serve.
	wrap func(http.Handler) http.Handler

	served atomic.Bool
}

// New checks the options and makes a Server; nothing listens yet.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.Manager == nil || opts.Broker == nil || opts.Cards == nil {
		return nil, errors.New("daemon: Store, Manager, Broker and Cards are required (open remotemcp with Cards: true)")
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.Version == "" {
		opts.Version = remotemcp.Version
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("daemon: address %q: %w", opts.Addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		// A name such as localhost could resolve elsewhere; only a
		// loopback IP literal is certain to stay on this machine.
		return nil, fmt.Errorf("daemon: address %q: the daemon listens on a loopback IP address only (127.0.0.1 or ::1)", opts.Addr)
	}
	dir := opts.DataDir
	if dir == "" {
		if d, ok := opts.Store.(interface{ Dir() string }); ok {
			dir = d.Dir()
		}
	}
	if dir == "" {
		return nil, errors.New("daemon: DataDir is required when the store has no Dir()")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		o: opts, log: log, dataDir: dir,
		ctx: ctx, cancel: cancel, closing: make(chan struct{}),
		prefix: newPagePrefix(), sessions: newSessions(), hub: newHub(), regReady: make(chan struct{}),
	}
	s.flows = newFlows()
	s.registry = opts.Registry
	if s.registry == nil {
		reg, err := agent.New(agent.Options{Backend: opts.Manager, Approver: NewApprover(nil), Cards: opts.Cards, Logger: log})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("daemon: agent registry: %w", err)
		}
		s.registry, s.ownReg = reg, true
	} else {
		close(s.regReady)
	}
	return s, nil
}

// Listen binds the address, takes the data directory's daemon lock and
// writes daemon.json (0600) with the address, pid and a fresh API token,
// so the CLI can find and authenticate to this daemon (Discover). Serve
// calls it if it has not been called; calling it first lets the caller
// print URL() and LoginURL() before serving. After a successful Listen,
// Serve must be called (with a cancelled context, to release everything
// without serving).
func (s *Server) Listen(ctx context.Context) error {
	if s.ln != nil {
		return errors.New("daemon: Listen called twice")
	}
	if l, ok := s.o.Store.(Locker); ok {
		lctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		unlock, err := l.Lock(lctx, "daemon")
		cancel()
		if err != nil {
			if info, derr := readInfo(s.dataDir); derr == nil {
				return fmt.Errorf("daemon: another remotemcp daemon (pid %d, %s) uses the data directory %s", info.PID, info.URL, s.dataDir)
			}
			return fmt.Errorf("daemon: another remotemcp daemon uses the data directory %s: %w", s.dataDir, err)
		}
		s.unlock = unlock
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.o.Addr)
	if err != nil {
		s.releaseLock()
		return fmt.Errorf("daemon: listen on %s (is another daemon running, or is the port taken? use --addr): %w", s.o.Addr, err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	s.ln, s.port = ln, addr.Port
	s.baseURL = "http://" + net.JoinHostPort(addr.IP.String(), strconv.Itoa(addr.Port))
	s.token = randomToken()
	s.started = time.Now().UTC()
	if err := writeInfo(s.dataDir, info{
		URL: s.baseURL, Addr: ln.Addr().String(), PID: os.Getpid(), Token: s.token,
		Started: s.started, Version: s.o.Version,
	}); err != nil {
		ln.Close()
		s.releaseLock()
		s.ln = nil
		return fmt.Errorf("daemon: %w", err)
	}
	s.refreshSecrets(ctx)
	return nil
}

func (s *Server) releaseLock() {
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
}

// URL returns the daemon's base URL, http://127.0.0.1:PORT ("" before
// Listen).
func (s *Server) URL() string { return s.baseURL }

// Port returns the port the daemon listens on (0 before Listen).
func (s *Server) Port() int { return s.port }

// LoginURL returns a new one-time login URL for the settings page,
// http://127.0.0.1:PORT/login?token=…: it works once, within
// LoginTokenTTL, and sets the session cookie. "" before Listen.
func (s *Server) LoginURL() string {
	if s.baseURL == "" {
		return ""
	}
	tok, _ := s.sessions.newLoginToken()
	return s.baseURL + "/login?token=" + tok
}

// Serve serves until ctx is done, then shuts down cleanly: SSE streams and
// callback pages end, requests in flight are cancelled and waited for,
// OAuth flows are abandoned, every login session is forgotten, the
// registry the daemon made is closed, daemon.json is removed and the lock
// released. It returns nil after a shutdown caused by ctx.
func (s *Server) Serve(ctx context.Context) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("daemon: Serve called twice")
	}
	if s.ln == nil {
		if err := s.Listen(ctx); err != nil {
			s.cancel()
			if s.ownReg {
				s.registry.Close()
			}
			return err
		}
	}
	var h http.Handler = s.handler()
	if s.wrap != nil {
		h = s.wrap(h)
	}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// Request contexts derive from s.ctx, so cancelling it at shutdown
		// cancels tool calls in flight (package elicit's shutdown order).
		BaseContext: func(net.Listener) context.Context { return s.ctx },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.startWatchers()
	s.log.Info("daemon listening", "url", s.baseURL, "dataDir", s.dataDir)

	served := make(chan error, 1)
	go func() { served <- hs.Serve(s.ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		served <- err // Shutdown below reads it again
	}

	// Shutdown: wake the long-lived handlers, cancel everything else, then
	// give the handlers a moment to write their answers.
	s.bgMu.Lock()
	s.stopped = true
	s.bgMu.Unlock()
	close(s.closing)
	s.cancel()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if serr := hs.Shutdown(sctx); serr != nil {
		s.log.Warn("daemon: shutdown did not finish in time; closing connections", "err", serr)
		hs.Close()
	}
	cancel()
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	s.wg.Wait()
	if s.ownReg {
		s.registry.Close()
	}
	s.sessions.clear()
	removeInfo(s.dataDir, s.token)
	s.releaseLock()
	s.log.Info("daemon stopped")
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// goBackground runs f in a goroutine owned by the server: Serve waits for
// it, and its context ends when the daemon shuts down. It reports false
// (and does not run f) once the shutdown has begun.
func (s *Server) goBackground(f func(ctx context.Context)) bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.stopped {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(s.ctx)
	}()
	return true
}
