// Package e2e runs the built remotemcp binary as separate processes — with
// a daemon and without one — against real loopback servers, and checks
// that the one API gives the same answers on both paths (issue #9).
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testkit"
)

// bin is the remotemcp binary built once for the package.
var bin string

func TestMain(m *testing.M) {
	if url := os.Getenv(proxyEnv); url != "" {
		// This binary started as BenchmarkFrontEndCall's go-sdk proxy.
		os.Exit(runProxy(url))
	}
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "remotemcp-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "remotemcp")
		build := exec.Command("go", "build", "-o", bin, "github.com/remotemcp/remotemcp/cmd/remotemcp")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: build remotemcp:", err)
			return 1
		}
		return m.Run()
	}())
}

// env is one data directory, with or without a daemon on it.
type env struct {
	t      *testing.T
	dir    string
	daemon *exec.Cmd
	extra  []string // extra environment
}

// result is one command's output and exit status.
type result struct {
	out, err string
	code     int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.out, r.err)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	// A short path: the daemon's socket lives in the data directory.
	dir, err := os.MkdirTemp("", "rm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return &env{t: t, dir: dir}
}

func (e *env) environ() []string {
	env := append(os.Environ(), "REMOTEMCP_HOME="+e.dir, "NO_COLOR=1", "DISPLAY=", "BROWSER=false")
	return append(env, e.extra...)
}

// run runs one command to its end with stdin (no terminal).
func (e *env) run(stdin string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 3*time.Minute) // only a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.environ()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		e.t.Fatalf("run %v: %v", args, err)
	}
	return result{out: out.String(), err: errb.String(), code: code}
}

// mustRun runs a command that must succeed.
func (e *env) mustRun(stdin string, args ...string) result {
	e.t.Helper()
	r := e.run(stdin, args...)
	if r.code != 0 {
		e.t.Fatalf("remotemcp %s:\n%s", strings.Join(args, " "), r)
	}
	return r
}

// startDaemon runs `remotemcp serve` on the data directory as its own
// process and waits until its socket answers.
func (e *env) startDaemon(args ...string) {
	e.t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = e.environ()
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.daemon = cmd
	e.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Minute): // only a hang
				cmd.Process.Kill()
				<-done
			}
		}
		if e.t.Failed() {
			e.t.Logf("daemon output:\n%s", logs.String())
		}
	})
	testkit.WaitFor(e.t, "the daemon to come up", func() bool { // its output is logged on failure (above)
		ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
		defer cancel()
		_, err := daemon.Dial(ctx, e.dir)
		return err == nil
	})
}

// killDaemon kills the daemon with SIGKILL (no clean-up of its files).
func (e *env) killDaemon() {
	e.t.Helper()
	if err := e.daemon.Process.Kill(); err != nil {
		e.t.Fatal(err)
	}
	e.daemon.Wait()
}

// syncBuffer is a bytes.Buffer safe for a process's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exchange is one step of a terminal conversation: wait until the output
// so far matches When, then type Send.
type exchange struct {
	When *regexp.Regexp
	Send string
}

// runTerminal runs a command on a pseudo-terminal and answers its
// questions as a person would. It returns everything the terminal showed
// and the exit code.
func (e *env) runTerminal(steps []exchange, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 3*time.Minute) // only a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.environ()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var out syncBuffer
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r := bufio.NewReader(f)
		io.Copy(&out, r)
	}()
	seen := 0
	for _, st := range steps {
		func() {
			shown := false
			defer func() {
				if !shown { // WaitFor gave up
					cmd.Process.Kill()
					e.t.Logf("the terminal showed:\n%s", out.String())
				}
			}()
			testkit.WaitFor(e.t, fmt.Sprintf("the terminal to show %q", st.When), func() bool {
				loc := st.When.FindStringIndex(out.String()[seen:])
				if loc != nil {
					seen += loc[1]
				}
				return loc != nil
			})
			shown = true
		}()
		if _, err := f.Write([]byte(st.Send)); err != nil {
			e.t.Fatal(err)
		}
	}
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	// The pty's reader ends with EIO once the child is gone.
	f.Close()
	<-readDone
	return result{out: strings.ReplaceAll(out.String(), "\r\n", "\n"), code: code}
}

var normalizers = []struct {
	re   *regexp.Regexp
	with string
}{
	// Random ids: cards, operations, fences.
	{regexp.MustCompile(`el-[A-Z2-7]{20}`), "el-ID"},
	{regexp.MustCompile(`op-[A-Z2-7]{20}`), "op-ID"},
	{regexp.MustCompile(`id="[A-Z2-7]{26}"`), `id="FENCE"`},
	// Timing.
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m)\b`), "DUR"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "TIME"},
	// A failed server's backoff (issue #20 item 1) is shown only while
	// its wait is ahead: when a run reads status is timing.
	{regexp.MustCompile(` \(not tried again before [^)]*\)`), ""},
	{regexp.MustCompile(`(?m)^\s*"retryAt": "[^"]*",?\n`), ""},
	// Loopback ports of per-test servers.
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	// status names the daemon when one runs (issue #19 item 1): the one
	// line that tells the two paths apart on purpose.
	{regexp.MustCompile(`(?m)^daemon: pid \d+, settings page .*\n`), ""},
}

// normalize removes what legitimately differs between two runs: random
// ids, timings, ports and the data directory.
func normalize(s, dir string) string {
	s = strings.ReplaceAll(s, dir, "DATADIR")
	for _, n := range normalizers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}
