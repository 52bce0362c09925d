package daemon

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/remotemcp/remotemcp/localapi"
)

// A gateway's settings page (SPEC §9 A11, issue #22) is the personal
// page, for the person who signed in: the same assets and the same local
// API routes, served by that person's engine (gatewaySocket.apiFor), so
// every server, card, call and token it can reach is theirs by
// construction. What differs is the way in:
//
//   - the page lives at the root of the page's URL (no secret prefix:
//     people sign in for real) and its session cookie is the gateway's
//     own (remotemcp_gateway, or __Host-remotemcp_gateway when the page
//     is https), HttpOnly, SameSite=Strict, Path=/, bound to the person
//     in memory;
//   - with OpenID Connect, GET / without a session goes to /oidc/login,
//     which sends the browser to the provider with a fresh state, nonce
//     and PKCE challenge; the state is also kept in a cookie of this
//     browser (SameSite=Lax, Path=/oidc/), so an answer is taken only in
//     the browser that asked, once, within signInTTL;
//   - with an authenticating proxy, every request names its person in
//     the trusted header, which counts only from the trusted proxies: a
//     request from anywhere else is refused whatever it carries;
//   - the guard's Host and Origin checks accept the public URL's host
//     and origin besides the loopback ones, and state-changing requests
//     need one of those origins, as on the personal page.

// personCtx is who a gateway page request acts for.
type personCtx struct {
	email   string
	api     *api
	admin   bool
	session string // the session cookie's value; "" through a proxy
}

type personKey struct{}

func personOf(ctx context.Context) *personCtx {
	p, _ := ctx.Value(personKey{}).(*personCtx)
	return p
}

// secure reports whether the page is https for browsers, which makes its
// cookies Secure.
func (s *Server) secure() bool {
	return s.tlsConf != nil || s.signIn != nil && s.signIn.public != nil && s.signIn.public.Scheme == "https"
}

// sessionCookie is the gateway page's session cookie name: with the
// __Host- prefix when Secure, so that no other host or path can set it.
func (s *Server) sessionCookie() string {
	if s.secure() {
		return "__Host-remotemcp_gateway"
	}
	return "remotemcp_gateway"
}

// signInCookie keeps the state of a sign-in under way in the browser
// that started it.
func (s *Server) signInCookie() string {
	if s.secure() {
		return "__Secure-remotemcp_signin"
	}
	return "remotemcp_signin"
}

// pageURL is the page's URL as browsers reach it.
func (s *Server) pageURL() *url.URL {
	if s.signIn != nil && s.signIn.public != nil {
		return s.signIn.public
	}
	u, _ := url.Parse(s.baseURL)
	return u
}

// redirectURI is the page's redirect URI at the OpenID provider.
func (s *Server) redirectURI() string { return s.pageURL().String() + CallbackOIDC }

// onPageHost reports whether r was sent to the page's own host, where its
// cookies live.
func (s *Server) onPageHost(r *http.Request) bool {
	return strings.EqualFold(r.Host, s.pageURL().Host)
}

// toPageHost sends the browser to the same path on the page's host: a
// person who typed localhost gets their cookies on 127.0.0.1, where the
// provider's answer comes back.
func (s *Server) toPageHost(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, s.pageURL().String()+r.URL.RequestURI(), http.StatusFound)
}

func (s *Server) setCookie(w http.ResponseWriter, name, value, path string, maxAge int, site http.SameSite) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: s.secure(), SameSite: site})
}

// gatewayPage is what a gateway serves on its TCP listener: the OAuth
// redirect URI its people's sign-ins to servers share, the static assets,
// and, with Options.SignIn, the sign-in and each person's page and API.
func (s *Server) gatewayPage() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+localapi.CallbackPath, localapi.CallbackHandler(s.o.Gateway, s.renderCallback))
	mux.HandleFunc("GET /static/", s.handleStatic)
	if s.signIn == nil {
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			s.renderMessage(w, http.StatusNotFound, "No sign-in configured",
				"This gateway's settings page needs people to sign in, and no way to sign in is configured: start it with --oidc-issuer (OpenID Connect) or --trusted-user-header (an authenticating proxy). Admins use the CLI on the gateway's host (remotemcp --user EMAIL …), hosts the MCP endpoint with their person's token.")
		})
		return s.guard(mux)
	}
	if s.signIn.oidc != nil {
		mux.HandleFunc("GET "+loginOIDC, s.oidcLogin)
		mux.HandleFunc("GET "+CallbackOIDC, s.oidcCallback)
	}
	page := http.NewServeMux()
	page.HandleFunc("GET /{$}", s.handlePersonPage)
	page.HandleFunc("POST /api/logout", s.handleSignOut)
	page.HandleFunc("GET /api/users", s.adminOnly(s.gw.users))
	page.HandleFunc("POST /api/users", s.adminOnly(s.gw.addUser))
	page.HandleFunc("DELETE /api/users/{email}", s.adminOnly(s.gw.removeUser))
	page.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		personOf(r.Context()).api.handler().ServeHTTP(w, r)
	})
	page.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.renderMessage(w, http.StatusNotFound, "Not found", "There is no such page.")
	})
	mux.HandleFunc("GET /signed-out", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, http.StatusOK, "message.html", messageData{Title: "Signed out",
			Message: "You are signed out of this gateway's page (your provider may keep you signed in there).", Link: "/", LinkText: "Sign in again"})
	})
	mux.Handle("/", s.requirePerson(page))
	return s.guard(mux)
}

// requirePerson finds who a request for the page acts for — the person of
// its session, or the one the trusted proxy names — and their API; it
// refuses a cross-site request, and a state-changing one without the
// page's Origin, as requireSession does.
func (s *Server) requirePerson(next http.Handler) http.Handler {
	si := s.signIn
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isAPI := strings.HasPrefix(r.URL.Path, "/api/")
		var email, sess string
		if si.oidc != nil {
			if r.Method == http.MethodGet && !isAPI && !s.onPageHost(r) {
				s.toPageHost(w, r)
				return
			}
			if c, err := r.Cookie(s.sessionCookie()); err == nil {
				if p, ok := s.sessions.lookup(c.Value); ok {
					email, sess = p, c.Value
				}
			}
			if email == "" {
				if r.Method == http.MethodGet && !isAPI {
					http.Redirect(w, r, loginOIDC, http.StatusFound)
					return
				}
				s.deny(w, r, http.StatusUnauthorized, localapi.CodeUnauthorized, "not signed in: open the gateway's page to sign in")
				return
			}
		} else {
			if !si.fromProxy(r) {
				s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden, fmt.Sprintf(
					"this gateway's page is reached through its authenticating proxy, which says who you are; this request came from %s, which is not one of its trusted proxies (--trusted-proxy), so it cannot name anyone", peerHost(r)))
				return
			}
			email = normalEmail(r.Header.Get(si.o.TrustedUserHeader))
			if email == "" {
				s.deny(w, r, http.StatusUnauthorized, localapi.CodeUnauthorized, fmt.Sprintf(
					"the authenticating proxy sent nobody in %s: sign in at the proxy first", si.o.TrustedUserHeader))
				return
			}
		}
		if sfs := r.Header.Get("Sec-Fetch-Site"); sfs == "cross-site" || sfs == "same-site" {
			s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden, "cross-site requests are refused")
			return
		}
		if stateChanging(r.Method) && !s.sameOrigin(r.Header.Get("Origin"), r) {
			s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden, "a state-changing request from the settings page must carry the page's own Origin header")
			return
		}
		a, err := s.personAPI(r.Context(), email)
		if err != nil {
			if e := toError(err); e.Code == localapi.CodeNotFound {
				s.sessions.endPerson(email)
				s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden, notAUser(email))
				return
			}
			s.deny(w, r, http.StatusServiceUnavailable, localapi.CodeUnavailable, "your settings cannot be opened now: "+err.Error())
			return
		}
		id := sess
		if id == "" {
			id = "proxy:" + email
		}
		sum := sha256.Sum256([]byte(id))
		ctx := withCaller(r.Context(), caller{page: hex.EncodeToString(sum[:16]), person: email})
		ctx = context.WithValue(ctx, personKey{}, &personCtx{email: email, api: a, admin: si.admins[email], session: sess})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// notAUser is the refusal of someone the provider or proxy vouches for
// who is not one of the gateway's people.
func notAUser(email string) string {
	return email + " is not a user of this gateway: ask one of its admins to add you (remotemcp users add " + email + ")"
}

// peerHost is the address a request came from, without its port.
func peerHost(r *http.Request) string {
	if i := strings.LastIndex(r.RemoteAddr, ":"); i > 0 {
		return strings.Trim(r.RemoteAddr[:i], "[]")
	}
	return r.RemoteAddr
}

// personAPI returns the API of the person's engine: CodeNotFound when
// they are not a user of the gateway, unless they are an admin, who is
// added then.
func (s *Server) personAPI(ctx context.Context, email string) (*api, error) {
	a, err := s.gw.apiFor(ctx, email)
	if err == nil || toError(err).Code != localapi.CodeNotFound || !s.signIn.admins[email] {
		return a, err
	}
	if _, err := s.o.Gateway.AddUser(ctx, email); err != nil && toError(err).Code != localapi.CodeConflict {
		return nil, fmt.Errorf("add admin %s: %w", email, err)
	}
	s.log.Info("gateway: admin added at their first sign-in", "email", email)
	return s.gw.apiFor(ctx, email)
}

// adminOnly lets only the gateway's admins (SignIn.Admins) use a route of
// the admins' socket on the page.
func (s *Server) adminOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !personOf(r.Context()).admin {
			s.deny(w, r, http.StatusForbidden, localapi.CodeForbidden, "only the gateway's admins (--admin) manage its people")
			return
		}
		h(w, r)
	}
}

// handlePersonPage serves GET /: the settings page of the person.
func (s *Server) handlePersonPage(w http.ResponseWriter, r *http.Request) {
	p := personOf(r.Context())
	s.renderPage(w, r, p.api.eng, pageData{Person: p.email, Admin: p.admin, SignOut: s.signIn.oidc != nil})
}

// handleSignOut serves POST /api/logout (the page's Sign out, which then
// shows /signed-out): the session ends. Through a proxy there is none
// here: signing out is the proxy's.
func (s *Server) handleSignOut(w http.ResponseWriter, r *http.Request) {
	p := personOf(r.Context())
	if p.session == "" {
		s.deny(w, r, http.StatusConflict, localapi.CodeConflict, "you are signed in by the gateway's authenticating proxy: sign out there")
		return
	}
	s.sessions.end(p.session)
	s.setCookie(w, s.sessionCookie(), "", "/", -1, http.SameSiteStrictMode)
	w.WriteHeader(http.StatusNoContent)
}

// oidcLogin serves GET /oidc/login: a new sign-in, sent to the provider.
func (s *Server) oidcLogin(w http.ResponseWriter, r *http.Request) {
	if !s.onPageHost(r) {
		s.toPageHost(w, r)
		return
	}
	state, authURL, err := s.signIn.oidc.start(r.Context(), s.redirectURI())
	if err != nil {
		s.log.Warn("gateway: sign-in cannot start", "err", err)
		s.renderMessage(w, http.StatusBadGateway, "The sign-in provider cannot be reached",
			"The gateway cannot reach its OpenID provider now ("+err.Error()+"). Try again in a moment.")
		return
	}
	s.setCookie(w, s.signInCookie(), state, "/oidc/", int(signInTTL.Seconds()), http.SameSiteLaxMode)
	http.Redirect(w, r, authURL, http.StatusFound)
}

// oidcCallback serves GET /oidc/callback, the provider's answer: taken
// once, only in the browser that started the sign-in and only within
// signInTTL; then the person gets a session if they are a user of the
// gateway (or an admin).
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	c, _ := r.Cookie(s.signInCookie())
	if state == "" || c == nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		// The browser's own sign-in, if any, goes on: an answer someone
		// else made it open does not end it.
		s.signInFailed(w, refused(http.StatusBadRequest, "This sign-in answer does not belong to a sign-in started in this browser", errors.New("state absent or not this browser's")))
		return
	}
	s.setCookie(w, s.signInCookie(), "", "/oidc/", -1, http.SameSiteLaxMode)
	ps, ok := s.signIn.oidc.take(state)
	if !ok {
		s.signInFailed(w, refused(http.StatusBadRequest, "This sign-in is over: it was finished already, or it took longer than 10 minutes", errors.New("state unknown, used or expired")))
		return
	}
	if e := q.Get("error"); e != "" {
		s.signInFailed(w, refused(http.StatusForbidden, "The sign-in provider did not sign you in ("+e+": "+q.Get("error_description")+")", errors.New("the provider answered "+e)))
		return
	}
	email, err := s.signIn.oidc.finish(r.Context(), s.redirectURI(), q.Get("code"), ps)
	if err != nil {
		s.signInFailed(w, err)
		return
	}
	if _, err := s.personAPI(r.Context(), email); err != nil {
		if toError(err).Code == localapi.CodeNotFound {
			s.signInFailed(w, refused(http.StatusForbidden, notAUser(email), errors.New("not a user")))
			return
		}
		s.signInFailed(w, refused(http.StatusServiceUnavailable, "Your settings cannot be opened now", err))
		return
	}
	sess := s.sessions.start(email)
	s.setCookie(w, s.sessionCookie(), sess, "/", int(SessionTTL.Seconds()), http.SameSiteStrictMode)
	s.log.Info("gateway: signed in on the page", "email", email)
	// A page that moves on by itself rather than a redirect: the Strict
	// cookie is not sent along a redirect chain that began at the
	// provider (handleLogin does the same).
	s.render(w, http.StatusOK, "message.html", messageData{Title: "Signed in", Message: "Opening your remotemcp settings page…", Refresh: "/"})
}

// signInFailed draws a refused sign-in and logs its cause.
func (s *Server) signInFailed(w http.ResponseWriter, err error) {
	se := (*signInError)(nil)
	if !errors.As(err, &se) {
		se = &signInError{status: http.StatusInternalServerError, msg: "The sign-in failed", err: err}
	}
	s.log.Warn("gateway: sign-in refused", "err", err)
	s.render(w, se.status, "message.html", messageData{Title: "Not signed in", Message: se.msg + ".", Link: loginOIDC, LinkText: "Sign in again"})
}

// PageURL is the settings page's URL as browsers reach it: a gateway's
// public URL (SignIn.PublicURL), else URL().
func (s *Server) PageURL() string {
	if s.signIn != nil && s.signIn.public != nil {
		return s.signIn.public.String()
	}
	return s.baseURL
}
