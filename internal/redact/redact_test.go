package redact

import (
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		// URLs: every query value but a few harmless ones.
		{"url in an error", `Post "https://x/mcp?access_token=abc123": refused (Bearer eyJhbG.c.d)`, `Post "https://x/mcp?access_token=[redacted]": refused (Bearer [redacted])`},
		{"oauth callback", "https://cb/?code=XYZ&state=S", "https://cb/?code=[redacted]&state=[redacted]"},
		{"key", "https://h/mcp?key=sk-live-1", "https://h/mcp?key=[redacted]"},
		{"any name", "https://h/mcp?secret=S1&jwt=J1&x=y&page=2&limit=10&v=3", "https://h/mcp?secret=[redacted]&jwt=[redacted]&x=[redacted]&page=2&limit=10&v=3"},
		{"bare parameter", "https://h/mcp?TOKEN123&lang=en", "https://h/mcp?[redacted]&lang=en"},
		{"encoded safe key", "https://h/?p%61ge=2&%70age=x", "https://h/?p%61ge=2&%70age=x"},
		{"password in userinfo", "https://user:hunter2@h/mcp", "https://user:[redacted]@h/mcp"},
		{"token as user", "https://ghp_abc@github.com/x", "https://[redacted]@github.com/x"},
		{"fragment", "https://cb/#access_token=t0k&token_type=bearer", "https://cb/#access_token=[redacted]&token_type=[redacted]"},
		{"anchor kept", "see https://docs/x#section-2.", "see https://docs/x#section-2."},
		{"trailing bracket", "(https://h/?a=b)", "(https://h/?a=[redacted])"},
		{"path parameter", "https://h/app;jsessionid=ABC123?page=1", "https://h/app;jsessionid=[redacted]?page=1"},
		{"ipv6 host", "http://[::1]:8080/mcp?sig=zz", "http://[::1]:8080/mcp?sig=[redacted]"},
		// Authorization schemes.
		{"header bearer", "Authorization: Bearer abc.def", "Authorization: Bearer [redacted]"},
		{"header basic", "Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [redacted]"},
		{"header unknown scheme", "Authorization: sk_live_abc (expired)", "Authorization: [redacted]"},
		{"header digest", `Authorization: Digest username="u", response="6629fae4"`, "Authorization: Digest [redacted]"},
		{"header no space", "authorization:tok123", "authorization:[redacted]"},
		{"proxy header", "Proxy-Authorization: Negotiate YIIabc==", "Proxy-Authorization: Negotiate [redacted]"},
		{"go header map", "map[Authorization:[Bearer abc] Accept:[*/*]]", "map[Authorization:[[redacted]] Accept:[*/*]]"},
		{"free bearer", "sent bearer abc and DPoP xyz", "sent bearer [redacted] and DPoP [redacted]"},
		{"free basic", "with Basic dXNlcjpwYXNz", "with Basic [redacted]"},
		{"short basic", "with Basic YTpi", "with Basic [redacted]"},
		{"free token", "Token 3f9a0c1d2e", "Token [redacted]"},
		{"free digest", `Digest username="u", nonce="n", response="r"` + "\nnext", "Digest [redacted]\nnext"},
		{"challenge kept", `WWW-Authenticate: Bearer resource_metadata="https://h/.well-known/x"`, `WWW-Authenticate: Bearer resource_metadata="https://h/.well-known/x"`},
		{"challenge error", `Bearer error="invalid_token", error_description="expired"`, `Bearer error="invalid_token", error_description="expired"`},
		{"padded token68", "Bearer abc==", "Bearer [redacted]"},
		// Fields.
		{"form", "client_secret=hunter2, token=t", "client_secret=[redacted], token=[redacted]"},
		{"misses", "secret=a jwt=b sessionid=c tok=d pass=e credential=f", "secret=[redacted] jwt=[redacted] sessionid=[redacted] tok=[redacted] pass=[redacted] credential=[redacted]"},
		{"json", `{"access_token":"abc","expires_in":3600,"clientSecret": "s3"}`, `{"access_token":"[redacted]","expires_in":3600,"clientSecret": "[redacted]"}`},
		{"escaped json", `body "{\"refresh_token\":\"r1\",\"ok\":true}"`, `body "{\"refresh_token\":\"[redacted]\",\"ok\":true}"`},
		{"json number", `{"pin": 1234}`, `{"pin": [redacted]}`},
		{"json list", `{"tokens": ["a", "b"], "n": 1}`, `{"tokens": [[redacted]], "n": 1}`},
		{"yaml", "server:\n  access_token: abc def\n  url: x\n", "server:\n  access_token: [redacted]\n  url: x\n"},
		{"yaml list", "- api-key: k1\n- name: n", "- api-key: [redacted]\n- name: n"},
		{"header key", "got X-Api-Key: k-123 from", "got X-Api-Key: [redacted] from"},
		{"cookie", "Cookie: a=b; sid=c\nok", "Cookie: [redacted]\nok"},
		{"camel and kebab", "apiKey=1 api-key=2 API_KEY=3 passwd=4 x-amz-signature=5", "apiKey=[redacted] api-key=[redacted] API_KEY=[redacted] passwd=[redacted] x-amz-signature=[redacted]"},
		{"code word", "code=abcdef status_code=401 jsonrpc code=-32602", "code=[redacted] status_code=401 jsonrpc code=-32602"},
		{"code verifier", "code_verifier=xyz", "code_verifier=[redacted]"},
		{"quoted value", `password="a b c" user="u"`, `password="[redacted]" user="u"`},
		{"dotted name", "oauth.client_secret=x", "oauth.client_secret=[redacted]"},
		// What must stay.
		{"nothing secret", "nothing secret here: 503", "nothing secret here: 503"},
		{"host and port", "dial tcp auth.example.com:443: connection refused", "dial tcp auth.example.com:443: connection refused"},
		{"host lookup", "lookup auth.example.com: no such host", "lookup auth.example.com: no such host"},
		{"prose", "the keyboard and the token expired; basic authentication failed", "the keyboard and the token expired; basic authentication failed"},
		{"comparison", "token == nil", "token == nil"},
		{"error chain", "remotemcp: oauth: origin http://127.0.0.1:1 is not allowed", "remotemcp: oauth: origin http://127.0.0.1:1 is not allowed"},
		{"flag in an error", "--bearer-env: environment variable NOPE is not set", "--bearer-env: environment variable NOPE is not set"},
		{"quoted prose", `re-supply the token: "--bearer-env VAR"`, `re-supply the token: "--bearer-env VAR"`},
		{"field path in an error", `auth.token: starts with "Bearer "`, `auth.token: starts with "Bearer "`},
		{"header field path in an error", "server t: headers.Authorization: cannot be set: remotemcp sends Authorization itself", "server t: headers.Authorization: cannot be set: remotemcp sends Authorization itself"},
		{"header field path with a credential", "headers.Authorization: Bearer abc123 and headers.Cookie: sid-9f8e7d", "headers.Authorization: Bearer [redacted] and headers.Cookie: [redacted]"},
		{"mid-line credential", "sent password: hunter2 to", "sent password: [redacted] to"},
		{"empty value", "token= next", "token= next"},
		{"malformed url", "http://%zz?x=1&&=&page", "http://%zz?x=[redacted]&&=&page"},
		{"unclosed quote", `{"secret":"abc`, `{"secret":"[redacted]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Text(c.in)
			if got != c.want {
				t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			if again := Text(got); again != got {
				t.Errorf("not idempotent: %q → %q", got, again)
			}
		})
	}
}

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://h/mcp", "https://h/mcp"},
		{"https://h/mcp?secret=S1&jwt=J1", "https://h/mcp?secret=[redacted]&jwt=[redacted]"},
		{"https://h/mcp?Page=3&FORMAT=json&locale=de-DE", "https://h/mcp?Page=3&FORMAT=json&locale=de-DE"},
		{"https://u:p@h:8443/mcp?", "https://u:[redacted]@h:8443/mcp?"},
		{"https://:p@h/", "https://:[redacted]@h/"},
		{"https://a@b@h/", "https://[redacted]@h/"},
		{"https://h/mcp?a=1;b=2", "https://h/mcp?a=[redacted];b=[redacted]"},
		{"h/mcp?token=x", "h/mcp?token=[redacted]"},
		{"", ""},
		{"?", "?"},
		{"://x?y=z", "://x?y=[redacted]"},
		{"https://h/mcp#frag", "https://h/mcp#frag"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name string
		want fieldKind
	}{
		{"access_token", secretField}, {"clientSecret", secretField}, {"X-Api-Key", secretField},
		{"sessionid", secretField}, {"tok", secretField}, {"user_pw", secretField}, {"otp", secretField},
		{"Authorization", headerField}, {"set-cookie", headerField}, {"client_assertion", secretField},
		{"statusCode", numberField}, {"code", numberField},
		{"name", plainField}, {"url", plainField}, {"example.com", plainField}, {"token.example", plainField},
		{"state", plainField}, {"tokyo", plainField},
	} {
		if got := classify(c.name); got != c.want {
			t.Errorf("classify(%q) = %d, want %d", c.name, got, c.want)
		}
	}
}

// plantForms are the shapes a secret comes in; %s is where it goes.
var plantForms = []string{
	"Authorization: Bearer %s",
	"Authorization: Basic %s",
	"Authorization: DPoP %s",
	"Authorization: Token %s",
	"Authorization: %s",
	"authorization=%s",
	"Bearer %s",
	"bearer\t%s",
	"DPoP %s",
	"Basic %s",
	"Digest username=\"u\", response=\"%s\"",
	"https://h/mcp?secret=%s&page=1",
	"https://h/mcp?page=1&jwt=%s",
	"https://h/mcp?anything=%s",
	"https://u:%s@h/",
	"https://%s@h/",
	"https://cb/#access_token=%s",
	"secret=%s",
	"jwt=%s",
	"sessionid=%s",
	"tok=%s",
	"pass=%s",
	"credential=%s",
	"api_key=%s",
	"clientSecret=%s",
	"X-Api-Key: %s",
	`{"access_token":"%s"}`,
	`{"clientSecret": "%s"}`,
	`{\"refresh_token\":\"%s\"}`,
	"access_token: %s",
	"  - client_secret: %s",
	"Cookie: sid=%s",
	`password="%s"`,
}

// FuzzText: whatever the input, no bearer credential survives, a secret
// planted in any of plantForms never appears in the output whatever text
// surrounds it (after a space: "xBearer" is not a scheme), and redaction
// is idempotent.
func FuzzText(f *testing.F) {
	f.Add("Bearer abc", []byte{1}, uint8(0))
	f.Add("?token=x&code=y", []byte("k"), uint8(3))
	f.Add("BeArer )", []byte{}, uint8(7))
	f.Add("Post \"", []byte("secret"), uint8(11))
	f.Add("\n", []byte{0xff, 0}, uint8(25))
	f.Add("x ", []byte("tok"), uint8(29))
	// Former findings: a scheme word as the credential of another
	// ("BeArer bearer\tX"), and a short Basic credential.
	f.Add("BeArer", []byte{}, uint8(7))
	f.Add("0", []byte{}, uint8(9))
	f.Add("BeArer 0=0", []byte{}, uint8(0))
	// remotemcp's own messages (issue #19 item 7), with a secret planted
	// beside them.
	for i, m := range ownMessages {
		f.Add(m, []byte("own"), uint8(i))
	}
	for i, sec := range besideSecrets {
		f.Add(`needs authorization: `+sec.text, []byte("needs"), uint8(i))
		f.Add(`Post "https://as/token": `+sec.text, []byte("url"), uint8(i))
	}
	f.Fuzz(func(t *testing.T, s string, seed []byte, form uint8) {
		out := Text(s)
		for _, m := range bearerValue.FindAllStringSubmatchIndex(out, -1) {
			v := out[m[2]:m[3]]
			after := out[m[3]:]
			if strings.HasSuffix(v, "=") && after != "" && !strings.ContainsRune(" \t\n\v\f\r,;)]}<>&\\", rune(after[0])) {
				continue // an auth parameter (realm="x", a=b), not a token68
			}
			if proseAfterScheme(out[m[2]:]) {
				continue // "a bearer token": prose, not a credential
			}
			t.Fatalf("bearer value %q kept: %q → %q", v, s, out)
		}
		if Text(out) != out {
			t.Fatalf("not idempotent: %q → %q → %q", s, out, Text(out))
		}
		// Plant a secret: a distinctive prefix, then hex of the seed so
		// it is token-shaped whatever the fuzzer sends.
		secret := "Zq9" + hex.EncodeToString(seed) + "Xk7"
		in := s + " " + strings.Replace(plantForms[int(form)%len(plantForms)], "%s", secret, 1) + "\n" + s
		if out := Text(in); strings.Contains(out, secret) {
			t.Fatalf("planted secret kept: %q → %q", in, out)
		}
	})
}

// bearerValue finds a token68 after "bearer" that is followed by a
// delimiter, as a credential is.
var bearerValue = regexp.MustCompile(`(?i)\bbearer[\t\n\f\r ]+([A-Za-z0-9\-._~+/]+=*)`)

// Text is linear: inputs built to make a naive scanner quadratic finish
// quickly. A quadratic scan of 256 KiB is some 2^36 steps, a minute or
// more (longer under -race); a linear one takes well under a second (a
// few seconds under -race on a loaded machine). The bound sits between:
// Text exposes no count of its work to check instead.
func TestTextLinear(t *testing.T) {
	const n = 1 << 18
	for name, s := range map[string]string{
		"digests":          strings.Repeat("Digest ", n/7),
		"digests hidden":   strings.Repeat("Digest "+Redacted+" ", n/18),
		"bearers":          strings.Repeat("Bearer ", n/7),
		"unclosed":         strings.Repeat("token=[\n", n/8),
		"unclosed quotes":  strings.Repeat(`token=\"`, n/8),
		"url brackets":     "https://h/?a=" + strings.Repeat(")", n),
		"url opens":        "https://h/?a=" + strings.Repeat("(", n) + strings.Repeat(")", n),
		"headers":          strings.Repeat("Authorization: ", n/15),
		"yaml":             strings.Repeat("token: x\n", n/9),
		"spaces and names": strings.Repeat("          key: x", n/16),
		"query":            "https://h/?" + strings.Repeat("a=b&", n/4),
		"oauth prefixes":   strings.Repeat("oauth: authorization: ", n/22),
		"quoted keys":      strings.Repeat(`authorization: "token": `, n/24),
		"escaped keys":     `authorization: \"` + strings.Repeat(`token: \"x\": `, n/14),
		"needs prefixes":   strings.Repeat("needs authorization: ", n/21),
		"quoted urls":      strings.Repeat(`Post "https://as/token": `, n/25),
		"spaced keys":      strings.Repeat("x ", n/4) + strings.Repeat(` token": `, n/16),
		"words then names": strings.Repeat("a token b ", n/20) + `"`,
	} {
		start := time.Now()
		out := Text(s)
		if d := time.Since(start); d > 60*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(s))
		}
		if Text(out) != out {
			t.Errorf("%s: not idempotent", name)
		}
	}
}
