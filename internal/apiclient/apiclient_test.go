package apiclient

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/daemon"
)

// Without a daemon a command gets the in-process API of an engine opened
// for it, and a stale daemon.json is worth a note.
func TestCommandWithoutDaemon(t *testing.T) {
	for _, stale := range []bool{false, true} {
		dir := t.TempDir()
		if stale {
			if err := os.WriteFile(filepath.Join(dir, daemon.InfoFileName), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var errw strings.Builder
		e, release, inProcess, err := Command(t.Context(), Options{DataDir: dir, Log: slog.New(slog.DiscardHandler), Err: &errw})
		if err != nil {
			t.Fatal(err)
		}
		servers, err := e.Servers(t.Context())
		release()
		if err != nil || len(servers) != 0 || !inProcess {
			t.Fatalf("in-process API: %v %v %v", servers, err, inProcess)
		}
		if got := strings.Contains(errw.String(), "the daemon is not running; working in-process"); got != stale {
			t.Errorf("stale daemon.json %v: note %q", stale, errw.String())
		}
	}
}

func TestDaemonNotRunning(t *testing.T) {
	_, err := Daemon(t.Context(), t.TempDir())
	if err == nil || err.Error() != `no daemon runs on this data directory; start one with "remotemcp serve"` {
		t.Fatalf("Daemon: %v", err)
	}
}

// A dry run opens no data directory that keeps no tokens: nothing is
// created there.
func TestTokensIfExists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	tokens, release, err := Tokens(t.Context(), Options{Log: slog.New(slog.DiscardHandler)}, dir, true, "open")
	release()
	if err != nil || tokens != nil {
		t.Fatalf("Tokens: %v %v", tokens, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the data directory was created: %v", err)
	}
	tokens, release, err = Tokens(t.Context(), Options{Log: slog.New(slog.DiscardHandler)}, dir, false, "open")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if list, err := tokens.HostTokens(t.Context()); err != nil || len(list) != 0 {
		t.Fatalf("HostTokens: %v %v", list, err)
	}
}
