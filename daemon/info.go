package daemon

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// InfoFileName is the file in the data directory that tells the CLI where
// the daemon listens and which API token it takes. It is written with mode
// 0600, like the key file: whoever can read it can use the daemon.
const InfoFileName = "daemon.json"

// ErrNotRunning is returned (wrapped) by Discover when no daemon answers
// for the data directory: there is no daemon.json, or the daemon it names
// is gone.
var ErrNotRunning = errors.New("no remotemcp daemon is running for this data directory")

// info is the content of daemon.json.
type info struct {
	URL     string    `json:"url"`
	Addr    string    `json:"addr"`
	PID     int       `json:"pid"`
	Token   string    `json:"token"`
	Started time.Time `json:"started"`
	Version string    `json:"version,omitempty"`
}

// randomToken returns 256 bits of randomness as text.
func randomToken() string { return rand.Text() + rand.Text() }

// writeInfo writes daemon.json atomically (temp file + rename), so a CLI
// reading it never sees half a token.
func writeInfo(dir string, in info) error {
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".daemon-*.json")
	if err != nil {
		return fmt.Errorf("write %s: %w", InfoFileName, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename this fails harmlessly
	// CreateTemp makes the file 0600 already; Chmod states the intent and
	// covers platforms where it does not.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", InfoFileName, err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", InfoFileName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", InfoFileName, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, InfoFileName)); err != nil {
		return fmt.Errorf("write %s: %w", InfoFileName, err)
	}
	return nil
}

// readInfo reads daemon.json; a group- or world-readable file is refused,
// since its token may have been seen by others.
func readInfo(dir string) (info, error) {
	var in info
	p := filepath.Join(dir, InfoFileName)
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return in, fmt.Errorf("%w (no %s)", ErrNotRunning, p)
		}
		return in, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return in, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return in, fmt.Errorf("%s is readable by other users (mode %v); remove it and restart the daemon", p, st.Mode().Perm())
	}
	if err := json.NewDecoder(f).Decode(&in); err != nil {
		return in, fmt.Errorf("%s: %w", p, err)
	}
	if in.URL == "" || in.Token == "" {
		return in, fmt.Errorf("%s lacks the url or token", p)
	}
	return in, nil
}

// removeInfo removes daemon.json if it is still this daemon's (another
// daemon may have replaced it since).
func removeInfo(dir, token string) {
	if token == "" {
		return
	}
	if in, err := readInfo(dir); err == nil && in.Token == token {
		os.Remove(filepath.Join(dir, InfoFileName))
	}
}

// ClientInfo is a running daemon found by Discover.
type ClientInfo struct {
	URL     string
	Addr    string
	PID     int
	Started time.Time
	Version string
	token   string
}

// String describes the daemon without its token.
func (c *ClientInfo) String() string {
	return fmt.Sprintf("remotemcp daemon pid %d at %s", c.PID, c.URL)
}

// Client returns an API client for the daemon.
func (c *ClientInfo) Client() *Client { return NewClient(c.URL, c.token, nil) }

// Discover finds the daemon of a data directory: it reads daemon.json and
// checks that the daemon answers GET /api/health with that token and pid.
// The error wraps ErrNotRunning when there is none (or only a stale file
// of one that exited without cleaning up); the CLI then runs in-process.
func Discover(dataDir string) (*ClientInfo, error) {
	in, err := readInfo(dataDir)
	if err != nil {
		return nil, err
	}
	ci := &ClientInfo{URL: in.URL, Addr: in.Addr, PID: in.PID, Started: in.Started, Version: in.Version, token: in.Token}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	h, err := ci.Client().Health(ctx)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			// Something answers, but not with this token: another
			// daemon took the port, or the file is stale.
			return nil, fmt.Errorf("%w: %s answers but does not accept the token in %s", ErrNotRunning, in.URL, InfoFileName)
		}
		return nil, fmt.Errorf("%w: %s (pid %d) does not answer: %v", ErrNotRunning, in.URL, in.PID, err)
	}
	if h.PID != in.PID {
		return nil, fmt.Errorf("%w: %s answers as pid %d, not pid %d of %s", ErrNotRunning, in.URL, h.PID, in.PID, InfoFileName)
	}
	return ci, nil
}
