// Package hostperm is the HostPermissionBroker of R2.2: the one guard every
// outbound request of remotemcp passes (MCP endpoint, protected-resource
// metadata, authorization-server metadata, registration, authorization,
// token). An origin the user has not granted is refused with a
// *PermissionRequiredError and recorded as a pending approval; a grant is
// made only by an explicit user action (the settings page, `remotemcp grants
// approve ORIGIN`, or adding a server, which grants the server's own origin
// in the same action). Loopback origins get no special pass: a local page or
// process can be just as hostile as a remote one.
//
// Grants and pending approvals live in the store's KV table, so every
// process on a data directory (daemon, CLI, embedding program) sees the same
// allow-list.
package hostperm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// KV namespaces of the store's kv table. They are exported so that other
// packages can tell from a store.Change (whose Namespace is set for KV
// writes) that grants or pending approvals changed, for example to refresh
// the settings page or to drop sessions whose origin was revoked.
const (
	NamespaceGrants  = "hostperm.grants"  // key: canonical origin; value: Grant JSON
	NamespacePending = "hostperm.pending" // key: JSON [origin, purpose, server id]; value: Pending JSON
)

// DefaultMaxPending bounds the pending approvals kept when Options.MaxPending
// is zero. Pending entries are created by refused requests, which a hostile
// server can provoke at will (a redirect or a metadata document naming ever
// new origins), so the list must not grow without limit.
const DefaultMaxPending = 200

// Purpose says why a request is made. It only describes the request (in the
// error and in the pending approval); the grant itself covers an origin for
// every purpose.
type Purpose string

// Purposes of the outbound requests remotemcp makes.
const (
	PurposeMCP           Purpose = "mcp"           // the MCP endpoint itself
	PurposeDiscoveryPRM  Purpose = "discovery-PRM" // RFC 9728 protected-resource metadata
	PurposeDiscoveryAS   Purpose = "discovery-AS"  // RFC 8414 / OIDC authorization-server metadata
	PurposeRegistration  Purpose = "registration"  // RFC 7591 dynamic client registration
	PurposeAuthorization Purpose = "authorization" // the authorization page opened in the browser
	PurposeToken         Purpose = "token"         // the token endpoint
)

// describe is the phrase the error message and the settings page use.
func (p Purpose) describe() string {
	switch p {
	case PurposeMCP:
		return "MCP endpoint"
	case PurposeDiscoveryPRM:
		return "protected-resource metadata"
	case PurposeDiscoveryAS:
		return "authorization-server metadata"
	case PurposeRegistration:
		return "client registration"
	case PurposeAuthorization:
		return "authorization page"
	case PurposeToken:
		return "token endpoint"
	case "":
		return "request"
	}
	return string(p)
}

// Values of Grant.By for the user actions that may grant an origin.
const (
	BySettingsPage = "user: settings page"
	ByCLI          = "user: cli"
	ByServersAdd   = "user: servers add"
	// ByPrompt: the person answered yes when asked (Options.Ask).
	ByPrompt = "user: prompt"
)

// byPrefix is what every Grant.By must start with: grants come only from the
// user (R2.2), and making each caller say so keeps an automatic code path
// from slipping in unnoticed.
const byPrefix = "user:"

// Grant is one origin the user allowed remotemcp to talk to.
type Grant struct {
	// Origin is canonical: scheme and host lower-case, default port dropped
	// (config.Origin).
	Origin    string    `json:"origin"`
	GrantedAt time.Time `json:"grantedAt"`
	// By names the user action, such as BySettingsPage.
	By string `json:"by"`
}

// Pending is a refused request waiting for the user's decision. Entries are
// deduplicated per (Origin, Purpose, ServerID).
type Pending struct {
	Origin    string    `json:"origin"`
	Purpose   Purpose   `json:"purpose"`
	ServerID  string    `json:"serverId,omitempty"` // "" when no server is involved
	FirstSeen time.Time `json:"firstSeenAt"`
	LastSeen  time.Time `json:"lastSeenAt"`
	Count     int       `json:"count"` // refusals seen; best effort across processes
}

// UnmarshalJSON reads a pending record in either spelling of its times:
// records stored before the …At names (issue #19 item 10) said firstSeen
// and lastSeen, and they stay readable.
func (p *Pending) UnmarshalJSON(b []byte) error {
	type plain Pending
	var v struct {
		plain
		OldFirstSeen *time.Time `json:"firstSeen"`
		OldLastSeen  *time.Time `json:"lastSeen"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.FirstSeen.IsZero() && v.OldFirstSeen != nil {
		v.FirstSeen = *v.OldFirstSeen
	}
	if v.LastSeen.IsZero() && v.OldLastSeen != nil {
		v.LastSeen = *v.OldLastSeen
	}
	*p = Pending(v.plain)
	return nil
}

// ErrPermissionRequired matches every *PermissionRequiredError with
// errors.Is, for callers that only need the yes/no.
var ErrPermissionRequired = errors.New("permission required")

// ErrNotGranted is returned (wrapped) by Revoke for an origin that has no
// grant, so that a mistyped `remotemcp grants revoke` is not silently
// accepted.
var ErrNotGranted = errors.New("no grant for this origin")

// PermissionRequiredError is the refusal of a request to an origin without
// a grant. The UI turns it into an approval prompt; the refusal is also
// recorded as a Pending entry.
type PermissionRequiredError struct {
	Origin   string // canonical origin that was refused
	Purpose  Purpose
	ServerID string // "" when no server is involved
}

// Error tells what was refused; how to allow it is each surface's to
// say (the CLI's grants approve, the page's Allow button).
func (e *PermissionRequiredError) Error() string {
	what := e.Purpose.describe()
	if e.ServerID != "" {
		what += fmt.Sprintf(" for server %q", e.ServerID)
	}
	return fmt.Sprintf("permission required: remotemcp has no grant for %s (%s)", e.Origin, what)
}

// Is makes errors.Is(err, ErrPermissionRequired) true.
func (e *PermissionRequiredError) Is(target error) bool { return target == ErrPermissionRequired }

type purposeKey struct{}

type purposeVal struct {
	purpose  Purpose
	serverID string
}

// WithPurpose returns a context that tells the guard of Broker.Transport why
// the requests made with it are sent and for which server, so that a refusal
// names them. It does not affect whether a request is allowed.
func WithPurpose(ctx context.Context, purpose Purpose, serverID string) context.Context {
	return context.WithValue(ctx, purposeKey{}, purposeVal{purpose, serverID})
}

// PurposeFrom returns what WithPurpose put into ctx ("" and "" if nothing).
func PurposeFrom(ctx context.Context) (purpose Purpose, serverID string) {
	v, _ := ctx.Value(purposeKey{}).(purposeVal)
	return v.purpose, v.serverID
}
