package credflags

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/redact"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/ask"
	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/localapi"
)

// parse registers the flags on a command and parses args.
func parse(t *testing.T, set bool, args ...string) (*Auth, *Headers) {
	t.Helper()
	cmd := &cobra.Command{Use: "x"}
	a, h := &Auth{Set: set}, &Headers{}
	a.Register(cmd)
	if !set {
		a.RegisterOAuth(cmd)
	}
	h.Register(cmd, set)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return a, h
}

func input(stdin string, env map[string]string) (Input, *strings.Builder) {
	var errw strings.Builder
	return Input{Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Term: &ask.Terminal{In: strings.NewReader(stdin), Err: &errw}}, &errw
}

func isUsage(err error) bool {
	var ee *exit.Error
	return errors.As(err, &ee) && ee.Code == localapi.ExitUsage
}

func TestAuthChange(t *testing.T) {
	env := map[string]string{"TOK": " t0k \n", "EMPTY": " ", "SEC": "s3c"}
	for _, tc := range []struct {
		name  string
		set   bool
		args  []string
		stdin string
		want  *localapi.AuthChange
		err   string
		usage bool
	}{
		{name: "none", args: nil, want: nil},
		{name: "bearer env", args: []string{"--bearer-env", "TOK"}, want: &localapi.AuthChange{Kind: "bearer", Token: "t0k"}},
		{name: "bearer stdin", args: []string{"--bearer-stdin"}, stdin: "from-stdin\nnext\n", want: &localapi.AuthChange{Kind: "bearer", Token: "from-stdin"}},
		{name: "oauth", args: []string{"--oauth", "--client-id", "cid", "--client-secret-env", "SEC", "--scope", "a", "--scope", "b", "--port", "7790"},
			want: &localapi.AuthChange{Kind: "oauth", ClientID: "cid", ClientSecret: "s3c", Scopes: []string{"a", "b"}, RedirectPort: 7790}},
		{name: "port default", args: []string{"--auth", "auto", "--port", "default"}, want: &localapi.AuthChange{Kind: "auto"}},
		{name: "set: port alone", set: true, args: []string{"--port", "7791"}, want: nil},
		{name: "both bearers", args: []string{"--bearer-env", "TOK", "--bearer-stdin"}, err: "give the bearer token with --bearer-env or --bearer-stdin, not both", usage: true},
		{name: "bearer and oauth", args: []string{"--auth", "oauth", "--bearer-env", "TOK"}, err: "--bearer-env and --bearer-stdin give a bearer token; they exclude --auth oauth", usage: true},
		{name: "oauth and auth", args: []string{"--oauth", "--auth", "none"}, err: "--oauth and --auth none: give one of them (they exclude each other)", usage: true},
		// The CLI redacts what it prints: no word may follow "bearer" where
		// the redactor would take it for a token ("bearer [redacted] each other").
		{name: "oauth and auth bearer", args: []string{"--oauth", "--auth", "bearer"}, err: "--oauth and --auth bearer: give one of them (they exclude each other)", usage: true},
		{name: "oauth settings alone", args: []string{"--scope", "a"}, err: "--client-id, --client-secret-env, --scope, --port and --client-metadata-url are OAuth settings; add --auth oauth", usage: true},
		{name: "set: oauth settings alone", set: true, args: []string{"--scope", "a"}, err: "add --auth oauth, which replaces the server's whole auth section", usage: true},
		{name: "port range", args: []string{"--oauth", "--port", "70000"}, err: "--port 70000: give a TCP port, 1 to 65535, or default", usage: true},
		{name: "bearer without token", args: []string{"--auth", "bearer"}, err: "--auth bearer needs the token", usage: true},
		{name: "unknown kind", args: []string{"--auth", "magic"}, err: `--auth "magic": want none, bearer, oauth or auto`, usage: true},
		{name: "env unset", args: []string{"--bearer-env", "NOPE"}, err: "--bearer-env: environment variable NOPE is not set; export it with the bearer token"},
		{name: "env empty", args: []string{"--bearer-env", "EMPTY"}, err: "--bearer-env: environment variable EMPTY is empty; it must hold the bearer token"},
		{name: "stdin empty", args: []string{"--bearer-stdin"}, err: "--bearer-stdin: stdin gave no token"},
	} {
		a, _ := parse(t, tc.set, tc.args...)
		in, _ := input(tc.stdin, env)
		got, err := a.Change(in, "fx")
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || isUsage(err) != tc.usage {
				t.Errorf("%s: err %v (usage %v), want %q (usage %v)", tc.name, err, isUsage(err), tc.err, tc.usage)
			} else if shown := redact.Text(err.Error()); shown != err.Error() {
				t.Errorf("%s: the CLI would print %q (redacted words of its own)", tc.name, shown)
			}
		case err != nil || !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s: %+v %v, want %+v", tc.name, got, err, tc.want)
		}
	}
	if a, _ := parse(t, true, "--port", "7791"); !a.PortOnly() || a.Port() != 7791 {
		t.Errorf("--port alone: PortOnly %v, Port %d", a.PortOnly(), a.Port())
	}
	if a, _ := parse(t, true, "--port", "7791", "--scope", "x"); a.PortOnly() {
		t.Error("--port with --scope is PortOnly")
	}
}

func TestHeaderValues(t *testing.T) {
	env := map[string]string{"KEY": "k3y"}
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  map[string]string
		warn  string
		err   string
	}{
		{name: "none", want: nil},
		{name: "all three", args: []string{"--header", " X-Tenant :  acme ", "--header-env", "X-Key=KEY", "--header-stdin", "X-In"}, stdin: "v1\n",
			want: map[string]string{"X-Tenant": "acme", "X-Key": "k3y", "X-In": "v1"}, warn: "warning: --header X-Tenant puts the value on the command line"},
		{name: "no colon is not echoed", args: []string{"--header", "s3cret"}, err: "--header wants 'Name: value'"},
		{name: "bad name is not echoed", args: []string{"--header", "a s3cret: v"}, err: "--header: a header name is made of letters"},
		{name: "env bad name", args: []string{"--header-env", "a s3cret=KEY"}, err: "--header-env: a header name is made of letters"},
		{name: "twice", args: []string{"--header", "X-A: 1", "--header-env", "x-a=KEY"}, err: "header x-a is given twice (names ignore case); give it once"},
		{name: "set and unset", args: []string{"--header-env", "X-A=KEY", "--unset-header", " x-a"}, err: "header X-A is both set and removed (--unset-header); give one"},
		{name: "env form", args: []string{"--header-env", "X-A"}, err: "--header-env wants Name=VAR"},
		{name: "stdin empty", args: []string{"--header-stdin", "X-A"}, err: "--header-stdin X-A: stdin gave no value"},
	} {
		_, h := parse(t, true, tc.args...)
		in, errw := input(tc.stdin, env)
		got, err := h.Values(in, "fx")
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: err %v, want %q without the value", tc.name, err, tc.err)
			}
		case err != nil || !reflect.DeepEqual(got, tc.want) || !strings.Contains(errw.String(), tc.warn):
			t.Errorf("%s: %v %v, stderr %q; want %v", tc.name, got, err, errw.String(), tc.want)
		}
	}
	if _, h := parse(t, true, "--unset-header", " X-A ", "--unset-header", "X-B"); !reflect.DeepEqual(h.Unset(), []string{"X-A", "X-B"}) {
		t.Errorf("Unset = %q", h.Unset())
	}
}
