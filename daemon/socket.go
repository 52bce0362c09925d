package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"syscall"

	"github.com/remotemcp/remotemcp/localapi"
)

// The socket-path rule. The API's socket is api.sock in the data
// directory. Unix socket paths are short (sun_path: 108 bytes on Linux,
// 104 on macOS, NUL included), so when that path is longer than
// maxSocketPath bytes the socket goes into a per-user runtime directory
// instead: <base>/remotemcp-<uid>/<first 16 hex digits of the SHA-256 of
// the data directory's absolute path>/api.sock, where <base> is
// $XDG_RUNTIME_DIR when it is usable (a directory of ours that no one else
// may enter, as the XDG spec promises), else the temporary directory. Both
// directories are 0700 and ours, checked with lstat. A remotemcp-<uid> in
// the temporary directory that someone else made first (or a link, a
// file, a directory open to others) is squatted: the daemon then makes a
// directory no one can predict, <tmp>/remotemcp-<uid>-<random>/<hash>/
// api.sock (os.MkdirTemp), and removes it when it stops (issue #20 item
// 5). daemon.json records the socket's path either way, so every client
// (the CLI, "remotemcp mcp") finds it there whatever its own environment;
// Dial accepts only these shapes for its data directory.

// maxSocketPath is the longest socket path used, with room to spare on
// every Unix.
const maxSocketPath = 100

// runtimeDirPrefix names the per-user runtime directory.
const runtimeDirPrefix = "remotemcp-"

// listenDaemonSocket chooses, prepares and listens on the socket of the
// daemon of the data directory dir (absolute, links resolved), and
// returns it with its path, for daemon.json.
func listenDaemonSocket(dir string, log *slog.Logger) (net.Listener, string, error) {
	p := filepath.Join(dir, localapi.SocketName)
	if len(p) <= maxSocketPath {
		ln, err := listenSocket(dir, p, log)
		return ln, p, err
	}
	return listenRuntimeSocket(dir, log)
}

// dirHash names a data directory's runtime directory.
func dirHash(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:8])
}

// isRuntimeSocket reports whether p has the runtime directory's shape for
// the data directory dir: …/remotemcp-<uid>[-<random>]/<hash of
// dir>/api.sock. The base directory itself may differ between processes
// ($XDG_RUNTIME_DIR, $TMPDIR), and a host may start "remotemcp mcp" with
// neither: only the shape is checked.
func isRuntimeSocket(dir, p string) bool {
	if !filepath.IsAbs(p) || filepath.Base(p) != localapi.SocketName {
		return false
	}
	hashDir := filepath.Dir(p)
	top := filepath.Base(filepath.Dir(hashDir))
	mine := runtimeDirPrefix + strconv.Itoa(os.Getuid())
	return filepath.Base(hashDir) == dirHash(dir) && (top == mine || strings.HasPrefix(top, mine+"-"))
}

// isSocketOf reports whether p is where a daemon of the data directory
// dir (absolute) puts its socket.
func isSocketOf(dir, p string) bool {
	return p == filepath.Join(dir, localapi.SocketName) || isRuntimeSocket(dir, p)
}

// socketDirs are the directories that must be private for the socket p
// of the data directory dir: its own, and for a runtime socket the
// per-user directory above it. Runtime directories are never followed
// through a symbolic link (another user could plant one in /tmp).
func socketDirs(dir, p string) (dirs []string, followLinks bool) {
	parent := filepath.Dir(p)
	if isRuntimeSocket(dir, p) {
		return []string{filepath.Dir(parent), parent}, false
	}
	return []string{parent}, true
}

// dialSocket verifies the socket at p, then connects to it, then (where
// the system tells) checks that the peer runs as this user. A missing or
// refusing socket is ErrNotRunning.
func dialSocket(ctx context.Context, dir, p string) (net.Conn, error) {
	if err := verifySocket(dir, p); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", p)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%w: %s refuses connections (a daemon that exited left it behind)", ErrNotRunning, p)
		}
		return nil, err
	}
	if err := checkPeer(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// newSocketTransport is a transport whose every connection is a verified
// connection to the socket p of the data directory dir.
func newSocketTransport(dir, p string) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialSocket(ctx, dir, p)
		},
		MaxIdleConnsPerHost: 8,
	}
}
