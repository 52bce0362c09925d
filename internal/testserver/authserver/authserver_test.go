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
