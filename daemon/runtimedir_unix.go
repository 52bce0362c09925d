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
	"strconv"
	"strings"
	"sync"

	"github.com/remotemcp/remotemcp/localapi"
)

// errNotPrivate marks a runtime directory that is not a directory of ours
// closed to others: squatted, or left open.
var errNotPrivate = errors.New("not a private directory of this user")

// listenRuntimeSocket listens on the socket of the data directory dir in
// the per-user runtime directory (see the socket-path rule in socket.go):
// under $XDG_RUNTIME_DIR when usable, else under the temporary directory,
// else, when both are squatted or unusable, in a new directory with an
// unpredictable name, removed when the listener closes. It fails only
// when not even that can be made.
func listenRuntimeSocket(dir string, log *slog.Logger) (net.Listener, string, error) {
	mine := runtimeDirPrefix + strconv.Itoa(os.Getuid())
	var problems []string
	for _, base := range runtimeBases(log) {
		top := filepath.Join(base, mine)
		p := filepath.Join(top, dirHash(dir), localapi.SocketName)
		if len(p) > maxSocketPath {
			problems = append(problems, fmt.Sprintf("%s is longer than %d bytes", p, maxSocketPath))
			continue
		}
		err := ownDir(top)
		if err == nil {
			err = ownDir(filepath.Dir(p))
		}
		if err == nil {
			var ln net.Listener
			if ln, err = listenSocket(dir, p, log); err == nil {
				return ln, p, nil
			}
		}
		// One line per place and start: someone may be squatting it.
		log.Warn("daemon: the socket's directory is not usable; trying another", "dir", top, "err", err)
		problems = append(problems, err.Error())
	}
	top, err := os.MkdirTemp(shortTempDir(), mine+"-*") // 0700, a name no one can predict
	if err != nil {
		return nil, "", fmt.Errorf("socket directory: %s; and a new one: %w", strings.Join(problems, "; "), err)
	}
	hashDir := filepath.Join(top, dirHash(dir))
	p := filepath.Join(hashDir, localapi.SocketName)
	if err := os.Mkdir(hashDir, 0o700); err != nil {
		os.Remove(top)
		return nil, "", fmt.Errorf("socket directory: %w", err)
	}
	ln, err := listenSocket(dir, p, log)
	if err != nil {
		os.Remove(hashDir)
		os.Remove(top)
		return nil, "", err
	}
	log.Warn("daemon: the socket is in a new private directory, recorded in daemon.json", "socket", p)
	return &removeDirsOnClose{Listener: ln, dirs: []string{hashDir, top}}, p, nil
}

// runtimeBases are the directories to hold remotemcp-<uid>, in order:
// $XDG_RUNTIME_DIR when it is usable, then the temporary directory.
func runtimeBases(log *slog.Logger) []string {
	var bases []string
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		if err := usableRuntimeDir(x); err != nil {
			log.Info("daemon: $XDG_RUNTIME_DIR is not usable for the socket; using the temporary directory", "err", err)
		} else {
			bases = append(bases, x)
		}
	}
	return append(bases, shortTempDir())
}

// usableRuntimeDir checks $XDG_RUNTIME_DIR as the XDG Base Directory
// specification describes it: an absolute path to a directory owned by
// this user, mode 0700.
func usableRuntimeDir(x string) error {
	if !filepath.IsAbs(x) {
		return fmt.Errorf("%s is not an absolute path", x)
	}
	fi, err := os.Stat(x)
	if err != nil {
		return err
	}
	return privateDirInfo(x, fi)
}

// ownDir makes the directory p (0700) when it is missing, then checks with
// lstat that it is a directory, not a symbolic link, owned by this user,
// with no permission for anyone else. Anything else is errNotPrivate: in
// a shared directory such as /tmp another user may have made it first.
// Nothing found there is changed.
func ownDir(p string) error {
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	return privateDirInfo(p, fi)
}

// privateDirInfo checks that fi (of p) is a directory of this user closed
// to others.
func privateDirInfo(p string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symbolic link", errNotPrivate, p)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory (mode %v)", errNotPrivate, p, fi.Mode())
	case fileOwner(fi) != os.Getuid():
		return fmt.Errorf("%w: %s is owned by uid %d", errNotPrivate, p, fileOwner(fi))
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%w: %s has mode %v, open to others", errNotPrivate, p, fi.Mode().Perm())
	}
	return nil
}

// removeDirsOnClose removes the unpredictable directories it was made in
// when the listener closes (which unlinks the socket first): nothing else
// would ever reuse them.
type removeDirsOnClose struct {
	net.Listener
	dirs []string
	once sync.Once
}

func (l *removeDirsOnClose) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() {
		for _, d := range l.dirs {
			os.Remove(d) // only when empty; a left-over directory is harmless
		}
	})
	return err
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
