package explain

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/localapi"
)

// chain is a refused connect as go-sdk and net/http wrap it.
const chain = `initialize: calling "initialize": sending "initialize": rejected by transport: Post "http://127.0.0.1:9/mcp": dial tcp 127.0.0.1:9: connect: connection refused`

func down() localapi.Server {
	return localapi.Server{ID: "down", URL: "http://127.0.0.1:9/mcp", State: localapi.StateError,
		Reason: &localapi.Reason{Class: localapi.Class("network"), Message: chain}}
}

func TestSplitChain(t *testing.T) {
	s := down()
	for _, tc := range []struct {
		name, msg   string
		s           *localapi.Server
		words, want string
	}{
		{"no server", "connect down: " + chain, nil, "connect down: " + chain, ""},
		{"whole chain", "connect down: " + chain, &s, "connect down: connection refused", chain},
		{"a tail of the chain", "server down: connect: connection refused", &s, "server down: connect: connection refused", ""},
		{"chain after words", "down: rejected by transport: Post \"http://127.0.0.1:9/mcp\": dial tcp 127.0.0.1:9: connect: connection refused", &s,
			"down: connection refused", `rejected by transport: Post "http://127.0.0.1:9/mcp": dial tcp 127.0.0.1:9: connect: connection refused`},
	} {
		words, got := SplitChain(tc.msg, tc.s)
		if words != tc.words || got != tc.want {
			t.Errorf("%s: SplitChain = %q, %q; want %q, %q", tc.name, words, got, tc.words, tc.want)
		}
	}
}

func TestCauseErrorSplit(t *testing.T) {
	inner := errors.New("listen tcp 127.0.0.1:7717: bind: address already in use")
	for _, tc := range []struct {
		name        string
		ce          *CauseError
		words, want string
	}{
		{"innermost", &CauseError{Words: "listen on 127.0.0.1:7717", Err: inner}, "listen on 127.0.0.1:7717: address already in use", inner.Error()},
		{"given inner", &CauseError{Words: "port taken", Inner: "bind: address already in use", Err: inner}, "port taken: bind: address already in use", inner.Error()},
		{"nothing to cut", &CauseError{Words: "w", Err: errors.New("plain")}, "w: plain", ""},
	} {
		msg := fmt.Errorf("%w", tc.ce).Error()
		words, got := tc.ce.Split(msg)
		if words != tc.words || got != tc.want {
			t.Errorf("%s: Split = %q, %q; want %q, %q", tc.name, words, got, tc.words, tc.want)
		}
		if !errors.Is(tc.ce, tc.ce.Err) {
			t.Errorf("%s: errors.Is does not see the wrapped error", tc.name)
		}
	}
}

func TestFailure(t *testing.T) {
	s := down()
	for _, tc := range []struct {
		name    string
		err     error
		verbose bool
		want    string
	}{
		{"plain", errors.New("no server \"x\"\nsecond line"), false, "remotemcp: no server \"x\" second line\n"},
		{"cause cut", &CauseError{Words: "listen on :1", Err: errors.New("listen tcp :1: bind: denied")}, false,
			"remotemcp: listen on :1: denied\n  (run again with --verbose for the whole cause)\n"},
		{"cause shown", &CauseError{Words: "listen on :1", Err: errors.New("listen tcp :1: bind: denied")}, true,
			"remotemcp: listen on :1: denied\n  cause: listen tcp :1: bind: denied\n"},
		{"engine error", &localapi.Error{Code: localapi.CodeUnavailable, Message: "connect down: " + chain, Server: &s}, false,
			"remotemcp: connect down: connection refused\n  server down: error (network)\n" +
				"  what to do: " + localapi.Fill(localapi.Table.Reasons[localapi.ReasonNetwork].CLI, map[string]string{"id": "down", "url": s.URL}) + "\n" +
				"  (run again with --verbose for the whole cause)\n"},
		{"not sent", &localapi.Error{Code: localapi.CodeNotFound, Message: "no such tool", NotSent: true}, false,
			"remotemcp: no such tool\n  nothing was sent to the server\n"},
	} {
		var b strings.Builder
		Failure(&b, tc.err, tc.verbose)
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, b.String(), tc.want)
		}
	}
}

func TestHint(t *testing.T) {
	s := down()
	auth := localapi.Server{ID: "docs", State: localapi.StateNeedsAuth, Auth: localapi.AuthInfo{Kind: "oauth"}}
	for _, tc := range []struct {
		name string
		e    *localapi.Error
		want string
	}{
		{"permission", &localapi.Error{Permission: &localapi.PermissionInfo{Origin: "https://as.example"}},
			`allow the origin with "remotemcp grants approve https://as.example" (or on the settings page), then try again`},
		{"needs auth", &localapi.Error{Server: &auth}, `sign in with "remotemcp auth login docs"`},
		{"login code", &localapi.Error{Code: localapi.CodeLoginRequired, Server: &localapi.Server{ID: "x"}}, `sign in with "remotemcp auth login x"`},
		{"not found", &localapi.Error{Code: localapi.CodeNotFound, Server: &s}, ""},
		{"no server", &localapi.Error{Code: localapi.CodeUnavailable}, ""},
		{"permission reason without origin", &localapi.Error{Server: &localapi.Server{ID: "p", Reason: &localapi.Reason{Class: "permission"}}}, ""},
		{"network", &localapi.Error{Server: &s}, localapi.Fill(localapi.Table.Reasons[localapi.ReasonNetwork].CLI, map[string]string{"id": "down", "url": s.URL})},
	} {
		if got := Hint(tc.e); got != tc.want {
			t.Errorf("%s: Hint = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestReasonText(t *testing.T) {
	s := down()
	own := localapi.Server{ID: "x", State: localapi.StateError, Reason: &localapi.Reason{Class: "http", HTTPStatus: 404, Message: "no MCP endpoint at this URL"}}
	for _, tc := range []struct {
		name    string
		s       localapi.Server
		verbose bool
		want    string
		cut     bool
	}{
		{"short", s, false, "network: cannot reach http://127.0.0.1:9/mcp: connection refused", true},
		{"verbose", s, true, "network: " + chain, false},
		{"own sentence", own, false, "http, HTTP 404: no MCP endpoint at this URL", false},
		{"none", localapi.Server{ID: "ok"}, false, "", false},
	} {
		got, cut := ReasonText(tc.s, tc.verbose)
		if got != tc.want || cut != tc.cut {
			t.Errorf("%s: ReasonText = %q, %v; want %q, %v", tc.name, got, cut, tc.want, tc.cut)
		}
	}
}

// Issue #20 item 1: a failed server's reason says before when it is not
// tried again and how to try now — only while a clock-driven wait is
// ahead, never for a server waiting for its sign-in, nor a ready one.
func TestNextTryWords(t *testing.T) {
	at := time.Date(2026, 12, 2, 15, 4, 5, 0, time.Local)
	for _, tc := range []struct {
		s    localapi.Server
		want string
	}{
		{localapi.Server{ID: "down", State: localapi.StateError, RetryAt: &at}, ` (not tried again before 15:04:05; "remotemcp connect down" tries now)`},
		{localapi.Server{ID: "down", State: localapi.StateError}, ""},
		{localapi.Server{ID: "docs", State: localapi.StateNeedsAuth, RetryAt: &at}, ""},
		{localapi.Server{ID: "ok", State: localapi.StateReady, RetryAt: &at}, ""},
	} {
		if got := NextTry(tc.s); got != tc.want {
			t.Errorf("%s in %s: %q, want %q", tc.s.ID, tc.s.State, got, tc.want)
		}
	}
}
