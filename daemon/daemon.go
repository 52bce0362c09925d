package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/remotemcp/remotemcp/internal/netlimit"
	"github.com/remotemcp/remotemcp/localapi"
)

// DefaultAddr is where the daemon listens when Options.Addr is empty. Its
// port is also config.DefaultRedirectPort. Whatever port the daemon binds,
// it serves the OAuth redirect URI http://127.0.0.1:PORT/mcp-oauth of the
// servers without a configured redirect port (SPEC §7, issue #19).
const DefaultAddr = "127.0.0.1:7717"

// Options configure New.
type Options struct {
	// Engine is the one engine the daemon serves; required unless
	// Gateway is set. The daemon never closes it: its owner does, after
	// Serve has returned.
	Engine localapi.Engine
	// Gateway, instead of Engine, makes the daemon a gateway's (SPEC §9
	// A11): the socket acts for the person each request names
	// (localapi.UserHeader) with that person's engine, and the TCP
	// listener serves the OAuth redirect URI and, with SignIn, each
	// person's settings page (gatewaypage.go).
	Gateway Gateway
	// SignIn, with Gateway, says how people sign in to the gateway's
	// settings page; without it the page says that no sign-in is
	// configured.
	SignIn *SignIn
	// TLSCert and TLSKey, on a gateway with SignIn, serve the page over
	// HTTPS with this certificate chain and key (PEM files, read by New;
	// a restart reads renewed ones): its cookies are Secure, and Addr may
	// be beyond loopback.
	TLSCert, TLSKey string
	// BehindProxy, on a gateway with SignIn, lets Addr be beyond loopback
	// for a proxy in front of the page that terminates TLS: the
	// SignIn.PublicURL it serves must be https.
	BehindProxy bool
	// DataDir is the engine's data directory, where the socket (api.sock),
	// daemon.json and the daemon lock live; required.
	DataDir string
	// Addr is the loopback address of the settings page and the OAuth
	// callback; "" means DefaultAddr. Port 0 picks a free port (tests).
	// Only loopback IP addresses are accepted, so that the settings page
	// is not reachable from the network, except on a gateway with TLS or
	// behind a proxy (beyondLoopback).
	Addr string
	// AddrFallback lets Listen take a free port of the same loopback IP
	// when Addr is taken by another program, and record both in
	// daemon.json (Info.RequestedAddr). It is for a daemon started in the
	// background by a host's "remotemcp mcp": hosts use the Unix socket,
	// so the page port is not worth failing them for (issue #19). A
	// daemon started by the person ("serve --addr") keeps refusing
	// instead (ErrAddrInUse), so what they asked for is what they get.
	AddrFallback bool
	// Version, when set, is what /api/health reports instead of the
	// engine's.
	Version string
	// Notify runs notify-send, where it is installed, when a server the
	// daemon knew enters needs-auth (SPEC §9 A4): the person is told that
	// background work waits for their sign-in (notify.go).
	Notify bool
	Logger *slog.Logger
	// MaxPageConns caps the connections the settings page's TCP listener
	// holds at once; one over it is answered 503 and closed (issue #20
	// item 2). Default netlimit.Cap(netlimit.MaxPageConns). The Unix
	// socket is not capped: the caps leave it netlimit.Headroom
	// descriptors.
	MaxPageConns int
	// IdleTimeout closes a keep-alive connection idle this long, on both
	// listeners; default netlimit.IdleTimeout. Tests set it short.
	IdleTimeout time.Duration
}

// Server is the daemon's HTTP side: the local API on the Unix socket, and
// on loopback TCP the settings page (with the API below its secret
// prefix), its login and the OAuth callback, behind the local-access
// checks of security.go. Make it with New, then Listen (optional) and
// Serve, once.
type Server struct {
	o       Options
	log     *slog.Logger
	api     *api
	scrub   *scrubber
	started time.Time

	// prefix is the settings page's secret path prefix, "/s/<random>/"
	// (security.go), new at every start.
	prefix   string
	sessions *sessions
	// gw serves a gateway's socket and its people's APIs (nil unless
	// Options.Gateway); signIn is Options.SignIn at work.
	gw     *gatewaySocket
	signIn *signIn
	// tlsConf serves the page over HTTPS (Options.TLSCert); nil: http.
	tlsConf *tls.Config

	// Set by Listen.
	tcp      net.Listener
	tcpLimit *netlimit.Listener // tcp, capped (set by Serve)
	port     int
	baseURL  string // http://127.0.0.1:PORT
	sock     net.Listener
	sockPath string
	unlock   func() // the data directory's daemon lock

	// ctx ends when Serve begins its shutdown; request contexts and
	// background work derive from it, so in-flight calls are cancelled.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	served atomic.Bool
}

// New checks the options and makes a Server; nothing listens yet.
func New(opts Options) (*Server, error) {
	if (opts.Engine == nil) == (opts.Gateway == nil) {
		return nil, errors.New("daemon: exactly one of Options.Engine and Options.Gateway is required")
	}
	if opts.DataDir == "" {
		return nil, errors.New("daemon: Options.DataDir is required")
	}
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("daemon: data directory %q: %w", opts.DataDir, err)
	}
	opts.DataDir = dir
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("daemon: address %q: %w", opts.Addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		// A name such as localhost could resolve elsewhere; only a
		// loopback IP literal is certain to stay on this machine.
		if ip == nil || opts.Gateway == nil {
			return nil, fmt.Errorf("daemon: address %q: the daemon listens on a loopback IP address only (127.0.0.1 or ::1)", opts.Addr)
		}
		if err := beyondLoopback(opts); err != nil {
			return nil, fmt.Errorf("daemon: address %q: %w", opts.Addr, err)
		}
	}
	var tlsConf *tls.Config
	if opts.TLSCert != "" || opts.TLSKey != "" {
		if opts.Gateway == nil || opts.SignIn == nil || opts.TLSCert == "" || opts.TLSKey == "" {
			return nil, errors.New("daemon: TLS is for a gateway's page with sign-in, and needs both the certificate and the key (--tls-cert, --tls-key)")
		}
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("daemon: read the TLS certificate and key: %w", err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if pu := opts.SignIn.PublicURL; pu != "" && !strings.HasPrefix(strings.ToLower(pu), "https://") {
			return nil, fmt.Errorf("daemon: the page serves TLS, so its public URL is https://…, not %s", pu)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		o: opts, log: log, scrub: newScrubber(), tlsConf: tlsConf,
		prefix: newPagePrefix(), sessions: newSessions(),
		ctx: ctx, cancel: cancel,
	}
	s.api = newAPI(opts.Engine, log, s.scrub)
	s.api.version = opts.Version
	s.api.loginURL = s.newLoginURL
	if opts.Gateway != nil {
		s.gw = &gatewaySocket{s: s, gw: opts.Gateway, apis: map[string]*api{}}
		s.sessions.max = maxGatewaySessions
	}
	if opts.SignIn != nil {
		if opts.Gateway == nil {
			cancel()
			return nil, errors.New("daemon: Options.SignIn is for a gateway (Options.Gateway)")
		}
		if s.signIn, err = newSignIn(*opts.SignIn); err != nil {
			cancel()
			return nil, err
		}
	}
	return s, nil
}

// Listen takes the data directory's daemon lock, binds the loopback TCP
// address and the Unix socket (api.sock, 0600, in the 0700 data directory
// or, when that path is too long, in a per-user runtime directory), and
// writes daemon.json (0600) with the page's URL and the socket's path, so
// the CLI can find this daemon (Dial). If the engine receives OAuth
// callbacks (localapi.CallbackReceiver), it is told the port. Serve calls
// Listen if it has not been called; calling it first lets the caller
// print URL() and LoginURL() before serving. After a successful Listen,
// Serve must be called (with a cancelled context, to release everything
// without serving).
func (s *Server) Listen(ctx context.Context) error {
	if s.tcp != nil {
		return errors.New("daemon: Listen called twice")
	}
	if err := ensurePrivateDir(s.o.DataDir, true); err != nil {
		return fmt.Errorf("daemon: data directory: %w", err)
	}
	// One spelling of the directory for every process: the runtime
	// directory's name is a hash of it.
	dir, err := filepath.EvalSymlinks(s.o.DataDir)
	if err != nil {
		return fmt.Errorf("daemon: data directory: %w", err)
	}
	s.o.DataDir = dir
	unlock, err := lockDataDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("daemon: data directory %s is not writable by this user (the daemon keeps its lock and socket there); make it writable (chmod u+w %s) or choose another with --data-dir or $REMOTEMCP_HOME: %w", dir, dir, err)
		}
		return fmt.Errorf("daemon: %w", ownedError(dir, err))
	}
	ok := false
	defer func() {
		if !ok {
			s.closeListeners()
			unlock()
		}
	}()
	var requested string
	if s.tcp, requested, err = s.listenTCP(ctx); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	addr := s.tcp.Addr().(*net.TCPAddr)
	s.port = addr.Port
	scheme := "http"
	if s.tlsConf != nil {
		scheme = "https"
	}
	s.baseURL = scheme + "://" + net.JoinHostPort(addr.IP.String(), strconv.Itoa(addr.Port))
	if s.sock, s.sockPath, err = listenDaemonSocket(dir, s.log); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	s.started = time.Now().UTC()
	if err := writeInfo(dir, info{
		URL: s.baseURL, Addr: s.tcp.Addr().String(), RequestedAddr: requested, Socket: s.sockPath, PID: os.Getpid(),
		Started: s.started, Version: s.o.Version,
	}); err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	ok = true
	s.unlock = unlock
	if s.o.Gateway != nil {
		s.o.Gateway.ServeCallbacks(s.port)
		if pc, ok := s.o.Gateway.(publicCallbacks); ok && s.signIn != nil && s.signIn.public != nil {
			// People's browsers come back to the page's public URL,
			// wherever they are (issue #23).
			pc.ServeCallbacksAt(s.signIn.public.String() + localapi.CallbackPath)
		}
		return nil
	}
	if cr, isCR := s.o.Engine.(localapi.CallbackReceiver); isCR {
		cr.ServeCallbacks(s.port)
	}
	s.scrub.refresh(ctx, s.o.Engine)
	return nil
}

// ErrAddrInUse is returned (wrapped) by Listen when another program
// listens on Options.Addr and AddrFallback is off.
var ErrAddrInUse = errors.New("the address is taken by another program")

// ErrDataDirOwned is returned (wrapped) by Listen and HoldOwnerLock when
// another remotemcp process owns the data directory: a daemon, or
// "remotemcp --no-daemon mcp --http". The message names it (pid, page
// URL or command) where it said so.
var ErrDataDirOwned = errors.New("another remotemcp process owns the data directory")

// listenTCP listens on Options.Addr or, when that is taken and
// AddrFallback allows, on a free port of the same IP. requested is
// Options.Addr when the fallback was taken, "" otherwise.
func (s *Server) listenTCP(ctx context.Context) (ln net.Listener, requested string, err error) {
	var lc net.ListenConfig
	ln, err = lc.Listen(ctx, "tcp", s.o.Addr)
	if err == nil {
		return ln, "", nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, "", fmt.Errorf("listen on %s: %w", s.o.Addr, err)
	}
	if !s.o.AddrFallback {
		return nil, "", fmt.Errorf("listen on %s: %w (%w)", s.o.Addr, ErrAddrInUse, err)
	}
	host, _, _ := net.SplitHostPort(s.o.Addr) // checked by New
	ln, ferr := lc.Listen(ctx, "tcp", net.JoinHostPort(host, "0"))
	if ferr != nil {
		return nil, "", fmt.Errorf("listen on %s: %w; and on a free port of %s: %w", s.o.Addr, err, host, ferr)
	}
	s.log.Warn("daemon: the settings page address is taken by another program; using a free port instead",
		"requested", s.o.Addr, "addr", ln.Addr().String())
	return ln, s.o.Addr, nil
}

// ownedError is the error of a data directory whose lock another process
// holds: it names that process as daemon.json or owner.json describe it.
func ownedError(dir string, lockErr error) error {
	if in, derr := readInfo(dir); derr == nil {
		return fmt.Errorf("%w: a daemon (pid %d, settings page %s) runs on %s; use it (\"remotemcp open\"), or stop it first", ErrDataDirOwned, in.PID, in.URL, dir)
	}
	if o, oerr := readOwner(dir); oerr == nil {
		return fmt.Errorf("%w: %q (pid %d) serves %s from its own process; stop it first, or run it without --no-daemon so that it relays to the daemon", ErrDataDirOwned, o.Command, o.PID, dir)
	}
	return fmt.Errorf("%w: %s is locked by another remotemcp process (a daemon still starting or stopping?); try again, or stop it first: %w", ErrDataDirOwned, dir, lockErr)
}

func (s *Server) closeListeners() {
	if s.tcp != nil {
		s.tcp.Close()
	}
	if s.sock != nil {
		s.sock.Close()
	}
}

// URL returns the settings page's base URL, http://127.0.0.1:PORT (""
// before Listen).
func (s *Server) URL() string { return s.baseURL }

// LoginURL returns a new one-time login URL for the settings page,
// http://127.0.0.1:PORT/login?token=…: it works once, within
// LoginTokenTTL, and sets the session cookie. "" before Listen.
func (s *Server) LoginURL() string {
	if s.baseURL == "" {
		return ""
	}
	return s.newLoginURL().URL
}

func (s *Server) newLoginURL() *localapi.LoginURL {
	tok, exp := s.sessions.newLoginToken()
	return &localapi.LoginURL{URL: s.baseURL + "/login?token=" + tok, Expires: exp.UTC()}
}

// Serve serves until ctx is done, then shuts down cleanly: requests in
// flight (tool calls, event streams, callback pages) are cancelled and
// waited for, every login session is forgotten, daemon.json and the
// socket are removed and the lock released. It returns nil after a
// shutdown caused by ctx.
func (s *Server) Serve(ctx context.Context) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("daemon: Serve called twice")
	}
	if s.tcp == nil {
		if err := s.Listen(ctx); err != nil {
			s.cancel()
			return err
		}
	}
	var tcpH, sockH http.Handler
	if s.o.Gateway != nil {
		tcpH, sockH = s.gatewayPage(), socketGuard(s.gw.handler())
	} else {
		tcpH, sockH = s.tcpHandler(), socketHandler(s.api)
	}
	if testWrap != nil {
		tcpH, sockH = testWrap(tcpH), testWrap(sockH)
	}
	servers := []*http.Server{s.httpServer(tcpH), s.httpServer(sockH)}
	maxConns := s.o.MaxPageConns
	if maxConns <= 0 {
		maxConns = netlimit.Cap(netlimit.MaxPageConns)
	}
	s.tcpLimit = netlimit.Limit(s.tcp, maxConns, "the settings page")
	var page net.Listener = s.tcpLimit
	if s.tlsConf != nil {
		page = tls.NewListener(page, s.tlsConf)
	}
	s.startSecretWatch()
	if s.o.Notify && s.o.Gateway == nil {
		s.startNotifier()
	}
	s.log.Info("daemon listening", "url", s.baseURL, "socket", s.sockPath, "dataDir", s.o.DataDir)

	served := make(chan error, 2)
	go func() { served <- servers[0].Serve(page) }()
	go func() { served <- servers[1].Serve(s.sock) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}

	// Shutdown: cancel everything in flight, then give the handlers a
	// moment to write their answers.
	s.cancel()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	for _, hs := range servers {
		if serr := hs.Shutdown(sctx); serr != nil {
			s.log.Warn("daemon: shutdown did not finish in time; closing connections", "err", serr)
			hs.Close()
		}
	}
	cancel()
	s.closeListeners()
	s.wg.Wait()
	s.sessions.clear()
	removeInfo(s.o.DataDir, os.Getpid(), s.started)
	s.unlock()
	s.log.Info("daemon stopped")
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// httpServer serves h with the limits of every local listener
// (netlimit: header, request and idle timeouts; issue #20 item 2).
func (s *Server) httpServer(h http.Handler) *http.Server {
	hs := netlimit.Server(h, netlimit.Options{IdleTimeout: s.o.IdleTimeout})
	// Request contexts derive from s.ctx, so the shutdown cancels tool
	// calls in flight.
	hs.BaseContext = func(net.Listener) context.Context { return s.ctx }
	hs.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	return hs
}

// startSecretWatch keeps the scrubber's list of the engine's secrets
// current, when the engine can name them.
func (s *Server) startSecretWatch() {
	if _, ok := s.o.Engine.(localapi.SecretLister); !ok {
		return
	}
	ch, err := s.o.Engine.Subscribe(s.ctx)
	if err != nil {
		s.log.Warn("daemon: cannot follow the engine's changes; secrets added later are not scrubbed by value", "err", err)
		return
	}
	s.wg.Go(func() {
		for {
			select {
			case ev, ok := <-ch:
				if !ok {
					return
				}
				if ev.Type == localapi.EventServers {
					s.scrub.refresh(s.ctx, s.o.Engine)
				}
			case <-s.ctx.Done():
				return
			}
		}
	})
}

// testWrap, when set (tests), wraps every handler the package serves.
var testWrap func(http.Handler) http.Handler

// socketHandler is the API as the socket serves it: full access (the
// socket's permissions are the access check), the security headers on
// every answer all the same.
//
// A request that names a person (localapi.UserHeader, the CLI's --user)
// is refused: this daemon is one person's, and a command meant for a
// gateway must not act on it instead.
func socketHandler(a *api) http.Handler {
	h := a.handler()
	return socketGuard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(localapi.UserHeader) != "" {
			a.error(w, badRequest("user", "--user is for a gateway (remotemcp serve --store postgres://…); the daemon on this data directory serves one person: run the command without --user"))
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// socketGuard is what every socket answer gets: the security headers, and
// the socket as the caller.
func socketGuard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		h.ServeHTTP(w, r.WithContext(withCaller(r.Context(), caller{})))
	})
}

// HoldOwnerLock takes the data directory's daemon lock for a process that
// owns the engine without being the daemon ("remotemcp --no-daemon mcp
// --http"), so that no daemon starts beside it: there is never a second
// owner. command is how that process is named to whoever is refused
// meanwhile (owner.json). The returned function releases it.
func HoldOwnerLock(dataDir, command string) (func(), error) {
	dir, err := filepath.EvalSymlinks(dataDir)
	if err != nil {
		return nil, fmt.Errorf("daemon: data directory: %w", err)
	}
	unlock, err := lockDataDir(dir)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", ownedError(dir, err))
	}
	started := time.Now().UTC()
	o := owner{PID: os.Getpid(), Command: command, Started: started}
	if err := writeJSON(dir, ownerFileName, o); err != nil {
		// Only the words of a refusal depend on it.
		slog.Default().Debug("daemon: cannot record the data directory's owner", "err", err)
	}
	return func() {
		removeOwner(dir, o)
		unlock()
	}, nil
}

// CheckFree reports, without keeping anything, whether a daemon could
// start on dataDir now: nil when nobody holds its lock (or the directory
// does not exist yet), else an error wrapping ErrDataDirOwned that names
// the owner. "serve" asks before it opens anything, so that a refused
// start changes nothing; Listen decides for certain.
func CheckFree(dataDir string) error {
	dir, err := canonicalDir(dataDir)
	if err != nil {
		return nil // no directory: nobody owns it
	}
	unlock, err := lockDataDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil // Listen says what to do about it
		}
		return fmt.Errorf("daemon: %w", ownedError(dir, err))
	}
	unlock()
	return nil
}

// beyondLoopback checks a gateway's page that listens beyond loopback
// (issue #22, "Beyond loopback"): people sign in, browsers reach it at an
// https public URL (the Host and Origin checks and the sign-in's
// redirect URI name it, and its cookies are Secure), and it serves TLS
// itself or sits behind a proxy that does. X-Forwarded-* headers are
// never read: the public URL is configured, and the peer a trusted
// header counts from is the connection's.
func beyondLoopback(o Options) error {
	switch {
	case o.SignIn == nil:
		return errors.New("a gateway's page beyond loopback needs people to sign in (--oidc-issuer or --trusted-user-header)")
	case o.TLSCert == "" && !o.BehindProxy:
		return errors.New("a page beyond loopback needs TLS: --tls-cert and --tls-key, or --behind-proxy for a proxy in front of it that terminates TLS")
	case o.SignIn.PublicURL == "":
		return errors.New("a page beyond loopback needs --public-url https://HOST, the URL people's browsers use")
	case !strings.HasPrefix(strings.ToLower(o.SignIn.PublicURL), "https://"):
		return fmt.Errorf("a page beyond loopback is https for browsers: --public-url %s is not", o.SignIn.PublicURL)
	}
	return nil
}
