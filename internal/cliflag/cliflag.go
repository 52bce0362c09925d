// Package cliflag reads the values of the CLI's flags and arguments that
// are more than their type: durations that also take "never" and
// "default", loopback addresses, --approval, --limit NAME=VALUE, a URL
// given for a server, and a JSON object argument. A value that will not
// do is a usage error (exit.Usagef) saying what to give instead.
package cliflag

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/exit"
)

// The words the timeout flags take besides a duration. In those flags 0
// means what "never" means; "default" resets to the built-in value.
const (
	Default = "default"
	Never   = "never"
)

// ToolTimeout checks --tool-timeout and returns the engine's
// toolTimeout: a Go duration string, or "" for the default (60s). A call
// always has a time limit, so never (and 0, which means never in
// --idle-timeout) is a usage error rather than a silent default.
func ToolTimeout(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == Default {
		return "", nil
	}
	d, err := duration(v)
	switch {
	case v == Never || err == nil && d == 0:
		return "", exit.Usagef("--tool-timeout %s: a tool call always has a time limit; give a duration such as 5m or 90s, or default (60s)", clitext.Cell(v))
	case err != nil || d < 0 || d > config.MaxToolTimeout:
		return "", exit.Usagef("--tool-timeout %q: give a duration such as 5m or 90s (at most %s), or default (60s)", clitext.Cell(v), config.MaxToolTimeout)
	}
	return d.String(), nil
}

// IdleTimeout checks --idle-timeout and returns the engine's
// idleTimeout: a Go duration string ("0s" is never) or "default".
func IdleTimeout(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch v {
	case Default:
		return Default, nil
	case Never:
		return "0s", nil
	}
	d, err := duration(v)
	if err != nil || d < 0 || d > config.MaxIdleTimeout {
		return "", exit.Usagef("--idle-timeout %q: give a duration such as 30m (at most %s), never (or 0), or default (10m)", clitext.Cell(v), config.MaxIdleTimeout)
	}
	return d.String(), nil
}

// SessionIdleName is the flag of mcp --http and serve --mcp-http that
// ends idle host sessions (issue #20 item 2).
const SessionIdleName = "session-idle"

// SessionIdle checks --session-idle and returns the front end's
// HTTPOptions.SessionIdle: negative for never, as --idle-timeout's never
// (or 0).
func SessionIdle(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	switch v {
	case Default:
		return frontend.DefaultSessionIdle, nil
	case Never:
		return -1, nil
	}
	d, err := duration(v)
	switch {
	case err != nil || d < 0:
		return 0, exit.Usagef("--%s %q: give a duration such as 30m, never (or 0), or default (%s)", SessionIdleName, clitext.Cell(v), frontend.DefaultSessionIdle)
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// duration is time.ParseDuration that also takes a bare 0.
func duration(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	return time.ParseDuration(v)
}

// Approval reads --approval: host or ask, and with reset (servers set)
// also "default" (host).
func Approval(v string, reset bool) (config.Approval, error) {
	switch a := config.Approval(strings.ToLower(strings.TrimSpace(v))); {
	case a == "":
		if reset {
			return "", exit.Usagef("--approval is empty; give host or ask")
		}
		return "", nil
	case slices.Contains(config.Approvals, a):
		return a, nil
	case reset && a == Default:
		return config.ApprovalHost, nil
	}
	return "", exit.Usagef("--approval %q: give host (the MCP host approves, the default) or ask (remotemcp asks you before every call)", clitext.Cell(v))
}

// Limits reads --limit NAME=VALUE flags into the engine's limits by name
// (nil for none). A bad value is a mistake on the command line (exit
// status 2), caught here rather than as the engine's bad request.
func Limits(kvs []string) (map[string]string, error) {
	var out map[string]string
	var probe config.Limits
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, exit.Usagef("--limit %q: write NAME=VALUE, e.g. --limit maxMessageBytes=32MiB; the limits are %s", kv, strings.Join(config.LimitNames(), ", "))
		}
		if err := probe.Set(strings.TrimSpace(k), v); err != nil {
			return nil, exit.Usagef("--limit %s: %v", clitext.Cell(kv), err)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

// ServerURL checks a URL given on the command line for server id.
func ServerURL(id, url string) error {
	err := config.ValidateURL(url)
	var fe *config.FieldError
	if errors.As(err, &fe) {
		return &config.FieldError{ServerID: id, Field: fe.Field, Problem: fe.Problem}
	}
	return err
}

// Object checks that raw, the argument what, is one JSON object.
func Object(what, raw string) (json.RawMessage, error) {
	t := bytes.TrimSpace([]byte(raw))
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		why := "not a JSON object"
		if err != nil {
			why = err.Error()
		}
		return nil, exit.Usagef(`%s must be one JSON object such as '{"text": "hi"}' (%s)`, what, why)
	}
	return json.RawMessage(t), nil
}

// Loopback reads the address of flag: PORT, :PORT, localhost:PORT or
// HOST:PORT, as HOST:PORT (127.0.0.1 for no host or localhost).
func Loopback(flag, s string) (string, error) {
	hp := s
	if strings.Trim(s, "0123456789") == "" {
		hp = ":" + s
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil || port == "" || strings.Trim(port, "0123456789") != "" {
		return "", exit.Usagef("%s %q: want PORT or HOST:PORT, e.g. 7717 or 127.0.0.1:7717", flag, s)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// IsLoopback reports whether addr (as Loopback reads it) names a
// literal loopback address.
func IsLoopback(addr string) bool {
	hp, err := Loopback("", addr)
	if err != nil {
		return false
	}
	host, _, _ := net.SplitHostPort(hp)
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ListenLoopback listens on the address of flag, which must be a loopback
// HOST:PORT (or PORT alone, on 127.0.0.1): the MCP endpoint is for hosts
// on this machine, and its bearer token is no reason to offer it to the
// network.
func ListenLoopback(flag, addr string) (net.Listener, error) {
	hp, err := Loopback(flag, addr)
	if err != nil {
		return nil, exit.Usagef("%s %q: want 127.0.0.1:PORT, [::1]:PORT, localhost:PORT or PORT", flag, addr)
	}
	if !IsLoopback(addr) {
		return nil, exit.Usagef("%s %q: only a loopback address is allowed (127.0.0.1, [::1] or localhost): the endpoint must not be reachable from the network", flag, addr)
	}
	ln, err := net.Listen("tcp", hp)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w (another program has this port; choose another with %s)", flag, hp, err, flag)
	}
	return ln, nil
}
