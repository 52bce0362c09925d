//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// ensurePrivateDir makes dir (and its parents) if needed and checks that
// it is a directory of ours that no one else may enter, tightening its
// mode to 0700 when it is looser. followLinks is false for the runtime
// directories, which must not be symbolic links.
func ensurePrivateDir(dir string, followLinks bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := statDir(dir, followLinks)
	if err != nil {
		return err
	}
	if uid := fileOwner(fi); uid != os.Getuid() {
		return fmt.Errorf("%w: %s is owned by uid %d", ErrUntrustedSocket, dir, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		// Only take the others' bits away: a directory the user made
		// read-only stays read-only, and the error that follows says so.
		if err := os.Chmod(dir, perm&0o700); err != nil {
			return fmt.Errorf("make %s private (mode %o): %w", dir, perm&0o700, err)
		}
	}
	return nil
}

func statDir(dir string, followLinks bool) (fs.FileInfo, error) {
	stat := os.Lstat
	if followLinks {
		stat = os.Stat
	}
	fi, err := stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory (mode %v)", ErrUntrustedSocket, dir, fi.Mode())
	}
	return fi, nil
}

// checkPrivateDir checks, without changing anything, that dir is a
// directory of ours that no one else may enter.
func checkPrivateDir(dir string, followLinks bool) error {
	fi, err := statDir(dir, followLinks)
	if err != nil {
		return err
	}
	if uid := fileOwner(fi); uid != os.Getuid() {
		return fmt.Errorf("%w: %s is owned by uid %d", ErrUntrustedSocket, dir, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %v, want 0700", ErrUntrustedSocket, dir, perm)
	}
	return nil
}

// checkPrivateFile checks that a file we read (daemon.json) is ours and
// open to no one else.
func checkPrivateFile(p string, fi fs.FileInfo) error {
	if uid := fileOwner(fi); uid != os.Getuid() {
		return fmt.Errorf("%w: %s is owned by uid %d", ErrUntrustedSocket, p, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %v, want 0600; remove it and restart the daemon", ErrUntrustedSocket, p, perm)
	}
	return nil
}

func fileOwner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// verifySocket checks the socket p of the data directory dir before
// anything is sent to it: a socket (not a file or a link), owned by us,
// mode 0600 (no bits for others), in private directories of ours. A
// missing socket is ErrNotRunning.
func verifySocket(dir, p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s does not exist", ErrNotRunning, p)
		}
		return err
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%w: %s is not a socket (mode %v)", ErrUntrustedSocket, p, fi.Mode())
	}
	if uid := fileOwner(fi); uid != os.Getuid() {
		return fmt.Errorf("%w: %s is owned by uid %d", ErrUntrustedSocket, p, uid)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %v, want 0600", ErrUntrustedSocket, p, perm)
	}
	dirs, follow := socketDirs(dir, p)
	for _, d := range dirs {
		if err := checkPrivateDir(d, follow); err != nil {
			return err
		}
	}
	return nil
}

// listenSocket makes the socket p of the data directory dir: its
// directories private, a stale socket of a daemon that died removed (the
// caller holds the daemon lock, so no live daemon owns it), mode 0600.
// Where the system tells, connections from other users are refused.
func listenSocket(dir, p string, log *slog.Logger) (net.Listener, error) {
	dirs, follow := socketDirs(dir, p)
	for _, d := range dirs {
		if err := ensurePrivateDir(d, follow); err != nil {
			return nil, fmt.Errorf("socket directory: %w", err)
		}
	}
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it", p)
		}
		if err := os.Remove(p); err != nil {
			return nil, fmt.Errorf("remove the stale socket %s: %w", p, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", p, err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(p, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("make %s private (mode 0600): %w", p, err)
	}
	return peerListener{Listener: ln, log: log}, nil
}

// peerListener refuses connections whose peer is neither this user nor
// root, where the system names the peer (Linux); elsewhere the file
// permissions are the only check.
type peerListener struct {
	net.Listener
	log *slog.Logger
}

func (l peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, known := peerUID(c)
		if !known || uid == os.Getuid() || uid == 0 {
			return c, nil
		}
		l.log.Warn("daemon: refused a socket connection from another user", "uid", uid)
		c.Close()
	}
}

// checkPeer refuses a connection whose peer runs as another user (root
// excepted), where the system names the peer.
func checkPeer(c net.Conn) error {
	uid, known := peerUID(c)
	if known && uid != os.Getuid() && uid != 0 {
		return fmt.Errorf("%w: the process on %s runs as uid %d", ErrUntrustedSocket, c.RemoteAddr(), uid)
	}
	return nil
}

// lockDataDir takes the daemon lock of a data directory: an exclusive
// flock on daemon.lock, released by the returned function or when the
// process dies.
func lockDataDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "daemon.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("daemon.lock: %w", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
