// Package oidctest runs a real OpenID provider for tests and by hand
// (issue #22): zitadel/oidc's example provider (its op package, its
// in-memory storage and its login page, from the Go module proxy), not a
// provider written here. A test starts one on a free loopback port,
// registers its client with the redirect URI it serves, and signs people
// in through the provider's own login form with an http.Client and a
// cookie jar, as a person's browser would, so it needs no browser.
//
// What this package adds to the example is only what a test needs and
// the example fixes at compile time: clients registered while the
// provider runs (the example's client list is a package-level map filled
// before start, and its redirect URIs cannot be changed; a gateway's
// redirect URI names a port known only once it listens), and users of the
// test's choosing. Both are kept behind the example storage's interfaces
// (op.Storage's GetClientByClientID and AuthorizeClientIDSecret,
// storage.UserStore): the protocol, the tokens, the keys and the login
// are the example's.
package oidctest

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// Default people and client of a provider started with Start.
const (
	AlicePassword = "alice-Secret-1"
	BobPassword   = "bob-Secret-2"
	// ClientID and ClientSecret are the confidential web client Start
	// registers (with no redirect URI until AddRedirectURI).
	ClientID     = "remotemcp-gateway"
	ClientSecret = "gateway-client-secret"
)

// User is a person who can sign in at the provider.
type User struct {
	// Username and Password are what the login form takes.
	Username, Password string
	// Email is the email claim; EmailVerified its email_verified.
	Email         string
	EmailVerified bool
}

// Alice and Bob are the people of a provider started with Start.
var (
	Alice = User{Username: "alice", Password: AlicePassword, Email: "alice@example.org", EmailVerified: true}
	Bob   = User{Username: "bob", Password: BobPassword, Email: "bob@example.org", EmailVerified: true}
)

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is the provider's issuer URL, http://127.0.0.1:PORT (its
	// discovery document is Issuer + "/.well-known/openid-configuration").
	Issuer string

	srv   *http.Server
	done  chan struct{}
	users *users
	store *clientStore
}

// Start starts a provider on a free port of 127.0.0.1 with Alice and Bob
// and the client ClientID/ClientSecret, and stops it when the test ends.
func Start(t interface {
	Helper()
	Fatalf(string, ...any)
	Cleanup(func())
}) *Provider {
	t.Helper()
	p, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("oidctest: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// Listen starts a provider on addr (host:port, port 0 for a free one)
// with Alice and Bob and the client ClientID/ClientSecret. Close stops
// it.
func Listen(addr string) (*Provider, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	issuer := "http://" + ln.Addr().String()
	us := &users{byID: map[string]*storage.User{}}
	us.add(Alice)
	us.add(Bob)
	// The example storage's own client map stays empty: clientStore
	// answers for clients.
	cs := &clientStore{Storage: storage.NewStorageWithClients(us, map[string]*storage.Client{}), clients: map[string]*client{}, users: us}
	cs.add(ClientID, ClientSecret)
	// A nil logger leaves the process's default logger alone (the
	// example replaces it otherwise).
	router := exampleop.SetupServer(issuer, cs, nil, false)
	p := &Provider{Issuer: issuer, srv: &http.Server{Handler: router}, done: make(chan struct{}), users: us, store: cs}
	go func() {
		defer close(p.done)
		p.srv.Serve(ln)
	}()
	return p, nil
}

// Close stops the provider.
func (p *Provider) Close() {
	p.srv.Close()
	<-p.done
}

// AddUser adds a person who can sign in.
func (p *Provider) AddUser(u User) { p.users.add(u) }

// AddClient registers a confidential web client (client_secret_basic,
// authorization code with PKCE, http redirect URIs allowed, as the
// example's WebClient) with its redirect URIs; it replaces a client of
// the same id.
func (p *Provider) AddClient(id, secret string, redirectURIs ...string) {
	p.store.add(id, secret, redirectURIs...)
}

// AddRedirectURI registers one more redirect URI for the client id.
func (p *Provider) AddRedirectURI(id, uri string) error {
	return p.store.addRedirect(id, uri)
}

// users is a storage.UserStore whose people can be added while the
// provider runs.
type users struct {
	mu   sync.Mutex
	byID map[string]*storage.User
}

func (u *users) add(x User) {
	u.mu.Lock()
	defer u.mu.Unlock()
	id := "id-" + x.Username
	u.byID[id] = &storage.User{ID: id, Username: x.Username, Password: x.Password, Email: x.Email,
		EmailVerified: x.EmailVerified, FirstName: x.Username, LastName: "Test", PreferredLanguage: language.English}
}

func (u *users) GetUserByID(id string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.byID[id]
}

func (u *users) GetUserByUsername(name string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, x := range u.byID {
		if x.Username == name {
			return x
		}
	}
	return nil
}

// ExampleClientID is the example's service user (JWT profile grant).
func (u *users) ExampleClientID() string { return storage.ServiceUserID }

// clientStore is the example storage with its clients looked up in a
// list that may grow while it runs.
type clientStore struct {
	*storage.Storage
	mu      sync.Mutex
	clients map[string]*client
	users   *users // the people (the email claims of AddJWTClient)
}

type client struct {
	secret   string
	redirect []string
	// jwt: access tokens are JWTs, with the person's email claims when
	// emailClaims (AddJWTClient).
	jwt, emailClaims bool
}

func (s *clientStore) add(id, secret string, redirect ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = &client{secret: secret, redirect: redirect}
}

func (s *clientStore) addRedirect(id, uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return fmt.Errorf("oidctest: no client %q", id)
	}
	c.redirect = append(c.redirect, uri)
	return nil
}

// GetClientByClientID is the example's web client with the redirect URIs
// registered so far (op.Storage).
func (s *clientStore) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	c, ok := s.clients[id]
	var redirect []string
	var jwt bool
	if ok {
		redirect = append(redirect, c.redirect...)
		jwt = c.jwt
	}
	s.mu.Unlock()
	if !ok {
		return nil, errors.New("client not found")
	}
	if len(redirect) == 0 {
		// WebClient puts in a default of its own when given none.
		redirect = []string{"urn:oidctest:none"}
	}
	web := storage.RedirectGlobsClient(storage.WebClient(id, c.secret, redirect...))
	if jwt {
		return jwtClient{web}, nil
	}
	return web, nil
}

// AuthorizeClientIDSecret checks a client's secret (op.Storage).
func (s *clientStore) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return errors.New("client not found")
	}
	if c.secret != secret {
		return errors.New("invalid secret")
	}
	return nil
}

// loginForm finds the hidden auth request id in the example's login page.
var loginForm = regexp.MustCompile(`name="id" value="([^"]*)"`)

// SignIn does what a person does at the provider, starting from an
// authorization request URL (the one a client redirected the browser
// to): it follows the provider's redirects to its login page, fills in
// the form with username and password, and follows the provider's
// redirects until one leads away from the provider. It returns that URL
// (the client's redirect URI with code and state, or with an error)
// without requesting it. c keeps the provider's cookies like a browser;
// its CheckRedirect is not used.
func (p *Provider) SignIn(c *http.Client, authURL, username, password string) (*url.URL, error) {
	iss, _ := url.Parse(p.Issuer)
	var away *url.URL
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != iss.Host {
			away = req.URL
			return http.ErrUseLastResponse
		}
		if len(via) > 20 {
			return errors.New("too many redirects")
		}
		return nil
	}
	resp, err := cc.Get(authURL)
	if err != nil {
		return nil, fmt.Errorf("oidctest: open the authorization request: %w", err)
	}
	if away != nil {
		resp.Body.Close()
		return away, nil // signed in already: no form
	}
	body, err := readPage(resp)
	if err != nil {
		return nil, fmt.Errorf("oidctest: authorization request: %w", err)
	}
	m := loginForm.FindStringSubmatch(body)
	if m == nil {
		return nil, fmt.Errorf("oidctest: no login form at %s: %.300s", resp.Request.URL, body)
	}
	form := url.Values{"id": {html.UnescapeString(m[1])}, "username": {username}, "password": {password}}
	resp, err = cc.PostForm(p.Issuer+"/login/username", form)
	if err != nil {
		return nil, fmt.Errorf("oidctest: submit the login form: %w", err)
	}
	if away != nil {
		resp.Body.Close()
		return away, nil
	}
	body, err = readPage(resp)
	if err != nil {
		return nil, fmt.Errorf("oidctest: login form: %w", err)
	}
	if strings.Contains(body, "username or password wrong") {
		return nil, fmt.Errorf("oidctest: the provider refused %s's password", username)
	}
	return nil, fmt.Errorf("oidctest: the login did not lead back to the client: %s: %.300s", resp.Request.URL, body)
}

// Login is a person signing in from start, a page of the client that
// sends them to the provider (the client's sign-in URL): c follows every
// redirect, the provider's login form is filled in with username and
// password, and the answer to the client's redirect URI (and whatever it
// redirects to) is returned. c must have a cookie jar.
func (p *Provider) Login(c *http.Client, start, username, password string) (*http.Response, error) {
	iss, _ := url.Parse(p.Issuer)
	var authURL *url.URL
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host == iss.Host {
			authURL = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := cc.Get(start)
	if err != nil {
		return nil, fmt.Errorf("oidctest: open %s: %w", start, err)
	}
	resp.Body.Close()
	if authURL == nil {
		return nil, fmt.Errorf("oidctest: %s did not lead to the provider (%s)", start, resp.Status)
	}
	back, err := p.SignIn(c, authURL.String(), username, password)
	if err != nil {
		return nil, err
	}
	return c.Get(back.String())
}

func readPage(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %.300s", resp.Request.URL, resp.Status, b)
	}
	return string(b), nil
}
