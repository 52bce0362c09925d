package serve

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/explain"
)

// A daemon whose address another program has refuses before it opens
// anything, with remotemcp's words, the flag that fixes it, and the
// system's error; the chain stays behind --verbose (issue #19 items 8, 10).
func TestDaemonRefusesTakenAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "data")
	var out, errw strings.Builder
	err = Daemon{Dir: dir, Addr: ln.Addr().String(), Log: slog.New(slog.DiscardHandler), Out: &out, Err: &errw}.Run(t.Context())
	var ce *explain.CauseError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Words, "another program has this port: "+ln.Addr().String()+" is taken; choose another address with --addr") ||
		ce.Inner != "bind: address already in use" {
		t.Fatalf("Run: %#v", err)
	}
	words, chain := ce.Split(err.Error())
	if !strings.HasSuffix(words, "any free port): bind: address already in use") || !strings.HasPrefix(chain, "listen tcp ") {
		t.Fatalf("words %q, chain %q", words, chain)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused start made the data directory: %v", err)
	}
	if out.Len()+errw.Len() != 0 {
		t.Fatalf("a refused start printed %q %q", out.String(), errw.String())
	}
}

func TestListenError(t *testing.T) {
	oe := &net.OpError{Op: "listen", Net: "tcp", Err: errors.New("bind: permission denied")}
	err := listenError("127.0.0.1:80", oe)
	var ce *explain.CauseError
	if !errors.As(err, &ce) || ce.Words != "listen on 127.0.0.1:80" || ce.Inner != "bind: permission denied" {
		t.Fatalf("listenError: %#v", err)
	}
	plain := errors.New("other")
	if err := listenError("x", plain); !errors.Is(err, plain) || err.Error() != "listen on x: other" {
		t.Fatalf("listenError(plain): %v", err)
	}
}
