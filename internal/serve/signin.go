package serve

import (
	"net"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/exit"
)

// PageFlags are serve's flags for a gateway's settings page (SPEC §9
// A11, issue #22): how people sign in (daemon.SignIn: OpenID Connect, or
// an authenticating proxy's header), the admins, the page's public URL,
// and where it listens beyond loopback (with TLS, or behind a proxy).
// They live here so that the CLI only registers them.
type PageFlags struct {
	Issuer, ClientID, SecretEnv string
	UserHeader                  string
	Proxies, Admins             []string
	PublicURL                   string
	Listen, TLSCert, TLSKey     string
	BehindProxy                 bool
}

// Register adds the flags to fs.
func (f *PageFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Issuer, "oidc-issuer", "", "gateway: OpenID Connect issuer URL (people's sign-in on the page; hosts' OAuth access tokens on --mcp-http)")
	fs.StringVar(&f.ClientID, "oidc-client-id", "", "gateway: the page's client id at the OpenID provider")
	fs.StringVar(&f.SecretEnv, "oidc-client-secret-env", "", "gateway: the environment variable holding the client's secret")
	fs.StringVar(&f.UserHeader, "trusted-user-header", "", "gateway: an authenticating proxy names the signed-in person's email in this header")
	fs.StringSliceVar(&f.Proxies, "trusted-proxy", nil, "gateway: the proxy's addresses (CIDR, repeatable); the header counts only from them")
	fs.StringArrayVar(&f.Admins, "admin", nil, "gateway: this person (EMAIL, repeatable) may sign in without being added, and manages people on the page")
	fs.StringVar(&f.PublicURL, "public-url", "", "gateway: the page's URL as browsers reach it, e.g. through a proxy (https:// makes its cookies Secure)")
	fs.StringVar(&f.Listen, "listen", "", "gateway: the page's HOST:PORT instead of --addr; beyond loopback it needs --tls-cert/--tls-key or --behind-proxy, and --public-url https://…")
	fs.StringVar(&f.TLSCert, "tls-cert", "", "gateway: serve the page over HTTPS with this certificate chain (PEM file)")
	fs.StringVar(&f.TLSKey, "tls-key", "", "gateway: the TLS certificate's private key (PEM file)")
	fs.BoolVar(&f.BehindProxy, "behind-proxy", false, "gateway: a proxy in front of the page terminates TLS (for --listen beyond loopback)")
}

// MCPFlags are serve's flags for a gateway's MCP endpoint (--mcp-http)
// beyond its listener (issue #22).
type MCPFlags struct {
	// PublicURL is the endpoint's URL as hosts reach it: with
	// --oidc-issuer, the resource its OAuth access tokens must name.
	PublicURL string
}

// Register adds the flags to fs.
func (f *MCPFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.PublicURL, "mcp-public-url", "", "gateway: the --mcp-http endpoint's URL as hosts reach it (https://HOST/mcp through a proxy; default its own): with --oidc-issuer, the audience of hosts' OAuth access tokens")
}

// set reports whether any of the flags was given.
func (f PageFlags) set() bool {
	return f.Issuer != "" || f.ClientID != "" || f.SecretEnv != "" || f.UserHeader != "" ||
		len(f.Proxies) > 0 || len(f.Admins) > 0 || f.PublicURL != "" ||
		f.Listen != "" || f.TLSCert != "" || f.TLSKey != "" || f.BehindProxy
}

// signIn checks the flags and returns the daemon's sign-in; nil when none
// is given. env reads the client secret's variable. Everything wrong is a
// usage error that names the flag.
func (f PageFlags) signIn(env func(string) (string, bool)) (*daemon.SignIn, error) {
	if !f.set() {
		return nil, nil
	}
	oidc := f.Issuer != "" || f.ClientID != "" || f.SecretEnv != ""
	proxy := f.UserHeader != "" || len(f.Proxies) > 0
	switch {
	case oidc && proxy:
		return nil, exit.Usagef("people sign in either with OpenID Connect (--oidc-…) or through a proxy (--trusted-…), not both")
	case !oidc && !proxy:
		return nil, exit.Usagef("--admin, --public-url, --listen, --tls-… and --behind-proxy go with a way to sign in: --oidc-issuer URL --oidc-client-id ID --oidc-client-secret-env VAR, or --trusted-user-header NAME --trusted-proxy CIDR")
	case (f.TLSCert == "") != (f.TLSKey == ""):
		return nil, exit.Usagef("TLS needs both --tls-cert and --tls-key")
	}
	if f.Listen != "" {
		host, _, err := net.SplitHostPort(f.Listen)
		if err != nil || net.ParseIP(host) == nil {
			return nil, exit.Usagef("--listen %q: want IP:PORT, e.g. 0.0.0.0:8443 or 127.0.0.1:7717 (an IP address: a name may resolve elsewhere)", f.Listen)
		}
		if ip := net.ParseIP(host); !ip.IsLoopback() {
			switch {
			case f.TLSCert == "" && !f.BehindProxy:
				return nil, exit.Usagef("--listen %s is beyond loopback: serve TLS (--tls-cert, --tls-key) or put a proxy that does in front (--behind-proxy)", f.Listen)
			case !strings.HasPrefix(strings.ToLower(f.PublicURL), "https://"):
				return nil, exit.Usagef("--listen %s is beyond loopback: give the URL browsers use, --public-url https://HOST", f.Listen)
			}
		}
	}
	si := &daemon.SignIn{Admins: f.Admins, PublicURL: f.PublicURL}
	if oidc {
		if f.Issuer == "" || f.ClientID == "" {
			return nil, exit.Usagef("OpenID Connect needs --oidc-issuer URL and --oidc-client-id ID (and --oidc-client-secret-env VAR for a confidential client)")
		}
		o := &daemon.OIDC{Issuer: f.Issuer, ClientID: f.ClientID}
		if f.SecretEnv != "" {
			v, ok := env(f.SecretEnv)
			if !ok || v == "" {
				return nil, exit.Usagef("--oidc-client-secret-env %s: the variable is not set (it holds the client's secret, which never goes on the command line)", f.SecretEnv)
			}
			o.ClientSecret = v
		}
		si.OIDC = o
		return si, nil
	}
	if f.UserHeader == "" || len(f.Proxies) == 0 {
		return nil, exit.Usagef("a proxy's header needs --trusted-user-header NAME and --trusted-proxy CIDR (the proxy's addresses: the header counts only from there)")
	}
	si.TrustedUserHeader = f.UserHeader
	for _, c := range f.Proxies {
		p, err := parseCIDR(c)
		if err != nil {
			return nil, exit.Usagef("--trusted-proxy %q: want an address or CIDR, e.g. 127.0.0.1/32 or 10.0.0.0/8", c)
		}
		si.TrustedProxies = append(si.TrustedProxies, p)
	}
	return si, nil
}

// parseCIDR reads a CIDR, or one address as a prefix of its full length.
func parseCIDR(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.ParsePrefix(s)
}
