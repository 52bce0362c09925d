package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// apiLog reads GET /api/servers/ID/log from the daemon's socket as it
// answers, bytes and all.
func apiLog(t *testing.T, dir, id string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, daemon.InfoFileName))
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Socket string `json:"socket"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.Socket == "" {
		t.Fatalf("%s: %v %s", daemon.InfoFileName, err, raw)
	}
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", in.Socket)
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://sock/api/servers/"+id+"/log", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the log: %d %v %s", resp.StatusCode, err, body)
	}
	return body
}

// `logs ID --json` prints the API's log entries exactly as the API gave
// them, oldest first, indented by two spaces: what the settings page's
// Export saves (it parses the same answer and writes it back with
// JSON.stringify(entries, null, 2), which json.Indent stands for here).
// No field is dropped, renamed or reordered on the way through the CLI.
// The table shows the same exchanges with their connection ids.
func TestLogsJSONIsTheAPIsLog(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL(), "--lazy")
	startServe(t, c)
	c.ok("connect", "fx")
	c.ok("call", "mcp__fx__echo", `{"text":"logged"}`, "--yes")
	c.ok("disconnect", "fx") // the log stops changing

	raw := apiLog(t, c.dir, "fx")
	var want bytes.Buffer
	if err := json.Indent(&want, bytes.TrimSpace(raw), "", "  "); err != nil {
		t.Fatalf("the API's log is not JSON: %v %s", err, raw)
	}
	want.WriteString("\n")
	r := c.ok("logs", "fx", "--json")
	if r.out != want.String() {
		t.Fatalf("logs --json differs from the API's log:\n%s\nwant:\n%s", r.out, want.String())
	}
	var entries []map[string]any
	if err := json.Unmarshal([]byte(r.out), &entries); err != nil || len(entries) < 3 {
		t.Fatalf("logs --json: %v %s", err, r.out)
	}
	if entries[0]["rpcMethod"] != "initialize" || entries[len(entries)-1]["httpMethod"] != "DELETE" {
		t.Errorf("logs --json is not oldest first: %s", r.out)
	}
	conn, _ := entries[0]["connectionId"].(string)
	if conn == "" {
		t.Fatalf("no connection id in %s", r.out)
	}

	r = c.ok("logs", "fx")
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != len(entries)+1 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[0], "CONN") {
		t.Fatalf("logs table:\n%s", r.out)
	}
	if !strings.Contains(lines[1], conn) || !strings.Contains(lines[1], "initialize") || !strings.Contains(r.out, "tools/call") {
		t.Errorf("logs table:\n%s", r.out)
	}
}

// Issue #19 item 6: "logs ID" shows every kind of log entry in words, not
// as "- - - - 0.0": a server's log message (notifications/message) with
// its level, logger and text, and the sign-in's OAuth requests with their
// step, method and URL; --json carries the same fields.
func TestLogsShowMessagesAndOAuthSteps(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	srv := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	c := newCLI(t)
	c.ok("servers", "add", "docs", srv.URL(), "--oauth", "--lazy")
	c.ok("grants", "approve", strings.TrimSuffix(as.URL(), "/"))
	startServe(t, c)
	c.browserLogin(t, "docs")
	// The fail tool logs at level error (above the default warning)
	// before failing: a notifications/message on the call's stream.
	c.run("", "call", "mcp__docs__fail", "{}", "--yes")
	testkit.WaitFor(t, "the log message in the log", func() bool {
		return strings.Contains(string(apiLog(t, c.dir, "docs")), fixture.FailLogText)
	})

	r := c.ok("logs", "docs")
	if strings.Contains(r.out, "- - - -") || strings.Contains(r.out, "-  -  -  -") {
		t.Errorf("an entry prints as dashes:\n%s", r.out)
	}
	var logLine, tokenLine string
	for l := range strings.SplitSeq(r.out, "\n") {
		switch {
		case strings.Contains(l, "[log]"):
			logLine = l
		case strings.Contains(l, "[oauth] [token]"):
			tokenLine = l
		}
	}
	if !strings.Contains(logLine, "[error] fixture: "+fixture.FailLogText) {
		t.Errorf("the log message's row lacks its level, logger and text: %q\n%s", logLine, r.out)
	}
	if !strings.Contains(tokenLine, "POST") || !strings.Contains(tokenLine, strings.TrimSuffix(as.URL(), "/")) || !strings.Contains(tokenLine, "200") {
		t.Errorf("the token request's row lacks its method, URL or status: %q\n%s", tokenLine, r.out)
	}
	for _, step := range []string{"[oauth] [discovery-PRM]", "[oauth] [discovery-AS]", "[oauth] [registration]"} {
		if !strings.Contains(r.out, step) {
			t.Errorf("no %s row:\n%s", step, r.out)
		}
	}

	var entries []localapi.LogEntry
	if err := json.Unmarshal([]byte(c.ok("logs", "docs", "--json").out), &entries); err != nil {
		t.Fatal(err)
	}
	var sawLog, sawToken bool
	for _, x := range entries {
		switch {
		case x.Kind == "log":
			sawLog = x.Level == "error" && x.Message == "fixture: "+fixture.FailLogText && !x.Time.IsZero()
		case x.Kind == "oauth" && x.Step == "token":
			sawToken = x.HTTPMethod == http.MethodPost && x.Status == http.StatusOK && strings.HasPrefix(x.URL, strings.TrimSuffix(as.URL(), "/"))
		}
	}
	if !sawLog || !sawToken {
		t.Errorf("logs --json: log message %v, token request %v:\n%+v", sawLog, sawToken, entries)
	}
}
