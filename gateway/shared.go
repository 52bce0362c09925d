package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// byGateway is who a shared server's grant is attributed to: the admins
// who shared it, a person's action on everyone's behalf.
const byGateway = "user: gateway admins (shared server)"

// Shared servers (issue #22): an admin adds a server for everyone; each
// person gets a copy marked config.Server.Shared in their own store, with
// their own sign-in to it (their own refresh token, never another's) and
// its origin granted. The gateway keeps each copy's connection settings
// in step with the admins' definition; the person may hide the copy
// (disable it) or switch its tools, which the sync keeps.

// SharedServers lists the servers shared with everyone.
func (g *Gateway) SharedServers(ctx context.Context) ([]localapi.SharedServer, error) {
	list, err := g.db.SharedServers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]localapi.SharedServer, 0, len(list))
	for _, s := range list {
		out = append(out, localapi.SharedServer{ID: s.ID, Name: s.Name, URL: s.URL, Auth: s.Auth.Kind})
	}
	return out, nil
}

// AddShared shares a server with everyone and gives every open engine its
// copy (the others get theirs when they open). A request with a secret
// (bearer token, client secret, header values) is refused.
func (g *Gateway) AddShared(ctx context.Context, req localapi.AddServerRequest) (*localapi.SharedServer, error) {
	if req.Token != "" || req.ClientSecret != "" || len(req.Headers) > 0 {
		return nil, &localapi.Error{Code: localapi.CodeBadRequest, Field: "auth", Message: store.ErrSharedSecret.Error()}
	}
	srv := config.Server{ID: strings.TrimSpace(req.ID), Name: strings.TrimSpace(req.Name), URL: strings.TrimSpace(req.URL),
		Auth: config.Auth{Kind: req.Auth, ClientID: req.ClientID, Scopes: req.Scopes, RedirectPort: req.RedirectPort,
			ClientMetadataURL: strings.TrimSpace(req.ClientMetadataURL)},
		Enabled: true, ProtocolVersion: req.ProtocolVersion, LogLevel: req.LogLevel}
	if srv.Auth.Kind == "" {
		srv.Auth.Kind = config.AuthNone
	}
	if srv.Name == "" {
		srv.Name = srv.ID
	}
	if err := srv.Validate(); err != nil {
		return nil, &localapi.Error{Code: localapi.CodeBadRequest, Message: err.Error()}
	}
	if err := g.db.PutSharedServer(ctx, srv); err != nil {
		return nil, err
	}
	g.log.Info("gateway: server shared with everyone", "server", srv.ID, "url", srv.URL)
	g.syncOpen(ctx)
	return &localapi.SharedServer{ID: srv.ID, Name: srv.Name, URL: srv.URL, Auth: srv.Auth.Kind}, nil
}

// RemoveShared stops sharing a server: every person's copy goes, with
// their sign-in to it.
func (g *Gateway) RemoveShared(ctx context.Context, id string) error {
	if err := g.db.DeleteSharedServer(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return &localapi.Error{Code: localapi.CodeNotFound, Message: fmt.Sprintf("no shared server %q", id)}
		}
		return err
	}
	g.syncOpen(ctx)
	return nil
}

// syncOpen brings every open engine's copies in step.
func (g *Gateway) syncOpen(ctx context.Context) {
	g.mu.Lock()
	open := g.openEngines()
	g.mu.Unlock()
	for _, e := range open {
		if err := g.syncShared(ctx, e); err != nil {
			g.log.Warn("gateway: shared servers", "user", e.Store.User(), "err", err)
		}
	}
}

// personal are the fields of a shared server's copy that are the
// person's: the sync keeps them.
func personal(dst *config.Server, cur config.Server) {
	dst.Enabled, dst.DisabledTools, dst.PinnedTools = cur.Enabled, cur.DisabledTools, cur.PinnedTools
	dst.Approval, dst.ConnectOnStartup, dst.IdleTimeout = cur.Approval, cur.ConnectOnStartup, cur.IdleTimeout
}

// syncShared makes e's copies of the shared servers match the admins'
// definitions: missing ones are added (their origin granted), changed
// ones take the new connection settings (keeping the person's own
// fields), and copies of servers no longer shared go. A person's own
// server with a shared server's id is left alone (logged).
func (g *Gateway) syncShared(ctx context.Context, e *engine.Engine) error {
	shared, err := g.db.SharedServers(ctx)
	if err != nil {
		return err
	}
	mine, err := e.Store.ListServers(ctx)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return err
	}
	byID := map[string]config.Server{}
	for _, s := range mine {
		byID[s.ID] = s
	}
	var errs []error
	want := map[string]bool{}
	for _, def := range shared {
		want[def.ID] = true
		cur, ok := byID[def.ID]
		switch {
		case !ok:
			srv := def.Clone()
			srv.Shared, srv.Enabled = true, true
			if origin, err := config.Origin(srv.URL); err == nil {
				if err := e.Hosts.Grant(ctx, origin, byGateway); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if err := e.Store.AddServer(ctx, srv); err != nil && !errors.Is(err, store.ErrDuplicate) {
				errs = append(errs, err)
			}
		case !cur.Shared:
			g.log.Warn("gateway: a person's own server has the id of a shared server; theirs is kept", "user", e.Store.User(), "server", def.ID)
		default:
			_, err := e.Store.EditServer(ctx, def.ID, func(s *config.Server) error {
				next := def.Clone()
				next.Shared = true
				personal(&next, *s)
				*s = next
				return nil
			}, store.UpdateOptions{})
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		if s := byID[id]; s.Shared && !want[id] {
			if err := e.OAuth.Logout(ctx, id); err != nil {
				g.log.Debug("gateway: sign out of a server no longer shared", "server", id, "err", err)
			}
			if err := e.Store.DeleteServer(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	e.ServersChanged(ctx)
	return errors.Join(errs...)
}
