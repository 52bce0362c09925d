package authserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func start(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func postForm(t *testing.T, u string, f url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(u, f)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// authorizeCode runs /authorize for a public client and returns the code.
func authorizeCode(t *testing.T, s *Server, clientID, verifier, resource string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"state": {"st"}, "resource": {resource},
	}
	resp, err := noRedirect.Get(s.Issuer() + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %v", resp.StatusCode, err)
	}
	if loc.Query().Get("state") != "st" || loc.Query().Get("code") == "" {
		t.Fatalf("redirect %s", loc)
	}
	return loc.Query().Get("code")
}

func TestCodeFlowChecksPKCEAndResource(t *testing.T) {
	s := start(t, Options{})
	s.AddClient("c1", "", "none")
	const res = "http://127.0.0.1:1/mcp"
	tok := s.Issuer() + "/token"

	code := authorizeCode(t, s, "c1", "verifier-verifier-verifier-verifier-0123", res)
	if st, m := postForm(t, tok, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {"c1"},
		"redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"}, "code_verifier": {"wrong"}, "resource": {res}}); st != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %v", st, m)
	}
	code = authorizeCode(t, s, "c1", "verifier-verifier-verifier-verifier-0123", res)
	if st, m := postForm(t, tok, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {"c1"},
		"redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"}, "code_verifier": {"verifier-verifier-verifier-verifier-0123"}, "resource": {"http://other/"}}); st != 400 || m["error"] != "invalid_target" {
		t.Fatalf("wrong resource: %d %v", st, m)
	}
	code = authorizeCode(t, s, "c1", "verifier-verifier-verifier-verifier-0123", res)
	st, m := postForm(t, tok, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {"c1"},
		"redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"}, "code_verifier": {"verifier-verifier-verifier-verifier-0123"}, "resource": {res}})
	if st != 200 || m["access_token"] == nil || m["refresh_token"] == nil {
		t.Fatalf("exchange: %d %v", st, m)
	}
	rt := m["refresh_token"].(string)

	// Refresh needs resource; rotation kills the old refresh token.
	if st, m := postForm(t, tok, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"c1"}}); st != 400 || m["error"] != "invalid_target" {
		t.Fatalf("refresh without resource: %d %v", st, m)
	}
	st, m = postForm(t, tok, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"c1"}, "resource": {res}})
	if st != 200 || m["refresh_token"] == rt {
		t.Fatalf("refresh: %d %v", st, m)
	}
	if st, _ := postForm(t, tok, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"c1"}, "resource": {res}}); st != 400 {
		t.Fatalf("reused refresh token accepted: %d", st)
	}
	if n := len(s.RequestsTo("/token")); n != 6 {
		t.Fatalf("%d recorded token requests", n)
	}
}

func TestAuthorizeChallenges(t *testing.T) {
	s := start(t, Options{})
	s.Set(func(k *Knobs) { k.ChallengeScope = "mcp:basic" })
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:5/mcp", nil)
	if s.Authorize(rec, r) || rec.Code != 401 {
		t.Fatalf("no token: %d", rec.Code)
	}
	want := `Bearer scope="mcp:basic", resource_metadata="http://127.0.0.1:5/.well-known/oauth-protected-resource/mcp"`
	if got := rec.Header().Get("WWW-Authenticate"); got != want {
		t.Fatalf("challenge %q, want %q", got, want)
	}
}

func TestMalformedRegistration(t *testing.T) {
	s := start(t, Options{})
	s.Set(func(k *Knobs) { k.ClientIDMode = ClientIDNumber })
	resp, err := http.Post(s.Issuer()+"/register", "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:7717/mcp-oauth"]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"client_id":12345`) || len(s.ClientIDs()) != 0 {
		t.Fatalf("body %s, clients %v", b, s.ClientIDs())
	}
}

// register registers a public client and returns its id.
func register(t *testing.T, s *Server) string {
	t.Helper()
	resp, err := http.Post(s.Issuer()+"/register", "application/json",
		strings.NewReader(`{"redirect_uris":["http://127.0.0.1:7717/mcp-oauth"],"token_endpoint_auth_method":"none"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		ClientID string `json:"client_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.ClientID == "" {
		t.Fatalf("register: %d %v", resp.StatusCode, err)
	}
	return m.ClientID
}

// Restart forgets registered clients, codes and tokens, keeps configured
// clients, and answers an unknown client's authorization request without
// redirecting (RFC 6749 §4.1.2.1).
func TestRestartForgetsRegisteredClients(t *testing.T) {
	s := start(t, Options{})
	s.AddClient("configured", "", "none")
	const res = "http://127.0.0.1:1/mcp"
	id := register(t, s)
	code := authorizeCode(t, s, id, "verifier-verifier-verifier-verifier-0123", res)
	s.Restart()
	if ids := s.ClientIDs(); len(ids) != 1 || ids[0] != "configured" {
		t.Fatalf("clients after restart: %v", ids)
	}
	if st, m := postForm(t, s.Issuer()+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {id},
		"redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"}, "code_verifier": {"verifier-verifier-verifier-verifier-0123"}, "resource": {res}}); st != 401 || m["error"] != "invalid_client" {
		t.Fatalf("forgotten client at the token endpoint: %d %v", st, m)
	}
	resp, err := noRedirect.Get(s.Issuer() + "/authorize?" + url.Values{"client_id": {id}, "redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" || !strings.Contains(string(b), "invalid_client") {
		t.Fatalf("forgotten client at the authorization endpoint: %d %q %s", resp.StatusCode, resp.Header.Get("Location"), b)
	}
	authorizeCode(t, s, "configured", "verifier-verifier-verifier-verifier-0123", res)
}

// Token endpoint faults: each knob fails the next N requests with its code.
func TestTokenClientFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		knob   func(*Knobs)
		status int
		code   string
	}{
		{"invalid_client", func(k *Knobs) { k.InvalidClient = 1 }, 401, "invalid_client"},
		{"unauthorized_client", func(k *Knobs) { k.UnauthorizedClient = 1 }, 400, "unauthorized_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, Options{})
			s.AddClient("c1", "", "none")
			s.Set(tc.knob)
			form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}, "client_id": {"c1"}, "resource": {"http://r/"}}
			if st, m := postForm(t, s.Issuer()+"/token", form); st != tc.status || m["error"] != tc.code {
				t.Fatalf("first: %d %v", st, m)
			}
			if st, m := postForm(t, s.Issuer()+"/token", form); m["error"] != "invalid_grant" {
				t.Fatalf("second (fault used up): %d %v", st, m)
			}
		})
	}
}

// With CIMD on, the metadata says so and an https URL is a public client.
func TestClientIDMetadataDocument(t *testing.T) {
	s := start(t, Options{})
	const res = "http://127.0.0.1:1/mcp"
	const cimd = "https://client.example/metadata.json"
	s.Set(func(k *Knobs) { k.ClientIDMetadataDocumentSupported = true })
	resp, err := http.Get(s.URL() + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if m["client_id_metadata_document_supported"] != true {
		t.Fatalf("metadata %v", m)
	}
	code := authorizeCode(t, s, cimd, "verifier-verifier-verifier-verifier-0123", res)
	if st, m := postForm(t, s.Issuer()+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {cimd},
		"redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"}, "code_verifier": {"verifier-verifier-verifier-verifier-0123"}, "resource": {res}}); st != 200 {
		t.Fatalf("exchange: %d %v", st, m)
	}
	s.Set(func(k *Knobs) { k.ClientIDMetadataDocumentSupported = false })
	resp, err = noRedirect.Get(s.Issuer() + "/authorize?" + url.Values{"client_id": {cimd}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("CIMD off: %d", resp.StatusCode)
	}
}

// RequiredScopesFor refuses only the named JSON-RPC method, naming the
// token's scopes and the missing ones, and leaves the body readable.
func TestRequiredScopesFor(t *testing.T) {
	s := start(t, Options{})
	s.AddClient("c1", "", "none")
	const host = "127.0.0.1:5"
	res := "http://" + host + "/mcp"
	code := authorizeCode(t, s, "c1", "verifier-verifier-verifier-verifier-0123", res)
	st, m := postForm(t, s.Issuer()+"/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {"c1"},
		"redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"}, "code_verifier": {"verifier-verifier-verifier-verifier-0123"}, "resource": {res}})
	if st != 200 {
		t.Fatalf("exchange: %d %v", st, m)
	}
	tok := m["access_token"].(string)
	s.Set(func(k *Knobs) { k.RequiredScopesFor = map[string][]string{"tools/call": {"mcp:write"}} })
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`, false},
	} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "http://"+host+"/mcp", strings.NewReader(tc.body))
		r.Header.Set("Authorization", "Bearer "+tok)
		if got := s.Authorize(rec, r); got != tc.ok {
			t.Fatalf("%s: allowed %v (%d)", tc.body, got, rec.Code)
		}
		if b, _ := io.ReadAll(r.Body); string(b) != tc.body {
			t.Fatalf("body not restored: %q", b)
		}
		if !tc.ok {
			if rec.Code != 403 || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="insufficient_scope", scope="mcp:write"`) {
				t.Fatalf("refusal: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
			}
		}
	}
}

// The chaos test's counters (issue #23): who a token was issued to (the
// authorization request's login_hint, carried through refreshes), which
// refresh tokens were presented twice, and the OAuth error of each token
// request.
func TestSubjectReuseAndErrorCounters(t *testing.T) {
	s := start(t, Options{})
	s.AddClient("c1", "", "none")
	const res = "http://127.0.0.1:1/mcp"
	const verifier = "verifier-verifier-verifier-verifier-0123"
	tok := s.Issuer() + "/token"
	sum := sha256.Sum256([]byte(verifier))
	code := func(hint string) string {
		q := url.Values{"response_type": {"code"}, "client_id": {"c1"}, "redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"},
			"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {res}}
		if hint != "" {
			q.Set("login_hint", hint)
		}
		resp, err := noRedirect.Get(s.Issuer() + "/authorize?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return loc.Query().Get("code")
	}
	exchange := func(c string) (string, string) {
		st, m := postForm(t, tok, url.Values{"grant_type": {"authorization_code"}, "code": {c}, "client_id": {"c1"},
			"redirect_uri": {"http://127.0.0.1:7717/mcp-oauth"}, "code_verifier": {verifier}, "resource": {res}})
		if st != 200 {
			t.Fatalf("exchange: %d %v", st, m)
		}
		return m["access_token"].(string), m["refresh_token"].(string)
	}
	refresh := func(rt string) (int, map[string]any) {
		return postForm(t, tok, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {"c1"}, "resource": {res}})
	}

	atAlice, rtAlice := exchange(code("alice"))
	atNobody, _ := exchange(code(""))
	if sub, ok := s.Subject(atAlice); !ok || sub != "alice" {
		t.Fatalf("alice's token: %q %v", sub, ok)
	}
	if sub, ok := s.Subject(atNobody); !ok || sub != DefaultSubject {
		t.Fatalf("a token without login_hint: %q %v", sub, ok)
	}
	if _, ok := s.Subject("made-up"); ok {
		t.Fatal("a made-up token has a subject")
	}
	if len(s.ReusedRefreshTokens()) != 0 {
		t.Fatalf("reuse before any refresh: %v", s.ReusedRefreshTokens())
	}
	st, m := refresh(rtAlice)
	if st != 200 {
		t.Fatalf("refresh: %d %v", st, m)
	}
	if sub, _ := s.Subject(m["access_token"].(string)); sub != "alice" {
		t.Fatalf("the refreshed token is %q's", sub)
	}
	if len(s.ReusedRefreshTokens()) != 0 {
		t.Fatalf("one use counted as reuse: %v", s.ReusedRefreshTokens())
	}
	// The rotated-out token presented again: invalid_grant, and counted.
	if st, m := refresh(rtAlice); st != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("reuse: %d %v", st, m)
	}
	if got := s.ReusedRefreshTokens(); len(got) != 1 || got[rtAlice] != 2 {
		t.Fatalf("reused: %v", got)
	}
	var errs []string
	for _, r := range s.RequestsTo("/token") {
		errs = append(errs, r.Error)
	}
	if strings.Join(errs, ",") != ",,,invalid_grant" {
		t.Fatalf("errors recorded: %q", errs)
	}
}
