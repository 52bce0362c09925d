package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/store"
)

// purposeScopes keys the scopes recorded for a binding (sealed in the
// store like the other OAuth records; scopes are not secret, but they
// belong with the binding they were demanded for).
const purposeScopes = "oauth-scopes"

// scopesRecord is what a 403 insufficient_scope taught us about a
// binding: the union of the scopes the server demanded and the scopes
// the refused token had (R3.9). Every later authorization of the binding
// asks for them, so a step-up the person has to complete (background
// work cannot, R3.13) is not undone by the next "auth login" asking for
// the old scopes again (issue #11).
type scopesRecord struct {
	Scopes    []string `json:"scopes"`
	UpdatedAt int64    `json:"updated_at"` // unix seconds
}

// loadRecordedScopes returns the scopes recorded for a binding (nil if
// none or unreadable).
func (a *Authenticator) loadRecordedScopes(ctx context.Context, serverID string, b config.Binding) []string {
	raw, err := a.store.GetSecret(ctx, secretKey(serverID, purposeScopes, b))
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			a.log.Warn("oauth: could not read the recorded scopes", "server", serverID, "error", err)
		}
		return nil
	}
	var r scopesRecord
	if json.Unmarshal(raw, &r) != nil {
		a.log.Warn("oauth: discarding unreadable recorded scopes", "server", serverID)
		return nil
	}
	return slices.DeleteFunc(uniq(r.Scopes), func(s string) bool { return !validScope(s) })
}

// recordScopes adds scopes to the binding's record and returns the new
// union. The read-modify-write is serialized in this process (a.scopeMu), so
// concurrent 403s of one server lose nothing.
func (a *Authenticator) recordScopes(ctx context.Context, serverID string, b config.Binding, add []string) ([]string, error) {
	a.scopeMu.Lock()
	defer a.scopeMu.Unlock()
	cur := a.loadRecordedScopes(ctx, serverID, b)
	union := uniq(append(slices.Clone(cur), add...))
	if len(union) == len(cur) {
		return cur, nil
	}
	raw, err := json.Marshal(scopesRecord{Scopes: union, UpdatedAt: a.now().Unix()})
	if err != nil {
		return cur, err
	}
	if err := a.store.PutSecret(ctx, secretKey(serverID, purposeScopes, b), raw); err != nil {
		return cur, fmt.Errorf("saving the recorded scopes: %w", err)
	}
	a.log.Info("oauth: recorded the scopes the server demands; the next authorization asks for them", "server", serverID, "scopes", union)
	return union, nil
}

// RecordedScopes returns the scopes recorded for the server's current
// binding after a 403 insufficient_scope (R3.9): the union of what the
// server demanded and what the refused tokens had. The next authorization
// of the server (auth login, Authorize, an interactive step-up) asks for
// them besides what R3.9 selects. nil when nothing is recorded, the
// server is unknown or has no binding yet. Logout forgets them.
func (a *Authenticator) RecordedScopes(ctx context.Context, serverID string) []string {
	srv, err := a.store.GetServer(ctx, serverID)
	if err != nil || srv.Auth.Binding == nil || srv.Auth.Binding.IsZero() {
		return nil
	}
	return a.loadRecordedScopes(ctx, serverID, *srv.Auth.Binding)
}

// without returns the members of l that are not in drop.
func without(l, drop []string) []string {
	var out []string
	for _, s := range l {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}
