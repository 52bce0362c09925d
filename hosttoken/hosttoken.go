// Package hosttoken serves the bearer tokens of the MCP endpoint over
// HTTP ("remotemcp mcp --http", "serve --mcp-http") to the local API: the
// engine keeps them in its store and answers localapi.HostTokens with a
// Service, so the CLI creates, lists and revokes them through the daemon
// or the in-process engine like everything else, never by opening the
// store itself. The tokens' format and checks are frontend.Tokens'.
package hosttoken

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// Service answers localapi.HostTokens from the tokens kept in a KV (the
// engine's store).
type Service struct{ t *frontend.Tokens }

// New returns the Service of the tokens kept in kv.
func New(kv frontend.KV) Service { return Service{t: frontend.NewTokens(kv)} }

// HostTokens lists the tokens by name.
func (s Service) HostTokens(ctx context.Context) ([]localapi.HostToken, error) {
	list, err := s.t.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]localapi.HostToken, len(list))
	for i, t := range list {
		out[i] = localapi.HostToken{Name: t.Name, CreatedAt: t.Created}
	}
	return out, nil
}

// CreateHostToken creates the token called name.
func (s Service) CreateHostToken(ctx context.Context, name string) (*localapi.NewHostToken, error) {
	tok, err := s.t.Create(ctx, name)
	if err != nil {
		return nil, typed(err)
	}
	// Read back for the creation time the store kept (to the second).
	info, err := s.info(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("create token %q: read it back: %w", name, err)
	}
	return &localapi.NewHostToken{HostToken: info, Token: tok}, nil
}

// RevokeHostToken removes the token called name.
func (s Service) RevokeHostToken(ctx context.Context, name string) error {
	return typed(s.t.Revoke(ctx, name))
}

// CheckHostToken returns the token tok is; CodeNotFound when it is none.
func (s Service) CheckHostToken(ctx context.Context, tok string) (*localapi.HostToken, error) {
	name, ok, err := s.t.Check(ctx, tok)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &localapi.Error{Code: localapi.CodeNotFound, Message: "not a valid token"}
	}
	info, err := s.info(ctx, name)
	if err != nil {
		return nil, err
	}
	return &info, nil
}

// info is the listed form of the token called name.
func (s Service) info(ctx context.Context, name string) (localapi.HostToken, error) {
	list, err := s.t.List(ctx)
	if err != nil {
		return localapi.HostToken{}, err
	}
	for _, t := range list {
		if t.Name == name {
			return localapi.HostToken{Name: t.Name, CreatedAt: t.Created}, nil
		}
	}
	return localapi.HostToken{}, &localapi.Error{Code: localapi.CodeNotFound, Message: fmt.Sprintf("no token %q", name)}
}

// typed turns the tokens' errors into the API's codes; the message stays
// the tokens' own words, which the CLI prints.
func typed(err error) error {
	code := ""
	switch {
	case err == nil:
		return nil
	case errors.Is(err, frontend.ErrTokenExists):
		code = localapi.CodeConflict
	case errors.Is(err, frontend.ErrNoToken):
		code = localapi.CodeNotFound
	case errors.Is(err, frontend.ErrTokenName):
		code = localapi.CodeBadRequest
	default:
		return err
	}
	return &localapi.Error{Code: code, Message: err.Error()}
}

// Kept reports whether the data directory dir has a database, so may keep
// tokens: a dry run opens nothing where it has none.
func Kept(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, store.DBFileName))
	return err == nil
}

// Open opens the tokens of the data directory dir for the endpoint's
// bearer check, which reads them on every request (so a revocation by
// any process takes effect at once); close releases the store.
func Open(ctx context.Context, dir string, log *slog.Logger) (t *frontend.Tokens, close func(), err error) {
	st, err := store.Open(ctx, dir, store.Options{Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("open the data directory for the tokens: %w", err)
	}
	return frontend.NewTokens(st), func() { st.Close() }, nil
}
