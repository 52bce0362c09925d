package cliflag

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/localapi"
)

func usage(err error) bool {
	var ee *exit.Error
	return errors.As(err, &ee) && ee.Code == localapi.ExitUsage
}

// TestSessionIdle (issue #20 item 2): --session-idle takes a duration,
// never (or 0) and default, like --idle-timeout; anything else is a usage
// error that says what to give.
func TestSessionIdle(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"10m", 10 * time.Minute, false},
		{" 90s ", 90 * time.Second, false},
		{"default", frontend.DefaultSessionIdle, false},
		{"never", -1, false},
		{"0", -1, false},
		{"0s", -1, false},
		{"-5m", 0, true},
		{"soon", 0, true},
		{"", 0, true},
	} {
		got, err := SessionIdle(tc.in)
		if tc.bad != (err != nil) || got != tc.want || err != nil && !usage(err) {
			t.Errorf("SessionIdle(%q) = %v, %v; want %v, bad %v", tc.in, got, err, tc.want, tc.bad)
		}
		if err != nil && !strings.Contains(err.Error(), "never (or 0), or default (10m0s)") {
			t.Errorf("SessionIdle(%q): %v does not say what to give", tc.in, err)
		}
	}
}

func TestTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		parse          func(string) (string, error)
		err            string
	}{
		{"tool", "5m", "5m0s", ToolTimeout, ""},
		{"tool default", " default ", "", ToolTimeout, ""},
		{"tool never", "never", "", ToolTimeout, "a tool call always has a time limit"},
		{"tool 0", "0", "", ToolTimeout, "a tool call always has a time limit"},
		{"tool too long", "1000h", "", ToolTimeout, "(at most " + config.MaxToolTimeout.String() + ")"},
		{"idle", "30m", "30m0s", IdleTimeout, ""},
		{"idle never", "never", "0s", IdleTimeout, ""},
		{"idle 0", "0", "0s", IdleTimeout, ""},
		{"idle default", "default", "default", IdleTimeout, ""},
		{"idle bad", "soon", "", IdleTimeout, `--idle-timeout "soon": give a duration such as 30m`},
	} {
		got, err := tc.parse(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && (!strings.Contains(err.Error(), tc.err) || !usage(err)) {
			t.Errorf("%s: %q, %v; want %q, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestApproval(t *testing.T) {
	for _, tc := range []struct {
		in    string
		reset bool
		want  config.Approval
		bad   bool
	}{
		{"", false, "", false},
		{" ASK ", false, config.ApprovalAsk, false},
		{"host", true, config.ApprovalHost, false},
		{"default", true, config.ApprovalHost, false},
		{"default", false, "", true},
		{"", true, "", true},
		{"maybe", false, "", true},
	} {
		got, err := Approval(tc.in, tc.reset)
		if got != tc.want || tc.bad != (err != nil) || err != nil && !usage(err) {
			t.Errorf("Approval(%q, %v) = %q, %v", tc.in, tc.reset, got, err)
		}
	}
}

func TestLimits(t *testing.T) {
	got, err := Limits([]string{"maxMessageBytes=32MiB", " listTimeout =default"})
	if err != nil || !reflect.DeepEqual(got, map[string]string{"maxMessageBytes": "32MiB", "listTimeout": "default"}) {
		t.Fatalf("Limits: %v %v", got, err)
	}
	if got, err := Limits(nil); got != nil || err != nil {
		t.Fatalf("Limits(nil): %v %v", got, err)
	}
	for _, bad := range []string{"maxMessageBytes", "=1", "maxMessageBytes=x", "nope=1"} {
		if _, err := Limits([]string{bad}); !usage(err) {
			t.Errorf("Limits(%q): %v", bad, err)
		}
	}
}

func TestObject(t *testing.T) {
	for _, ok := range []string{`{}`, ` {"a": [1, {"b": null}]} `} {
		if _, err := Object("ARGS_JSON", ok); err != nil {
			t.Errorf("Object(%s): %v", ok, err)
		}
	}
	for _, bad := range []string{``, `null`, `[]`, `"s"`, `{`, `{} {}`, `{"a":1}x`} {
		if _, err := Object("ARGS_JSON", bad); !usage(err) || !strings.HasPrefix(err.Error(), "ARGS_JSON must be one JSON object") {
			t.Errorf("Object(%q): %v", bad, err)
		}
	}
}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"7717", "127.0.0.1:7717"},
		{":7717", "127.0.0.1:7717"},
		{"localhost:1", "127.0.0.1:1"},
		{"[::1]:2", "[::1]:2"},
		{"10.0.0.1:3", "10.0.0.1:3"},
		{"host", ""},
		{"127.0.0.1:x", ""},
	} {
		got, err := Loopback("--addr", tc.in)
		if got != tc.want || (err != nil) != (tc.want == "") {
			t.Errorf("Loopback(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for addr, want := range map[string]bool{"0": true, "localhost:1": true, "[::1]:1": true, "10.0.0.1:1": false, "example.com:1": false, "": false} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
	if _, err := ListenLoopback("--http", "10.0.0.1:80"); !usage(err) || !strings.Contains(err.Error(), "only a loopback address is allowed") {
		t.Errorf("ListenLoopback off loopback: %v", err)
	}
	ln, err := ListenLoopback("--http", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}
