package render

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/localapi"
)

func TestServerRow(t *testing.T) {
	chain := `initialize: calling "initialize": rejected by transport: dial tcp 127.0.0.1:9: connect: connection refused`
	for _, tc := range []struct {
		name    string
		s       localapi.Server
		verbose bool
		want    string
		cut     bool
	}{
		{"ready", localapi.Server{ID: "fx", Name: "Fx", Enabled: true, ConnectOnStartup: true, State: localapi.StateReady, ToolCount: 7,
			Auth: localapi.AuthInfo{Kind: "none"}, URL: "https://x.example/mcp?token=s3cret"}, false,
			"fx\tFx\tyes\tstartup\tnone\tready\t7\thttps://x.example/mcp?token=[redacted]\t", false},
		{"disabled, lazy, held", localapi.Server{ID: "d", State: localapi.StateIdle, ToolCount: 2, HeldTools: []string{"a"}, Auth: localapi.AuthInfo{Kind: "oauth"}}, false,
			"d\t-\tno\tlazy\toauth\tdisabled\t2 +1 held\t\t", false},
		{"reason cut", localapi.Server{ID: "down", Enabled: true, State: localapi.StateError, URL: "http://127.0.0.1:9/mcp",
			Reason: &localapi.Reason{Class: "network", Message: chain}}, false,
			"down\t-\tyes\tlazy\t\terror\t-\thttp://127.0.0.1:9/mcp\tnetwork: cannot reach http://127.0.0.1:9/mcp: connection refused", true},
		{"reason whole", localapi.Server{ID: "down", Enabled: true, State: localapi.StateError, URL: "http://127.0.0.1:9/mcp",
			Reason: &localapi.Reason{Class: "network", Message: chain}}, true,
			"down\t-\tyes\tlazy\t\terror\t-\thttp://127.0.0.1:9/mcp\tnetwork: " + chain, false},
		{"server text made safe", localapi.Server{ID: "x\x1b[2J", Name: "a\nb", State: localapi.StateDisconnected}, false,
			"x\uFFFD[2J\ta b\tno\tlazy\t\tdisabled\t-\t\t", false},
	} {
		row, cut := ServerRow(tc.s, tc.verbose)
		if row != tc.want || cut != tc.cut {
			t.Errorf("%s: ServerRow =\n%q, %v; want\n%q, %v", tc.name, row, cut, tc.want, tc.cut)
		}
	}
}

func TestUpdated(t *testing.T) {
	before := localapi.Server{ID: "fx", Name: "a", DisabledTools: []string{"x"}, PinnedTools: []string{"p"}, HeaderNames: []string{"X-Old", "X-Keep"}}
	after := before
	after.Name, after.DisabledTools, after.PinnedTools, after.HeaderNames = "b", []string{"y"}, nil, []string{"x-keep", "X-New"}
	after.Auth.RedirectPort = 0
	before.Auth.RedirectPort = 7790
	port := 0
	for _, tc := range []struct {
		name          string
		before, after localapi.Server
		req           localapi.UpdateServerRequest
		want          string
	}{
		{"nothing", before, before, localapi.UpdateServerRequest{}, "fx: nothing changed (the settings already have these values)\n"},
		{"everything", before, after, localapi.UpdateServerRequest{RedirectPort: &port, Auth: &localapi.AuthChange{Kind: "oauth"}, Headers: map[string]string{"X-New": "v", "X-A": "w"}},
			"updated fx: name, disabled y, enabled x, unpinned p, redirect port default (7717), auth oauth, header X-A, header X-New, removed header X-Old\n"},
		{"token", before, before, localapi.UpdateServerRequest{Auth: &localapi.AuthChange{Kind: "bearer", Token: "t"}}, "updated fx: bearer token\n"},
	} {
		var b strings.Builder
		Updated(&b, "fx", tc.before, tc.after, tc.req)
		if b.String() != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, b.String(), tc.want)
		}
	}
}

func TestLogRow(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	for _, tc := range []struct {
		name string
		x    localapi.LogEntry
		want string
	}{
		{"rpc", localapi.LogEntry{Time: at, ConnectionID: "c1", HTTPMethod: "POST", RPCMethod: "tools/call", Status: 200, Millis: 12.34},
			"03:04:05\tc1\tPOST\ttools/call\t200\t12.3\t-"},
		{"stream", localapi.LogEntry{Time: at, HTTPMethod: "GET", Status: 200}, "03:04:05\t-\tGET\tevent stream\t200\t0.0\t-"},
		{"end", localapi.LogEntry{Time: at, HTTPMethod: "DELETE", Error: "gone\nnow"}, "03:04:05\t-\tDELETE\tend of session\t-\t0.0\tgone now"},
		{"oauth", localapi.LogEntry{Time: at, Kind: "oauth", Step: "token", HTTPMethod: "POST", URL: "https://as.example/token?code=s3cret"},
			"03:04:05\t-\tPOST\t[oauth] [token] https://as.example/token?code=[redacted]\t-\t0.0\t-"},
		{"log message", localapi.LogEntry{Time: at, Kind: "log", Level: "error", Message: "fx: boom"}, "03:04:05\t-\t-\t[log] [error] fx: boom\t-\t-\t-"},
	} {
		if got := logRow(tc.x); got != tc.want {
			t.Errorf("%s: logRow =\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

func TestTableWrite(t *testing.T) {
	var out, errw strings.Builder
	if err := Grants.Write(&out, &errw, nil); err != nil || out.Len()+errw.Len() != 0 {
		t.Fatalf("empty grants: %q %q %v", out.String(), errw.String(), err)
	}
	if err := Cards.Write(&out, &errw, nil); err != nil || errw.String() != Cards.Empty+"\n" {
		t.Fatalf("empty cards: stderr %q", errw.String())
	}
	out.Reset()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	Grants.Write(&out, &errw, []localapi.Grant{{Origin: "https://a.example", GrantedAt: at, By: "user: cli"}, {Origin: "http://127.0.0.1:1", GrantedAt: at, By: "x"}})
	want := "ORIGIN              GRANTED               BY\nhttps://a.example   2026-01-02T03:04:05Z  user: cli\nhttp://127.0.0.1:1  2026-01-02T03:04:05Z  x\n"
	if out.String() != want {
		t.Fatalf("grants:\n%s\nwant\n%s", out.String(), want)
	}
}

// A server's question and remotemcp's own approval question read
// differently in the list (issue #20 item 3).
func TestCardWords(t *testing.T) {
	if got := cardWords(localapi.Card{Message: "remotemcp asks: allow?"}); got != "the server's words: remotemcp asks: allow?" {
		t.Errorf("server question: %q", got)
	}
	if got := cardWords(localapi.Card{Kind: localapi.CardApproval, Arguments: json.RawMessage(`{"a":1}`)}); !strings.HasPrefix(got, "remotemcp asks before sending, arguments ") {
		t.Errorf("approval: %q", got)
	}
}

func TestHeld(t *testing.T) {
	seen := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	held := []localapi.HeldTool{
		{ServerID: "gh", Tool: "create\u200bissue", NewHash: "sha256:abc", Seen: seen,
			Changes: []localapi.DefinitionChange{{Path: "description", Kind: "changed", Old: "old\ntext", New: "new\x1b[2J"}}},
		{ServerID: "gh", Tool: "weird", Unpinnable: "its schema cannot be read"},
	}
	var b strings.Builder
	if err := Held(&b, held); err != nil {
		t.Fatal(err)
	}
	want := "gh create[U+200B]issue: held since 2026-01-02 03:04 UTC; pinned -\n" +
		"  description changed\n" +
		"    old: old\n" +
		"         text\n" +
		"    new: new[U+001B][2J\n" +
		"  new definition: sha256:abc\n" +
		"  accept: remotemcp tools accept gh 'create[U+200B]issue' --hash sha256:abc\n" +
		"\n" +
		"gh weird: its schema cannot be read\n"
	if b.String() != want {
		t.Errorf("Held:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	Held(&b, nil)
	if b.String() != "no tool is held: every tool's definition is the one first seen\n" {
		t.Errorf("Held(nil) = %q", b.String())
	}
}

func TestApproval(t *testing.T) {
	var b strings.Builder
	Approval(&b, localapi.ApprovalRequest{Tool: "mcp__fx__rm", ServerID: "fx", ServerName: "Files", ToolName: "rm", Title: "Remove",
		Description: "\n Removes a file.\nSecond line", Annotations: json.RawMessage(`{"title":"x","readOnlyHint":false,"destructiveHint":true,"idempotentHint":true}`),
		Arguments: json.RawMessage(`{"path":"/tmp/x"}`)})
	want := "mcp__fx__rm wants to run:\n" +
		"  server:      fx (Files)\n" +
		"  tool:        rm (Remove)\n" +
		"  description: Removes a file. (from the server)\n" +
		"  annotations: title=\"x\", readOnlyHint=false, destructiveHint=true, idempotentHint (the server's own hints: they do not make the call safe)\n" +
		"  arguments:   {\"path\":\"/tmp/x\"}\n"
	if b.String() != want {
		t.Errorf("Approval:\n%s\nwant\n%s", b.String(), want)
	}
}

func TestResult(t *testing.T) {
	for _, tc := range []struct {
		name      string
		res       localapi.ToolResult
		out, errw string
	}{
		{"structured said by a text block", localapi.ToolResult{Content: []localapi.ContextBlock{{Text: `{"sum": 3}`}}, StructuredContent: json.RawMessage(`{"sum":3}`)},
			"{\"sum\": 3}\n", ""},
		{"structured printed", localapi.ToolResult{Content: []localapi.ContextBlock{{Text: "3"}}, StructuredContent: json.RawMessage(`{"sum":3}`)},
			"3\n{\n  \"sum\": 3\n}\n", ""},
		{"binary and cut", localapi.ToolResult{Content: []localapi.ContextBlock{{Text: "[binary image/png, 84 bytes]"}, {Text: "abc\n", Truncated: &localapi.Truncation{ShownChars: 3, OriginalChars: 9}}},
			Notes: []string{"a note"}},
			"[binary image/png, 84 bytes] (not shown; use --json for the data)\nabc\n",
			"[remotemcp: output truncated: showing the first 3 of 9 characters]\na note\n"},
	} {
		var out, errw strings.Builder
		if err := Result(&out, &errw, &tc.res); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.out || errw.String() != tc.errw {
			t.Errorf("%s: stdout %q stderr %q; want %q %q", tc.name, out.String(), errw.String(), tc.out, tc.errw)
		}
	}
}

func TestOutcomeHint(t *testing.T) {
	cards := func() ([]localapi.Card, error) {
		return []localapi.Card{{ID: "el-1", OperationID: "op-1", Status: localapi.CardInterrupted}}, nil
	}
	for _, tc := range []struct {
		res  localapi.ToolResult
		want string
	}{
		{localapi.ToolResult{Outcome: "interrupted", OperationID: "op-1"}, `if re-running the tool is safe, re-send it with "remotemcp elicitations retry el-1"`},
		{localapi.ToolResult{Outcome: "interrupted", OperationID: "op-2"}, `see "remotemcp elicitations list"`},
		{localapi.ToolResult{Outcome: "failed", MaybeExecuted: true}, "check whether the call had an effect before running it again"},
		{localapi.ToolResult{Outcome: "failed"}, ""},
	} {
		if got := OutcomeHint(&tc.res, cards); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.res.Outcome, tc.res.OperationID, got, tc.want)
		}
	}
}
