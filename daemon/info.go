package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/remotemcp/remotemcp/localapi"
)

// InfoFileName is the file in the data directory that tells the CLI where
// the daemon's socket and settings page are. It holds no credential (the
// socket's permissions are the access check); it is written 0600 all the
// same, and a file others could have written is not trusted.
const InfoFileName = "daemon.json"

// ErrNotRunning is returned (wrapped) by Dial when no daemon answers for
// the data directory: there is no daemon.json, or the socket it names is
// gone or refuses connections (a daemon that died left its files behind).
// The CLI then runs the engine in-process.
var ErrNotRunning = errors.New("no remotemcp daemon is running for this data directory")

// ErrUntrustedSocket is returned (wrapped) by Dial when the socket, its
// directory or daemon.json is not private to this user: owned by someone
// else, or open to others. Nothing is sent to it.
var ErrUntrustedSocket = errors.New("the daemon's socket is not private to this user")

// info is the content of daemon.json.
type info struct {
	// URL is the settings page's base URL (login links go there).
	URL  string `json:"url"`
	Addr string `json:"addr"`
	// RequestedAddr is the address the daemon was asked for when another
	// program had it and the daemon took a free port instead
	// (Options.AddrFallback); empty when it got what it asked for.
	RequestedAddr string `json:"requestedAddr,omitempty"`
	// Socket is the API's Unix socket (absolute).
	Socket  string    `json:"socket"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Version string    `json:"version,omitempty"`
}

// writeInfo writes daemon.json atomically (temp file + rename), so a CLI
// never reads half of it.
func writeInfo(dir string, in info) error { return writeJSON(dir, InfoFileName, in) }

// writeJSON writes v as the 0600 file name in dir, atomically.
func writeJSON(dir, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".daemon-*.json")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	// CreateTemp makes the file 0600 already; Chmod states the intent and
	// covers platforms where it does not.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// readInfo reads daemon.json: ErrNotRunning when there is none, and
// ErrUntrustedSocket when it is not private to this user.
func readInfo(dir string) (info, error) {
	var in info
	p := filepath.Join(dir, InfoFileName)
	if err := readPrivateJSON(p, &in); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return in, fmt.Errorf("%w (no %s)", ErrNotRunning, p)
		}
		return in, err
	}
	if in.Socket == "" {
		// Written by an older remotemcp, whose API was on TCP.
		return in, fmt.Errorf("%w (%s names no socket)", ErrNotRunning, p)
	}
	return in, nil
}

// removeInfo removes daemon.json if it is still this daemon's (another
// daemon may have replaced it since).
func removeInfo(dir string, pid int, started time.Time) {
	if in, err := readInfo(dir); err == nil && in.PID == pid && in.Started.Equal(started) {
		os.Remove(filepath.Join(dir, InfoFileName))
	}
}

// ownerFileName is the file in the data directory that names a process
// owning the engine without being a daemon (HoldOwnerLock), so that a
// daemon refused meanwhile can say which.
const ownerFileName = "owner.json"

// owner is the content of owner.json.
type owner struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Started time.Time `json:"started"`
}

// readOwner reads owner.json, when it is private to this user.
func readOwner(dir string) (owner, error) {
	var o owner
	return o, readPrivateJSON(filepath.Join(dir, ownerFileName), &o)
}

// readPrivateJSON decodes the JSON file p into v when the file is private
// to this user (checkPrivateFile): what others could have written is not
// trusted.
func readPrivateJSON(p string, v any) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := checkPrivateFile(p, st); err != nil {
		return err
	}
	if err := json.NewDecoder(f).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// removeOwner removes owner.json if it is still o's.
func removeOwner(dir string, o owner) {
	if cur, err := readOwner(dir); err == nil && cur.PID == o.PID && cur.Started.Equal(o.Started) {
		os.Remove(filepath.Join(dir, ownerFileName))
	}
}

// Info describes the running daemon of a data directory, as its
// daemon.json says, for "remotemcp status" and "remotemcp open".
type Info struct {
	PID int
	// URL is the settings page's base URL, http://127.0.0.1:PORT.
	URL string
	// Addr is the loopback address the page listens on.
	Addr string
	// RequestedAddr is the address the daemon was asked for when another
	// program had it and it took a free port instead; "" otherwise.
	RequestedAddr string
	// Socket is the API's Unix socket.
	Socket  string
	Started time.Time
	Version string
}

// Running returns what daemon.json says about the daemon of dataDir,
// after Dial has verified that daemon answers; the error wraps
// ErrNotRunning when none runs.
func Running(ctx context.Context, dataDir string) (*Info, error) {
	c, err := Dial(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	c.CloseIdleConnections()
	dir, err := canonicalDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	in, err := readInfo(dir)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	return &Info{PID: in.PID, URL: in.URL, Addr: in.Addr, RequestedAddr: in.RequestedAddr,
		Socket: in.Socket, Started: in.Started, Version: in.Version}, nil
}

// dialHealthWait bounds Dial's health check.
const dialHealthWait = 5 * time.Second

// Dial connects to the daemon of a data directory. It reads daemon.json,
// checks that the socket it names is where this data directory's daemon
// puts it and is private to this user (owned by us, mode 0600, in a
// directory of ours with mode 0700; on Linux the peer's uid too, on every
// connection), and asks GET /api/health. The CLI never sends a request to
// anything it has not verified so, and never anything to TCP. The error
// wraps ErrNotRunning when no daemon runs (the CLI then runs in-process),
// and ErrUntrustedSocket when the socket is not ours; a daemon that
// accepts the connection but does not answer is neither.
func Dial(ctx context.Context, dataDir string) (*localapi.Client, error) {
	dir, err := canonicalDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	in, err := readInfo(dir)
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	if !isSocketOf(dir, in.Socket) {
		return nil, fmt.Errorf("daemon: %w: %s names the socket %s, which is not where a daemon of %s puts it",
			ErrUntrustedSocket, InfoFileName, in.Socket, dir)
	}
	c := localapi.NewClientWithTransport(newSocketTransport(dir, in.Socket))
	hctx, cancel := context.WithTimeout(ctx, dialHealthWait)
	defer cancel()
	if _, err := c.Health(hctx); err != nil {
		c.CloseIdleConnections()
		if errors.Is(err, ErrNotRunning) || errors.Is(err, ErrUntrustedSocket) || ctx.Err() != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
		// Something of ours listens but does not answer: a second owner
		// beside it would be worse than failing.
		return nil, fmt.Errorf("daemon: the daemon on %s (pid %d) accepts connections but does not answer its health check: %w", in.Socket, in.PID, err)
	}
	return c, nil
}

// canonicalDir is the absolute path of a data directory with its symbolic
// links resolved, as the daemon records it; a missing directory has no
// daemon.
func canonicalDir(dataDir string) (string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("data directory %q: %w", dataDir, err)
	}
	dir, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w (no data directory %s)", ErrNotRunning, abs)
	}
	if err != nil {
		return "", fmt.Errorf("data directory %s: %w", abs, err)
	}
	return dir, nil
}
