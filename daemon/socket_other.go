//go:build !unix

package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/remotemcp/remotemcp/localapi"
)

// Windows (see the package documentation): the socket is an AF_UNIX
// socket in the data directory, which lives in the user's profile and is
// private to the user by its ACL. Owner and mode bits do not exist there,
// so these checks are only that the files exist; a challenge of the
// daemon before any request is sent is the planned next step.

func ensurePrivateDir(dir string, _ bool) error { return os.MkdirAll(dir, 0o700) }

func checkPrivateFile(string, fs.FileInfo) error { return nil }

func verifySocket(_, p string) error {
	if _, err := os.Lstat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s does not exist", ErrNotRunning, p)
		}
		return err
	}
	return nil
}

func listenSocket(_, p string, _ *slog.Logger) (net.Listener, error) {
	os.Remove(p)
	ln, err := net.Listen("unix", p)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", p, err)
	}
	return ln, nil
}

func checkPeer(net.Conn) error { return nil }

// lockDataDir: the TCP port is the only guard against a second daemon.
func lockDataDir(string) (func(), error) { return func() {}, nil }

// listenRuntimeSocket: the data directory's path is too long for a
// socket; use <TMPDIR>/remotemcp-<uid>/<hash>/api.sock, which lives in the
// user's profile on Windows.
func listenRuntimeSocket(dir string, log *slog.Logger) (net.Listener, string, error) {
	p := filepath.Join(os.TempDir(), runtimeDirPrefix+strconv.Itoa(os.Getuid()), dirHash(dir), localapi.SocketName)
	if len(p) > maxSocketPath {
		return nil, "", fmt.Errorf("the socket path %s is longer than %d bytes: use a shorter data directory or TMPDIR", p, maxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, "", fmt.Errorf("socket directory: %w", err)
	}
	ln, err := listenSocket(dir, p, log)
	return ln, p, err
}
