package remotemcp

import (
	"context"
	"errors"

	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// The store's KV namespaces of the servers' last good catalogs and of
// idle servers' request logs (issue #12), keyed by server id.
const (
	catalogNamespace = "catalogs"
	logNamespace     = "request-logs"
)

// storeCatalogs is the manager's CatalogCache and LogShelf in the data
// directory's store; catalogs are shared by every process on it.
type storeCatalogs struct{ st *store.SQLite }

var (
	_ manager.CatalogCache = storeCatalogs{}
	_ manager.LogShelf     = storeCatalogs{}
)

// LoadCatalog returns the stored catalog of id; nil when there is none.
func (s storeCatalogs) LoadCatalog(ctx context.Context, id string) ([]byte, error) {
	b, err := s.st.GetKV(ctx, catalogNamespace, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// SaveCatalog stores the catalog of id, replacing the one before.
func (s storeCatalogs) SaveCatalog(ctx context.Context, id string, b []byte) error {
	return s.st.PutKV(ctx, catalogNamespace, id, b)
}

// DeleteCatalog forgets the catalog of id; a missing one is no error.
func (s storeCatalogs) DeleteCatalog(ctx context.Context, id string) error {
	err := s.st.DeleteKV(ctx, catalogNamespace, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// ShelveLog keeps the request log of an idle server id.
func (s storeCatalogs) ShelveLog(ctx context.Context, id string, b []byte) error {
	return s.st.PutKV(ctx, logNamespace, id, b)
}

// UnshelveLog returns the shelved request log of id and forgets it.
func (s storeCatalogs) UnshelveLog(ctx context.Context, id string) ([]byte, error) {
	b, err := s.st.GetKV(ctx, logNamespace, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := s.st.DeleteKV(ctx, logNamespace, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return b, nil
}

// CatalogIDs lists the servers with a stored catalog.
func (s storeCatalogs) CatalogIDs(ctx context.Context) ([]string, error) {
	return s.st.KeysKV(ctx, catalogNamespace)
}
