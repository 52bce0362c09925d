package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/remotemcp/remotemcp/localapi"
)

// The socket-path rule. The API's socket is api.sock in the data
// directory. Unix socket paths are short (sun_path: 108 bytes on Linux,
// 104 on macOS, NUL included), so when that path is longer than
// maxSocketPath bytes the socket goes into a per-user runtime directory
// instead, <TMPDIR>/remotemcp-<uid>/<first 16 hex digits of the SHA-256
// of the data directory's absolute path>/api.sock, both directories 0700
// and ours. daemon.json records the path either way; Dial accepts only
// one of these two shapes for its data directory.

// maxSocketPath is the longest socket path used, with room to spare on
// every Unix.
const maxSocketPath = 100

// runtimeDirPrefix names the per-user runtime directory.
const runtimeDirPrefix = "remotemcp-"

// socketPath returns where the daemon of the data directory dir (absolute)
// puts its socket, and whether that is in the runtime directory.
func socketPath(dir string) (string, error) {
	p := filepath.Join(dir, localapi.SocketName)
	if len(p) <= maxSocketPath {
		return p, nil
	}
	r := filepath.Join(os.TempDir(), runtimeDirPrefix+strconv.Itoa(os.Getuid()), dirHash(dir), localapi.SocketName)
	if len(r) > maxSocketPath {
		return "", fmt.Errorf("the socket path %s is longer than %d bytes, and so is %s: use a shorter data directory or TMPDIR", p, maxSocketPath, r)
	}
	return r, nil
}

// dirHash names a data directory's runtime directory.
func dirHash(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:8])
}

// isRuntimeSocket reports whether p has the runtime directory's shape for
// the data directory dir: …/remotemcp-<uid>/<hash of dir>/api.sock. The
// temporary directory itself may differ between processes ($TMPDIR).
func isRuntimeSocket(dir, p string) bool {
	if !filepath.IsAbs(p) || filepath.Base(p) != localapi.SocketName {
		return false
	}
	hashDir := filepath.Dir(p)
	return filepath.Base(hashDir) == dirHash(dir) &&
		filepath.Base(filepath.Dir(hashDir)) == runtimeDirPrefix+strconv.Itoa(os.Getuid())
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
