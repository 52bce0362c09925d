//go:build unix

package interrupt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// envSignalChild makes TestSignalChild the child of TestSecondSignalEnds.
const envSignalChild = "REMOTEMCP_TEST_SIGNAL_CHILD"

// TestSignalChild is not a test: run by TestSecondSignalEnds, it installs
// Context, says so, and then blocks in a read(2) of stdin that its
// context cannot end (as "hosts connect" blocked in open(2) on a FIFO).
func TestSignalChild(t *testing.T) {
	if os.Getenv(envSignalChild) == "" {
		t.Skip("the child process of TestSecondSignalEnds")
	}
	ctx, stop := Context(context.Background(), os.Stderr)
	defer stop()
	fmt.Println("ready")
	go func() { // ends with the process
		<-ctx.Done()
		fmt.Println("cancelled")
	}()
	io.ReadAll(os.Stdin) // blocks: the parent never closes it
	os.Exit(0)
}

// TestSecondSignalEnds: the first SIGINT or SIGTERM cancels the command's
// context; a second one ends a process stuck in a system call at once,
// with status 128+signal (issue #20 item 4: a blocked "hosts connect"
// survived SIGTERM).
func TestSecondSignalEnds(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignalChild$")
			cmd.Env = append(os.Environ(), envSignalChild+"=1")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { stdin.Close() })
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			lines := bufio.NewScanner(out)
			expect := func(want string) {
				t.Helper()
				if !lines.Scan() || lines.Text() != want {
					t.Fatalf("child said %q (%v), want %q", lines.Text(), lines.Err(), want)
				}
			}
			expect("ready")
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			expect("cancelled") // the first signal cancelled, and the child lives on
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err = <-waited:
			case <-time.After(time.Minute): // bounds only a hang
				t.Fatal("the second signal did not end the process")
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != c.code {
				t.Fatalf("exit: %v, want status %d", err, c.code)
			}
		})
	}
}
