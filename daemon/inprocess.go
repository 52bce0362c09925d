package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/internal/netlimit"
	"github.com/remotemcp/remotemcp/localapi"
)

// InProcess serves the API of eng for the length of one command, when no
// daemon runs: the very handlers the daemon serves, on a private Unix
// socket in a fresh 0700 temporary directory, and a Client of it that
// verifies that socket like Dial does. So a command takes one code path
// whether the engine is in the daemon or in its own process. Requests
// end when ctx does. stop shuts the server down (cancelling calls in
// flight) and removes the directory; the caller then closes eng.
func InProcess(ctx context.Context, eng localapi.Engine) (*localapi.Client, func(), error) {
	if eng == nil {
		return nil, nil, fmt.Errorf("daemon: InProcess needs an engine")
	}
	dir, err := os.MkdirTemp(shortTempDir(), "remotemcp-")
	if err != nil {
		return nil, nil, fmt.Errorf("daemon: in-process API: %w", err)
	}
	p := filepath.Join(dir, localapi.SocketName)
	log := slog.New(slog.DiscardHandler)
	ln, err := listenSocket(dir, p, log)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("daemon: in-process API: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	scrub := newScrubber()
	scrub.refresh(ctx, eng)
	a := newAPI(eng, log, scrub)
	a.inProcess = true
	h := socketHandler(a)
	if testWrap != nil {
		h = testWrap(h)
	}
	hs := netlimit.Server(h, netlimit.Options{})
	hs.BaseContext = func(net.Listener) context.Context { return sctx }
	hs.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln)
	}()
	c := localapi.NewClientWithTransport(newSocketTransport(dir, p))
	stop := sync.OnceFunc(func() {
		c.CloseIdleConnections()
		cancel()
		shctx, shcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if hs.Shutdown(shctx) != nil {
			hs.Close()
		}
		shcancel()
		<-done
		os.RemoveAll(dir)
	})
	return c, stop, nil
}

// shortTempDir is the temporary directory, or /tmp when $TMPDIR is too
// long for a socket path below it.
func shortTempDir() string {
	d := os.TempDir()
	if len(d)+len("/remotemcp-0123456789/")+len(localapi.SocketName) > maxSocketPath {
		if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
			return "/tmp"
		}
	}
	return d
}
