//go:build unix

package main

import (
	"bufio"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startUnderShell runs the test server in the background of a shell, as
// `go run ./internal/testserver … &` leaves it under `go run`, and returns
// the shell, the server's address and pid.
func startUnderShell(t *testing.T, args ...string) (*exec.Cmd, string, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("/bin/sh", "-c", `"$0" & wait`, exe)
	sh.Env = append(os.Environ(), "TESTSERVER_MAIN=1", "TESTSERVER_ARGS="+strings.Join(append([]string{"--addr", "127.0.0.1:0"}, args...), "\n"))
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })

	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var addr string
	pid := 0
	deadline := time.After(20 * time.Second)
	for addr == "" || pid == 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the server's output ended before it said where it listens")
			}
			t.Log(l)
			if u, ok := strings.CutPrefix(l, "remotemcp test server: MCP endpoint "); ok {
				pu, err := url.Parse(u)
				if err != nil {
					t.Fatal(err)
				}
				addr = pu.Host
			}
			if rest, ok := strings.CutPrefix(l, "remotemcp test server: pid "); ok {
				f := strings.FieldsFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
				if len(f) > 0 {
					pid, _ = strconv.Atoi(f[0])
				}
			}
		case <-deadline:
			t.Fatal("the server did not start")
		}
	}
	go func() {
		for range lines {
		}
	}()
	// If the test fails before the server is gone, do not leave it behind.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return sh, addr, pid
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// Issue #8 item 7: when the process that started the test server dies
// (SIGKILL, so nothing is forwarded), the server notices and frees its
// port within a few seconds; while the parent lives, it keeps serving.
func TestExitsWhenParentDies(t *testing.T) {
	sh, addr, _ := startUnderShell(t)
	time.Sleep(3 * parentPoll) // a live parent is no reason to stop
	if !listening(addr) {
		t.Fatalf("the server stopped listening on %s while its parent lives", addr)
	}
	if err := sh.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sh.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for listening(addr) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is still served 5 s after the parent died", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// --exit-with-parent=false keeps an orphan running (a server started on
// purpose with nohup or setsid).
func TestKeepsRunningWhenAskedTo(t *testing.T) {
	sh, addr, _ := startUnderShell(t, "--exit-with-parent=false")
	if err := sh.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sh.Wait()
	time.Sleep(3 * parentPoll)
	if !listening(addr) {
		t.Fatal("the server stopped with its parent despite --exit-with-parent=false")
	}
}
