// Package launch starts the daemon in the background for a command that
// needs one ("remotemcp mcp" when none runs): a detached "remotemcp serve"
// whose output goes to a log in the data directory, and the bounded wait
// until its socket answers.
package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/daemon"
)

// StartWait bounds the wait for a daemon started in the background.
const StartWait = 30 * time.Second

// LogName is the file in the data directory that gets the output of a
// daemon started in the background (its stdout must not reach the host
// that started it: that is the MCP channel).
const LogName = "daemon.log"

// AddrFallbackFlag is serve's hidden flag for a daemon started in the
// background (daemon.Options.AddrFallback): its page's port is not worth
// failing a host for.
const AddrFallbackFlag = "addr-fallback"

// SpawnFunc starts "remotemcp ARGS" detached, its output to logf, and
// returns its pid, a channel closed when it exits, and stop.
type SpawnFunc func(ctx context.Context, args []string, logf *os.File) (pid int, exited <-chan struct{}, stop func(), err error)

// Exec is the SpawnFunc of production: this program, in a session of its
// own. Its stop does nothing: the daemon outlives the command that
// started it, for the next host.
func Exec(_ context.Context, args []string, logf *os.File) (pid int, exited <-chan struct{}, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, nil, nil, fmt.Errorf("find this program: %w", err)
	}
	// Not tied to ctx: the daemon outlives this host's session.
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return 0, nil, nil, err
	}
	// Reap it if it ends while this process runs (it lost a race, or
	// failed); done says so.
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return cmd.Process.Pid, done, func() {}, nil
}

// Options say what to start.
type Options struct {
	// Dir is the data directory.
	Dir string
	// Listen is the settings page address the daemon asks for; it takes
	// a free port when another program has it.
	Listen string
	// Spawn starts the process; nil means Exec.
	Spawn SpawnFunc
}

// Started says which daemon answered.
type Started struct {
	// PID is the daemon started; Winner is that of the daemon that
	// answers when another host's won the race (0 when ours answers).
	PID, Winner int
	// Log is the daemon's log file.
	Log string
	// RequestedAddr and URL are set when the page's address was taken:
	// what was asked for, and where the page is instead.
	RequestedAddr, URL string
}

// Start starts "remotemcp serve" detached on o.Dir and waits, bounded,
// until its socket answers. Hosts need only the socket. Losing the race
// to another host's daemon is fine: whichever daemon answers is the
// owner. stop is the SpawnFunc's.
func Start(ctx context.Context, o Options) (_ *Started, stop func(), err error) {
	dir := o.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("start the daemon: create the data directory: %w", err)
	}
	logPath := filepath.Join(dir, LogName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("start the daemon: open its log: %w", err)
	}
	defer logf.Close()
	// What this start writes to the log begins here: a daemon that fails
	// says why in its last line, which the error repeats.
	logStart, _ := logf.Seek(0, io.SeekEnd)
	spawn := o.Spawn
	if spawn == nil {
		spawn = Exec
	}
	pid, exited, stop, err := spawn(ctx, []string{"--data-dir", dir, "serve", "--addr", o.Listen, "--" + AddrFallbackFlag}, logf)
	if err != nil {
		return nil, nil, fmt.Errorf("start the daemon: %w", err)
	}
	deadline := time.Now().Add(StartWait)
	for {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := daemon.Dial(dctx, dir)
		cancel()
		if err == nil {
			st := &Started{PID: pid, Log: logPath}
			if in, rerr := daemon.Running(ctx, dir); rerr == nil {
				if in.PID != pid {
					// Another host's daemon won the race; ours has stepped aside.
					st.Winner = in.PID
				}
				st.RequestedAddr, st.URL = in.RequestedAddr, in.URL
			}
			return st, stop, nil
		}
		if ctx.Err() != nil {
			stop()
			return nil, nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("start the daemon: it did not answer within %s (see %s): %w", StartWait, logPath, err)
		}
		select {
		case <-exited:
			// Another daemon may have won; give it the rest of the wait,
			// but a daemon that failed alone will not come.
			if _, serr := os.Stat(filepath.Join(dir, daemon.InfoFileName)); serr != nil {
				if why := lastLogLine(logPath, logStart); why != "" {
					return nil, nil, fmt.Errorf("start the daemon: it exited: %s (log: %s)", why, logPath)
				}
				return nil, nil, fmt.Errorf("start the daemon: it exited (see %s)", logPath)
			}
			exited = nil // wait for the winner at the pace below
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lastLogLine is the last non-empty line written to the log at path since
// offset from, read from at most its last 4 KiB; "" when there is none.
// It is the daemon's own words (its log is redacted), so it can be shown.
func lastLogLine(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const most = 4 << 10
	if fi, err := f.Stat(); err == nil && fi.Size()-from > most {
		from = fi.Size() - most
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, most))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	return strings.TrimPrefix(last, "remotemcp: ")
}
