// Package config holds the server configuration (SPEC §2), its validation and
// the canonical resource URI that OAuth bindings are keyed by (RFC 8707, RFC 9728).
//
// The package depends on nothing else in the module: every other package reads
// servers through these types.
package config

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"time"
)

// AuthKind names how requests to a server are authenticated.
type AuthKind string

// The auth kinds of SPEC §2 and §9 A2.
const (
	AuthNone   AuthKind = "none"
	AuthBearer AuthKind = "bearer"
	AuthOAuth  AuthKind = "oauth"
	// AuthAuto (SPEC §9 A2) sends no credentials until the MCP endpoint
	// answers 401 with a Bearer challenge (WWW-Authenticate); from then on
	// the server is treated exactly like an oauth one: background work
	// fails with a login-required error, "auth login" signs in, and the
	// binding the sign-in records is kept.
	//
	// The kind stays "auto" in the config after the first challenge; what
	// changes is that Auth.Binding is set once a sign-in succeeds. Use
	// Server.UsesOAuth to tell an auto server that has switched to OAuth
	// from one that has not (yet), and AuthKind.OAuthCapable to decide
	// whether a server gets an OAuth handler at all. Auto carries no
	// client id, secret or scopes: everything is discovered; a server that
	// needs them is configured with kind "oauth".
	AuthAuto AuthKind = "auto"
)

// OAuthCapable reports whether servers of this kind may run OAuth: always
// for oauth, after the server's first challenge for auto. Sessions of such
// servers get an OAuth handler, and "auth login" / "auth logout" apply.
func (k AuthKind) OAuthCapable() bool { return k == AuthOAuth || k == AuthAuto }

// Binding is what an OAuth client id and its tokens are bound to (R3.10):
// the canonical resource URI of the MCP server and the issuer of the
// authorization server that issued them.
type Binding struct {
	Resource string `json:"resource"`
	Issuer   string `json:"issuer"`
}

// IsZero reports whether no binding has been established yet.
func (b Binding) IsZero() bool { return b.Resource == "" && b.Issuer == "" }

// Auth is the auth section of a server config.
//
// Secrets (Token, ClientSecret) are never written in clear: the store seals
// them and fills them back in on read. Access tokens are never part of the
// config at all; they live in the in-memory session store (R3.11).
type Auth struct {
	Kind AuthKind `json:"kind"`

	// Token is the bearer token (Kind == AuthBearer). Sealed at rest.
	Token string `json:"token,omitempty"`

	// ClientID is a pre-registered OAuth client id; empty means dynamic
	// client registration (Kind == AuthOAuth).
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret goes with a pre-registered ClientID. Sealed at rest.
	ClientSecret string `json:"clientSecret,omitempty"`
	// Scopes are the configured scopes, used only when neither the 401
	// challenge nor the protected resource metadata names any (R3.9).
	Scopes []string `json:"scopes,omitempty"`
	// Binding is the resource + issuer the stored client id and tokens are
	// bound to; nil before the first authorization (Kind oauth or auto).
	Binding *Binding `json:"binding,omitempty"`
	// RedirectPort is the loopback port of the redirect URI
	// http://127.0.0.1:<port>/mcp-oauth; 0 means DefaultRedirectPort
	// (Kind oauth or auto).
	RedirectPort int `json:"redirectPort,omitempty"`
	// ClientMetadataURL is the HTTPS URL of a client ID metadata document
	// (CIMD, SPEC §9 A3): where the authorization server supports them,
	// it is the client id, and no registration is needed.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
}

// DefaultRedirectPort is the loopback port of the OAuth redirect URI when
// none is configured (RFC 8252 §7.3).
const DefaultRedirectPort = 7717

// Server is McpServerConfig of SPEC §2.
type Server struct {
	ID               string   `json:"id"`
	Name             string   `json:"name"`
	URL              string   `json:"url"`
	Auth             Auth     `json:"auth"`
	Enabled          bool     `json:"enabled"`
	DisabledTools    []string `json:"disabledTools,omitempty"`
	ConnectOnStartup bool     `json:"connectOnStartup"`
	// ToolTimeout overrides the default 60 s tool call timeout (R4.5);
	// zero means the default.
	ToolTimeout Duration `json:"toolTimeout,omitempty"`
	// Limits bound what the server can make this process read and hold;
	// unset fields take [DefaultLimits].
	Limits Limits `json:"limits,omitzero"`
	// Headers are extra HTTP headers sent with every request to the MCP
	// endpoint only (never to metadata, registration or token endpoints),
	// e.g. an API key. Every value is a secret: stored sealed like a
	// bearer token (SPEC §9 A2). Names the transport owns are refused.
	Headers map[string]string `json:"headers,omitempty"`
	// ProtocolVersion pins the MCP revision asked for; "" is the default
	// (offer 2025-11-25, accept 2025-06-18 and 2025-03-26; SPEC §9 A6).
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// LogLevel is the level asked of the server with logging/setLevel
	// ("" means warning); its notifications/message go to the request log.
	LogLevel string `json:"logLevel,omitempty"`
	// Approval says who approves this server's tool calls made through the
	// MCP front end (SPEC §9 A2, A8): ApprovalHost ("" means host) or
	// ApprovalAsk. Not a connection setting.
	Approval Approval `json:"approval,omitempty"`
	// Trusted marks the server as one the person trusts: only then are its
	// tool annotations (readOnlyHint and friends) passed to MCP hosts
	// (SPEC §9 A8). Not a connection setting.
	Trusted bool `json:"trusted,omitempty"`
	// PinnedTools are offered to MCP hosts even in tool-search mode, where
	// the other tools are found by searching (SPEC §9 A2). Not a
	// connection setting.
	PinnedTools []string `json:"pinnedTools,omitempty"`
	// IdleTimeout is how long a connected server may go unused before its
	// session is closed politely (hibernation; its catalog is kept and
	// the next use reconnects). nil means DefaultIdleTimeout; 0 means
	// never (SPEC §9 A1, A2).
	IdleTimeout *Duration `json:"idleTimeout,omitempty"`
	// Shared marks a copy of a server a gateway's admins added for
	// everyone (issue #22): the gateway keeps its connection settings in
	// step with theirs, and the person may only hide it (Enabled) or
	// switch its tools (DisabledTools, PinnedTools, Approval); their
	// sign-in to it is their own. Set by the gateway only.
	Shared bool `json:"shared,omitempty"`
}

// DefaultIdleTimeout is a server's idleTimeout when its config names none.
const DefaultIdleTimeout = 10 * time.Minute

// MaxIdleTimeout bounds idleTimeout.
const MaxIdleTimeout = 30 * 24 * time.Hour

// Idle is the server's effective idle timeout; 0 means it never
// hibernates.
func (s Server) Idle() time.Duration {
	if s.IdleTimeout == nil {
		return DefaultIdleTimeout
	}
	return time.Duration(*s.IdleTimeout)
}

// Approval names who approves a server's tool calls made through the MCP
// front end (SPEC §9 A2, A8).
type Approval string

// The approvals of SPEC §9 A2.
const (
	// ApprovalHost (the default): the MCP host's own approval is the
	// approval.
	ApprovalHost Approval = "host"
	// ApprovalAsk: remotemcp asks the person before every call, by a
	// question to the host, and refuses the call when it cannot ask.
	ApprovalAsk Approval = "ask"
)

// Approvals are the valid approval values, the default first.
var Approvals = []Approval{ApprovalHost, ApprovalAsk}

// Ask reports whether remotemcp asks the person itself before a call.
func (a Approval) Ask() bool { return a == ApprovalAsk }

// ProtocolVersions are the MCP revisions a server may be pinned to, newest
// first. 2026-07-28 is opt-in only (SPEC §9 A6).
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}

// LogLevels are the levels of logging/setLevel (RFC 5424 names), least
// severe first.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// reservedHeaders are the header names the transport owns: a config may
// not set them (SPEC §9 A2). Authorization is refused for every auth kind.
var reservedHeaders = []string{"Authorization", "Host", "Content-Length", "Content-Type", "Accept",
	"Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-Id", "Connection", "Transfer-Encoding",
	"Proxy-Authorization", "Cookie", "Te", "Trailer", "Upgrade"}

// Clone returns a deep copy, so callers can hand configs across goroutines.
func (s Server) Clone() Server {
	c := s
	c.DisabledTools = slices.Clone(s.DisabledTools)
	c.PinnedTools = slices.Clone(s.PinnedTools)
	if s.IdleTimeout != nil {
		d := *s.IdleTimeout
		c.IdleTimeout = &d
	}
	c.Auth.Scopes = slices.Clone(s.Auth.Scopes)
	c.Headers = maps.Clone(s.Headers)
	if s.Auth.Binding != nil {
		b := *s.Auth.Binding
		c.Auth.Binding = &b
	}
	return c
}

// ConnectionEqual reports whether two configs would produce the same
// connection: same URL (path included) and the same auth material and
// binding (R2.4), and the same limits, headers, protocol pin and log level
// (they are fixed when a session is made). Name, enabled, disabledTools,
// timeouts, approval and trusted do not matter.
func ConnectionEqual(a, b Server) bool {
	if a.ID != b.ID || a.URL != b.URL || a.Auth.Kind != b.Auth.Kind || a.Limits != b.Limits ||
		!maps.Equal(a.Headers, b.Headers) || a.ProtocolVersion != b.ProtocolVersion || a.LogLevel != b.LogLevel {
		return false
	}
	switch a.Auth.Kind {
	case AuthBearer:
		return a.Auth.Token == b.Auth.Token
	case AuthOAuth, AuthAuto:
		return a.Auth.ClientID == b.Auth.ClientID && a.Auth.ClientMetadataURL == b.Auth.ClientMetadataURL &&
			a.Auth.ClientSecret == b.Auth.ClientSecret &&
			ptrBindingEqual(a.Auth.Binding, b.Auth.Binding)
	}
	return true
}

func ptrBindingEqual(a, b *Binding) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// UsesOAuth reports whether requests to the server are authorized with
// OAuth now: kind oauth, or kind auto once a sign-in has recorded a binding
// for the server's current URL (its canonical resource). An auto server
// that was challenged but never signed in is not using OAuth yet; its state
// (needs-auth) says what it waits for.
func (s Server) UsesOAuth() bool {
	switch s.Auth.Kind {
	case AuthOAuth:
		return true
	case AuthAuto:
		b := s.Auth.Binding
		if b == nil || b.IsZero() {
			return false
		}
		canon, err := CanonicalResource(s.URL)
		return err == nil && canon == b.Resource
	}
	return false
}

// ToolDisabled reports whether the tool is switched off (R5.2).
func (s Server) ToolDisabled(tool string) bool { return slices.Contains(s.DisabledTools, tool) }

// Duration is a time.Duration that reads and writes as a Go duration string
// ("90s") in JSON, and also accepts a number of milliseconds.
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts "90s"-style strings and plain milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	// encoding/json calls UnmarshalJSON for null too; null means "not set",
	// as for every other optional field.
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return &FieldError{Field: "toolTimeout", Problem: "not a duration such as \"90s\": " + err.Error()}
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return &FieldError{Field: "toolTimeout", Problem: "must be a duration string such as \"90s\" or milliseconds"}
	}
	// Beyond ±292 years the conversion to time.Duration would wrap around
	// to an arbitrary value instead of failing.
	if ms > math.MaxInt64/float64(time.Millisecond) || ms < math.MinInt64/float64(time.Millisecond) {
		return &FieldError{Field: "toolTimeout", Problem: "is out of range; use a duration such as \"90s\""}
	}
	*d = Duration(time.Duration(ms * float64(time.Millisecond)))
	return nil
}

// FieldError is a validation failure of one field; Error() says which field,
// what was wrong and, where it helps, what to do.
type FieldError struct {
	ServerID string // may be empty
	Field    string
	Problem  string
}

// Error returns "server <id>: <field>: <problem>", or without the server
// part when the id is unknown.
func (e *FieldError) Error() string {
	if e.ServerID != "" {
		return "server " + e.ServerID + ": " + e.Field + ": " + e.Problem
	}
	return e.Field + ": " + e.Problem
}
