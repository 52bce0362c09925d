package advice

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
)

// The texts people and models read are what they were before the
// libraries lost their advice (issue #21 item 3): each want below but the
// held ones is the text the manager or the session wrote itself until
// then (a held refusal no longer says "its definition changed" twice).
func TestTextKeepsTheWords(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.Local)
	limit := &session.LimitError{Server: "fx", Limit: "maxMessageBytes", Value: 1 << 20, What: "a response"}
	backoff := &manager.BackoffError{ServerID: "fx", Err: errors.New("boom"), RetryAt: at, Failures: 1}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"plain", errors.New("boom"), "boom"},
		{"backoff", backoff,
			`server "fx": connect: boom (not tried again before 15:04:05, after 1 failed attempt in a row; run "remotemcp connect fx" to try now)`},
		{"backoff in a call", &manager.CallError{ServerID: "fx", Tool: "echo", Err: &manager.BackoffError{ServerID: "fx", Err: errors.New("boom"), RetryAt: at, Failures: 3}},
			`call echo on server "fx" failed: server "fx": connect: boom (not tried again before 15:04:05, after 3 failed attempts in a row; run "remotemcp connect fx" to try now)`},
		{"limit", fmt.Errorf("list tools: %w", limit),
			`list tools: server "fx": a response exceeded the limit limits.maxMessageBytes (1 MiB); the rest was not read. If the server is trusted and needs more, raise its limits.maxMessageBytes (servers set fx --limit maxMessageBytes=…)`},
		{"backoff after a limit", &manager.BackoffError{ServerID: "fx", Err: limit, RetryAt: at, Failures: 2},
			`server "fx": connect: server "fx": a response exceeded the limit limits.maxMessageBytes (1 MiB); the rest was not read. If the server is trusted and needs more, raise its limits.maxMessageBytes (servers set fx --limit maxMessageBytes=…) (not tried again before 15:04:05, after 2 failed attempts in a row; run "remotemcp connect fx" to try now)`},
		{"held", &manager.CallError{ServerID: "fs", Tool: "read", Err: &manager.HeldError{ServerID: "fs", Tool: "read", Hash: "sha256:ab"}},
			`call read on server "fs" failed: tool is held: its definition changed since it was first seen (review it with "remotemcp tools review fs", and accept it with "remotemcp tools accept fs read --hash HASH", HASH from the review)`},
		{"held unread", &manager.HeldError{ServerID: "fs", Tool: "read", Why: "its pin could not be read: disk"},
			`tool is held: its definition changed since it was first seen: its pin could not be read: disk (review it with "remotemcp tools review fs", and accept it with "remotemcp tools accept fs read --hash HASH", HASH from the review)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.err); got != tc.want {
				t.Errorf("Text =\n %s\nwant\n %s", got, tc.want)
			}
			if tc.err != nil && (strings.Contains(tc.err.Error(), "remotemcp ") || strings.Contains(tc.err.Error(), "servers set")) {
				t.Errorf("the library's own text names a command: %s", tc.err)
			}
		})
	}
}

// A reason's message (a lead before the error's text) gets the advice in
// place.
func TestIntoAReason(t *testing.T) {
	limit := &session.LimitError{Server: "fx", Limit: "maxListItems", Value: 5, What: "a listing"}
	got := Into("connection lost, reconnecting: "+limit.Error(), limit)
	want := `connection lost, reconnecting: server "fx": a listing exceeded the limit limits.maxListItems (5); the rest was not read. If the server is trusted and needs more, raise its limits.maxListItems (servers set fx --limit maxListItems=…)`
	if got != want {
		t.Errorf("Into =\n %s\nwant\n %s", got, want)
	}
	if got := Into("signed out", nil); got != "signed out" {
		t.Errorf("Into without an error = %q", got)
	}
}

// The sentences an agent is told are the ones the agent, the front end
// and the engine formatted themselves before (issue #21 item 3), names
// quoted as %q quotes them.
func TestAgentSentences(t *testing.T) {
	const tool, server = "mcp__f\"s__re\u200bad", "f\"s"
	tests := []struct {
		name, got, want string
	}{
		{"held", Held(tool, server), fmt.Sprintf("Tool %q of MCP server %q is held: the server changed its definition after it was first seen, and the user has not accepted the change; the call was not sent. The user can review the change with \"remotemcp tools review %s\".", tool, server, server)},
		{"login", LoginRequired(server, "token"), fmt.Sprintf("MCP server %q needs a sign-in (step %s): sign in (remotemcp auth login %s), then call again", server, "token", server)},
		{"permission", Permission(server, "https://a.example"), fmt.Sprintf("remotemcp has no permission to contact %s (for MCP server %q); approve that origin (remotemcp grants approve %s), then call again", "https://a.example", server, "https://a.example")},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s =\n %s\nwant\n %s", tc.name, tc.got, tc.want)
		}
	}
}
