package serve

import (
	"errors"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/exit"
	"github.com/remotemcp/remotemcp/localapi"
)

// serve's sign-in flags: each way to sign in needs its flags, the two
// ways do not mix, the client secret comes from the environment only,
// and what is wrong is a usage error naming the flag.
func TestPageFlags(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "GW_SECRET" {
			return "s3cret", true
		}
		return "", false
	}
	si, err := PageFlags{}.signIn(env)
	if si != nil || err != nil {
		t.Fatalf("no flags: %v %v", si, err)
	}
	si, err = PageFlags{Issuer: "https://id.example", ClientID: "gw", SecretEnv: "GW_SECRET", Admins: []string{"a@example.org"}}.signIn(env)
	if err != nil || si.OIDC == nil || si.OIDC.ClientSecret != "s3cret" || si.OIDC.ClientID != "gw" || !slices.Equal(si.Admins, []string{"a@example.org"}) {
		t.Fatalf("OpenID Connect: %+v %v", si, err)
	}
	si, err = PageFlags{UserHeader: "X-Email", Proxies: []string{"127.0.0.1", "10.0.0.0/8"}, PublicURL: "https://mcp.example"}.signIn(env)
	if err != nil || si.TrustedUserHeader != "X-Email" || si.PublicURL != "https://mcp.example" ||
		!slices.Equal(si.TrustedProxies, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8")}) {
		t.Fatalf("proxy: %+v %v", si, err)
	}
	for _, c := range []struct {
		f    PageFlags
		says string
	}{
		{PageFlags{Issuer: "https://id.example", ClientID: "gw", UserHeader: "X"}, "not both"},
		{PageFlags{Admins: []string{"a@example.org"}}, "go with a way to sign in"},
		{PageFlags{Issuer: "https://id.example"}, "--oidc-client-id"},
		{PageFlags{Issuer: "https://id.example", ClientID: "gw", SecretEnv: "NOPE"}, "NOPE: the variable is not set"},
		{PageFlags{UserHeader: "X-Email"}, "--trusted-proxy CIDR"},
		{PageFlags{UserHeader: "X-Email", Proxies: []string{"proxy.example"}}, `--trusted-proxy "proxy.example"`},
		{PageFlags{Listen: "0.0.0.0:8443"}, "go with a way to sign in"},
		{PageFlags{UserHeader: "X", Proxies: []string{"10.0.0.1"}, TLSCert: "c.pem"}, "both --tls-cert and --tls-key"},
		{PageFlags{UserHeader: "X", Proxies: []string{"10.0.0.1"}, Listen: "gw.example:443"}, "want IP:PORT"},
		{PageFlags{UserHeader: "X", Proxies: []string{"10.0.0.1"}, Listen: "0.0.0.0:8443"}, "serve TLS (--tls-cert, --tls-key) or put a proxy"},
		{PageFlags{UserHeader: "X", Proxies: []string{"10.0.0.1"}, Listen: "0.0.0.0:8443", BehindProxy: true}, "--public-url https://HOST"},
		{PageFlags{UserHeader: "X", Proxies: []string{"10.0.0.1"}, Listen: "0.0.0.0:8443", TLSCert: "c", TLSKey: "k", PublicURL: "http://gw.example"}, "--public-url https://HOST"},
	} {
		_, err := c.f.signIn(env)
		var ue *exit.Error
		if err == nil || !errors.As(err, &ue) || ue.Code != localapi.ExitUsage || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want a usage error saying %q", c.f, err, c.says)
		}
	}
}

// A personal daemon refuses the gateway's sign-in flags before it opens
// anything: its page opens with its login link.
func TestPersonalDaemonRefusesPageFlags(t *testing.T) {
	dir := t.TempDir()
	err := Daemon{Dir: dir, Addr: "127.0.0.1:0", Page: PageFlags{Issuer: "https://id.example", ClientID: "gw"}}.Run(t.Context())
	var ue *exit.Error
	if !errors.As(err, &ue) || ue.Code != localapi.ExitUsage || !strings.Contains(err.Error(), "serve --store") {
		t.Fatalf("%v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused serve wrote %v", entries)
	}
}

// --mcp-public-url is a gateway's, and the URL of its --mcp-http
// endpoint: a personal daemon refuses it, and so does a gateway without
// --mcp-http, before either opens anything (issue #22, hosts' OAuth).
func TestMCPPublicURLRefused(t *testing.T) {
	for _, c := range []struct {
		d    Daemon
		says string
	}{
		{Daemon{MCP: MCPFlags{PublicURL: "https://gw.example/mcp"}}, "is for a gateway's MCP endpoint"},
		{Daemon{Store: "postgres:///nowhere", MCP: MCPFlags{PublicURL: "https://gw.example/mcp"}}, "it goes with --mcp-http"},
	} {
		dir := t.TempDir()
		c.d.Dir, c.d.Addr = dir, "127.0.0.1:0"
		err := c.d.Run(t.Context())
		var ue *exit.Error
		if !errors.As(err, &ue) || ue.Code != localapi.ExitUsage || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want a usage error saying %q", c.d.MCP, err, c.says)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("a refused serve wrote %v", entries)
		}
	}
}
