// Package authserver runs a real OAuth 2.1 authorization server on loopback
// for the remotemcp tests, with the resource-server half (protected
// resource metadata and a bearer check) that an MCP server needs.
//
// It serves RFC 8414 and OIDC discovery metadata, RFC 7591 dynamic client
// registration, an authorization endpoint that approves at once with a 302
// to the redirect URI (code, state and iss), and a token endpoint for the
// authorization_code grant (PKCE S256 verified, RFC 8707 resource checked)
// and the refresh_token grant (rotation, resource checked). Knobs (see
// Knobs) inject each fault the client must survive or refuse. Every request
// is recorded, secrets included, so tests can assert what the client sent
// and to whom.
//
// Use with package fixture:
//
//	as, _ := authserver.Start(authserver.Options{})
//	mcp, _ := fixture.Start(fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
//
// Every method is safe for concurrent use.
package authserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options are fixed at Start.
type Options struct {
	// IssuerPath is appended to the server's origin to form the issuer,
	// e.g. "/tenant1"; "" gives an issuer without a path. The endpoints
	// live under it (<issuer>/authorize, /token, /register).
	IssuerPath string
	// MCPPath is the path of the protected MCP endpoint; "" means "/mcp".
	MCPPath string
	// Name prefixes the issued client ids and tokens (handy in failure
	// messages); "" means "as".
	Name string
}

// ClientIDMode makes the registration response malformed.
type ClientIDMode string

// Malformed client_id variants of the registration response (R2.11).
const (
	ClientIDNormal  ClientIDMode = ""
	ClientIDMissing ClientIDMode = "missing" // no client_id member
	ClientIDEmpty   ClientIDMode = "empty"   // ""
	ClientIDNumber  ClientIDMode = "number"  // 12345
	ClientIDHuge    ClientIDMode = "huge"    // a 10 KB string
	ClientIDControl ClientIDMode = "control" // contains a control character
	ClientIDNull    ClientIDMode = "null"    // null
	ClientIDNotJSON ClientIDMode = "notjson" // the body is not JSON
	ClientIDArray   ClientIDMode = "array"   // the body is a JSON array
)

// Iss modes of the authorization response (RFC 9207).
const (
	IssDefault = ""        // correct iss when advertised, none otherwise
	IssCorrect = "correct" // always the correct iss
	IssOmit    = "omit"    // never an iss
	IssWrong   = "wrong"   // https://evil.example.com
	IssSlash   = "slash"   // the issuer with a trailing slash added
)

// Metadata locations (which one answers; the others 404).
const (
	MetaRFC8414    = ""            // /.well-known/oauth-authorization-server[/path]
	MetaOIDCInsert = "oidc-insert" // /.well-known/openid-configuration[/path]
	MetaOIDCAppend = "oidc-append" // [/path]/.well-known/openid-configuration
	MetaAll        = "all"         // every location answers
)

// Knobs are the fault injections; change them with Set at any time.
type Knobs struct {
	// --- authorization server metadata ---

	// CodeChallengeMethods replaces ["S256"] in the metadata (e.g. ["plain"]).
	CodeChallengeMethods []string
	// OmitCodeChallengeMethods leaves code_challenge_methods_supported out.
	OmitCodeChallengeMethods bool
	// MetadataIssuer, when set, is advertised as the issuer (mismatch).
	MetadataIssuer string
	// MetadataLocation chooses where the metadata is served (Meta…).
	MetadataLocation string
	// RedirectMetadata answers metadata requests with a 302.
	RedirectMetadata bool
	// DisableRegistration leaves registration_endpoint out (and 404s /register).
	DisableRegistration bool
	// IssParameterSupported advertises authorization_response_iss_parameter_supported.
	IssParameterSupported bool
	// IssInRedirect chooses the iss of the authorization response (Iss…).
	IssInRedirect string
	// ScopesSupported is the metadata's scopes_supported (nil: absent).
	ScopesSupported []string
	// TokenEndpointAuthMethods replaces the advertised
	// token_endpoint_auth_methods_supported (default none, basic, post).
	TokenEndpointAuthMethods []string
	// ClientIDMetadataDocumentSupported advertises
	// client_id_metadata_document_supported, and accepts any https URL
	// with a path as the client id of a public client (the document is
	// not fetched: like the conformance suite's server, it takes the URL
	// as is).
	ClientIDMetadataDocumentSupported bool

	// --- protected resource metadata and the resource server ---

	// PRMAuthorizationServers replaces [Issuer()] in the PRM.
	PRMAuthorizationServers []string
	// PRMResource replaces the resource the PRM names (mismatch tests).
	PRMResource string
	// PRMScopesSupported is the PRM's scopes_supported (nil: absent).
	PRMScopesSupported []string
	// PRMNotFound lists PRM paths that answer 404.
	PRMNotFound []string
	// RedirectPRM answers PRM requests with a 302.
	RedirectPRM bool
	// ResourceMetadataURL replaces the resource_metadata of the 401
	// challenge (cross-origin tests); "-" leaves it out.
	ResourceMetadataURL string
	// ChallengeScope is the scope of the 401 challenge ("" leaves it out).
	ChallengeScope string
	// RequiredScopes must all be granted to pass Authorize; otherwise 403
	// insufficient_scope naming them.
	RequiredScopes []string
	// RequiredScopesFor is RequiredScopes for one JSON-RPC method of a
	// POST ("tools/call"): a token lacking them gets 403
	// insufficient_scope naming them (the scopes it has plus these), while
	// other requests pass with the token alone.
	RequiredScopesFor map[string][]string

	// --- registration ---

	// ClientIDMode makes the registration response malformed.
	ClientIDMode ClientIDMode
	// RegisterAuthMethod, when set, registers clients with this
	// token_endpoint_auth_method (and a secret unless "none"), whatever
	// they asked for.
	RegisterAuthMethod string

	// --- authorization ---

	// DenyAuthorization answers the authorization request with error=access_denied.
	DenyAuthorization bool

	// --- token endpoint ---

	// InvalidClient makes the next N token requests fail with invalid_client.
	InvalidClient int
	// UnauthorizedClient makes the next N token requests fail with
	// unauthorized_client.
	UnauthorizedClient int
	// InvalidClientAlways makes every token request fail with invalid_client.
	InvalidClientAlways bool
	// RedirectToken answers token requests with a 302.
	RedirectToken bool
	// AccessTokenTTL is the access token lifetime (default 1h).
	AccessTokenTTL time.Duration
	// NoRefreshTokens issues no refresh tokens.
	NoRefreshTokens bool
	// NoRotation keeps refresh tokens valid after use (default: rotate).
	NoRotation bool
	// TokenDelay delays every token response (concurrency tests).
	TokenDelay time.Duration
	// WithholdScopes are never granted, even when requested (a server
	// that keeps demanding a scope it will not give: step-up limits).
	WithholdScopes []string
}

// Request is one recorded request, secrets included.
type Request struct {
	Method        string
	Path          string
	Query         url.Values
	Form          url.Values // parsed urlencoded body
	Body          []byte     // raw body (registration JSON)
	Authorization string
	Status        int // the status answered
	// Error is the OAuth error code the token endpoint answered
	// ("invalid_grant"), "" for a success or another endpoint: what a
	// test counts without parsing bodies.
	Error string
	Time  time.Time
}

// Server is a running authorization server.
type Server struct {
	opts   Options
	ln     net.Listener
	hs     *http.Server
	done   chan struct{}
	origin string

	mu       sync.Mutex
	knobs    Knobs
	clients  map[string]*clientInfo
	codes    map[string]*codeInfo
	access   map[string]*tokenInfo
	refresh  map[string]*tokenInfo
	requests []Request
	seq      int
}

type clientInfo struct {
	id, secret, method string
	redirectURIs       []string
	// registered: obtained by dynamic registration (Restart forgets it).
	registered bool
}

type codeInfo struct {
	clientID, redirectURI, challenge, method, resource, subject string
	scopes                                                      []string
	expires                                                     time.Time
	used                                                        bool
}

type tokenInfo struct {
	clientID, resource, subject string
	scopes                      []string
	expires                     time.Time // zero: never
	revoked                     bool
	// presented counts the token requests that carried this refresh
	// token (ReusedRefreshTokens).
	presented int
}

// Start listens on a free loopback port and serves.
func Start(opts Options) (*Server, error) {
	if opts.MCPPath == "" {
		opts.MCPPath = "/mcp"
	}
	if opts.Name == "" {
		opts.Name = "as"
	}
	if opts.IssuerPath != "" && (!strings.HasPrefix(opts.IssuerPath, "/") || strings.HasSuffix(opts.IssuerPath, "/")) {
		return nil, fmt.Errorf("authserver: IssuerPath %q must start and not end with /", opts.IssuerPath)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("authserver: listen: %w", err)
	}
	s := &Server{
		opts:    opts,
		ln:      ln,
		done:    make(chan struct{}),
		origin:  "http://" + ln.Addr().String(),
		clients: make(map[string]*clientInfo),
		codes:   make(map[string]*codeInfo),
		access:  make(map[string]*tokenInfo),
		refresh: make(map[string]*tokenInfo),
	}
	s.hs = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(s.done)
		_ = s.hs.Serve(ln) // ErrServerClosed after Close
	}()
	return s, nil
}

// Close stops the server and waits for it.
func (s *Server) Close() {
	_ = s.hs.Close()
	<-s.done
}

// URL is the server's origin, http://127.0.0.1:PORT.
func (s *Server) URL() string { return s.origin }

// Issuer is the issuer identifier: URL() + Options.IssuerPath.
func (s *Server) Issuer() string { return s.origin + s.opts.IssuerPath }

// Set changes the knobs.
func (s *Server) Set(f func(*Knobs)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.knobs)
}

// Requests returns a copy of every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// RequestsTo returns the recorded requests whose path ends with suffix
// (e.g. "/token", "/register", "/authorize").
func (s *Server) RequestsTo(suffix string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// AddClient pre-registers a client (method "none", "client_secret_basic"
// or "client_secret_post"); no redirect URIs means any loopback one.
func (s *Server) AddClient(id, secret, method string, redirectURIs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = &clientInfo{id: id, secret: secret, method: method, redirectURIs: redirectURIs}
}

// Restart simulates an in-memory authorization server that restarted: it
// forgets every dynamically registered client, every code and every
// access and refresh token. Clients added with AddClient (configuration)
// stay. A forgotten client gets "invalid_client" at the token endpoint,
// and its authorization requests are answered with an error page instead
// of a redirect (RFC 6749 §4.1.2.1).
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.clients {
		if c.registered {
			delete(s.clients, id)
		}
	}
	clear(s.codes)
	clear(s.access)
	clear(s.refresh)
}

// ClientIDs returns the ids of every registered client.
func (s *Server) ClientIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// IssuedTokens returns every access and refresh token ever issued.
func (s *Server) IssuedTokens() (access, refresh []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.access {
		access = append(access, t)
	}
	for t := range s.refresh {
		refresh = append(refresh, t)
	}
	return access, refresh
}

// ExpireAccessTokens makes every issued access token invalid, so the next
// request gets a 401.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.access {
		t.revoked = true
	}
}

// RevokeRefreshTokens makes every issued refresh token invalid.
func (s *Server) RevokeRefreshTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.refresh {
		t.revoked = true
	}
}

// DefaultSubject is who an authorization request without a login_hint
// signs in as.
const DefaultSubject = "user"

// Subject is the subject an access token was issued to: the login_hint of
// the authorization request its grant came from (the person who approved:
// a test's browser adds login_hint to the authorization URL to choose
// who signs in, as a person would at a login form), or DefaultSubject.
// ok is false for a token this server never issued. A resource server
// (fixture.Options.Caller) uses it to say whose token a request carried,
// so a test can count calls made with another person's sign-in.
func (s *Server) Subject(accessToken string) (subject string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ti := s.access[accessToken]
	if ti == nil {
		return "", false
	}
	return ti.subject, true
}

// ReusedRefreshTokens returns the refresh tokens presented at the token
// endpoint more than once, with how often. With rotation (the default)
// each refresh token is good for one use, so a client that presents one
// twice (two processes refreshing one grant at once) loses the grant:
// tests of clients that share a grant require this to be empty.
func (s *Server) ReusedRefreshTokens() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for rt, ti := range s.refresh {
		if ti.presented > 1 {
			out[rt] = ti.presented
		}
	}
	return out
}

// recorder captures the status of a response.
type recorder struct {
	http.ResponseWriter
	status     int
	oauthError string // set by tokenError
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// serve records the request and routes it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rec := Request{
		Method:        r.Method,
		Path:          r.URL.Path,
		Query:         r.URL.Query(),
		Body:          body,
		Authorization: r.Header.Get("Authorization"),
		Time:          time.Now(),
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		rec.Form, _ = url.ParseQuery(string(body))
	}
	rw := &recorder{ResponseWriter: w}
	s.route(rw, r, rec)
	rec.Status, rec.Error = rw.status, rw.oauthError
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, rec Request) {
	p := r.URL.Path
	ip := s.opts.IssuerPath
	switch {
	case p == "/.well-known/oauth-authorization-server"+ip:
		s.metadata(w, r, MetaRFC8414)
	case p == "/.well-known/openid-configuration"+ip:
		s.metadata(w, r, MetaOIDCInsert)
	case ip != "" && p == ip+"/.well-known/openid-configuration":
		s.metadata(w, r, MetaOIDCAppend)
	case p == ip+"/authorize" && r.Method == http.MethodGet:
		s.authorize(w, r)
	case p == ip+"/token" && r.Method == http.MethodPost:
		s.token(w, r, rec)
	case p == ip+"/register" && r.Method == http.MethodPost:
		s.register(w, rec.Body)
	case strings.HasPrefix(p, "/.well-known/oauth-protected-resource") || p == "/prm":
		s.PRMHandler().ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) knobsCopy() Knobs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.knobs
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request, loc string) {
	k := s.knobsCopy()
	if k.MetadataLocation != MetaAll && k.MetadataLocation != loc {
		http.NotFound(w, r)
		return
	}
	if k.RedirectMetadata {
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere"+r.URL.Path, http.StatusFound)
		return
	}
	iss := s.Issuer()
	m := map[string]any{
		"issuer":                                iss,
		"authorization_endpoint":                iss + "/authorize",
		"token_endpoint":                        iss + "/token",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
	}
	if k.MetadataIssuer != "" {
		m["issuer"] = k.MetadataIssuer
	}
	if !k.DisableRegistration {
		m["registration_endpoint"] = iss + "/register"
	}
	if k.ClientIDMetadataDocumentSupported {
		m["client_id_metadata_document_supported"] = true
	}
	if !k.OmitCodeChallengeMethods {
		m["code_challenge_methods_supported"] = []string{"S256"}
		if k.CodeChallengeMethods != nil {
			m["code_challenge_methods_supported"] = k.CodeChallengeMethods
		}
	}
	if k.IssParameterSupported {
		m["authorization_response_iss_parameter_supported"] = true
	}
	if k.ScopesSupported != nil {
		m["scopes_supported"] = k.ScopesSupported
	}
	if k.TokenEndpointAuthMethods != nil {
		m["token_endpoint_auth_methods_supported"] = k.TokenEndpointAuthMethods
	}
	writeJSON(w, http.StatusOK, m)
}

// PRMRoutes returns the protected resource metadata routes to mount on the
// MCP server (fixture.Options.Extra): the path-aware and the root
// well-known locations.
func (s *Server) PRMRoutes() map[string]http.Handler {
	h := s.PRMHandler()
	return map[string]http.Handler{
		"/.well-known/oauth-protected-resource" + s.opts.MCPPath: h,
		"/.well-known/oauth-protected-resource":                  h,
	}
}

// PRMHandler serves protected resource metadata (RFC 9728) for the MCP
// endpoint on the request's host: resource is http://<host><MCPPath>, or
// the origin at the root well-known location, as RFC 9728 §3.3 has it.
func (s *Server) PRMHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := s.knobsCopy()
		if slices.Contains(k.PRMNotFound, r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		if k.RedirectPRM {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere"+r.URL.Path, http.StatusFound)
			return
		}
		resource := "http://" + r.Host + s.opts.MCPPath
		if r.URL.Path == "/.well-known/oauth-protected-resource" {
			resource = "http://" + r.Host
		}
		if k.PRMResource != "" {
			resource = k.PRMResource
		}
		servers := []string{s.Issuer()}
		if k.PRMAuthorizationServers != nil {
			servers = k.PRMAuthorizationServers
		}
		m := map[string]any{
			"resource":                 resource,
			"authorization_servers":    servers,
			"bearer_methods_supported": []string{"header"},
		}
		if k.PRMScopesSupported != nil {
			m["scopes_supported"] = k.PRMScopesSupported
		}
		writeJSON(w, http.StatusOK, m)
	})
}

func (s *Server) newID(kind string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	s.seq++
	return fmt.Sprintf("%s-%s%d-%s", s.opts.Name, kind, s.seq, hex.EncodeToString(b))
}

func (s *Server) register(w http.ResponseWriter, body []byte) {
	k := s.knobsCopy()
	if k.DisableRegistration {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found"})
		return
	}
	var req struct {
		RedirectURIs            []string `json:"redirect_uris"`
		TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
		GrantTypes              []string `json:"grant_types"`
		ClientName              string   `json:"client_name"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.RedirectURIs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata", "error_description": "redirect_uris is required"})
		return
	}
	method := req.TokenEndpointAuthMethod
	if method == "" {
		method = "client_secret_basic"
	}
	if k.RegisterAuthMethod != "" {
		method = k.RegisterAuthMethod
	}
	s.mu.Lock()
	c := &clientInfo{id: s.newID("client"), method: method, redirectURIs: req.RedirectURIs, registered: true}
	if method != "none" {
		c.secret = s.newID("secret")
	}
	s.mu.Unlock()
	resp := map[string]any{
		"client_id":                  c.id,
		"token_endpoint_auth_method": c.method,
		"redirect_uris":              c.redirectURIs,
		"grant_types":                req.GrantTypes,
		"client_name":                req.ClientName,
		"client_id_issued_at":        time.Now().Unix(),
	}
	if c.secret != "" {
		resp["client_secret"] = c.secret
		resp["client_secret_expires_at"] = 0
	}
	switch k.ClientIDMode {
	case ClientIDNormal:
		s.mu.Lock()
		s.clients[c.id] = c
		s.mu.Unlock()
	case ClientIDMissing:
		delete(resp, "client_id")
	case ClientIDEmpty:
		resp["client_id"] = ""
	case ClientIDNumber:
		resp["client_id"] = 12345
	case ClientIDHuge:
		resp["client_id"] = strings.Repeat("x", 10<<10)
	case ClientIDControl:
		resp["client_id"] = "abc\x01def"
	case ClientIDNull:
		resp["client_id"] = nil
	case ClientIDNotJSON:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "client_id="+c.id)
		return
	case ClientIDArray:
		writeJSON(w, http.StatusCreated, []any{resp})
		return
	}
	writeJSON(w, http.StatusCreated, resp)
}

// lookupClient finds a client by id: a registered or configured one, or
// a client ID metadata document URL when that is enabled (a public
// client; its redirect URIs are not checked, as the document is never
// fetched).
func (s *Server) lookupClient(id string, k Knobs) *clientInfo {
	s.mu.Lock()
	c := s.clients[id]
	s.mu.Unlock()
	if c == nil && k.ClientIDMetadataDocumentSupported && isCIMDURL(id) {
		c = &clientInfo{id: id, method: "none"}
	}
	return c
}

func isCIMDURL(id string) bool {
	u, err := url.Parse(id)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.Path != "" && u.Path != "/"
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	k := s.knobsCopy()
	q := r.URL.Query()
	c := s.lookupClient(q.Get("client_id"), k)
	redirect := q.Get("redirect_uri")
	if c == nil {
		// Never a redirect for an unknown client (RFC 6749 §4.1.2.1):
		// the person sees this page, and the client hears nothing.
		http.Error(w, "invalid_client: unknown client_id", http.StatusBadRequest)
		return
	}
	if len(c.redirectURIs) > 0 && !slices.Contains(c.redirectURIs, redirect) || redirect == "" {
		http.Error(w, "redirect_uri not registered for this client", http.StatusBadRequest)
		return
	}
	ru, err := url.Parse(redirect)
	if err != nil {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	back := ru.Query()
	if st := q.Get("state"); st != "" {
		back.Set("state", st)
	}
	switch iss := k.IssInRedirect; {
	case iss == IssCorrect || iss == IssDefault && k.IssParameterSupported:
		back.Set("iss", s.Issuer())
	case iss == IssWrong:
		back.Set("iss", "https://evil.example.com")
	case iss == IssSlash:
		back.Set("iss", s.Issuer()+"/")
	}
	fail := func(code, desc string) {
		back.Set("error", code)
		back.Set("error_description", desc)
		ru.RawQuery = back.Encode()
		http.Redirect(w, r, ru.String(), http.StatusFound)
	}
	method := q.Get("code_challenge_method")
	allowed := []string{"S256"}
	if k.CodeChallengeMethods != nil {
		allowed = k.CodeChallengeMethods
	}
	switch {
	case k.DenyAuthorization:
		fail("access_denied", "the user declined")
		return
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "only code")
		return
	case q.Get("code_challenge") == "" || !slices.Contains(allowed, method):
		fail("invalid_request", "PKCE S256 is required")
		return
	case q.Get("resource") == "":
		fail("invalid_target", "resource is required")
		return
	}
	subject := q.Get("login_hint")
	if subject == "" {
		subject = DefaultSubject
	}
	s.mu.Lock()
	code := s.newID("code")
	s.codes[code] = &codeInfo{
		clientID: c.id, redirectURI: redirect, challenge: q.Get("code_challenge"), method: method,
		resource: q.Get("resource"), subject: subject, scopes: strings.Fields(q.Get("scope")), expires: time.Now().Add(time.Minute),
	}
	s.mu.Unlock()
	back.Set("code", code)
	ru.RawQuery = back.Encode()
	http.Redirect(w, r, ru.String(), http.StatusFound)
}

// tokenError answers an RFC 6749 §5.2 error.
func tokenError(w http.ResponseWriter, status int, code, desc string) {
	if rw, ok := w.(*recorder); ok {
		rw.oauthError = code
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// authenticateClient checks client authentication per the client's method.
func (s *Server) authenticateClient(r *http.Request, form url.Values, k Knobs) (*clientInfo, error) {
	id, secret, basic := r.BasicAuth()
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, errors.New("bad Basic encoding")
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	c := s.lookupClient(id, k)
	if c == nil {
		return nil, errors.New("unknown client")
	}
	switch c.method {
	case "none":
		if basic || secret != "" {
			return nil, errors.New("public client must not authenticate")
		}
	case "client_secret_basic":
		if !basic || secret != c.secret {
			return nil, errors.New("client_secret_basic required")
		}
		if form.Get("client_secret") != "" {
			return nil, errors.New("secret sent twice")
		}
	case "client_secret_post":
		if basic || secret != c.secret {
			return nil, errors.New("client_secret_post required")
		}
	}
	return c, nil
}

func (s *Server) token(w http.ResponseWriter, r *http.Request, rec Request) {
	k := s.knobsCopy()
	if k.TokenDelay > 0 {
		time.Sleep(k.TokenDelay)
	}
	if k.RedirectToken {
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere/token", http.StatusTemporaryRedirect)
		return
	}
	if k.InvalidClientAlways || k.InvalidClient > 0 {
		s.mu.Lock()
		if s.knobs.InvalidClient > 0 {
			s.knobs.InvalidClient--
		}
		s.mu.Unlock()
		tokenError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed (injected)")
		return
	}
	if k.UnauthorizedClient > 0 {
		s.mu.Lock()
		if s.knobs.UnauthorizedClient > 0 {
			s.knobs.UnauthorizedClient--
		}
		s.mu.Unlock()
		tokenError(w, http.StatusBadRequest, "unauthorized_client", "the client may not use this grant (injected)")
		return
	}
	form := rec.Form
	c, err := s.authenticateClient(r, form, k)
	if err != nil {
		tokenError(w, http.StatusUnauthorized, "invalid_client", err.Error())
		return
	}
	resource := form.Get("resource")
	if resource == "" {
		tokenError(w, http.StatusBadRequest, "invalid_target", "resource is required")
		return
	}
	var (
		scopes  []string
		subject string
	)
	switch form.Get("grant_type") {
	case "authorization_code":
		s.mu.Lock()
		ci := s.codes[form.Get("code")]
		ok := ci != nil && !ci.used && time.Now().Before(ci.expires) && ci.clientID == c.id
		if ok {
			ci.used = true
		}
		s.mu.Unlock()
		switch {
		case !ok:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown, used or expired code")
			return
		case form.Get("redirect_uri") != ci.redirectURI:
			tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri mismatch")
			return
		case !verifyPKCE(ci.method, ci.challenge, form.Get("code_verifier")):
			tokenError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
			return
		case resource != ci.resource:
			tokenError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request")
			return
		}
		scopes, subject = ci.scopes, ci.subject
	case "refresh_token":
		s.mu.Lock()
		ti := s.refresh[form.Get("refresh_token")]
		if ti != nil {
			ti.presented++
		}
		ok := ti != nil && !ti.revoked && ti.clientID == c.id
		if ok && ti.resource != resource {
			s.mu.Unlock()
			tokenError(w, http.StatusBadRequest, "invalid_target", "resource differs from the grant")
			return
		}
		if ok && !k.NoRotation {
			ti.revoked = true
		}
		s.mu.Unlock()
		if !ok {
			tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown or revoked refresh token")
			return
		}
		scopes, subject = ti.scopes, ti.subject
	default:
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "")
		return
	}
	scopes = slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { return slices.Contains(k.WithholdScopes, sc) })
	ttl := k.AccessTokenTTL
	if ttl == 0 {
		ttl = time.Hour
	}
	s.mu.Lock()
	at := s.newID("at")
	s.access[at] = &tokenInfo{clientID: c.id, resource: resource, subject: subject, scopes: scopes, expires: time.Now().Add(ttl)}
	resp := map[string]any{
		"access_token": at,
		"token_type":   "Bearer",
		"expires_in":   max(1, int(ttl.Round(time.Second)/time.Second)),
		"scope":        strings.Join(scopes, " "),
	}
	if !k.NoRefreshTokens {
		if form.Get("grant_type") == "refresh_token" && k.NoRotation {
			resp["refresh_token"] = form.Get("refresh_token")
		} else {
			rt := s.newID("rt")
			s.refresh[rt] = &tokenInfo{clientID: c.id, resource: resource, subject: subject, scopes: scopes}
			resp["refresh_token"] = rt
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

func verifyPKCE(method, challenge, verifier string) bool {
	if verifier == "" {
		return false
	}
	switch method {
	case "S256":
		sum := sha256.Sum256([]byte(verifier))
		return base64.RawURLEncoding.EncodeToString(sum[:]) == challenge
	case "plain":
		return verifier == challenge
	}
	return false
}

// Authorize is the resource-server check for fixture.Options.Authorize: a
// valid, unexpired bearer token issued by this server for this resource
// passes; otherwise 401 with
//
//	WWW-Authenticate: Bearer resource_metadata="…", scope="…"
//
// and a token lacking RequiredScopes gets 403 insufficient_scope.
func (s *Server) Authorize(w http.ResponseWriter, r *http.Request) bool {
	k := s.knobsCopy()
	rm := k.ResourceMetadataURL
	if rm == "" {
		rm = "http://" + r.Host + "/.well-known/oauth-protected-resource" + s.opts.MCPPath
	}
	challenge := func(errCode string, scope string) string {
		parts := []string{}
		if errCode != "" {
			parts = append(parts, fmt.Sprintf("error=%q", errCode))
		}
		if scope != "" {
			parts = append(parts, fmt.Sprintf("scope=%q", scope))
		}
		if rm != "-" {
			parts = append(parts, fmt.Sprintf("resource_metadata=%q", rm))
		}
		return "Bearer " + strings.Join(parts, ", ")
	}
	v := r.Header.Get("Authorization")
	tok, hasBearer := strings.CutPrefix(v, "Bearer ")
	s.mu.Lock()
	ti := s.access[tok]
	s.mu.Unlock()
	canonical := "http://" + r.Host + s.opts.MCPPath
	valid := hasBearer && ti != nil && !ti.revoked && time.Now().Before(ti.expires) &&
		(ti.resource == canonical || ti.resource == "http://"+r.Host || k.PRMResource != "" && ti.resource == k.PRMResource)
	if !valid {
		errCode := ""
		if hasBearer {
			errCode = "invalid_token"
		}
		w.Header().Set("WWW-Authenticate", challenge(errCode, k.ChallengeScope))
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return false
	}
	for _, need := range k.RequiredScopes {
		if !slices.Contains(ti.scopes, need) {
			w.Header().Set("WWW-Authenticate", challenge("insufficient_scope", strings.Join(k.RequiredScopes, " ")))
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "insufficient_scope"})
			return false
		}
	}
	if need := k.RequiredScopesFor[rpcMethod(r)]; len(need) > 0 && !isSubset(need, ti.scopes) {
		// As real servers do: the challenge names what the token has
		// and what the request needs besides (MCP 2025-11-25 §scope
		// challenge handling).
		all := append(slices.Clone(ti.scopes), need...)
		slices.Sort(all)
		w.Header().Set("WWW-Authenticate", challenge("insufficient_scope", strings.Join(slices.Compact(all), " ")))
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "insufficient_scope"})
		return false
	}
	return true
}

// rpcMethod is the JSON-RPC method of a POST's body ("" for other
// requests). The body is read and put back for the next handler.
func rpcMethod(r *http.Request) string {
	if r.Method != http.MethodPost || r.Body == nil {
		return ""
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	_ = r.Body.Close()
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	if err != nil {
		return ""
	}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	return m.Method
}

func isSubset(sub, super []string) bool {
	for _, s := range sub {
		if !slices.Contains(super, s) {
			return false
		}
	}
	return true
}
