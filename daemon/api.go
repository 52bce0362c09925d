package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

const (
	// maxBody bounds a JSON request body.
	maxBody = 1 << 20
	// maxImportBody bounds a pasted config (real ones are a few KiB).
	maxImportBody = 4 << 20
	// connectWait bounds how long a connect request waits for the
	// handshake (the manager's own handshake timeout is 30 s).
	connectWait = 90 * time.Second
	// maxCards is how many cards GET /api/cards returns, newest first.
	maxCards = 100
)

// handler builds the routes. Everything goes through guard (headers, Host,
// Origin). The login URL, the OAuth callback, the static assets and the
// bare root need no credential; the API needs the token or a session
// (requireAuth). The API is mounted twice: at /api/ for the API token
// only (the CLI, Client), and with the settings page under the secret
// prefix, where the session cookie is accepted too. The cookie's Path is
// that prefix, so a browser sends it nowhere else — not to other web
// servers on 127.0.0.1, which share its cookies (cookies are not isolated
// by port), unless they know the prefix.
func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", s.handleLogin)
	mux.HandleFunc("GET /mcp-oauth", s.handleCallback)
	mux.HandleFunc("GET /static/", s.handleStatic)
	mux.HandleFunc("GET /{$}", s.handleRoot)
	mux.Handle("/api/", s.routes(false))
	mux.Handle(s.prefix, http.StripPrefix(strings.TrimSuffix(s.prefix, "/"), s.routes(true)))
	return s.guard(mux)
}

// routes are the authenticated routes, as seen below their mount point:
// the API, and with page the settings page at / and session cookies
// accepted.
func (s *Server) routes(page bool) http.Handler {
	mux := http.NewServeMux()
	authed := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.requireAuth(h, page)) }

	if page {
		authed("GET /{$}", s.handlePage)
	}

	authed("GET /api/health", s.handleHealth)
	authed("POST /api/login-url", s.handleLoginURL)
	authed("POST /api/logout", s.handleLogout)
	authed("GET /api/events", s.handleEvents)

	authed("GET /api/servers", s.handleListServers)
	authed("POST /api/servers", s.handleAddServer)
	authed("POST /api/servers/import", s.handleImport)
	authed("GET /api/servers/{id}", s.handleGetServer)
	authed("PATCH /api/servers/{id}", s.handlePatchServer)
	authed("DELETE /api/servers/{id}", s.handleDeleteServer)
	authed("POST /api/servers/{id}/connect", s.handleConnect)
	authed("POST /api/servers/{id}/disconnect", s.handleDisconnect)
	authed("POST /api/servers/{id}/enable", s.handleEnable(true))
	authed("POST /api/servers/{id}/disable", s.handleEnable(false))
	authed("POST /api/servers/{id}/tools", s.handleToolSwitch)
	authed("GET /api/servers/{id}/catalog", s.handleCatalog)
	authed("GET /api/servers/{id}/log", s.handleLog)
	authed("POST /api/servers/{id}/authorize", s.handleAuthorize)
	authed("GET /api/servers/{id}/authorize", s.handleAuthorizeStatus)
	authed("POST /api/servers/{id}/logout", s.handleOAuthLogout)

	authed("GET /api/grants", s.handleGrants)
	authed("POST /api/grants", s.handleGrant)
	authed("POST /api/grants/revoke", s.handleRevoke)
	authed("POST /api/pending/dismiss", s.handleDismiss)

	authed("GET /api/cards", s.handleCards)
	authed("POST /api/cards/{id}/answer", s.handleAnswer)
	authed("POST /api/cards/{id}/retry", s.handleRetry)

	authed("GET /api/tools", s.handleTools)
	authed("POST /api/call", s.handleCall)
	authed("POST /api/call/cancel", s.handleCancel)

	// Anything else under /api/ is a JSON 404 for an authenticated
	// caller, and a 401 for everyone else (no route probing).
	authed("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such API route: " + r.Method + " " + r.URL.Path})
	})
	return mux
}

// marshal encodes v without HTML escaping: raw bytes from servers (a
// tool's inputSchema) must reach the CLI unchanged (R4.1), and no
// response is ever rendered as HTML (application/json, nosniff, CSP; the
// page's script puts text in with textContent only).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeJSON writes v with scrubbed secrets.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		s.log.Error("daemon: encode response", "err", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"cannot encode the response"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(s.scrub(b))
	w.Write([]byte("\n"))
}

// writeError writes an error answer.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	ae := apiError(err)
	if ae.Status >= 500 && ae.Code == CodeInternal {
		s.log.Warn("daemon: request failed", "err", err)
	}
	s.writeJSON(w, ae.Status, errorBody{Error: *ae})
}

// decodeJSON reads a JSON body into v. Unknown fields are refused: a
// misspelled "approved" or "disabledTools" must not be silently ignored.
// The Content-Type must be JSON, which a cross-site form cannot send.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return &APIError{Status: http.StatusUnsupportedMediaType, Code: CodeBadRequest, Message: "the request body must be application/json"}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &APIError{Status: http.StatusRequestEntityTooLarge, Code: CodeBadRequest, Message: fmt.Sprintf("the request body is larger than %d bytes", limit)}
		}
		return errBadRequest("the request body is not valid: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errBadRequest("the request body has data after the JSON value")
	}
	return nil
}

// handleHealth serves GET /api/health: {ok, version, pid, url, started}.
// Discover uses it to tell a live daemon from a stale daemon.json.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, Health{OK: true, Version: s.o.Version, PID: os.Getpid(), URL: s.baseURL, Started: s.started})
}

// handleLoginURL serves POST /api/login-url: a new one-time login URL for
// the settings page (the CLI's "open" command).
func (s *Server) handleLoginURL(w http.ResponseWriter, r *http.Request) {
	tok, exp := s.sessions.newLoginToken()
	s.writeJSON(w, http.StatusOK, LoginURLResponse{URL: s.baseURL + "/login?token=" + tok, Expires: exp.UTC()})
}

// handleLogout serves POST /api/logout: ends the page's session.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		s.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: s.prefix, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// serverViews builds the server list: stored configs, live states, grants,
// pending approvals and flows.
func (s *Server) serverViews(ctx context.Context) ([]ServerView, error) {
	cfgs, err := s.o.Store.ListServers(ctx)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return nil, err
	}
	// A damaged grant or pending record is left out by the broker and
	// reported next to the readable ones; the list still shows.
	grants, _ := s.o.Broker.Grants(ctx)
	pending, _ := s.o.Broker.Pending(ctx)
	granted := make(map[string]bool, len(grants))
	for _, g := range grants {
		granted[g.Origin] = true
	}
	status := map[string]manager.ServerStatus{}
	for _, st := range s.o.Manager.Status() {
		status[st.ID] = st
	}
	out := make([]ServerView, 0, len(cfgs))
	for _, c := range cfgs {
		v := s.view(c, status[c.ID], granted, pending)
		if st, ok := s.o.OAuth.(OAuthStatuser); ok && c.Auth.Kind == config.AuthOAuth {
			ost := st.Status(ctx, c)
			v.OAuth = &OAuthView{Binding: ost.Binding, BindingCurrent: ost.BindingCurrent, ClientID: ost.ClientID,
				Registered: ost.Registered, RegisteredAt: ost.RegisteredAt, HasRefreshToken: ost.HasRefreshToken,
				HasAccessToken: ost.HasAccessToken, AccessTokenExpiry: ost.AccessTokenExpiry, Scopes: ost.Scopes, Problem: ost.Problem}
		}
		out = append(out, v)
	}
	return out, nil
}

// serverView builds one server's view.
func (s *Server) serverView(ctx context.Context, id string) (*ServerView, error) {
	views, err := s.serverViews(ctx)
	if err != nil {
		return nil, err
	}
	for i := range views {
		if views[i].ID == id {
			return &views[i], nil
		}
	}
	return nil, fmt.Errorf("server %s: %w", id, store.ErrNotFound)
}

func (s *Server) view(c config.Server, st manager.ServerStatus, granted map[string]bool, pending []hostperm.Pending) ServerView {
	origin, _ := config.Origin(c.URL)
	v := ServerView{
		ID: c.ID, Name: c.Name, URL: c.URL, Origin: origin,
		Enabled: c.Enabled, ConnectOnStartup: c.ConnectOnStartup,
		Auth: AuthView{
			Kind: c.Auth.Kind, HasToken: c.Auth.Token != "", ClientID: c.Auth.ClientID,
			HasClientSecret: c.Auth.ClientSecret != "", Scopes: c.Auth.Scopes,
			Binding: c.Auth.Binding, RedirectPort: c.Auth.RedirectPort,
		},
		DisabledTools: append([]string{}, c.DisabledTools...),
		State:         manager.StateDisconnected,
		OriginGranted: granted[origin],
		Pending:       []hostperm.Pending{},
	}
	if c.ToolTimeout != 0 {
		v.ToolTimeout = time.Duration(c.ToolTimeout).String()
	}
	if st.ID == c.ID {
		v.State, v.Reason, v.ToolCount = st.State, st.Reason, st.ToolCount
	}
	for _, p := range pending {
		if p.ServerID == c.ID || (p.ServerID == "" && p.Origin == origin) {
			v.Pending = append(v.Pending, p)
		}
	}
	if c.Auth.Kind == config.AuthOAuth {
		v.Authorization = s.flows.view(c.ID)
	}
	return v
}

// handleListServers serves GET /api/servers: []ServerView.
func (s *Server) handleListServers(w http.ResponseWriter, r *http.Request) {
	views, err := s.serverViews(r.Context())
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, views)
}

// handleGetServer serves GET /api/servers/{id}: ServerView.
func (s *Server) handleGetServer(w http.ResponseWriter, r *http.Request) {
	v, err := s.serverView(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

// grantedBy names the user action behind a grant made through this
// request.
func grantedBy(ctx context.Context, page, cli string) string {
	if authFrom(ctx) == authCookie {
		return page
	}
	return cli
}

// handleAddServer serves POST /api/servers (AddServerRequest): adds a
// server and grants its own origin in the same user action (R2.2). 201
// with the ServerView.
func (s *Server) handleAddServer(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req AddServerRequest
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	srv := config.Server{
		ID: strings.TrimSpace(req.ID), Name: strings.TrimSpace(req.Name), URL: strings.TrimSpace(req.URL),
		Auth: config.Auth{Kind: req.Auth, Token: req.Token, ClientID: req.ClientID, ClientSecret: req.ClientSecret,
			Scopes: req.Scopes, RedirectPort: req.RedirectPort},
		Enabled: true, ConnectOnStartup: true,
	}
	if srv.Auth.Kind == "" {
		srv.Auth.Kind = config.AuthNone
	}
	if srv.Name == "" {
		srv.Name = srv.ID
	}
	if req.Enabled != nil {
		srv.Enabled = *req.Enabled
	}
	if req.ConnectOnStartup != nil {
		srv.ConnectOnStartup = *req.ConnectOnStartup
	}
	if req.ToolTimeout != "" {
		d, err := time.ParseDuration(req.ToolTimeout)
		if err != nil {
			s.writeError(w, &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Field: "toolTimeout", Message: "toolTimeout: " + err.Error()})
			return
		}
		srv.ToolTimeout = config.Duration(d)
	}
	if err := srv.Validate(); err != nil {
		s.writeError(w, err)
		return
	}
	origin, err := config.Origin(srv.URL)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.editMu.Lock()
	defer s.editMu.Unlock()
	// Grant first, so the manager's first connect (right after the add)
	// is allowed; undo it if the add fails and the grant is ours.
	had := s.originGranted(ctx, origin)
	if !had {
		if err := s.o.Broker.Grant(ctx, origin, grantedBy(ctx, hostperm.BySettingsPage, hostperm.ByServersAdd)); err != nil {
			s.writeError(w, err)
			return
		}
	}
	if err := s.o.Store.AddServer(ctx, srv); err != nil {
		if !had {
			if rerr := s.o.Broker.Revoke(ctx, origin); rerr != nil {
				s.log.Warn("daemon: undo grant after a failed add", "origin", origin, "err", rerr)
			}
		}
		if errors.Is(err, store.ErrDuplicate) {
			err = &APIError{Status: http.StatusConflict, Code: CodeConflict, Field: "id",
				Message: fmt.Sprintf("a server with id %q exists already; choose another id or delete that server first", srv.ID)}
		}
		s.writeError(w, err)
		return
	}
	s.refreshSecrets(ctx)
	s.hub.bump(topicServers, topicGrants)
	v, err := s.serverView(ctx, srv.ID)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusCreated, v)
}

// originGranted reports whether origin has a grant.
func (s *Server) originGranted(ctx context.Context, origin string) bool {
	grants, _ := s.o.Broker.Grants(ctx)
	for _, g := range grants {
		if g.Origin == origin {
			return true
		}
	}
	return false
}

// ownFormat reports whether data is remotemcp's own server list (a JSON
// array, or {"servers": [...]}) rather than another client's config.
func ownFormat(data []byte) bool {
	t := strings.TrimSpace(strings.TrimPrefix(string(data), "\xef\xbb\xbf"))
	if strings.HasPrefix(t, "[") {
		return true
	}
	var top map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &top) != nil {
		return false
	}
	v := strings.TrimSpace(string(top["servers"]))
	return strings.HasPrefix(v, "[")
}

// handleImport serves POST /api/servers/import (ImportRequest →
// ImportResult): config.Import of another client's config, or our own
// list; each server is added on its own, and every entry not added is
// listed with its reason. An import grants no origin: the servers' first
// connects record pending approvals the person then approves.
func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req ImportRequest
	if err := decodeJSON(w, r, maxImportBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	data := []byte(req.Config)
	var servers []config.Server
	var skipped []config.Skipped
	var err error
	if ownFormat(data) {
		servers, err = config.ParseServers(data)
	} else {
		var res config.ImportResult
		env := func(k string) (string, bool) { v, ok := req.Env[k]; return v, ok }
		res, err = config.Import(data, env)
		servers, skipped = res.Servers, res.Skipped
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	out := ImportResult{Added: []ImportedServer{}, Skipped: []SkippedEntry{}}
	s.editMu.Lock()
	for _, srv := range servers {
		if err := s.o.Store.AddServer(ctx, srv); err != nil {
			reason := err.Error()
			if errors.Is(err, store.ErrDuplicate) {
				reason = fmt.Sprintf("a server with id %q exists already; it was left unchanged", srv.ID)
			}
			out.Skipped = append(out.Skipped, SkippedEntry{Name: srv.Name, ID: srv.ID, Reason: reason})
			continue
		}
		origin, _ := config.Origin(srv.URL)
		out.Added = append(out.Added, ImportedServer{ID: srv.ID, Name: srv.Name, URL: srv.URL, Origin: origin,
			Auth: srv.Auth.Kind, OriginGranted: s.originGranted(ctx, origin)})
	}
	s.editMu.Unlock()
	for _, sk := range skipped {
		out.Skipped = append(out.Skipped, SkippedEntry{Name: sk.Name, Reason: sk.Reason})
	}
	if len(out.Added) > 0 {
		s.refreshSecrets(ctx)
		s.hub.bump(topicServers)
	}
	s.writeJSON(w, http.StatusOK, out)
}

// editServer applies change to a stored server under the edit lock, so
// two switches clicked at once both land.
func (s *Server) editServer(ctx context.Context, id string, change func(*config.Server) error) error {
	s.editMu.Lock()
	defer s.editMu.Unlock()
	srv, err := s.o.Store.GetServer(ctx, id)
	if errors.Is(err, store.ErrSealOpen) {
		// Writing back would delete the secret that cannot be read.
		return fmt.Errorf("server %s: its stored secret cannot be opened, so it cannot be edited here; re-add the server: %w", id, err)
	}
	if err != nil {
		return err
	}
	if err := change(&srv); err != nil {
		return err
	}
	if err := s.o.Store.UpdateServer(ctx, srv); err != nil {
		return err
	}
	s.hub.bump(topicServers)
	return nil
}

// respondServer answers with the server's current view.
func (s *Server) respondServer(w http.ResponseWriter, r *http.Request, id string) {
	v, err := s.serverView(r.Context(), id)
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

// handlePatchServer serves PATCH /api/servers/{id} (UpdateServerRequest):
// name, enabled, connectOnStartup, disabledTools, toolTimeout.
func (s *Server) handlePatchServer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req UpdateServerRequest
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	err := s.editServer(r.Context(), id, func(srv *config.Server) error {
		if req.Name != nil {
			srv.Name = strings.TrimSpace(*req.Name)
		}
		if req.Enabled != nil {
			srv.Enabled = *req.Enabled
		}
		if req.ConnectOnStartup != nil {
			srv.ConnectOnStartup = *req.ConnectOnStartup
		}
		if req.DisabledTools != nil {
			srv.DisabledTools = normalizeTools(*req.DisabledTools)
		}
		if req.ToolTimeout != nil {
			d := time.Duration(0)
			if *req.ToolTimeout != "" {
				var err error
				if d, err = time.ParseDuration(*req.ToolTimeout); err != nil {
					return &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Field: "toolTimeout", Message: "toolTimeout: " + err.Error()}
				}
			}
			srv.ToolTimeout = config.Duration(d)
		}
		return nil
	})
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.respondServer(w, r, id)
}

// normalizeTools sorts and de-duplicates a disabledTools list.
func normalizeTools(l []string) []string {
	out := make([]string, 0, len(l))
	for _, t := range l {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// handleEnable serves POST /api/servers/{id}/enable and …/disable.
func (s *Server) handleEnable(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := s.editServer(r.Context(), id, func(srv *config.Server) error { srv.Enabled = on; return nil }); err != nil {
			s.writeError(w, err)
			return
		}
		s.respondServer(w, r, id)
	}
}

// handleToolSwitch serves POST /api/servers/{id}/tools (ToolSwitch): one
// per-tool switch (R5.2), stored in disabledTools.
func (s *Server) handleToolSwitch(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req ToolSwitch
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if strings.TrimSpace(req.Tool) == "" {
		s.writeError(w, &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Field: "tool", Message: "tool is required"})
		return
	}
	err := s.editServer(r.Context(), id, func(srv *config.Server) error {
		l := slices.DeleteFunc(slices.Clone(srv.DisabledTools), func(t string) bool { return t == req.Tool })
		if !req.Enabled {
			l = append(l, req.Tool)
		}
		srv.DisabledTools = normalizeTools(l)
		return nil
	})
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.respondServer(w, r, id)
}

// handleDeleteServer serves DELETE /api/servers/{id} (the page asks for
// confirmation first): the config, its secrets and any OAuth state. 204.
func (s *Server) handleDeleteServer(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	s.editMu.Lock()
	defer s.editMu.Unlock()
	if _, err := s.o.Store.GetServer(ctx, id); err != nil && !errors.Is(err, store.ErrSealOpen) {
		s.writeError(w, err)
		return
	}
	s.flows.drop(id)
	if s.o.OAuth != nil {
		// Access tokens live in memory only; DeleteServer takes the
		// sealed secrets with it.
		if err := s.o.OAuth.Logout(ctx, id); err != nil {
			s.log.Debug("daemon: oauth logout before delete", "server", id, "err", err)
		}
	}
	if err := s.o.Store.DeleteServer(ctx, id); err != nil {
		s.writeError(w, err)
		return
	}
	s.refreshSecrets(ctx)
	s.hub.bump(topicServers)
	w.WriteHeader(http.StatusNoContent)
}

// handleConnect serves POST /api/servers/{id}/connect: connects and waits
// for ready or failure. 200 with the ServerView; a failure is an error
// whose Server field has the state and reason, with Code
// "permission_required" (and Permission) when the server's origin needs
// a grant first.
func (s *Server) handleConnect(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), connectWait)
	defer cancel()
	id := r.PathValue("id")
	if _, err := s.o.Store.GetServer(ctx, id); err != nil && !errors.Is(err, store.ErrSealOpen) {
		s.writeError(w, err)
		return
	}
	if err := s.o.Manager.Connect(ctx, id); err != nil {
		ae := apiError(err)
		if ae.Code == CodeInternal {
			ae.Status, ae.Code = http.StatusBadGateway, CodeUnavailable
		}
		if ae.Permission == nil {
			ae.Permission = s.permissionFor(r.Context(), id)
			if ae.Permission != nil {
				ae.Status, ae.Code = http.StatusConflict, CodePermissionRequired
			}
		}
		ae.Server, _ = s.serverView(r.Context(), id)
		s.writeError(w, ae)
		return
	}
	s.respondServer(w, r, id)
}

// permissionFor finds a pending approval that explains a failed connect:
// the guard's error is wrapped by the SDK in ways errors.As cannot always
// see through, but the pending entry it recorded is authoritative.
func (s *Server) permissionFor(ctx context.Context, id string) *PermissionInfo {
	v, err := s.serverView(ctx, id)
	if err != nil || v.OriginGranted && len(v.Pending) == 0 {
		return nil
	}
	if !v.OriginGranted {
		return &PermissionInfo{Origin: v.Origin, Purpose: hostperm.PurposeMCP, ServerID: id}
	}
	p := v.Pending[0]
	return &PermissionInfo{Origin: p.Origin, Purpose: p.Purpose, ServerID: id}
}

// handleDisconnect serves POST /api/servers/{id}/disconnect: 200 with the
// ServerView.
func (s *Server) handleDisconnect(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.o.Manager.Disconnect(r.Context(), id); err != nil {
		s.writeError(w, err)
		return
	}
	s.respondServer(w, r, id)
}

// handleLog serves GET /api/servers/{id}/log: the server's last
// manager.LogSize HTTP exchanges, oldest first (R5.3): method, JSON-RPC
// method, status, time and a redacted error, never a header or a body.
func (s *Server) handleLog(w http.ResponseWriter, r *http.Request) {
	log, err := s.o.Manager.Log(r.PathValue("id"))
	if err != nil {
		s.writeError(w, err)
		return
	}
	if log == nil {
		log = []session.Exchange{}
	}
	s.writeJSON(w, http.StatusOK, log)
}

// handleCatalog serves GET /api/servers/{id}/catalog: CatalogView,
// connecting lazily (R2.3). Disabled tools are listed with enabled=false
// so their switches can be turned back on.
func (s *Server) handleCatalog(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), connectWait)
	defer cancel()
	id := r.PathValue("id")
	srv, err := s.o.Store.GetServer(ctx, id)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		s.writeError(w, err)
		return
	}
	cat, err := s.o.Manager.Catalog(ctx, id)
	if err != nil {
		ae := apiError(err)
		if ae.Code == CodeInternal {
			ae.Status, ae.Code = http.StatusBadGateway, CodeUnavailable
		}
		ae.Server, _ = s.serverView(r.Context(), id)
		s.writeError(w, ae)
		return
	}
	s.writeJSON(w, http.StatusOK, catalogView(srv, cat))
}

func catalogView(srv config.Server, cat *session.Catalog) CatalogView {
	v := CatalogView{Server: srv.ID, Tools: []ToolView{}, Prompts: []PromptView{}, Resources: []ResourceView{}, Templates: []ResourceView{}}
	for _, t := range cat.Tools {
		if t.Tool == nil {
			continue
		}
		tv := ToolView{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.RawInputSchema,
			Enabled: !srv.ToolDisabled(t.Name), AgentName: agent.ToolName(srv.ID, t.Name)}
		if t.Annotations != nil {
			tv.Annotations, _ = json.Marshal(t.Annotations)
			if tv.Title == "" {
				tv.Title = t.Annotations.Title
			}
		}
		v.Tools = append(v.Tools, tv)
	}
	for _, p := range cat.Prompts {
		pv := PromptView{Name: p.Name, Title: p.Title, Description: p.Description}
		if len(p.Arguments) > 0 {
			pv.Arguments, _ = json.Marshal(p.Arguments)
		}
		v.Prompts = append(v.Prompts, pv)
	}
	for _, res := range cat.Resources {
		v.Resources = append(v.Resources, ResourceView{URI: res.URI, Name: res.Name, Title: res.Title, Description: res.Description, MIMEType: res.MIMEType})
	}
	for _, t := range cat.Templates {
		v.Templates = append(v.Templates, ResourceView{URI: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType})
	}
	for i, e := range cat.Errors {
		if e != nil {
			if v.Errors == nil {
				v.Errors = map[string]string{}
			}
			v.Errors[session.Kind(i).String()] = e.Error()
		}
	}
	return v
}

// handleAuthorize serves POST /api/servers/{id}/authorize: starts the
// OAuth flow (R3.13) and answers with the AuthFlow as soon as it has the
// authorization URL for the page to open (or has failed). 200 while
// waiting or done; a flow that failed is an error with its message, and
// Code "permission_required" when an origin needs a grant first.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	v, err := s.startAuthorize(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, err)
		return
	}
	if v.Phase == PhaseFailed {
		ae := &APIError{Status: http.StatusBadGateway, Code: CodeUnavailable, Message: v.Error, Permission: v.Permission}
		if v.Permission != nil {
			ae.Status, ae.Code = http.StatusConflict, CodePermissionRequired
		}
		s.writeError(w, ae)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

// handleAuthorizeStatus serves GET /api/servers/{id}/authorize: the
// latest AuthFlow of the server (404 if none), for a client that waits for
// the person to finish.
func (s *Server) handleAuthorizeStatus(w http.ResponseWriter, r *http.Request) {
	v := s.flows.view(r.PathValue("id"))
	if v == nil {
		s.writeError(w, &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no authorization was started for this server"})
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

// handleOAuthLogout serves POST /api/servers/{id}/logout: forgets the
// server's OAuth tokens and registration (the config stays). 204.
func (s *Server) handleOAuthLogout(w http.ResponseWriter, r *http.Request) {
	if s.o.OAuth == nil {
		s.writeError(w, &APIError{Status: http.StatusNotImplemented, Code: CodeUnavailable, Message: "this daemon was started without OAuth support"})
		return
	}
	id := r.PathValue("id")
	if _, err := s.o.Store.GetServer(r.Context(), id); err != nil && !errors.Is(err, store.ErrSealOpen) {
		s.writeError(w, err)
		return
	}
	if err := s.o.OAuth.Logout(r.Context(), id); err != nil {
		s.writeError(w, err)
		return
	}
	s.hub.bump(topicServers)
	w.WriteHeader(http.StatusNoContent)
}

// grants reads the grants and pending approvals.
func (s *Server) grants(ctx context.Context) (Grants, error) {
	g, gerr := s.o.Broker.Grants(ctx)
	p, perr := s.o.Broker.Pending(ctx)
	out := Grants{Grants: g, Pending: p}
	if out.Grants == nil {
		out.Grants = []hostperm.Grant{}
	}
	if out.Pending == nil {
		out.Pending = []hostperm.Pending{}
	}
	// Damaged records are left out and reported; show what could be read.
	if len(g) == 0 && gerr != nil && len(p) == 0 && perr != nil {
		return out, errors.Join(gerr, perr)
	}
	return out, nil
}

// handleGrants serves GET /api/grants: Grants (grants and pending
// approvals).
func (s *Server) handleGrants(w http.ResponseWriter, r *http.Request) {
	g, err := s.grants(r.Context())
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, g)
}

// handleGrant serves POST /api/grants (OriginRequest): the person approves
// an origin (R2.2). Enabled servers of that origin that failed are
// connected again. 200 with Grants.
func (s *Server) handleGrant(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req OriginRequest
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.o.Broker.Grant(ctx, req.Origin, grantedBy(ctx, hostperm.BySettingsPage, hostperm.ByCLI)); err != nil {
		s.writeError(w, err)
		return
	}
	s.hub.bump(topicGrants, topicServers)
	if origin, err := config.Origin(req.Origin); err == nil {
		s.retryOrigin(ctx, origin)
	}
	s.handleGrants(w, r)
}

// retryOrigin connects again, in the background, the enabled servers of
// origin that are in the error state: their last attempt was most likely
// refused for want of the grant just made, and the manager does not retry
// a failed first connect on its own.
func (s *Server) retryOrigin(ctx context.Context, origin string) {
	views, err := s.serverViews(ctx)
	if err != nil {
		return
	}
	for _, v := range views {
		if !v.Enabled || v.State != manager.StateError || v.Origin != origin {
			continue
		}
		id := v.ID
		s.goBackground(func(bctx context.Context) {
			cctx, cancel := context.WithTimeout(bctx, connectWait)
			defer cancel()
			if err := s.o.Manager.Connect(cctx, id); err != nil {
				s.log.Info("daemon: connect after grant failed", "server", id, "err", err)
			}
		})
	}
}

// handleRevoke serves POST /api/grants/revoke (OriginRequest): removes a
// grant and disconnects the servers of that origin, whose open sessions
// the broker does not close by itself. 200 with Grants.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req OriginRequest
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.o.Broker.Revoke(ctx, req.Origin); err != nil {
		s.writeError(w, err)
		return
	}
	if origin, err := config.Origin(req.Origin); err == nil {
		if views, err := s.serverViews(ctx); err == nil {
			for _, v := range views {
				if v.Origin == origin && v.State != manager.StateDisconnected {
					if err := s.o.Manager.Disconnect(ctx, v.ID); err != nil {
						s.log.Info("daemon: disconnect after revoke", "server", v.ID, "err", err)
					}
				}
			}
		}
	}
	s.hub.bump(topicGrants, topicServers)
	s.handleGrants(w, r)
}

// handleDismiss serves POST /api/pending/dismiss (OriginRequest): drops
// the pending approvals of an origin without granting it. 200 with
// Grants.
func (s *Server) handleDismiss(w http.ResponseWriter, r *http.Request) {
	var req OriginRequest
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.o.Broker.DismissPending(r.Context(), req.Origin); err != nil {
		s.writeError(w, err)
		return
	}
	s.hub.bump(topicGrants, topicServers)
	s.handleGrants(w, r)
}

// cardViews lists the cards, newest first, with their forms.
func (s *Server) cardViews(ctx context.Context) ([]CardView, error) {
	cards, err := s.o.Cards.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CardView, 0, min(len(cards), maxCards))
	for i := len(cards) - 1; i >= 0 && len(out) < maxCards; i-- {
		cv := CardView{Card: cards[i]}
		if f, err := cards[i].Form(); err == nil {
			cv.Form = f
		}
		out = append(out, cv)
	}
	return out, nil
}

// handleCards serves GET /api/cards: []CardView, newest first (pending,
// answered, cancelled and interrupted cards within the retention).
func (s *Server) handleCards(w http.ResponseWriter, r *http.Request) {
	cards, err := s.cardViews(r.Context())
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, cards)
}

// handleAnswer serves POST /api/cards/{id}/answer (AnswerRequest: action
// accept|decline|cancel, content): validated against the requested
// schema (400 with every bad field in Problems); then the tool call that
// asked continues (R6.1). 204; the card's new state arrives through
// /api/events and GET /api/cards.
func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	var req AnswerRequest
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	switch req.Action {
	case elicit.ActionAccept, elicit.ActionDecline, elicit.ActionCancel:
	default:
		s.writeError(w, &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Field: "action", Message: "action must be accept, decline or cancel"})
		return
	}
	if err := s.o.Cards.Answer(ctx, id, req); err != nil {
		s.writeError(w, err)
		return
	}
	s.hub.bump(topicCards)
	w.WriteHeader(http.StatusNoContent)
}

// handleRetry serves POST /api/cards/{id}/retry (RetryRequest →
// agent.ToolResult): the person confirms that re-sending the call of an
// interrupted card is safe (R6.2: an answer that never reached the server
// is never pretended to have); the call is then re-sent once through the
// registry, and that confirmation is its approval. Without "confirmed":
// true nothing is sent.
func (s *Server) handleRetry(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	var req RetryRequest
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if !req.Confirmed {
		s.writeError(w, &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Field: "confirmed",
			Message: "re-sending an interrupted call needs the person's confirmation that it is safe (confirmed: true)"})
		return
	}
	if err := s.o.Cards.ConfirmRetry(ctx, id); err != nil {
		s.writeError(w, err)
		return
	}
	if err := s.ensureRegistry(ctx); err != nil {
		s.writeError(w, err)
		return
	}
	res, err := s.registry.Resend(WithApproval(ctx, agent.Allow()), id, agent.CallOptions{})
	s.hub.bump(topicCards)
	if res == nil {
		if err == nil {
			err = errors.New("the re-sent call returned nothing")
		}
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, res)
}

// ensureRegistry starts the daemon's own registry on first use: its first
// listing connects lazy servers (R2.3), which only an agent asking for
// tools should cause.
func (s *Server) ensureRegistry(ctx context.Context) error {
	if s.ownReg {
		s.regOnce.Do(func() {
			ok := s.goBackground(func(bctx context.Context) {
				defer close(s.regReady)
				if err := s.registry.Start(bctx); err != nil {
					s.log.Warn("daemon: agent registry", "err", err)
				}
			})
			if !ok {
				close(s.regReady)
			}
		})
	}
	select {
	case <-s.regReady:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handleTools serves GET /api/tools[?refresh=1]: ToolsView, the agent
// tools (mcp__server__tool, disabled tools left out). refresh re-lists
// every enabled server first.
func (s *Server) handleTools(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := s.ensureRegistry(ctx); err != nil {
		s.writeError(w, err)
		return
	}
	if q := r.URL.Query().Get("refresh"); q == "1" || q == "true" {
		rctx, cancel := context.WithTimeout(ctx, connectWait)
		err := s.registry.Refresh(rctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			s.writeError(w, err)
			return
		}
	}
	snap := s.registry.Snapshot()
	out := ToolsView{Generation: snap.Generation(), Tools: []Tool{}}
	for _, t := range snap.Tools() {
		tv := Tool{Name: t.Name, ServerID: t.ServerID, ToolName: t.ToolName, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, Effects: string(t.Effects), Retry: string(t.Retry)}
		if t.Annotations != nil {
			tv.Annotations, _ = json.Marshal(t.Annotations)
		}
		out.Tools = append(out.Tools, tv)
	}
	for id, err := range snap.Errors() {
		if out.Errors == nil {
			out.Errors = map[string]string{}
		}
		out.Errors[id] = err.Error()
	}
	s.writeJSON(w, http.StatusOK, out)
}

// handleCall serves POST /api/call (CallRequest → agent.ToolResult):
// one tool call through the agent registry: approval, admission behind
// open elicitation cards, one dispatch, validation and the size budget.
// The call is approved only by an explicit "approved": true (the caller
// asked the person); otherwise it is denied and nothing is sent. The
// ToolResult says how the call ended (outcome), with status 200 whenever
// there is one; closing the request cancels the call.
func (s *Server) handleCall(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req CallRequest
	if err := decodeJSON(w, r, agent.MaxArgumentsSize+maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if req.Tool == "" {
		s.writeError(w, &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Field: "tool", Message: "tool is required"})
		return
	}
	opts := agent.CallOptions{OperationID: req.OperationID}
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil || d <= 0 {
			s.writeError(w, &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Field: "timeout", Message: "timeout must be a positive duration such as 30s"})
			return
		}
		opts.Timeout = d
	}
	if err := s.ensureRegistry(ctx); err != nil {
		s.writeError(w, err)
		return
	}
	name, err := s.resolveTool(ctx, req.Tool)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if req.Approved {
		ctx = WithApproval(ctx, agent.Allow())
	}
	res, err := s.registry.Call(ctx, name, req.Arguments, opts)
	if res == nil {
		if err == nil {
			err = errors.New("the call returned nothing")
		}
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, res)
}

// resolveTool turns "server/tool" into the agent name, listing the server
// if the registry has not seen the tool yet.
func (s *Server) resolveTool(ctx context.Context, name string) (string, error) {
	srvID, tool, ok := strings.Cut(name, "/")
	if !ok {
		return name, nil // an agent name; the registry says if it is unknown
	}
	for attempt := 0; ; attempt++ {
		if t, found := s.registry.Snapshot().ToolFor(srvID, tool); found {
			return t.Name, nil
		}
		if attempt > 0 {
			break
		}
		rctx, cancel := context.WithTimeout(ctx, connectWait)
		err := s.registry.Refresh(rctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			return "", err
		}
	}
	// Unknown to the registry (disabled, or the server failed): let the
	// registry's own "unknown tool" result explain it.
	return agent.ToolName(srvID, tool), nil
}

// handleCancel serves POST /api/call/cancel (CancelRequest): cancels a
// call by its operation id at whatever stage it is (R4.5). 204.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	var req CancelRequest
	if err := decodeJSON(w, r, maxBody, &req); err != nil {
		s.writeError(w, err)
		return
	}
	if req.OperationID == "" {
		s.writeError(w, &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Field: "operationId", Message: "operationId is required"})
		return
	}
	if err := s.ensureRegistry(r.Context()); err != nil {
		s.writeError(w, err)
		return
	}
	s.registry.Cancel(req.OperationID)
	w.WriteHeader(http.StatusNoContent)
}
