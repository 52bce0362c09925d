package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

func TestLoggerRedacts(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(&buf, true)
	log.Debug("request",
		"Authorization", "Bearer s3cret-header",
		"token", "s3cret-token",
		"err", errors.New(`Post "https://x.example.com/mcp?access_token=s3cret-query": refused (Bearer s3cret-msg)`),
		"url", "https://x.example.com/cb?code=s3cret-code&page=2",
		slog.Group("auth", "client_secret", "s3cret-group"),
	)
	out := buf.String()
	if strings.Contains(out, "s3cret") {
		t.Fatalf("secret in log:\n%s", out)
	}
	if !strings.Contains(out, "page=2") || !strings.Contains(out, "[redacted]") {
		t.Fatalf("redaction removed too much or nothing:\n%s", out)
	}
	buf.Reset()
	newLogger(&buf, false).Info("quiet")
	if buf.Len() != 0 {
		t.Fatalf("info logged without --verbose: %s", buf.String())
	}
}

// Server ids may contain "__", so mcp__SERVER__TOOL is resolved against
// the configured ids.
func TestCallNameResolution(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "my__fx", srv.URL())
	if r := c.ok("call", "mcp__my__fx__echo", `{"text": "resolved"}`, "--yes"); r.out != "resolved\n" {
		t.Fatalf("call mcp__my__fx__echo: %s", r)
	}
	// mcp__my__fx__echo now fits server my (tool fx__echo) and my__fx
	// (tool echo); my has no tool fx__echo, so the registry's unique
	// names decide.
	c.ok("servers", "add", "my", srv.URL())
	if r := c.ok("call", "mcp__my__fx__echo", `{"text": "still resolved"}`, "--yes"); r.out != "still resolved\n" {
		t.Fatalf("call mcp__my__fx__echo with two candidate servers: %s", r)
	}
	if r := c.ok("call", "my__fx/echo", `{"text": "explicit"}`, "--yes"); r.out != "explicit\n" {
		t.Fatalf("call my__fx/echo: %s", r)
	}
}

// Several invocations at once share nothing (run with -race).
func TestConcurrentInvocations(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			c := newCLI(t)
			if r := c.run("", "servers", "add", "fx", srv.URL()); r.code != 0 {
				t.Errorf("%d: add: %s", i, r)
				return
			}
			if r := c.run("", "call", "fx/echo", `{"text": "hi"}`, "--yes"); r.code != 0 || r.out != "hi\n" {
				t.Errorf("%d: call: %s", i, r)
			}
		})
	}
	wg.Wait()
}

func TestInterrupt(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	// The handshake would take 120 s; an interrupt ending the connect
	// within 60 s proves it, with room for a loaded machine.
	srv.SetHandshakeDelay(120 * time.Second)
	c := newCLI(t)
	c.ok("servers", "add", "slow", srv.URL())

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"--data-dir", c.dir, "connect", "slow"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, nil)
	if code != exitInterrupted || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("interrupted connect: exit %d, stderr %s", code, errb.String())
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("interrupt took %s (the handshake takes 120 s)", d)
	}
}

func TestToolsPartialFailure(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	c.ok("servers", "add", "down", deadURL(t))
	r := c.run("", "tools")
	if r.code != exitFail || !strings.Contains(r.out, "echo") || !strings.Contains(r.err, "down: ") {
		t.Fatalf("tools with one server down: %s", r)
	}
}

func TestInterruptCall(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())

	// Ctrl-C once the call runs on the server: its first progress line
	// on stderr says so (the tool reports progress every 100ms), with no
	// polling and no clock in the test.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out bytes.Buffer
	errb := &watchWriter{want: "progress ", seen: make(chan struct{})}
	go func() {
		select {
		case <-errb.seen:
			cancel()
		case <-ctx.Done():
		}
	}()
	code := run(ctx, []string{"--data-dir", c.dir, "call", "fx/slow", `{"ms": 120000}`, "--yes"}, Streams{In: strings.NewReader(""), Out: &out, Err: errb}, nil)
	if code != exitInterrupted || !strings.Contains(errb.String(), "interrupted") || !strings.Contains(errb.String(), "may or may not have run") {
		t.Fatalf("interrupted call: exit %d, stderr %s", code, errb.String())
	}
	// The server was told to stop (notifications/cancelled).
	testkit.WaitFor(t, "the server to see the cancel", func() bool { return srv.Cancelled("slow") == 1 })
}

// watchWriter is a stream that closes seen the first time what was
// written contains want: a test waits for the command's own output.
type watchWriter struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
