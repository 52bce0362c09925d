package config

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestCanonicalResource(t *testing.T) {
	tests := []struct {
		in, want string
		errHas   string // non-empty: an error containing this is expected
	}{
		{in: "https://mcp.example.com/mcp", want: "https://mcp.example.com/mcp"},
		{in: "HTTPS://MCP.Example.COM:443/Path", want: "https://mcp.example.com/Path"},
		{in: "http://LOCALHOST:80/mcp", want: "http://localhost/mcp"},
		{in: "http://localhost:8080/mcp", want: "http://localhost:8080/mcp"},
		{in: "https://mcp.example.com:8443/mcp", want: "https://mcp.example.com:8443/mcp"},
		{in: "https://mcp.example.com:80/mcp", want: "https://mcp.example.com:80/mcp"},  // 80 is not https's default
		{in: "http://mcp.example.com:443/mcp", want: "http://mcp.example.com:443/mcp"},  // nor 443 http's
		{in: "https://mcp.example.com:0443/mcp", want: "https://mcp.example.com/mcp"},   // leading zeros
		{in: "https://mcp.example.com:08443/x", want: "https://mcp.example.com:8443/x"}, // leading zeros kept out
		{in: "https://mcp.example.com:/mcp", want: "https://mcp.example.com/mcp"},       // empty port = default
		{in: "https://mcp.example.com", want: "https://mcp.example.com"},                // empty path stays empty
		{in: "https://mcp.example.com/", want: "https://mcp.example.com/"},              // "/" stays
		{in: "https://mcp.example.com/MCP/", want: "https://mcp.example.com/MCP/"},      // path case and slash kept
		{in: "https://mcp.example.com/a/../b", want: "https://mcp.example.com/a/../b"},  // no dot-segment removal
		{in: "https://mcp.example.com/a%2fb", want: "https://mcp.example.com/a%2fb"},    // escapes kept byte for byte
		{in: "https://mcp.example.com/mcp?tenant=A&x=1", want: "https://mcp.example.com/mcp?tenant=A&x=1"},
		{in: "https://mcp.example.com?x=1", want: "https://mcp.example.com?x=1"},
		{in: "https://mcp.example.com/mcp?", want: "https://mcp.example.com/mcp?"},
		{in: "http://[::1]:8080/mcp", want: "http://[::1]:8080/mcp"},
		{in: "http://[0:0:0:0:0:0:0:1]/mcp", want: "http://[::1]/mcp"},
		{in: "https://[2001:DB8::A]:443/mcp", want: "https://[2001:db8::a]/mcp"},
		{in: "https://[::ffff:7f00:1]/", want: "https://[::ffff:127.0.0.1]/"},
		{in: "http://127.0.0.1:3000", want: "http://127.0.0.1:3000"},
		{in: "https://my_host.internal/mcp", want: "https://my_host.internal/mcp"},

		{in: "https://mcp.example.com/mcp#frag", errHas: "fragment"},
		{in: "https://mcp.example.com/mcp#", errHas: "fragment"},
		{in: "https://user:pw@mcp.example.com/mcp", errHas: "user information"},
		{in: "https://@mcp.example.com/", errHas: "user information"},
		{in: "", errHas: "empty"},
		{in: "mcp.example.com/mcp", errHas: "https://mcp.example.com/mcp"},
		{in: "localhost:8080/mcp", errHas: "https://localhost:8080/mcp"},
		{in: "/mcp", errHas: "not an absolute"},
		{in: "ftp://mcp.example.com/", errHas: `scheme "ftp"`},
		{in: "ws://mcp.example.com/", errHas: `scheme "ws"`},
		{in: "https:mcp.example.com", errHas: "not an absolute"},
		{in: "https:///mcp", errHas: "no host"},
		{in: "https://:443/mcp", errHas: "no host"},
		{in: "https://mcp.example.com:99999/", errHas: "out of range"},
		{in: "https://mcp.example.com:0/", errHas: "out of range"},
		{in: "https://mcp.example.com:http/", errHas: "not a number"},
		{in: "https://mcp.example.com:-1/", errHas: "not a number"},
		{in: "https://a:b:c/", errHas: "more than one ':'"},
		{in: "http://[::1/", errHas: "closing ']'"},
		{in: "http://[::1]x/", errHas: "only :port"},
		{in: "http://[fe80::1%25eth0]/", errHas: "zone"},
		{in: "http://[127.0.0.1]/", errHas: "not a valid IPv6"},
		{in: "http://[v1.x]/", errHas: "not a valid IPv6"},
		{in: "http://127.1/", errHas: "not a valid IPv4"},
		{in: "http://127.000.000.001/", errHas: "not a valid IPv4"},
		{in: "http://1.2.3.4.5/", errHas: "not a valid IPv4"},
		{in: "https://ex%41mple.com/", errHas: `contains '%'`},
		{in: "https://bücher.example/", errHas: "non-ASCII"},
		{in: "https://mcp.example.com/a b", errHas: "whitespace at byte"},
		{in: " https://mcp.example.com/", errHas: "leading or trailing whitespace"},
		{in: "https://mcp.example.com/\n", errHas: "leading or trailing whitespace"},
		{in: "https://mcp.example.com/\x00", errHas: "control character"},
		{in: "https://mcp.example.com/%zz", errHas: "does not start an escape"},
		{in: "https://mcp.example.com/%4", errHas: "does not start an escape"},
		{in: "https://mcp.example.com/a<b", errHas: "percent-encoded (%3C)"},
		{in: "https://mcp.example.com/?q=\"", errHas: "query contains"},
		{in: `https://mcp.example.com\evil.com/`, errHas: `contains '\\'`},
		{in: "https://mcp.example.com/" + strings.Repeat("a", MaxURLLength), errHas: "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := CanonicalResource(tt.in)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("CanonicalResource(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.errHas)
				}
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != "url" {
					t.Errorf("error %T %v is not a *FieldError for url", err, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CanonicalResource(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			again, err := CanonicalResource(got)
			if err != nil || again != got {
				t.Errorf("not a fixed point: CanonicalResource(%q) = %q, %v", got, again, err)
			}
		})
	}
}

func TestOrigin(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://mcp.example.com/mcp?x=1", "https://mcp.example.com"},
		{"HTTPS://MCP.example.com:443", "https://mcp.example.com"},
		{"https://mcp.example.com:8443/a", "https://mcp.example.com:8443"},
		{"http://[::1]:80/x", "http://[::1]"},
		{"https://mcp.example.com/mcp#section", "https://mcp.example.com"}, // a fragment is no part of an origin
	}
	for _, tt := range tests {
		if got, err := Origin(tt.in); err != nil || got != tt.want {
			t.Errorf("Origin(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "mcp.example.com", "https://u@h/", "file:///etc/passwd"} {
		if got, err := Origin(bad); err == nil {
			t.Errorf("Origin(%q) = %q; want an error", bad, got)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://mcp.example.com/mcp", "https://MCP.example.com:443/.well-known/oauth-protected-resource/mcp", true},
		{"https://mcp.example.com/mcp", "http://mcp.example.com/mcp", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp", false},
		{"https://mcp.example.com/mcp", "https://auth.example.com/mcp", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com.evil.com/mcp", false},
		{"http://[::1]:8080/", "http://[0::1]:8080/x", true},
		{"https://mcp.example.com/", "not a url", false},
		{"", "", false}, // two unparsable URLs are not "the same origin"
	}
	for _, tt := range tests {
		if got := SameOrigin(tt.a, tt.b); got != tt.want {
			t.Errorf("SameOrigin(%q, %q) = %v; want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func FuzzCanonicalResource(f *testing.F) {
	for _, s := range []string{
		"https://mcp.example.com/mcp",
		"HTTPS://MCP.Example.COM:443/Path",
		"http://LOCALHOST:80/mcp",
		"http://[::1]:8080/mcp?x=1",
		"https://[::ffff:7f00:1]:0443/",
		"https://mcp.example.com:/a%2Fb?q=%20",
		"https://u@h/#x",
		"http://127.1/",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := CanonicalResource(raw)
		verr := ValidateURL(raw)
		if err != nil {
			if verr == nil {
				t.Fatalf("ValidateURL(%q) accepts what CanonicalResource refuses: %v", raw, err)
			}
			return
		}
		again, err := CanonicalResource(c)
		if err != nil || again != c {
			t.Fatalf("not a fixed point: %q -> %q -> %q, %v", raw, c, again, err)
		}
		o, err := Origin(raw)
		if err != nil || !strings.HasPrefix(c, o) {
			t.Fatalf("Origin(%q) = %q, %v; canonical %q does not start with it", raw, o, err, c)
		}
		if !SameResource(raw, c) {
			t.Fatalf("%q and its canonical form %q are not the same resource", raw, c)
		}
		if !SameOrigin(raw, c) {
			t.Fatalf("%q and its canonical form %q are not same-origin", raw, c)
		}
		// net/url, which the HTTP client uses, must read the same host.
		u, err := url.Parse(c)
		if err != nil {
			t.Fatalf("net/url cannot parse canonical %q: %v", c, err)
		}
		if u.User != nil || u.Fragment != "" || u.Opaque != "" {
			t.Fatalf("canonical %q parses with user/fragment/opaque: %#v", c, u)
		}
		if !strings.HasPrefix(o, u.Scheme+"://"+u.Host) {
			t.Fatalf("net/url sees %s://%s in %q; we say origin %q", u.Scheme, u.Host, c, o)
		}
	})
}

func TestSameResource(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://mcp.example.com", "https://mcp.example.com/", true},
		{"https://mcp.example.com?x=1", "https://MCP.example.com:443/?x=1", true},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp", true},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp/", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/MCP", false},
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp?x=1", false},
		{"https://mcp.example.com", "https://mcp.example.com?x", false},
		{"https://mcp.example.com/mcp#a", "https://mcp.example.com/mcp#a", false}, // not resource identifiers
		{"", "", false},
	}
	for _, tt := range tests {
		if got := SameResource(tt.a, tt.b); got != tt.want {
			t.Errorf("SameResource(%q, %q) = %v; want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
