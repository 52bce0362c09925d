// Package store keeps server configs and sealed secrets in the data
// directory (SQLite, modernc.org/sqlite) and publishes a change feed that
// also sees writes from other processes on the same directory.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/remotemcp/remotemcp/config"
)

// Errors callers branch on.
var (
	// ErrNotFound: no server / secret with that key.
	ErrNotFound = errors.New("not found")
	// ErrDuplicate: AddServer with an id that already exists.
	ErrDuplicate = errors.New("already exists")
	// ErrSealOpen: a sealed secret could not be opened: the key file is not
	// the one it was sealed with, the blob was tampered with, or it was moved
	// to another server, purpose or binding (the associated data differs).
	// The error that wraps it names the secret. (A replaced key file is
	// normally refused by Open already, with ErrWrongKey.)
	ErrSealOpen = errors.New("cannot open sealed secret (wrong key file, tampered data, or a different binding)")
	// ErrBearerRebind: UpdateServer was asked to move a bearer server to a
	// URL with another canonical resource while keeping the old token. The
	// token was issued for the old resource and must not follow the server
	// (R3.10), so nothing is written; the caller must supply the token for
	// the new URL (or an empty-token change of auth kind) explicitly.
	ErrBearerRebind = errors.New("the server URL moved to another resource: supply the bearer token for the new URL again")
	// ErrHeaderRebind is ErrBearerRebind for custom header values (SPEC §9
	// A2: every header value is sealed like a bearer token, and bound to the
	// server's canonical resource the same way). The error that wraps it
	// names the headers, never their values.
	ErrHeaderRebind = errors.New("the server URL moved to another resource: supply the header values for the new URL again, or remove the headers")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
	// ErrConflict: EditServer gave up because the server kept being
	// changed by other writers (processes, windows) between its read and
	// its write, attempt after attempt. Nothing was written by the failed
	// edit; running it again is safe.
	ErrConflict = errors.New("the server kept changing while it was being edited (another remotemcp process is writing it); nothing was written, retry")
)

// HeaderRebindError is the error of an update refused with
// ErrHeaderRebind (errors.Is works); Headers names the headers whose
// values would have followed the server to another resource. It never
// holds a value.
type HeaderRebindError struct {
	URL, OldURL string
	Headers     []string
}

func (e *HeaderRebindError) Error() string {
	return fmt.Sprintf("url %q is a different resource than %q, and the value of header %s was given for the old one: %v",
		e.URL, e.OldURL, strings.Join(e.Headers, ", "), ErrHeaderRebind)
}

// Unwrap makes errors.Is(err, ErrHeaderRebind) hold.
func (e *HeaderRebindError) Unwrap() error { return ErrHeaderRebind }

// UnopenedError is the error of an EditServer refused because stored
// secrets of the server cannot be opened (errors.Is(err, ErrSealOpen)
// holds). Fields names them: "auth.token", "auth.clientSecret",
// "headers.<name>". The edit may go ahead once it gives each of them again
// or drops it.
type UnopenedError struct {
	Fields []string
	Err    error // the causes, each wrapping ErrSealOpen
}

func (e *UnopenedError) Error() string {
	return fmt.Sprintf("its stored %s cannot be opened, so writing it back would lose it; give it again in the edit, or remove it: %v",
		strings.Join(e.Fields, ", "), e.Err)
}

// Unwrap returns the causes.
func (e *UnopenedError) Unwrap() error { return e.Err }

// Secret purposes. The purpose and the binding go into the AES-GCM
// associated data, so a sealed value can only be opened for the purpose and
// binding it was sealed for (R3.10, R3.11).
const (
	PurposeBearer       = "bearer"        // bearer token of a server; binding = canonical resource
	PurposeRefreshToken = "oauth-refresh" // OAuth refresh token; binding = resource + issuer
	PurposeClientSecret = "oauth-client-secret"
	PurposeRegistration = "oauth-registration" // DCR result (JSON); binding = resource + issuer
	// PurposeHeaderPrefix starts the purpose of a custom header value
	// (SPEC §9 A2): "header:" + the header's name as configured; binding =
	// canonical resource. The name is part of the purpose, so a sealed
	// value opens only for the header, server and resource it was given
	// for. Use HeaderPurpose.
	PurposeHeaderPrefix = "header:"
)

// HeaderPurpose is the purpose of the sealed value of the custom header
// name (PurposeHeaderPrefix + name).
func HeaderPurpose(name string) string { return PurposeHeaderPrefix + name }

// SecretKey names one sealed secret.
type SecretKey struct {
	ServerID string
	Purpose  string
	Binding  config.Binding
}

// ChangeKind says what changed.
type ChangeKind string

// Change kinds.
const (
	ChangeServers ChangeKind = "servers" // some server config was added, changed or removed
	ChangeSecrets ChangeKind = "secrets"
	ChangeOther   ChangeKind = "other"
)

// Change is one event of the change feed. ServerID is empty when the store
// cannot tell which server changed (e.g. a write by another process), in
// which case subscribers re-read everything.
//
// A Change with neither ServerID nor Namespace (see RereadAll) means
// "anything may have changed": another process wrote to the data directory,
// or the subscriber fell behind and its pending events were coalesced.
type Change struct {
	Kind     ChangeKind
	ServerID string
	// Namespace is the KV namespace of a ChangeOther event from PutKV or
	// DeleteKV; empty otherwise.
	Namespace string
	// Revision is the store revision after the write; for a RereadAll
	// change, the revision at which it was noticed (the poller's reading,
	// or the write that overflowed a slow subscriber).
	Revision int64
}

// RereadAll reports whether the subscriber cannot tell what changed and
// must re-read everything it caches from the store.
func (c Change) RereadAll() bool { return c.ServerID == "" && c.Namespace == "" }

// Store is the persistent state of remotemcp.
//
// Servers returned by ListServers/GetServer carry their bearer token,
// client secret and custom header values opened from the sealed secrets;
// writes seal them again.
type Store interface {
	ListServers(ctx context.Context) ([]config.Server, error)
	GetServer(ctx context.Context, id string) (config.Server, error)
	// AddServer validates and inserts; ErrDuplicate when the id exists.
	AddServer(ctx context.Context, s config.Server) error
	// UpdateServer validates and replaces an existing server; ErrNotFound if absent.
	UpdateServer(ctx context.Context, s config.Server) error
	// DeleteServer removes the server and all its secrets.
	DeleteServer(ctx context.Context, id string) error

	PutSecret(ctx context.Context, k SecretKey, value []byte) error
	GetSecret(ctx context.Context, k SecretKey) ([]byte, error)
	DeleteSecret(ctx context.Context, k SecretKey) error

	// Subscribe delivers changes until ctx is done; the channel is closed then.
	Subscribe(ctx context.Context) <-chan Change
	// Revision is the store's monotonically increasing write counter.
	Revision(ctx context.Context) (int64, error)

	Close() error
}
