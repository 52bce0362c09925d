package redact

import (
	"strings"
	"testing"
)

// ownMessages are remotemcp's own error and log messages, word for word
// as package oauth writes them (oauth.Error is "oauth: <step>: <cause>"),
// that the redactor used to mangle (issue #19 item 7): "oauth" contains
// "auth" and was taken for a secret field name ("oauth: [redacted] the
// MCP URL …"), the step "authorization" for an Authorization header
// ("oauth: authorization: [redacted]"), and "a bearer token" for a
// Bearer credential. Redaction must leave each of them as it is.
var ownMessages = []string{
	// internal/credflags and frontend tokens.go: advice that names
	// a flag after a scheme word, and a quoted token name before prose.
	`--auth bearer needs the token: --bearer-env VAR or --bearer-stdin`,
	`create token "deploy key": a name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
	`create token "ci-token": token already exists (revoke it first, or choose another name)`,
	// handler.go: Handler.Authorize and Login.
	`oauth: authorization: server is not configured with auth kind "oauth" or "auto" (the server answered 401)`,
	`oauth: authorization: the server demands authentication but sent no OAuth challenge: it answered 401 without "WWW-Authenticate: Bearer"; give the server a bearer token (auth kind "bearer"), or set auth kind "oauth" if it uses OAuth anyway`,
	`oauth: authorization: forbidden: the server refused an unauthenticated request with 403 Forbidden`,
	`oauth: authorization: forbidden: the server refused the request with 403 Forbidden (error=invalid_token); a new authorization would not change that`,
	`oauth: authorization: unexpected HTTP status 500`,
	`oauth: authorization: no browser to complete the authorization`,
	`oauth: discovery-PRM: the MCP URL answered an unauthenticated initialize with HTTP 404 Not Found; check the server URL`,
	`oauth: discovery-PRM: probing http://127.0.0.1:8931/mcp: Post "http://127.0.0.1:8931/mcp": dial tcp 127.0.0.1:8931: connect: connection refused`,
	// errors.go: loginRequired with the reasons authorize gives.
	`oauth: authorization: login required: no refresh token is stored for this server; run "remotemcp auth login docs"`,
	`oauth: authorization: login required: the stored refresh token was refused (token request refused: HTTP 400: invalid_grant (refresh token expired)); run "remotemcp auth login docs"`,
	`oauth: authorization: login required: the authorization server no longer accepts remotemcp's client (token request refused: HTTP 401: invalid_client); the next sign-in registers a new one; run "remotemcp auth login docs"`,
	`oauth: scope: login required: the server refused the request for want of the scopes "files:write", which need a new authorization; run "remotemcp auth login docs" (it asks for "files:read files:write")`,
	// flow.go: the browser step and the callback.
	`oauth: authorization: authorization refused: the authorization server answered access_denied: the user declined`,
	`oauth: authorization: state mismatch: the callback's state is not the one sent with the authorization request (a stale or forged redirect)`,
	`oauth: authorization: malformed authorization callback: the authorization endpoint answered 200 instead of redirecting back`,
	`oauth: authorization: waiting for the authorization callback: context deadline exceeded`,
	// discovery.go, asmeta.go, tokens.go, httpx.go, register.go.
	`oauth: discovery-PRM: no metadata found: no protected resource metadata at http://127.0.0.1:8931/.well-known/oauth-protected-resource/mcp (404), http://127.0.0.1:8931/.well-known/oauth-protected-resource (404); the server does not follow the MCP authorization spec (2025-06-18 or later)`,
	`oauth: discovery-AS: https://as.example.com: code_challenge_methods_supported does not list S256 (plain); the server does not support PKCE S256, which MCP requires`,
	`oauth: token: token request refused: HTTP 400: invalid_grant (authorization code expired)`,
	`oauth: token: POST http://127.0.0.1:9000/token answered 302 with a redirect to http://elsewhere.example/x?…; redirects are never followed for OAuth requests: HTTP redirect refused`,
	`oauth: refresh: token request refused: HTTP 401: invalid_client`,
	`oauth: registration: invalid client registration response: client_id is missing`,
	`oauth: logout docs: taking the server's OAuth lock: context canceled`,
	// Log messages.
	`oauth: the server asked for OAuth (auth kind auto)`,
	`oauth: authorization needed; opening the authorization page`,
	`oauth: the token endpoint rejected the registered client; the next authorization registers a new one`,
	`oauth: unreadable WWW-Authenticate; using well-known discovery`,
	// The same, as the engine and the CLI wrap them.
	`remotemcp: connect docs: oauth: authorization: login required: no refresh token is stored for this server; run "remotemcp auth login docs"`,
	// engine/servers.go: a needs-authorization reason is "needs
	// authorization: " and the library's message, which "remotemcp
	// status" printed as "needs authorization: [redacted]" (the header
	// Authorization hides the rest of its line).
	`needs authorization: initialize: … oauth: authorization: login required: this server has not been signed in to yet`,
	`needs authorization: initialize: oauth: authorization: login required: the server asks for OAuth authorization (auth kind auto) and has not been signed in to yet`,
	`needs authorization: HTTP 401 Unauthorized`,
	`remotemcp: docs: needs authorization: oauth: token: token request refused: HTTP 400: invalid_grant (authorization code expired)`,
	// Go's net/http errors, METHOD "URL": cause, with a URL whose last
	// segment is a secret-like name: the name was taken for a quoted
	// JSON key and the first word of the cause for its value.
	`oauth: discovery-AS: Get "http://127.0.0.1:1/.well-known/oauth-authorization-server": permission required: remotemcp has no grant for http://127.0.0.1:1 (authorization-server metadata for server "docs"); approve it with "remotemcp grants approve http://127.0.0.1:1" or in the settings page`,
	`Get "http://127.0.0.1:1/.well-known/oauth-authorization-server": permission required: remotemcp has no grant`,
	`oauth: token: Post "https://as/token": dial tcp 127.0.0.1:9000: connect: connection refused`,
	`Post "https://as/token": dial tcp`,
	`oauth: authorization: Get "https://as.example.com/authorize": context deadline exceeded`,
	`Get "https://as/authorize": context deadline exceeded`,
	`Post "https://as/oauth/token": net/http: TLS handshake timeout`,
	`Get "https://as/session": EOF`,
	`Post "https://as/token?x=[redacted]": dial tcp 127.0.0.1:9000: connect: connection refused`,
}

// besideSecrets are the secrets that come with those messages: what a
// server, a token endpoint or a callback may echo into the same text.
// secret is the part that must never survive.
var besideSecrets = []struct{ text, secret string }{
	{"Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln", "eyJhbGciOiJIUzI1NiJ9.e30.c2ln"},
	{"Authorization: Bearer x", "Bearer x"},
	{"authorization: Bearer at-7f3e", "at-7f3e"},
	{"access_token=at-5ecret-1", "at-5ecret-1"},
	{`{"access_token":"at-5ecret-2","token_type":"Bearer","refresh_token":"rt-5ecret-3"}`, "5ecret"},
	{`"refresh_token":"rt-5ecret-4"`, "rt-5ecret-4"},
	{"client_secret=cs-5ecret-5", "cs-5ecret-5"},
	{`{"client_secret": "cs-5ecret-6"}`, "cs-5ecret-6"},
	{"Authorization: Basic cmVtb3RlbWNwOmNzLTVlY3JldA==", "cmVtb3RlbWNwOmNzLTVlY3JldA"},
	{"with Basic cmVtb3RlbWNwOmNzLTVlY3JldA==", "cmVtb3RlbWNwOmNzLTVlY3JldA"},
	{"https://cb.example/mcp-oauth?code=c0de-5ecret-7&state=st4te-5ecret-8", "5ecret"},
	{"http://127.0.0.1:7717/mcp-oauth?state=st4te-5ecret-9&code=c0de-5ecret-10&iss=https%3A%2F%2Fas", "5ecret"},
	{"code_verifier=v3rifier-5ecret-11", "v3rifier-5ecret-11"},
	{"needs authorization: Bearer at-5ecret-12", "at-5ecret-12"},
	{`Post "https://as/token?code=c0de-5ecret-13&state=st4te-5ecret-14": dial tcp`, "5ecret"},
	{`Get "https://as/cb?access_token=at-5ecret-15": context deadline exceeded`, "5ecret"},
	{`Post "https://as/token?x=1&client_secret=cs-5ecret-16": EOF`, "5ecret"},
}

// Issue #19 item 7: remotemcp's own words stay as they are, alone and with
// every kind of secret beside them (after them on the line, or on the line
// before), and every secret is still hidden.
func TestTextLeavesOwnWordsAlone(t *testing.T) {
	for _, msg := range ownMessages {
		if got := Text(msg); got != msg {
			t.Errorf("Text changed remotemcp's own message:\n got %q\nwant %q", got, msg)
		}
		for _, sec := range besideSecrets {
			for _, in := range []string{msg + ": " + sec.text, sec.text + "\n" + msg, msg + " (" + sec.text + ")\n" + msg} {
				out := Text(in)
				if strings.Contains(out, sec.secret) {
					t.Errorf("secret %q kept:\n in %q\nout %q", sec.secret, in, out)
				}
				if !strings.Contains(out, msg) {
					t.Errorf("message changed beside a secret:\n in %q\nout %q", in, out)
				}
				if again := Text(out); again != out {
					t.Errorf("not idempotent: %q → %q", out, again)
				}
			}
		}
	}
}

// The two sentences the issue quotes, and the shapes around them that
// stay secret: a credential right after the prefix is still hidden when
// it has a shape (a scheme, a field, a URL).
func TestTextOwnPrefix(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"authorization step", `oauth: authorization: login required: no refresh token is stored for this server; run "remotemcp auth login docs"`,
			`oauth: authorization: login required: no refresh token is stored for this server; run "remotemcp auth login docs"`},
		{"discovery step", "oauth: discovery-PRM: the MCP URL answered an unauthenticated initialize with HTTP 404 Not Found; check the server URL",
			"oauth: discovery-PRM: the MCP URL answered an unauthenticated initialize with HTTP 404 Not Found; check the server URL"},
		{"prose bearer", "give the server a bearer token, the Bearer challenge; digest authentication failed",
			"give the server a bearer token, the Bearer challenge; digest authentication failed"},
		{"bearer token then a credential", "Bearer token abc123", "Bearer token [redacted]"},
		{"scheme after the prefix", "oauth: authorization: Bearer abc.def", "oauth: authorization: Bearer [redacted]"},
		{"header after the prefix", "oauth: token: Authorization: sk_live_abc", "oauth: token: Authorization: [redacted]"},
		{"field after the prefix", "oauth: token: access_token=abc", "oauth: token: access_token=[redacted]"},
		// A review of the own-words rules: what they must not let through.
		{"token after oauth", "oauth: sk_live_abcdefghijklmnop123456", "oauth: [redacted]"},
		{"hex after oauth: token", "oauth: token: 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "oauth: token: [redacted]"},
		{"token after needs authorization", "needs authorization: ya29.a0AfH6SMBx1234567890abcdef", "needs authorization: [redacted]"},
		{"single-quoted key, bare value", "'secret': qwertyuiopasdfghjklzxcvb", "'secret': [redacted]"},
		{"header name quoted, bare value", `header "X-Api-Key": abcdefabcdefabcdefabcdefab`, `header "X-Api-Key": [redacted]`},
		{"json-ish key, bare value", `"api_key": abcdefabcdefabcdefabcdef`, `"api_key": [redacted]`},
		{"quoted name then prose", `create token "deploy key": a name is 1 to 64 letters`, `create token "deploy key": a name is 1 to 64 letters`},
		{"json field oauth", `{"oauth":"s3cr3t"}`, `{"oauth":"[redacted]"}`},
		{"form field oauth", "oauth=s3cr3t", "oauth=[redacted]"},
		{"yaml key oauth", "server:\n  oauth:\n    client_secret: s3\n", "server:\n  oauth:\n    client_secret: [redacted]\n"},
		{"header line", "Authorization: sk_live_abc (expired)", "Authorization: [redacted]"},
		{"lower-case header line", "authorization: sk_live_abc", "authorization: [redacted]"},
		{"not the step", "oauth: tokenize: x", "oauth: tokenize: x"},
		{"elided query", "http://h/x?…", "http://h/x?…"},
		// "needs authorization: " is the engine's reason; the header
		// Authorization with any other word, or none, before it stays one.
		{"needs authorization", "needs authorization: initialize: … oauth: authorization: login required: this server has not been signed in to yet",
			"needs authorization: initialize: … oauth: authorization: login required: this server has not been signed in to yet"},
		{"scheme after needs authorization", "needs authorization: Bearer abc.def", "needs authorization: Bearer [redacted]"},
		{"header after needs authorization", "needs authorization: Authorization: sk_live_abc", "needs authorization: Authorization: [redacted]"},
		{"field after needs authorization", "needs authorization: access_token=abc", "needs authorization: access_token=[redacted]"},
		{"another word before the header", "the authorization: sk_live_abc", "the authorization: [redacted]"},
		{"a longer word before the header", "unneeds authorization: sk_live_abc", "unneeds authorization: [redacted]"},
		{"needs and the header unspaced", "needs authorization:sk_live_abc", "needs authorization:[redacted]"},
		// Go's METHOD "URL": cause, with a URL that ends in a secret-like
		// name: the name is the end of a quoted URL, not a quoted key.
		{"url ending in a name", `Get "http://127.0.0.1:1/.well-known/oauth-authorization-server": permission required: remotemcp has no grant`,
			`Get "http://127.0.0.1:1/.well-known/oauth-authorization-server": permission required: remotemcp has no grant`},
		{"url ending in token", `Post "https://as/token": dial tcp 127.0.0.1:9000: connect: connection refused`,
			`Post "https://as/token": dial tcp 127.0.0.1:9000: connect: connection refused`},
		{"url ending in authorize", `Get "https://as/authorize": context deadline exceeded`, `Get "https://as/authorize": context deadline exceeded`},
		{"url with a query", `Post "https://as/token?x=1": dial tcp`, `Post "https://as/token?x=[redacted]": dial tcp`},
		{"url with a code and state", `Get "https://cb/mcp-oauth?code=c0de&state=st4te": context deadline exceeded`,
			`Get "https://cb/mcp-oauth?code=[redacted]&state=[redacted]": context deadline exceeded`},
		{"url with an access token", `Get "https://as/token?access_token=at-1": dial tcp`, `Get "https://as/token?access_token=[redacted]": dial tcp`},
		{"url with a token fragment", `Get "https://as/cb#access_token=at-1&state=x": EOF`, `Get "https://as/cb#access_token=[redacted]&state=[redacted]": EOF`},
		{"field after a url", `Post "https://as/token": access_token=at-1`, `Post "https://as/token": access_token=[redacted]`},
		{"json after a url", `Post "https://as/token": {"access_token":"at-1"}`, `Post "https://as/token": {"access_token":"[redacted]"}`},
		// Quoted keys stay keys: the quote right before the name, or
		// before the words of the same key.
		{"json key", `"access_token": "at-1"`, `"access_token": "[redacted]"`},
		{"json key unspaced", `{"access_token":"at-1"}`, `{"access_token":"[redacted]"}`},
		{"escaped json key", `{\"access_token\":\"at-1\"}`, `{\"access_token\":\"[redacted]\"}`},
		{"single-quoted key", `'access_token': 'at-1'`, `'access_token': '[redacted]'`},
		{"key of two words", `"API key": "k-1"`, `"API key": "[redacted]"`},
		{"escaped key of two words", `\"client secret\": \"cs-1\"`, `\"client secret\": \"[redacted]\"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Text(c.in); got != c.want {
				t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}
