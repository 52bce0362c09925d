package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/advice"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// connectWait bounds how long a connect waits for the handshake (the
// manager's own handshake timeout is 30 s).
const connectWait = 90 * time.Second

// Servers lists every server as every surface shows it.
func (c *Engine) Servers(ctx context.Context) ([]localapi.Server, error) {
	out, err := c.serverViews(ctx)
	return out, fail(err)
}

// Server returns one server.
func (c *Engine) Server(ctx context.Context, id string) (*localapi.Server, error) {
	v, err := c.serverView(ctx, id)
	return v, fail(err)
}

// state is the server's state and reason as SPEC §9 A1 names them: the
// manager's (Manager.StateOf), in the local API's types. It writes
// nothing.
func (c *Engine) state(ctx context.Context, srv config.Server, st manager.ServerStatus) (localapi.State, *localapi.Reason) {
	s, r := c.Manager.StateOf(ctx, srv, st)
	return localapi.State(s), reasonOf(r)
}

func reasonOf(r *manager.Reason) *localapi.Reason {
	if r == nil {
		return nil
	}
	return &localapi.Reason{Class: classOf(r.Class), Step: r.Step, HTTPStatus: r.HTTPStatus, Message: advice.Into(r.Message, r.Err()),
		Code: localapi.ReasonCode(r.Code), Scopes: slices.Clone(r.Scopes)}
}

// originGranted reports whether origin has a grant.
func (c *Engine) originGranted(ctx context.Context, origin string) bool {
	ok, err := c.Hosts.Allowed(ctx, origin)
	return err == nil && ok
}

// grantOrigin grants the origin of rawURL unless it has a grant; it
// returns the origin when it granted it now.
func (c *Engine) grantOrigin(ctx context.Context, rawURL, by string) (string, error) {
	origin, err := config.Origin(rawURL)
	if err != nil {
		return "", err
	}
	if c.originGranted(ctx, origin) {
		return "", nil
	}
	if err := c.Hosts.Grant(ctx, origin, by); err != nil {
		return "", fmt.Errorf("grant %s: %w", origin, err)
	}
	c.hub.bump(topicGrants, topicServers)
	return origin, nil
}

// AddServer adds a server and grants its own origin in the same user
// action (R2.2); Granted lists the origin when this add granted it (not
// when it had a grant already). A taken id is CodeConflict.
//
// Long: one add as the person sees it: the request turned into a
// config.Server, validated, then the id checked, the origin granted, the
// server stored (the grant undone if that fails) and the manager told. The
// undo needs the "had a grant already" of the step before, so the steps
// stay together.
func (c *Engine) AddServer(ctx context.Context, req localapi.AddServerRequest) (*localapi.AddServerResult, error) {
	srv := config.Server{
		ID: strings.TrimSpace(req.ID), Name: strings.TrimSpace(req.Name), URL: strings.TrimSpace(req.URL),
		Auth: config.Auth{Kind: req.Auth, Token: req.Token, ClientID: req.ClientID, ClientSecret: req.ClientSecret,
			Scopes: req.Scopes, RedirectPort: req.RedirectPort, ClientMetadataURL: strings.TrimSpace(req.ClientMetadataURL)},
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
			return nil, badRequest("toolTimeout", "toolTimeout: %v", err)
		}
		srv.ToolTimeout = config.Duration(d)
	}
	if len(req.Headers) > 0 {
		srv.Headers = maps.Clone(req.Headers)
	}
	srv.ProtocolVersion, srv.LogLevel = orDefault(req.ProtocolVersion), orDefault(req.LogLevel)
	srv.Approval, srv.Trusted = config.Approval(orDefault(string(req.Approval))), req.Trusted
	if srv.Approval == config.ApprovalHost {
		srv.Approval = "" // the default is stored as absent
	}
	if err := srv.Validate(); err != nil {
		return nil, fail(err)
	}
	origin, err := config.Origin(srv.URL)
	if err != nil {
		return nil, fail(err)
	}
	by := string(req.By)
	if by == "" {
		by = hostperm.ByServersAdd
	}
	// Grant first, so the manager's first connect (right after the add)
	// is allowed; undo it if the add fails and the grant is ours.
	if _, err := c.Store.GetServer(ctx, srv.ID); err == nil || errors.Is(err, store.ErrSealOpen) {
		return nil, errExists(srv.ID)
	}
	release, err := c.reserveServers(ctx, 1)
	if err != nil {
		return nil, err
	}
	defer release()
	had := c.originGranted(ctx, origin)
	if !had {
		if err := c.Hosts.Grant(ctx, origin, by); err != nil {
			return nil, fail(err)
		}
	}
	if err := c.Store.AddServer(ctx, srv); err != nil {
		if !had {
			if rerr := c.Hosts.Revoke(ctx, origin); rerr != nil {
				c.log.Warn("remotemcp: undo grant after a failed add", "origin", origin, "err", rerr)
			}
		}
		if errors.Is(err, store.ErrDuplicate) {
			return nil, errExists(srv.ID)
		}
		return nil, fail(err)
	}
	// The manager knows the server before the request returns, so a
	// listing or call right after the add finds it (a front end started
	// at once offered no tools for it).
	c.syncConfig(ctx)
	c.hub.bump(topicServers, topicGrants)
	v, err := c.serverView(ctx, srv.ID)
	if err != nil {
		return nil, fail(err)
	}
	res := &localapi.AddServerResult{Server: *v, Granted: []string{}}
	if !had {
		res.Granted = append(res.Granted, origin)
	}
	return res, nil
}

// errExists is the conflict of a taken server id.
func errExists(id string) *localapi.Error {
	e := conflict("a server with id %q exists already; choose another id, or change that server instead", id)
	e.Field = "id"
	return e
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
	return strings.HasPrefix(strings.TrimSpace(string(top["servers"])), "[")
}

// Import imports another client's MCP config (config.Import, ${VAR}
// expanded from req.Env only) or remotemcp's own server list. Every entry
// is reported: added; unchanged (the same entry is there already);
// updated (req.Update, and the id exists with another entry); a conflict
// (the id exists with another entry, without req.Update); or skipped with
// its reason. Like adding a server, an import grants each imported
// server's own origin and lists the origins it granted.
//
// Long: one pass over the parsed entries, each sorted into exactly one of
// the result's lists (added, unchanged, updated, conflict, skipped) by a
// single switch on what the store holds for its id; the grants and the
// final sync are shared by all of them, and the switch reads as the list
// in the doc comment above.
func (c *Engine) Import(ctx context.Context, req localapi.ImportRequest) (*localapi.ImportResult, error) {
	data := []byte(req.Config)
	own := ownFormat(data)
	var servers []config.Server
	var skipped []config.Skipped
	var err error
	if own {
		servers, err = config.ParseServers(data)
	} else {
		var res config.ImportResult
		env := func(k string) (string, bool) { v, ok := req.Env[k]; return v, ok }
		res, err = config.Import(data, env)
		servers, skipped = res.Servers, res.Skipped
	}
	if err != nil {
		return nil, fail(err)
	}
	for i := range servers {
		servers[i].Shared = false // only a gateway shares a server (config.Server.Shared)
	}
	by := string(req.By)
	if by == "" {
		by = hostperm.ByCLI
	}
	out := &localapi.ImportResult{Added: []localapi.ImportedServer{}, Updated: []localapi.ImportedServer{},
		Unchanged: []localapi.ImportedServer{}, Conflicts: []localapi.SkippedEntry{}, Skipped: []localapi.SkippedEntry{}, Granted: []string{}}
	grant := func(u string) error {
		o, err := c.grantOrigin(ctx, u, by)
		if o != "" && !slices.Contains(out.Granted, o) {
			out.Granted = append(out.Granted, o)
		}
		return err
	}
	changed := false
	for _, srv := range servers {
		origin, _ := config.Origin(srv.URL)
		entry := localapi.ImportedServer{ID: srv.ID, Name: srv.Name, URL: srv.URL, Origin: origin, Auth: srv.Auth.Kind, HeaderNames: headerNames(srv.Headers)}
		skip := func(err error) {
			out.Skipped = append(out.Skipped, localapi.SkippedEntry{Name: srv.Name, ID: srv.ID, Reason: err.Error()})
		}
		cur, gerr := c.Store.GetServer(ctx, srv.ID)
		switch {
		case errors.Is(gerr, store.ErrNotFound):
			release, err := c.reserveServers(ctx, 1)
			if err != nil {
				skip(err)
				continue
			}
			// Granted first: a running owner connects at once.
			if err := grant(srv.URL); err != nil {
				release()
				skip(err)
				continue
			}
			err = c.Store.AddServer(ctx, srv)
			release()
			if err != nil {
				if errors.Is(err, store.ErrDuplicate) {
					err = fmt.Errorf("a server with id %q was added meanwhile; import again to compare", srv.ID)
				}
				skip(err)
				continue
			}
			out.Added = append(out.Added, entry)
			changed = true
		case gerr != nil:
			skip(gerr)
		case sameEntry(cur, srv, own):
			out.Unchanged = append(out.Unchanged, entry)
		case !req.Update:
			out.Conflicts = append(out.Conflicts, localapi.SkippedEntry{Name: srv.Name, ID: srv.ID,
				Reason: fmt.Sprintf("a server with id %q exists with another configuration; it was left unchanged (import with update to replace it)", srv.ID)})
		default:
			// The document gives the credentials for its own URL, so a
			// bearer token or header values that follow a new URL were
			// meant for it.
			_, err := c.editServer(ctx, srv.ID, func(s *config.Server) error {
				applyImport(s, srv, own)
				return nil
			}, store.UpdateOptions{RebindBearer: true, RebindHeaders: slices.Collect(maps.Keys(srv.Headers))})
			if err == nil {
				err = grant(srv.URL)
			}
			if err != nil {
				skip(err)
				continue
			}
			out.Updated = append(out.Updated, entry)
			changed = true
		}
	}
	for _, sk := range skipped {
		out.Skipped = append(out.Skipped, localapi.SkippedEntry{Name: sk.Name, Reason: sk.Reason})
	}
	if changed {
		c.syncConfig(ctx)
		c.hub.bump(topicServers)
	}
	return out, nil
}

// sameEntry reports whether the stored server already is what the import
// entry says. Another client's entry says name, URL, auth and headers;
// remotemcp's own says everything. A binding (set by a sign-in) never
// counts.
func sameEntry(cur, imp config.Server, own bool) bool {
	a, b := cur.Clone(), cur.Clone()
	applyImport(&b, imp, own)
	a.Auth.Binding, b.Auth.Binding = nil, nil
	return reflect.DeepEqual(a, b)
}

// applyImport writes the fields an import entry sets onto s.
func applyImport(s *config.Server, imp config.Server, own bool) {
	binding := s.Auth.Binding
	if own {
		*s = imp.Clone()
	} else {
		c := imp.Clone()
		s.Name, s.URL, s.Auth, s.Headers = c.Name, c.URL, c.Auth, c.Headers
	}
	if s.Auth.Kind.OAuthCapable() && config.SameResource(s.URL, imp.URL) {
		s.Auth.Binding = binding
	}
}

// UpdateServer edits a server by compare-and-swap (store.EditServer): each
// change is applied to the newest record, DisableTools and EnableTools add
// or remove their own names only, so no concurrent edit is lost. With
// req.Revision set the edit applies to that revision only (CodeConflict
// otherwise). A new URL gets its origin granted. Warnings name disabled
// tools the server does not have, when its catalog is known.
//
// Long: every field of UpdateServerRequest in one place, twice: first the
// checks that must refuse before anything changes (durations, limits,
// contradictory tools, headers and ports), then the one compare-and-swap
// closure that applies each field to the newest record and may run again;
// keeping them side by side shows a new field needs both, in the
// request's order.
func (c *Engine) UpdateServer(ctx context.Context, id string, req localapi.UpdateServerRequest) (*localapi.UpdateServerResult, error) {
	var timeout *config.Duration
	if req.ToolTimeout != nil {
		d := time.Duration(0)
		if s := strings.TrimSpace(*req.ToolTimeout); s != "" {
			var err error
			if d, err = time.ParseDuration(s); err != nil {
				return nil, badRequest("toolTimeout", "toolTimeout: %v", err)
			}
		}
		cd := config.Duration(d)
		timeout = &cd
	}
	var idle *config.Duration
	resetIdle := false
	if req.IdleTimeout != nil {
		switch s := strings.TrimSpace(*req.IdleTimeout); s {
		case "", "default":
			resetIdle = true
		default:
			d, err := time.ParseDuration(s)
			if s == "0" {
				d, err = 0, nil
			}
			if err != nil || d < 0 || d > config.MaxIdleTimeout {
				return nil, badRequest("idleTimeout", "idleTimeout %q: want a duration such as 10m, 0 for never, or default", s)
			}
			cd := config.Duration(d)
			idle = &cd
		}
	}
	// Check the limits before the edit, so a bad one changes nothing.
	var probe config.Limits
	for _, name := range slices.Sorted(maps.Keys(req.Limits)) {
		if err := probe.Set(name, req.Limits[name]); err != nil {
			return nil, badRequest("limits", "%v", err)
		}
	}
	for _, t := range req.DisableTools {
		if slices.Contains(req.EnableTools, t) {
			return nil, badRequest("disableTools", "tool %q is both disabled and enabled in one request", t)
		}
	}
	for _, name := range req.UnsetHeaders {
		if hasHeader(req.Headers, name) {
			return nil, badRequest("unsetHeaders", "header %s is both set and removed in one request", name)
		}
	}
	if p := req.RedirectPort; p != nil {
		switch {
		case req.Auth != nil:
			return nil, badRequest("redirectPort", "redirectPort changes only the redirect port and auth replaces the whole auth section, its redirectPort included; give one of the two")
		case *p < 0 || *p > 65535:
			return nil, badRequest("redirectPort", "redirectPort %d: give a TCP port, 1 to 65535, or 0 for the default (%d)", *p, config.DefaultRedirectPort)
		}
	}
	rebind := req.RebindBearer || req.Token != nil || req.Auth != nil && req.Auth.Token != ""
	// Headers given with the edit are meant for the server's (new) URL.
	rebindHeaders := slices.Sorted(maps.Keys(req.Headers))
	var warnings []string
	newURL := ""
	_, err := c.editServer(ctx, id, func(s *config.Server) error {
		if req.Revision != 0 {
			rev, err := c.Store.ServerRevision(ctx, id)
			if err != nil {
				return err
			}
			if rev != req.Revision {
				e := conflict("server %s was changed since revision %d (it is at revision %d now); nothing was changed: read it again and repeat the edit", id, req.Revision, rev)
				e.Field = "revision"
				return e
			}
		}
		if req.URL != nil {
			u := strings.TrimSpace(*req.URL)
			if u != s.URL {
				newURL = u
			}
			s.URL = u
		}
		if req.Name != nil {
			s.Name = strings.TrimSpace(*req.Name)
		}
		if req.Enabled != nil {
			s.Enabled = *req.Enabled
		}
		if req.ConnectOnStartup != nil {
			s.ConnectOnStartup = *req.ConnectOnStartup
		}
		if timeout != nil {
			s.ToolTimeout = *timeout
		}
		if resetIdle {
			s.IdleTimeout = nil
		} else if idle != nil {
			d := *idle
			s.IdleTimeout = &d
		}
		for _, name := range slices.Sorted(maps.Keys(req.Limits)) {
			if err := s.Limits.Set(name, req.Limits[name]); err != nil {
				return badRequest("limits", "%v", err)
			}
		}
		for _, t := range req.DisableTools {
			s.DisabledTools = toggleTool(s.DisabledTools, t, false)
		}
		for _, t := range req.EnableTools {
			s.DisabledTools = toggleTool(s.DisabledTools, t, true)
		}
		// toggleTool adds a name when "enabled" is false: here that is
		// pinning.
		for _, t := range req.PinTools {
			s.PinnedTools = toggleTool(s.PinnedTools, t, false)
		}
		for _, t := range req.UnpinTools {
			s.PinnedTools = toggleTool(s.PinnedTools, t, true)
		}
		if a := req.Auth; a != nil {
			next := config.Auth{Kind: a.Kind, Token: a.Token, ClientID: a.ClientID, ClientSecret: a.ClientSecret,
				Scopes: slices.Clone(a.Scopes), RedirectPort: a.RedirectPort, ClientMetadataURL: strings.TrimSpace(a.ClientMetadataURL)}
			if next.Kind == "" {
				return badRequest("auth.kind", "auth.kind is required: none, bearer, oauth or auto")
			}
			if next.Kind.OAuthCapable() && s.Auth.Kind.OAuthCapable() {
				// Still the same sign-in: keep what it is bound to.
				next.Binding = s.Auth.Binding
			}
			s.Auth = next
		}
		if p := req.RedirectPort; p != nil {
			// Only the port: the client id and secret, scopes, client
			// metadata URL and binding stay. A dynamically registered
			// client whose redirect URI no longer matches registers again
			// at the next sign-in (redirectFor).
			if !s.Auth.Kind.OAuthCapable() {
				return badRequest("redirectPort", "server %s uses %s auth, not OAuth, so it has no redirect port; switch it to OAuth with the port (servers set %s --auth oauth --port %d)", id, s.Auth.Kind, id, *p)
			}
			s.Auth.RedirectPort = *p
		}
		if req.Token != nil {
			if s.Auth.Kind != config.AuthBearer {
				return badRequest("token", "server %s uses %s auth, not a bearer token; change its auth to bearer instead", id, s.Auth.Kind)
			}
			s.Auth.Token = *req.Token
		}
		// The edit may run again on a newer record: start over each time.
		warnings = nil
		for _, name := range req.UnsetHeaders {
			if !deleteHeader(s.Headers, name) {
				warnings = append(warnings, fmt.Sprintf("server %s has no header %q (nothing to remove)", id, name))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(req.Headers)) {
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			// Names ignore case: a new spelling replaces the old one.
			deleteHeader(s.Headers, name)
			s.Headers[name] = req.Headers[name]
		}
		if len(s.Headers) == 0 {
			s.Headers = nil
		}
		if req.ProtocolVersion != nil {
			s.ProtocolVersion = orDefault(*req.ProtocolVersion)
		}
		if req.LogLevel != nil {
			s.LogLevel = orDefault(*req.LogLevel)
		}
		if req.Approval != nil {
			s.Approval = config.Approval(orDefault(string(*req.Approval)))
			if s.Approval == config.ApprovalHost {
				s.Approval = "" // the default is stored as absent
			}
		}
		if req.Trusted != nil {
			s.Trusted = *req.Trusted
		}
		return nil
	}, store.UpdateOptions{RebindBearer: rebind, RebindHeaders: rebindHeaders})
	if err != nil {
		return nil, err
	}
	if newURL != "" {
		// Pointing a server at a new URL is the person's choice of origin.
		if _, err := c.grantOrigin(ctx, newURL, hostperm.ByCLI); err != nil {
			c.log.Warn("remotemcp: grant the new origin", "server", id, "err", err)
		}
	}
	v, err := c.serverView(ctx, id)
	if err != nil {
		return nil, fail(err)
	}
	warnings = append(warnings, c.unknownTools(id, req.DisableTools, "disabled")...)
	return &localapi.UpdateServerResult{Server: *v, Warnings: append(warnings, c.unknownTools(id, req.PinTools, "pinned")...)}, nil
}

// approvalOf is a stored approval as shown: empty is host.
func approvalOf(a config.Approval) config.Approval {
	if a == "" {
		return config.ApprovalHost
	}
	return a
}

// headerNames lists the names of custom headers, sorted; nil for none.
func headerNames(h map[string]string) []string {
	if len(h) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(h))
}

// hasHeader reports whether h has a header called name in any case.
func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// deleteHeader removes the header called name in any case from h and
// reports whether there was one.
func deleteHeader(h map[string]string, name string) bool {
	found := false
	for k := range h {
		if strings.EqualFold(k, strings.TrimSpace(name)) {
			delete(h, k)
			found = true
		}
	}
	return found
}

// orDefault is a setting as given, with "default" meaning unset ("").
func orDefault(v string) string {
	if v = strings.TrimSpace(v); strings.EqualFold(v, "default") {
		return ""
	}
	return v
}

// editServer applies edit by compare-and-swap and announces the change.
func (c *Engine) editServer(ctx context.Context, id string, edit func(*config.Server) error, opts store.UpdateOptions) (config.Server, error) {
	// Edits of this process queue here; other processes' are settled by
	// the store's compare-and-swap.
	c.editMu.Lock()
	srv, err := c.Store.EditServer(ctx, id, edit, opts)
	c.editMu.Unlock()
	if err != nil {
		switch {
		case errors.Is(err, store.ErrNotFound):
			return srv, errNoServer(id)
		case errors.Is(err, store.ErrBearerRebind):
			return srv, conflict("server %s: the new URL is a different resource than the old one, and its bearer token was given for the old URL, so it does not follow the server (nothing was changed); give the token for the new URL with the edit", id)
		case errors.Is(err, store.ErrHeaderRebind):
			// The store's message names the headers, never their values.
			var names []string
			if he := (*store.HeaderRebindError)(nil); errors.As(err, &he) {
				names = he.Headers
			}
			e := conflict("server %s: the new URL is a different resource than the old one, and the values of its headers %s were given for the old URL, so they do not follow the server (nothing was changed); give them for the new URL with the edit, or remove them", id, strings.Join(names, ", "))
			e.Field = "headers"
			return srv, e
		case errors.Is(err, store.ErrSealOpen):
			what := "a stored secret"
			if ue := (*store.UnopenedError)(nil); errors.As(err, &ue) {
				what = "its stored " + strings.Join(ue.Fields, ", ")
			}
			return srv, conflict("server %s: %s cannot be opened, so it cannot be edited without losing it; give it again with the edit (an auth change for a token or client secret, the header for a header value), remove that header, or remove and re-add the server", id, what)
		}
		return srv, fail(err)
	}
	c.syncConfig(ctx)
	c.hub.bump(topicServers)
	return srv, nil
}

// syncConfig waits (briefly) until the manager has applied every stored
// change so far, so that an edit is in effect when the request that made
// it returns: a Connect right after SetEnabled(true) must not find the
// server still disabled.
func (c *Engine) syncConfig(ctx context.Context) {
	if !c.running {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Manager.Sync(sctx); err != nil {
		c.log.Debug("remotemcp: wait for the config change to apply", "err", err)
	}
}

// ServersChanged makes the engine take the store's servers now, as its
// own edits do before they return: for an owner that wrote the store
// itself (a gateway's shared servers), so that the next request finds
// them.
func (c *Engine) ServersChanged(ctx context.Context) {
	c.syncConfig(ctx)
	c.hub.bump(topicServers, topicGrants)
}

// toggleTool adds (enabled false) or removes (enabled true) one tool name
// in a disabledTools list, leaving every other name as it is.
func toggleTool(l []string, tool string, enabled bool) []string {
	tool = strings.TrimSpace(tool)
	if tool == "" {
		return l
	}
	l = slices.DeleteFunc(slices.Clone(l), func(t string) bool { return t == tool })
	if !enabled {
		l = append(l, tool)
		slices.Sort(l)
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// unknownTools warns about disabled tools the server does not offer,
// when its catalog is known (a current connection).
func (c *Engine) unknownTools(id string, tools []string, done string) []string {
	out := []string{}
	if len(tools) == 0 {
		return out
	}
	connID, ok := c.Manager.CurrentConnection(id)
	if !ok {
		return out
	}
	cat, err := c.Manager.CatalogOn(id, connID)
	if err != nil || cat == nil {
		return out
	}
	for _, t := range tools {
		if !slices.ContainsFunc(cat.Tools, func(ct session.Tool) bool { return ct.Tool != nil && ct.Name == t }) {
			out = append(out, fmt.Sprintf("server %s has no tool %q (it was %s anyway, in case the server adds it later)", id, t, done))
		}
	}
	return out
}

// SetTool enables or disables one tool. It re-applies its own toggle to
// the newest record, so concurrent toggles of other tools are never lost.
func (c *Engine) SetTool(ctx context.Context, id, tool string, enabled bool) (*localapi.Server, error) {
	if strings.TrimSpace(tool) == "" {
		return nil, badRequest("tool", "tool is required")
	}
	if _, err := c.editServer(ctx, id, func(s *config.Server) error {
		s.DisabledTools = toggleTool(s.DisabledTools, tool, enabled)
		return nil
	}, store.UpdateOptions{}); err != nil {
		return nil, err
	}
	return c.Server(ctx, id)
}

// SetEnabled switches a server on or off.
func (c *Engine) SetEnabled(ctx context.Context, id string, enabled bool) (*localapi.Server, error) {
	if _, err := c.editServer(ctx, id, func(s *config.Server) error { s.Enabled = enabled; return nil }, store.UpdateOptions{}); err != nil {
		return nil, err
	}
	return c.Server(ctx, id)
}

// RemoveServer deletes a server: its config, its secrets, its OAuth state
// and any sign-in flow.
func (c *Engine) RemoveServer(ctx context.Context, id string) error {
	if srv, err := c.Store.GetServer(ctx, id); err != nil && !errors.Is(err, store.ErrSealOpen) {
		if errors.Is(err, store.ErrNotFound) {
			return errNoServer(id)
		}
		return fail(err)
	} else if srv.Shared {
		return conflict("server %q is shared by the gateway's admins for everyone: hide it for yourself by disabling it instead", id)
	}
	c.flows.drop(id)
	// Access tokens live in memory only; DeleteServer takes the sealed
	// secrets with it.
	if err := c.OAuth.Logout(ctx, id); err != nil {
		c.log.Debug("remotemcp: oauth logout before delete", "server", id, "err", err)
	}
	if err := c.Store.DeleteServer(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errNoServer(id)
		}
		return fail(err)
	}
	if err := c.Manager.SetSignedOut(ctx, id, false); err != nil {
		c.log.Warn("remotemcp: forget the sign-out of a removed server", "server", id, "err", err)
	}
	c.syncConfig(ctx)
	c.hub.bump(topicServers)
	return nil
}

// Connect connects (or reconnects) a server and waits for the outcome. A
// failure is an *localapi.Error whose Server has the state and reason:
// CodePermissionRequired (with Permission) when an origin needs a grant
// first, CodeLoginRequired (with Step) when the person must sign in,
// CodeUnavailable otherwise.
func (c *Engine) Connect(ctx context.Context, id string) (*localapi.Server, error) {
	if err := c.errNotRunning(); err != nil {
		return nil, err
	}
	if _, err := c.serverView(ctx, id); err != nil {
		return nil, fail(err)
	}
	cctx, cancel := context.WithTimeout(ctx, connectWait)
	defer cancel()
	if err := c.connect(cctx, id); err != nil {
		return nil, c.connectError(ctx, id, err)
	}
	return c.Server(ctx, id)
}

// connect connects a server through the manager and, once it is ready,
// lists it in the registry. It is the person's request (connect, a new
// grant): it resets the server's backoff (issue #20 item 1).
func (c *Engine) connect(ctx context.Context, id string) error {
	return c.connectWith(ctx, id, c.Manager.Connect)
}

// connectWith is connect through mc: Manager.Connect (explicit) or
// Manager.Ensure (a listing's or a call's, which respects the backoff).
func (c *Engine) connectWith(ctx context.Context, id string, mc func(context.Context, string) error) error {
	if err := mc(ctx, id); err != nil {
		return err
	}
	c.hub.bump(topicServers)
	return c.reg.Refresh(withWant(ctx, id))
}

// ensureReady connects a server that has no session (a lazy one, or one
// that failed), bounded by connectWait.
func (c *Engine) ensureReady(ctx context.Context, id string) error {
	if st, err := c.Manager.ServerStatusOf(id); err == nil && st.State == manager.StateReady {
		if c.listed(id) {
			return nil
		}
		return c.reg.Refresh(withWant(ctx, id))
	}
	cctx, cancel := context.WithTimeout(ctx, connectWait)
	defer cancel()
	return c.connectWith(cctx, id, c.Manager.Ensure)
}

// connectError describes a failed connect with the server's state.
func (c *Engine) connectError(ctx context.Context, id string, err error) *localapi.Error {
	ae := unavailable(err)
	if ae.Permission == nil && ae.Code != localapi.CodeLoginRequired {
		if p := c.permissionFor(ctx, id); p != nil {
			ae.Status, ae.Code, ae.Permission, ae.NotSent = http.StatusConflict, localapi.CodePermissionRequired, p, true
		}
	}
	ae.Server, _ = c.serverView(ctx, id)
	if ae.Code == localapi.CodeUnavailable && ae.Server != nil && ae.Server.State == localapi.StateNeedsAuth {
		ae.Code, ae.NotSent = localapi.CodeLoginRequired, true
		if ae.Server.Reason != nil {
			ae.Step = ae.Server.Reason.Step
		}
	}
	return ae
}

// permissionFor finds a pending approval that explains a failed connect:
// the guard's error is wrapped by the SDK in ways errors.As cannot always
// see through, but the pending entry it recorded is authoritative.
func (c *Engine) permissionFor(ctx context.Context, id string) *localapi.PermissionInfo {
	v, err := c.serverView(ctx, id)
	if err != nil || v.OriginGranted && len(v.Pending) == 0 {
		return nil
	}
	if !v.OriginGranted {
		return &localapi.PermissionInfo{Origin: v.Origin, Purpose: localapi.PurposeMCP, ServerID: id}
	}
	p := v.Pending[0]
	return &localapi.PermissionInfo{Origin: p.Origin, Purpose: p.Purpose, ServerID: id}
}

// Disconnect closes the server's session.
func (c *Engine) Disconnect(ctx context.Context, id string) (*localapi.Server, error) {
	if _, err := c.serverView(ctx, id); err != nil {
		return nil, fail(err)
	}
	if err := c.Manager.Disconnect(ctx, id); err != nil && !errors.Is(err, manager.ErrUnknownServer) {
		return nil, fail(err)
	}
	c.hub.bump(topicServers)
	return c.Server(ctx, id)
}

// Log returns the server's last HTTP exchanges, oldest first (R5.3):
// metadata only, redacted, never a header or a body. A lazy engine (one
// command) that has not talked to the server yet connects it first to
// record the handshake, or where it failed. While a gateway's database
// cannot be reached, the log this engine holds in memory of a server it
// knows still answers (manager.Manager.Log), as its calls go on.
func (c *Engine) Log(ctx context.Context, id string) ([]localapi.LogEntry, error) {
	v, err := c.serverView(ctx, id)
	if errors.Is(err, store.ErrUnavailable) {
		if l, lerr := logOf(c.Manager.Log(id)); lerr == nil && l != nil {
			return l, nil
		}
	}
	if err != nil {
		return nil, fail(err)
	}
	l, _ := logOf(c.Manager.Log(id))
	if len(l) == 0 && c.lazy && c.running && v.Enabled && v.State != localapi.StateReady {
		cctx, cancel := context.WithTimeout(ctx, connectWait)
		if err := c.connectWith(cctx, id, c.Manager.Ensure); err != nil {
			c.log.Debug("remotemcp: connect to record the log", "server", id, "err", err)
		}
		cancel()
		l, _ = logOf(c.Manager.Log(id))
	}
	if l == nil {
		l = []localapi.LogEntry{}
	}
	return l, nil
}

// Grants lists the origins the person allowed.
func (c *Engine) Grants(ctx context.Context) ([]localapi.Grant, error) {
	g, err := grantsOf(c.Hosts.Grants(ctx))
	if g == nil {
		g = []localapi.Grant{}
	}
	if len(g) == 0 && err != nil {
		return g, fail(err)
	}
	return g, nil
}

// Pending lists the refused requests waiting for the person's decision.
func (c *Engine) Pending(ctx context.Context) ([]localapi.Pending, error) {
	p, err := pendingsOf(c.Hosts.Pending(ctx))
	if p == nil {
		p = []localapi.Pending{}
	}
	if len(p) == 0 && err != nil {
		return p, fail(err)
	}
	return p, nil
}

// grantsState reads the grants and pending approvals together.
func (c *Engine) grantsState(ctx context.Context) (localapi.GrantsState, error) {
	g, gerr := c.Grants(ctx)
	p, perr := c.Pending(ctx)
	if gerr != nil && perr != nil {
		return localapi.GrantsState{Grants: g, Pending: p}, errors.Join(gerr, perr)
	}
	return localapi.GrantsState{Grants: g, Pending: p}, nil
}

// Grant allows an origin (R2.2); by names the user action (hostperm.By…,
// default the CLI's). Enabled servers of that origin that failed are
// connected again in the background.
func (c *Engine) Grant(ctx context.Context, origin, by string) error {
	if by == "" {
		by = hostperm.ByCLI
	}
	if err := c.Hosts.Grant(ctx, origin, by); err != nil {
		return fail(err)
	}
	c.hub.bump(topicGrants, topicServers)
	if o, err := config.Origin(origin); err == nil {
		c.retryOrigin(ctx, o)
	}
	return nil
}

// retryOrigin connects again, in the background, the enabled servers of
// origin that are in error: their last attempt was most likely refused
// for want of the grant just made, and the manager does not retry a
// failed first connect on its own.
func (c *Engine) retryOrigin(ctx context.Context, origin string) {
	if !c.running {
		return
	}
	views, err := c.serverViews(ctx)
	if err != nil {
		return
	}
	for _, v := range views {
		if !v.Enabled || v.State != localapi.StateError || v.Origin != origin {
			continue
		}
		id := v.ID
		c.goBackground(func(bctx context.Context) {
			cctx, cancel := context.WithTimeout(bctx, connectWait)
			defer cancel()
			if err := c.connect(cctx, id); err != nil {
				c.log.Info("remotemcp: connect after grant failed", "server", id, "err", err)
			}
		})
	}
}

// Revoke removes a grant and disconnects the servers of that origin,
// whose open sessions the broker does not close by itself.
func (c *Engine) Revoke(ctx context.Context, origin string) error {
	if err := c.Hosts.Revoke(ctx, origin); err != nil {
		return fail(err)
	}
	if o, err := config.Origin(origin); err == nil {
		for _, st := range c.Manager.Status() {
			if so, err := config.Origin(st.URL); err == nil && so == o && st.State != manager.StateDisconnected {
				if err := c.Manager.Disconnect(ctx, st.ID); err != nil {
					c.log.Info("remotemcp: disconnect after revoke", "server", st.ID, "err", err)
				}
			}
		}
	}
	c.hub.bump(topicGrants, topicServers)
	return nil
}

// DismissPending drops the pending approvals of an origin without
// granting it.
func (c *Engine) DismissPending(ctx context.Context, origin string) error {
	if err := c.Hosts.DismissPending(ctx, origin); err != nil {
		return fail(err)
	}
	c.hub.bump(topicGrants, topicServers)
	return nil
}

// listed reports whether the registry's snapshot holds a catalog of the
// server (any tool, prompt or resource of it).
func (c *Engine) listed(id string) bool {
	// A lookup, not a copy of the whole snapshot: it is on every call's
	// path.
	return c.reg.Snapshot().HasCatalog(id)
}

// KnownSecrets names the write-only secrets the store holds for servers
// (bearer tokens, client secrets, header values), so the daemon can scrub them from
// anything it sends (localapi.SecretLister). A secret that cannot be
// opened is left out; the servers are still listed.
func (c *Engine) KnownSecrets(ctx context.Context) ([]string, error) {
	srvs, err := c.Store.ListServers(ctx)
	if err != nil && srvs == nil {
		return nil, err
	}
	var out []string
	for _, s := range srvs {
		for _, v := range append([]string{s.Auth.Token, s.Auth.ClientSecret}, slices.Collect(maps.Values(s.Headers))...) {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out, nil
}
