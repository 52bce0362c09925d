package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// Query parameters of the bench server's MCP endpoint. Every URL the
// benchmarks configure carries a tag (TagParam), so the requests of one
// scenario can be counted apart from the others on the one shared server;
// StormParam asks for a list_changed storm on the first standalone stream
// of its tag.
const (
	TagParam   = "b"
	StormParam = "storm"
)

// stormDelay is how long the storm stream waits after it opened before the
// first notification, so that the client's handshake (and its listing) is
// over when the count of listings "since the storm" starts.
const stormDelay = 300 * time.Millisecond

// TagStats is what the bench server saw of one tag.
type TagStats struct {
	// Requests counts every HTTP request, on the MCP endpoint or elsewhere.
	Requests int64 `json:"requests"`
	// Methods counts requests by JSON-RPC method ("tools/list",
	// "notifications/initialized" …); "response" is a JSON-RPC response
	// sent by the client, GET and DELETE are the HTTP methods, and
	// "other <path>" is a request to another path (e.g. OAuth discovery).
	Methods map[string]int64 `json:"methods"`
	// Storm is set once a storm started on this tag.
	Storm *StormStats `json:"storm,omitempty"`
}

// StormStats describes a list_changed storm.
type StormStats struct {
	Want int64 `json:"want"` // notifications asked for
	Sent int64 `json:"sent"` // notifications written so far
	// ListingsAtStart is the tag's tools/list count when the first
	// notification was written (the handshake's listing is before it).
	ListingsAtStart int64 `json:"listingsAtStart"`
	Done            bool  `json:"done"`
	BurstMillis     int64 `json:"burstMillis"` // first to last notification
}

// counters is the bench server's request accounting.
type counters struct {
	mu   sync.Mutex
	tags map[string]*TagStats
}

// tagLocked is tag's stats, made on first use. c.mu held.
func (c *counters) tagLocked(tag string) *TagStats {
	t := c.tags[tag]
	if t == nil {
		t = &TagStats{Methods: map[string]int64{}}
		c.tags[tag] = t
	}
	return t
}

func (c *counters) count(tag, method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tagLocked(tag)
	t.Requests++
	t.Methods[method]++
}

// snapshot copies the stats of every tag.
func (c *counters) snapshot() map[string]TagStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]TagStats, len(c.tags))
	for k, v := range c.tags {
		cp := TagStats{Requests: v.Requests, Methods: make(map[string]int64, len(v.Methods))}
		for m, n := range v.Methods {
			cp.Methods[m] = n
		}
		if v.Storm != nil {
			s := *v.Storm
			cp.Storm = &s
		}
		out[k] = cp
	}
	return out
}

// startStorm claims the storm of tag; false when it already ran.
func (c *counters) startStorm(tag string, n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tagLocked(tag)
	if t.Storm != nil {
		return false
	}
	t.Storm = &StormStats{Want: n, ListingsAtStart: -1}
	return true
}

func (c *counters) stormUpdate(tag string, f func(s *StormStats, listings int64)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tags[tag]
	f(t.Storm, t.Methods["tools/list"])
}

// rpcMethod names a request for the counters.
func rpcMethod(r *http.Request) string {
	if r.Method != http.MethodPost {
		return r.Method
	}
	body, err := io.ReadAll(r.Body) // the fixture restores the body
	if err != nil {
		return "POST (unreadable)"
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return "batch"
	}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "POST (not JSON-RPC)"
	}
	if m.Method == "" {
		return "response"
	}
	return m.Method
}

// authorize counts every request to the MCP endpoint and answers a storm
// stream itself; everything else goes on to the go-sdk handler.
func (c *counters) authorize(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	tag := q.Get(TagParam)
	c.count(tag, rpcMethod(r))
	if r.Method == http.MethodGet {
		if n, err := strconv.ParseInt(q.Get(StormParam), 10, 64); err == nil && n > 0 && c.startStorm(tag, n) {
			c.storm(w, r, tag, n)
			return false
		}
	}
	return true
}

// storm answers a standalone stream (GET) with n
// notifications/tools/list_changed spread evenly over one second (paced
// from the start in 100 steps, not by sleeps that a loaded machine
// stretches), then holds the stream open until the client goes away.
func (c *counters) storm(w http.ResponseWriter, r *http.Request, tag string, n int64) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	ctx := r.Context()
	select {
	case <-time.After(stormDelay):
	case <-ctx.Done():
		return
	}
	c.stormUpdate(tag, func(s *StormStats, listings int64) { s.ListingsAtStart = listings })
	ev := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
	start := time.Now()
	for step := range int64(100) {
		time.Sleep(time.Until(start.Add(time.Duration(step) * 10 * time.Millisecond)))
		k := n*(step+1)/100 - n*step/100
		if k == 0 {
			continue
		}
		if _, err := w.Write(bytes.Repeat(ev, int(k))); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		c.stormUpdate(tag, func(s *StormStats, _ int64) { s.Sent += k })
	}
	burst := time.Since(start)
	c.stormUpdate(tag, func(s *StormStats, _ int64) { s.Done, s.BurstMillis = true, burst.Milliseconds() })
	<-ctx.Done()
}

// ServeMain is the bench server process: the remotemcp test fixture (its
// echo tool and the rest, request log off) on a loopback port, with
// per-tag request counting (GET /bench/stats) and list_changed storms
// (see StormParam), and servers of many tools at ScalePath. It prints "URL <endpoint>" on stdout and runs until
// its standard input reaches EOF (the benchmark process holds the other
// end, so the server dies with it) or a signal arrives. It returns the
// process exit code.
func ServeMain(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "TCP address to listen on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	c := &counters{tags: map[string]*TagStats{}}
	stats := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.snapshot())
	})
	other := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.count(r.URL.Query().Get(TagParam), "other "+r.URL.Path)
		http.NotFound(w, r)
	})
	srv, err := fixture.Start(fixture.Options{
		Addr: *addr, NoRecord: true, Authorize: c.authorize,
		Extra: map[string]http.Handler{"/bench/stats": stats, ScalePath: scaleHandler(), "/": other},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench server:", err)
		return 1
	}
	fmt.Printf("URL %s\n", srv.URL())
	stdinGone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinGone)
	}()
	select {
	case <-ctx.Done():
	case <-stdinGone:
	}
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "bench server: close:", err)
	}
	return 0
}

// Server is a bench server running in its own process (see ServeMain), so
// that getrusage in the benchmark process counts the client alone.
type Server struct {
	// URL is the MCP endpoint without a query, e.g. http://127.0.0.1:PORT/mcp.
	URL string
	// Origin is the endpoint's origin (for host permission grants).
	Origin string

	cmd   *exec.Cmd
	stdin io.WriteCloser
	hc    *http.Client
	done  chan error
}

// StartServer runs name with args (a command whose main calls ServeMain)
// and waits for the URL line it prints.
func StartServer(ctx context.Context, name string, args ...string) (*Server, error) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// An os.Pipe rather than cmd.StdoutPipe: Wait must not close the read
	// end while it is being read.
	stdout, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		stdout.Close()
		return nil, fmt.Errorf("bench: start server: %w", err)
	}
	s := &Server{cmd: cmd, stdin: stdin, hc: &http.Client{Timeout: 10 * time.Second}, done: make(chan error, 1)}
	lines := make(chan string, 1)
	go func() {
		defer stdout.Close()
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
		if first {
			close(lines)
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	select {
	case line, ok := <-lines:
		u, found := bytes.CutPrefix([]byte(line), []byte("URL "))
		if !ok || !found {
			s.Close()
			return nil, fmt.Errorf("bench: server printed %q, want URL …", line)
		}
		s.URL = string(u)
	case <-time.After(30 * time.Second):
		s.Close()
		return nil, errors.New("bench: server did not start within 30 s")
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	pu, err := url.Parse(s.URL)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Origin = pu.Scheme + "://" + pu.Host
	return s, nil
}

// Endpoint is the MCP endpoint URL for tag, with more query parameters
// appended when extra is not empty ("i=7&storm=1000").
func (s *Server) Endpoint(tag, extra string) string {
	u := s.URL + "?" + TagParam + "=" + url.QueryEscape(tag)
	if extra != "" {
		u += "&" + extra
	}
	return u
}

// Stats returns what the server saw, by tag.
func (s *Server) Stats(ctx context.Context) (map[string]TagStats, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Origin+"/bench/stats", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("bench: stats: %s", resp.Status)
	}
	var out map[string]TagStats
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// Tag returns the stats of one tag (zero when it saw nothing).
func (s *Server) Tag(ctx context.Context, tag string) (TagStats, error) {
	all, err := s.Stats(ctx)
	if err != nil {
		return TagStats{}, err
	}
	t := all[tag]
	if t.Methods == nil {
		t.Methods = map[string]int64{}
	}
	return t, nil
}

// Close stops the server process (closing its stdin; killing it if it
// has not exited within 10 s) and waits for it.
func (s *Server) Close() error {
	_ = s.stdin.Close()
	select {
	case err := <-s.done:
		return err
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		return <-s.done
	}
}
