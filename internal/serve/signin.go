package serve

import (
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/exit"
)

// SignInFlags are serve's flags for people signing in to a gateway's
// settings page (SPEC §9 A11, issue #22; daemon.SignIn): OpenID Connect,
// or an authenticating proxy's header, the admins and the page's public
// URL. They live here so that the CLI only registers them.
type SignInFlags struct {
	Issuer, ClientID, SecretEnv string
	UserHeader                  string
	Proxies, Admins             []string
	PublicURL                   string
}

// Register adds the flags to fs.
func (f *SignInFlags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Issuer, "oidc-issuer", "", "gateway: people sign in to the page with this OpenID provider (issuer URL)")
	fs.StringVar(&f.ClientID, "oidc-client-id", "", "gateway: the page's client id at the OpenID provider")
	fs.StringVar(&f.SecretEnv, "oidc-client-secret-env", "", "gateway: the environment variable holding the client's secret")
	fs.StringVar(&f.UserHeader, "trusted-user-header", "", "gateway: an authenticating proxy names the signed-in person's email in this header")
	fs.StringSliceVar(&f.Proxies, "trusted-proxy", nil, "gateway: the proxy's addresses (CIDR, repeatable); the header counts only from them")
	fs.StringArrayVar(&f.Admins, "admin", nil, "gateway: this person (EMAIL, repeatable) may sign in without being added, and manages people on the page")
	fs.StringVar(&f.PublicURL, "public-url", "", "gateway: the page's URL as browsers reach it through a proxy on this host (https:// makes its cookies Secure)")
}

// set reports whether any of the flags was given.
func (f SignInFlags) set() bool {
	return f.Issuer != "" || f.ClientID != "" || f.SecretEnv != "" || f.UserHeader != "" ||
		len(f.Proxies) > 0 || len(f.Admins) > 0 || f.PublicURL != ""
}

// signIn checks the flags and returns the daemon's sign-in; nil when none
// is given. env reads the client secret's variable. Everything wrong is a
// usage error that names the flag.
func (f SignInFlags) signIn(env func(string) (string, bool)) (*daemon.SignIn, error) {
	if !f.set() {
		return nil, nil
	}
	oidc := f.Issuer != "" || f.ClientID != "" || f.SecretEnv != ""
	proxy := f.UserHeader != "" || len(f.Proxies) > 0
	switch {
	case oidc && proxy:
		return nil, exit.Usagef("people sign in either with OpenID Connect (--oidc-…) or through a proxy (--trusted-…), not both")
	case !oidc && !proxy:
		return nil, exit.Usagef("--admin and --public-url go with a way to sign in: --oidc-issuer URL --oidc-client-id ID --oidc-client-secret-env VAR, or --trusted-user-header NAME --trusted-proxy CIDR")
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
