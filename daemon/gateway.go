package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/remotemcp/remotemcp/localapi"
)

// Gateway is what a daemon serving many people needs of them (package
// gateway; SPEC §9 A11): each person's engine, the people, and the OAuth
// redirect URI all their sign-ins share. Its errors are *localapi.Error
// (a person who is not there: CodeNotFound).
type Gateway interface {
	localapi.CallbackReceiver
	// EngineFor returns the engine of the person with email.
	EngineFor(ctx context.Context, email string) (localapi.Engine, error)
	Users(ctx context.Context) ([]localapi.User, error)
	AddUser(ctx context.Context, email string) (*localapi.User, error)
	// RemoveUser closes the person's engine, then removes everything of
	// theirs.
	RemoveUser(ctx context.Context, email string) error
	// SharedServers, AddShared and RemoveShared are the servers the
	// admins share with everyone.
	SharedServers(ctx context.Context) ([]localapi.SharedServer, error)
	AddShared(ctx context.Context, req localapi.AddServerRequest) (*localapi.SharedServer, error)
	RemoveShared(ctx context.Context, id string) error
}

// publicCallbacks is a Gateway whose people's sign-ins can come back to
// the page's public URL (package gateway): the daemon tells it the
// redirect URI, <public URL>/mcp-oauth, which the page serves as it
// serves the loopback one.
type publicCallbacks interface {
	ServeCallbacksAt(redirectURI string)
}

// gatewaySocket is the socket's API on a gateway: the admins' user routes,
// health, and every other route of the local API for the person the
// request names (localapi.UserHeader), served by that person's engine.
// The socket is the admins' door (its file permissions are the check),
// so it may act for anyone; the person's engine is what makes another
// person's objects unreachable from that request.
type gatewaySocket struct {
	s  *Server
	gw Gateway

	mu   sync.Mutex
	apis map[string]*api // by email, as sent
}

func (g *gatewaySocket) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/health", g.health)
	mux.HandleFunc("GET /api/users", g.users)
	mux.HandleFunc("POST /api/users", g.addUser)
	mux.HandleFunc("DELETE /api/users/{email}", g.removeUser)
	mux.HandleFunc("GET /api/shared-servers", g.sharedServers)
	mux.HandleFunc("POST /api/shared-servers", g.addShared)
	mux.HandleFunc("DELETE /api/shared-servers/{id}", g.removeShared)
	mux.HandleFunc("/api/", g.forUser)
	return mux
}

func (g *gatewaySocket) health(w http.ResponseWriter, r *http.Request) {
	g.s.api.json(w, http.StatusOK, localapi.Health{OK: true, Version: g.s.o.Version, PID: os.Getpid(), Started: g.s.started})
}

func (g *gatewaySocket) users(w http.ResponseWriter, r *http.Request) {
	list, err := g.gw.Users(r.Context())
	if list == nil {
		list = []localapi.User{}
	}
	g.s.api.reply(w, http.StatusOK, localapi.UserList{Users: list}, err)
}

func (g *gatewaySocket) addUser(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.AddUserRequest](w, r, maxBody)
	if err != nil {
		g.s.api.error(w, err)
		return
	}
	u, err := g.gw.AddUser(r.Context(), req.Email)
	g.s.api.reply(w, http.StatusCreated, u, err)
}

func (g *gatewaySocket) removeUser(w http.ResponseWriter, r *http.Request) {
	email := r.PathValue("email")
	g.mu.Lock()
	delete(g.apis, emailKey(email))
	g.mu.Unlock()
	err := g.gw.RemoveUser(r.Context(), email)
	if err == nil {
		// Their page sessions go with them.
		g.s.sessions.endPerson(normalEmail(email))
	}
	g.s.api.reply(w, http.StatusNoContent, nil, err)
}

func (g *gatewaySocket) sharedServers(w http.ResponseWriter, r *http.Request) {
	list, err := g.gw.SharedServers(r.Context())
	if list == nil {
		list = []localapi.SharedServer{}
	}
	g.s.api.reply(w, http.StatusOK, localapi.SharedServerList{Servers: list}, err)
}

func (g *gatewaySocket) addShared(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.AddServerRequest](w, r, maxBody)
	if err != nil {
		g.s.api.error(w, err)
		return
	}
	s, err := g.gw.AddShared(r.Context(), req)
	g.s.api.reply(w, http.StatusCreated, s, err)
}

func (g *gatewaySocket) removeShared(w http.ResponseWriter, r *http.Request) {
	g.s.api.reply(w, http.StatusNoContent, nil, g.gw.RemoveShared(r.Context(), r.PathValue("id")))
}

// forUser serves a route of the local API with the engine of the person
// the request names.
func (g *gatewaySocket) forUser(w http.ResponseWriter, r *http.Request) {
	email := r.Header.Get(localapi.UserHeader)
	if email == "" {
		if !isAPIRoute(r) {
			// A mistyped route is not a missing --user.
			g.s.api.error(w, &localapi.Error{Status: http.StatusNotFound, Code: localapi.CodeNotFound, Message: "no such API route: " + r.Method + " " + r.URL.Path})
			return
		}
		g.s.api.error(w, g.userRequired(r.Context()))
		return
	}
	a, err := g.apiFor(r.Context(), email)
	if err != nil {
		g.s.api.error(w, err)
		return
	}
	a.handler().ServeHTTP(w, r)
}

// apiFor returns the API of the person's engine, made once.
//
// Each person's API has a scrubber of its own, holding that person's
// secrets only: with one for everyone, an answer to Bob that echoes what
// he sent (an id in "there is no server …") came back "[redacted]" when
// the value was a secret of Alice's, which told him it was someone's
// secret (issue #22: no answer may tell one person of another's data).
func (g *gatewaySocket) apiFor(ctx context.Context, email string) (*api, error) {
	eng, err := g.gw.EngineFor(ctx, email)
	if err != nil {
		return nil, err
	}
	// One API per person however the email is spelled (Alice@ and
	// alice@): an approval asked through one is answered through the other.
	email = emailKey(email)
	g.mu.Lock()
	a, ok := g.apis[email]
	g.mu.Unlock()
	if ok && a.eng == eng {
		return a, nil
	}
	scrub := newScrubber()
	scrub.refresh(ctx, eng)
	a = newAPI(eng, g.s.log, scrub)
	a.version = g.s.o.Version
	g.mu.Lock()
	if had, ok := g.apis[email]; ok && had.eng == eng {
		// Another request made it meanwhile: one API per engine, or a
		// call's approval would wait in one and be looked for in another.
		g.mu.Unlock()
		return had, nil
	}
	g.apis[email] = a
	g.mu.Unlock()
	g.watchSecrets(eng, scrub)
	return a, nil
}

// watchSecrets keeps a person's scrubber current with their engine's
// secrets, as startSecretWatch does the one engine's, until the engine
// closes (the person was removed) or the daemon stops.
func (g *gatewaySocket) watchSecrets(eng localapi.Engine, scrub *scrubber) {
	if _, ok := eng.(localapi.SecretLister); !ok {
		return
	}
	ch, err := eng.Subscribe(g.s.ctx)
	if err != nil {
		g.s.log.Warn("daemon: cannot follow a person's engine; their secrets added later are not scrubbed by value", "err", err)
		return
	}
	g.s.wg.Go(func() {
		for ev := range ch {
			if ev.Type == localapi.EventServers {
				scrub.refresh(g.s.ctx, eng)
			}
		}
	})
}

// userRequired names the people a request without localapi.UserHeader
// could have meant.
func (g *gatewaySocket) userRequired(ctx context.Context) error {
	list, err := g.gw.Users(ctx)
	if err != nil {
		return err
	}
	var emails []string
	for _, u := range list {
		emails = append(emails, u.Email)
	}
	msg := "this daemon is a gateway for several people: say which one a command acts for with --user EMAIL"
	switch {
	case len(emails) == 0:
		msg = "this daemon is a gateway and has no users yet: add one with \"remotemcp users add EMAIL\", then act for them with --user EMAIL"
	case len(emails) <= 10:
		msg += fmt.Sprintf(" (%s)", strings.Join(emails, ", "))
	default:
		msg += fmt.Sprintf(" (%s, … %d in all: \"remotemcp users list\")", strings.Join(emails[:10], ", "), len(emails))
	}
	return &localapi.Error{Status: http.StatusBadRequest, Code: localapi.CodeUserRequired, Message: msg}
}

// emailKey is an email as the gateway looks people up by it (trimmed,
// lower case; store.NormalizeEmail).
func emailKey(email string) string { return strings.ToLower(strings.TrimSpace(email)) }
