package oauth

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for every parser of outside data. Their seeds run as
// ordinary tests; `go test -fuzz=FuzzX ./oauth` explores further.

func FuzzValidateResourceMetadata(f *testing.F) {
	const res = "https://mcp.example.com/mcp"
	for _, s := range []string{
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://as.example.com"]}`,
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://as.example.com","http://127.0.0.1:9/t"],"scopes_supported":["a","b"]}`,
		`{"resource":"https://evil.example.com/mcp","authorization_servers":["https://as.example.com"]}`,
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":[]}`,
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":["http://as.example.com"]}`,
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":["javascript:alert(1)"]}`,
		`{"resource":"https://mcp.example.com/mcp","authorization_servers":"https://as.example.com"}`,
		`{"resource":1}`, `[]`, `null`, `{"resource":"x","resource":"y"}`, `{} {}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rm, err := validateResourceMetadata(body, []string{res})
		if err != nil {
			return
		}
		if rm.Resource != res || len(rm.AuthorizationServers) == 0 {
			t.Fatalf("accepted %+v", rm)
		}
		for _, s := range rm.AuthorizationServers {
			if checkIssuerURL(s) != nil {
				t.Fatalf("accepted issuer %q", s)
			}
		}
		for _, s := range rm.ScopesSupported {
			if !validScope(s) {
				t.Fatalf("accepted scope %q", s)
			}
		}
	})
}

func FuzzValidateASMetadata(f *testing.F) {
	const iss = "https://as.example.com"
	good := `{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/a","token_endpoint":"https://as.example.com/t","code_challenge_methods_supported":["S256"]}`
	for _, s := range []string{
		good,
		`{"issuer":"https://as.example.com/","authorization_endpoint":"https://as.example.com/a","token_endpoint":"https://as.example.com/t","code_challenge_methods_supported":["S256"]}`,
		`{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/a","token_endpoint":"https://as.example.com/t","code_challenge_methods_supported":["plain"]}`,
		`{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/a","token_endpoint":"https://as.example.com/t"}`,
		`{"issuer":"https://as.example.com","authorization_endpoint":"http://as.example.com/a","token_endpoint":"https://as.example.com/t","code_challenge_methods_supported":["S256"]}`,
		`{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/a","token_endpoint":"https://as.example.com/t","code_challenge_methods_supported":"S256"}`,
		`{"issuer":"https://as.example.com","authorization_endpoint":"https://as.example.com/a","token_endpoint":"https://as.example.com/t","code_challenge_methods_supported":["S256"],"authorization_response_iss_parameter_supported":"yes"}`,
		`{"issuer":"https://as.example.com","authorization_endpoint":"https://u:p@as.example.com/a","token_endpoint":"https://as.example.com/t#x","code_challenge_methods_supported":["S256"]}`,
		`{"issuer":null}`, `"x"`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		asm, err := validateASMetadata(body, iss)
		if err != nil {
			return
		}
		if asm.Issuer != iss || !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
			t.Fatalf("accepted %+v", asm)
		}
		for _, u := range []string{asm.AuthorizationEndpoint, asm.TokenEndpoint} {
			if checkEndpointURL("x", u) != nil {
				t.Fatalf("accepted endpoint %q", u)
			}
		}
	})
}

func FuzzValidateRegistration(f *testing.F) {
	const redirect = "http://127.0.0.1:7717/mcp-oauth"
	for _, s := range []string{
		`{"client_id":"abc"}`,
		`{"client_id":"abc","client_secret":"s","token_endpoint_auth_method":"client_secret_post"}`,
		`{"client_id":"abc","client_secret":"s"}`,
		`{"client_id":"abc","token_endpoint_auth_method":"client_secret_basic"}`,
		`{"client_id":"abc","token_endpoint_auth_method":"private_key_jwt"}`,
		`{"client_id":"abc","redirect_uris":["http://127.0.0.1:1/x"]}`,
		`{"client_id":""}`, `{"client_id":12345}`, `{"client_id":null}`, `{}`, `{"client_id":"a\u0001b"}`,
		`{"client_id":"` + strings.Repeat("x", 10<<10) + `"}`,
		`{"client_id":"a","client_id":"b"}`, `[{"client_id":"abc"}]`, `client_id=abc`,
		`{"client_id":"abc","client_secret_expires_at":-1}`, `{"client_id":"abc","client_secret_expires_at":1.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		reg, err := validateRegistration(body, redirect)
		if err != nil {
			if !errors.Is(err, ErrBadRegistration) {
				t.Fatalf("error without ErrBadRegistration: %v", err)
			}
			return
		}
		if reg.ClientID == "" || len(reg.ClientID) > maxIDChars || !vschar(reg.ClientID) {
			t.Fatalf("accepted client_id %q", reg.ClientID)
		}
		switch reg.AuthMethod {
		case authNone:
		case authBasic, authPost:
			if reg.ClientSecret == "" {
				t.Fatal("secret method without a secret")
			}
		default:
			t.Fatalf("accepted method %q", reg.AuthMethod)
		}
	})
}

func FuzzParseCallback(f *testing.F) {
	for _, s := range []string{
		"code=abc&state=xyz",
		"code=abc&state=xyz&iss=https%3A%2F%2Fas.example.com",
		"error=access_denied&error_description=no%0Away&state=xyz",
		"code=a&code=b&state=x",
		"state=x",
		"code=%00&state=x",
		"code=abc&state=" + strings.Repeat("s", 600),
		"error_description=x&error_description=y&error=e",
		"%zz", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		r, err := ParseCallback(q)
		if err != nil {
			return
		}
		if r.Code == "" && r.Error == "" {
			t.Fatal("accepted a callback with neither code nor error")
		}
		for _, v := range []string{r.Code, r.State, r.Iss, r.Error} {
			if !vschar(v) {
				t.Fatalf("accepted a control character: %q", v)
			}
		}
		if strings.ContainsAny(r.ErrorDescription, "\x00\n\r") {
			t.Fatalf("description not sanitized: %q", r.ErrorDescription)
		}
	})
}

func FuzzParseTokenResponse(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"at","token_type":"Bearer","expires_in":3600,"refresh_token":"rt","scope":"a b"}`,
		`{"access_token":"at","token_type":"bearer"}`,
		`{"access_token":"at","token_type":"DPoP"}`,
		`{"access_token":"","token_type":"Bearer"}`,
		`{"access_token":"a t"}`,
		`{"access_token":"at","expires_in":"3600"}`,
		`{"access_token":"at","expires_in":3600.0}`,
		`{"error":"invalid_grant","error_description":"nope"}`,
		`{"access_token":1}`, `[]`, ``,
	} {
		f.Add(200, []byte(s))
		f.Add(400, []byte(s))
	}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		g, err := parseTokenResponse(status, body, now, []string{"req"})
		if err != nil {
			return
		}
		if status < 200 || status > 299 {
			t.Fatalf("success from status %d", status)
		}
		if checkTokenString("access_token", g.AccessToken) != nil {
			t.Fatalf("accepted access token %q", g.AccessToken)
		}
		if !g.Expiry.IsZero() && g.Expiry.Before(now) {
			t.Fatal("expiry in the past")
		}
	})
}

func FuzzParseChallenge(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="a b"`,
		`Bearer error="insufficient_scope", scope="a"`,
		`Basic realm="x", Bearer resource_metadata="https://x/y"`,
		`Bearer "`, `Bearer a=`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("WWW-Authenticate", v)
		_, _ = parseChallenge(h)
	})
}
