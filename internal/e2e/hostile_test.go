package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// floodServer is the fixture, except that tools/call of "big" answers with
// a JSON body of n bytes, generated while it is written (this process
// holds none of it).
func floodServer(t *testing.T, n int64) *fixture.Server {
	t.Helper()
	chunk := bytes.Repeat([]byte("A"), 64<<10)
	return testkit.StartFixture(t, fixture.Options{NoRecord: true, Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost {
			return true
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) != nil || m.Method != "tools/call" || m.Params.Name != "big" {
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[{"type":"text","text":"`)
		for left := n; left > 0; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(int64(len(chunk)), left)]); err != nil {
				return false
			}
		}
		io.WriteString(w, `"}]}}`)
		return false
	}})
}

// peakRSS reads a process's peak resident set size (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// Issue #10's goal, measured on the real daemon process: while a hostile
// server sends three concurrent 300 MB answers, the daemon's resident
// memory stays under 150 MB, each call fails naming the limit, and another
// server keeps answering.
func TestDaemonMemoryBoundedUnderFlood(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if testing.Short() {
		t.Skip("streams about a gigabyte over loopback")
	}
	bad := floodServer(t, 300<<20)
	good := testkit.StartFixture(t, fixture.Options{NoRecord: true})
	e := newEnv(t)
	e.mustRun("", "servers", "add", "bad", bad.URL())
	e.mustRun("", "servers", "add", "good", good.URL())
	e.startDaemon()
	e.mustRun("", "connect", "bad")
	e.mustRun("", "connect", "good")

	var wg sync.WaitGroup
	floods := make([]result, 3)
	for i := range floods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			floods[i] = e.run("", "call", "mcp__bad__big", `{}`, "--yes")
		}()
	}
	stop := make(chan struct{})
	answered := make(chan int)
	go func() {
		n := 0
		defer func() { answered <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if r := e.run("", "call", "mcp__good__echo", `{"text":"hi"}`, "--yes"); r.code != 0 || !strings.Contains(r.out, "hi") {
				t.Errorf("the other server failed meanwhile:\n%s", r)
				return
			}
			n++
		}
	}()
	wg.Wait()
	close(stop)
	n := <-answered

	for i, r := range floods {
		if r.code == 0 || !strings.Contains(r.out+r.err, "limits.") {
			t.Errorf("flood %d: want a failure naming the limit, got:\n%s", i, r)
		}
	}
	rss := peakRSS(t, e.daemon.Process.Pid)
	t.Logf("daemon peak RSS %.1f MB; the other server answered %d calls meanwhile; a flood's error: %s",
		float64(rss)/(1<<20), n, strings.TrimSpace(floods[0].out+floods[0].err))
	if rss > 150<<20 {
		t.Errorf("daemon peak RSS %d MB; want under 150 MB", rss>>20)
	}
	if n == 0 {
		t.Error("the other server answered no call meanwhile")
	}
}
