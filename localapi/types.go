package localapi

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

// None of these types has a field that could carry a secret on the way
// out: auth material is reduced to "is there one" flags, custom headers
// to their names. Write-only secrets (a bearer token, a client secret, a
// header value) appear only in requests.

// State is a server's state (SPEC §9 A1).
type State string

// The states of a server (SPEC §9 A1).
const (
	StateDisconnected State = "disconnected"
	StateConnecting   State = "connecting"
	StateReady        State = "ready"
	// StateReconnecting: it was ready, the session or its stream is gone,
	// and it is recovering by itself.
	StateReconnecting State = "reconnecting"
	// StateIdle: hibernated, no session, catalog kept.
	StateIdle State = "idle"
	// StateNeedsAuth: paused until the person acts (signs in, or in again
	// with more scopes); nothing is retried against it until then.
	StateNeedsAuth State = "needs-auth"
	StateError     State = "error"
)

// NotReady reports whether `status ID` must exit non-zero for the state.
func (s State) NotReady() bool { return s == StateError || s == StateNeedsAuth }

// Class is the kind of failure a Reason attributes a server's state to.
type Class string

// The failure classes, as the JSON carries them.
const (
	// ClassConfig: the server's configuration cannot work (a bad URL, an
	// auth section that does not fit).
	ClassConfig   Class = "configuration"
	ClassNetwork  Class = "network"
	ClassTLS      Class = "tls"
	ClassHTTP     Class = "http"
	ClassAuth     Class = "auth"
	ClassProtocol Class = "protocol"
	ClassTimeout  Class = "timeout"
	ClassCanceled Class = "canceled"
	// ClassPermission: the origin has no host permission grant yet.
	ClassPermission Class = "permission"
	ClassUnknown    Class = "unknown"
)

// Reason says why a server is in error or needs-auth, or why it was
// disconnected.
type Reason struct {
	// Class is configuration, network, tls, http, auth, protocol,
	// timeout, canceled, permission or unknown (the Class constants).
	Class Class `json:"class"`
	// Step names the auth or handshake step that failed, when known.
	Step       string `json:"step,omitempty"`
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Message    string `json:"message"`
	// Scopes are the scopes a needs-auth server asks for, when known.
	Scopes []string `json:"scopes,omitempty"`
	// Code says why, finer than Class: the key of the words the CLI and
	// the page show (Words).
	Code ReasonCode `json:"code,omitempty"`
}

// Health is the answer of GET /api/health.
type Health struct {
	OK      bool      `json:"ok"`
	Version string    `json:"version"`
	PID     int       `json:"pid"`
	Started time.Time `json:"startedAt"`
	// InProcess is true when the engine runs in the calling process for
	// the length of one command (no daemon).
	InProcess bool `json:"inProcess,omitempty"`
}

// AuthInfo is a server's auth section without its secrets.
type AuthInfo struct {
	// Kind is none, bearer, oauth or auto (SPEC §9 A2: no auth until the
	// server answers 401 with a challenge, then OAuth).
	Kind            config.AuthKind `json:"kind"`
	HasToken        bool            `json:"hasToken,omitempty"`
	ClientID        string          `json:"clientId,omitempty"`
	HasClientSecret bool            `json:"hasClientSecret,omitempty"`
	Scopes          []string        `json:"scopes,omitempty"`
	RedirectPort    int             `json:"redirectPort,omitempty"`
	// ClientMetadataURL is the CIMD document URL used as the client id
	// where the authorization server supports it.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
}

// Server is one server as every surface shows it: the stored config
// (secrets reduced to flags), the engine's live state, the host permission
// of its origin, the approvals waiting beside it and the last sign-in.
type Server struct {
	ID               string   `json:"id"`
	Name             string   `json:"name"`
	URL              string   `json:"url"`
	Origin           string   `json:"origin"`
	Enabled          bool     `json:"enabled"`
	ConnectOnStartup bool     `json:"connectOnStartup"`
	Auth             AuthInfo `json:"auth"`
	DisabledTools    []string `json:"disabledTools"`
	// PinnedTools are offered to MCP hosts even in tool-search mode.
	PinnedTools []string `json:"pinnedTools,omitempty"`
	ToolTimeout string   `json:"toolTimeout,omitempty"`
	// IdleTimeout is the effective idle time before the session is closed
	// (hibernation, state idle): "10m0s" by default, "0s" for never.
	IdleTimeout string `json:"idleTimeout"`
	// Limits holds the limits set for this server; the others are
	// config.DefaultLimits.
	Limits config.Limits `json:"limits,omitzero"`
	// HeaderNames are the names of the server's custom headers, sorted
	// (SPEC §9 A2). Their values are secrets, stored sealed, and never
	// leave the engine.
	HeaderNames []string `json:"headerNames,omitempty"`
	// ProtocolVersion is the MCP revision the server is pinned to; empty
	// is the default negotiation (SPEC §9 A6).
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// LogLevel is the level asked of the server for notifications/message;
	// empty is the default, warning.
	LogLevel string `json:"logLevel,omitempty"`
	// Approval says who approves calls made through the MCP front end:
	// host (the host's approval) or ask (remotemcp asks the person); never
	// empty (SPEC §9 A2, A8).
	Approval config.Approval `json:"approval"`
	// Trusted: the person trusts the server, so its tool annotations are
	// passed to MCP hosts (SPEC §9 A8).
	Trusted bool `json:"trusted"`
	// Shared: a gateway's admins share this server with everyone; the
	// person may hide it (disable) but not remove it.
	Shared bool `json:"shared,omitempty"`
	// Revision is the stored record's revision; every edit bumps it.
	Revision  int64   `json:"revision"`
	State     State   `json:"state"`
	Reason    *Reason `json:"reason,omitempty"`
	ToolCount int     `json:"toolCount"`
	// HeldTools are the tools held because their definition changed
	// since it was pinned (remotemcp tools review); ToolCount leaves them
	// out.
	HeldTools []string `json:"heldTools,omitempty"`
	// HeldHashes maps each held tool with a change to review to the hash
	// of its changed definition (what "tools accept --hash" takes); a
	// change of it means the server changed the tool again.
	HeldHashes map[string]string `json:"heldHashes,omitempty"`
	// Unpinnable are the held tools whose definition cannot be pinned,
	// each with why: they are never offered, and there is nothing to
	// accept.
	Unpinnable map[string]string `json:"unpinnable,omitempty"`
	// OriginGranted: the server's own origin has a host permission grant.
	OriginGranted bool `json:"originGranted"`
	// Pending are the refused requests waiting for the person's approval
	// that concern this server.
	Pending []Pending `json:"pending"`
	// Instructions are the connected server's instructions (initialize):
	// untrusted server text, shown as such.
	Instructions string `json:"instructions,omitempty"`
	// Authorization is the latest sign-in flow of an OAuth server.
	Authorization *AuthFlow `json:"authorization,omitempty"`
	// RetryAt is when the next connect attempt may start, for a server
	// whose last attempt failed: listings and calls make none before
	// (issue #20 item 1). "remotemcp connect ID" tries now.
	RetryAt *time.Time `json:"retryAt,omitempty"`
}

// AuthStatus is what the engine knows about a server's sign-in, never the
// tokens themselves. HasAccessToken is the owner's in-memory token (the
// daemon's when one runs).
type AuthStatus struct {
	ServerID string          `json:"serverId"`
	Kind     config.AuthKind `json:"kind"`
	// SignedIn: an access token is held or a refresh token is stored.
	SignedIn          bool            `json:"signedIn"`
	Binding           *config.Binding `json:"binding,omitempty"`
	BindingCurrent    bool            `json:"bindingCurrent"`
	ClientID          string          `json:"clientId,omitempty"`
	Registered        bool            `json:"registered"`
	RegisteredAt      *time.Time      `json:"registeredAt,omitempty"`
	HasRefreshToken   bool            `json:"hasRefreshToken"`
	HasAccessToken    bool            `json:"hasAccessToken"`
	AccessTokenExpiry *time.Time      `json:"accessTokenExpiresAt,omitempty"`
	Scopes            []string        `json:"scopes,omitempty"`
	Problem           string          `json:"problem,omitempty"`
}

// AuthFlow is the state of a sign-in flow (Engine.Authorize).
type AuthFlow struct {
	ServerID string `json:"serverId"`
	// Phase is starting, waiting (the authorization page is open),
	// exchanging (the callback arrived), done or failed.
	Phase Phase `json:"phase"`
	// AuthorizationURL is the page the person must open while waiting.
	AuthorizationURL string `json:"authorizationUrl,omitempty"`
	// RedirectURI is where the authorization server sends the browser
	// back (the daemon's or the command's loopback /mcp-oauth).
	RedirectURI string     `json:"redirectUri,omitempty"`
	Started     time.Time  `json:"startedAt"`
	Finished    *time.Time `json:"finishedAt,omitempty"`
	// Error says which step failed and why (phase failed); Step names it.
	Error string `json:"error,omitempty"`
	Step  string `json:"step,omitempty"`
	// Permission is set when the flow stopped at an origin without a host
	// permission grant: approve it, then sign in again.
	Permission *PermissionInfo `json:"permission,omitempty"`
	// Result is set when the phase is done.
	Result *LoginResult `json:"result,omitempty"`
}

// Phase is the phase of a sign-in flow.
type Phase string

// Sign-in flow phases.
const (
	PhaseStarting   Phase = "starting"
	PhaseWaiting    Phase = "waiting"
	PhaseExchanging Phase = "exchanging"
	PhaseDone       Phase = "done"
	PhaseFailed     Phase = "failed"
)

// LoginResult is what a successful sign-in achieved (no tokens).
type LoginResult struct {
	// NotNeeded: the server answered without asking for authorization.
	NotNeeded    bool            `json:"notNeeded,omitempty"`
	Binding      *config.Binding `json:"binding,omitempty"`
	ClientID     string          `json:"clientId,omitempty"`
	Registered   bool            `json:"registered,omitempty"`
	Scopes       []string        `json:"scopes,omitempty"`
	ExpiresAt    *time.Time      `json:"expiresAt,omitempty"`
	RefreshToken bool            `json:"refreshToken,omitempty"`
}

// LogoutResult says what a sign-out did.
type LogoutResult struct {
	ServerID string `json:"serverId"`
	// Forgotten lists what was removed: "access token", "refresh token",
	// "client registration".
	Forgotten []string `json:"forgotten"`
	// Server is the server after its sessions were ended (state
	// needs-auth, reason "signed out").
	Server *Server `json:"server,omitempty"`
}

// PermissionInfo describes a request refused for lack of a host
// permission grant.
type PermissionInfo struct {
	Origin   string  `json:"origin"`
	Purpose  Purpose `json:"purpose,omitempty"`
	ServerID string  `json:"serverId,omitempty"`
}

// Purpose says why a refused request was made; the grant of its origin
// covers every purpose.
type Purpose string

// The purposes of the requests remotemcp makes.
const (
	PurposeMCP           Purpose = "mcp"           // the MCP endpoint itself
	PurposeDiscoveryPRM  Purpose = "discovery-PRM" // RFC 9728 protected-resource metadata
	PurposeDiscoveryAS   Purpose = "discovery-AS"  // RFC 8414 / OIDC authorization-server metadata
	PurposeRegistration  Purpose = "registration"  // RFC 7591 dynamic client registration
	PurposeAuthorization Purpose = "authorization" // the authorization page opened in the browser
	PurposeToken         Purpose = "token"         // the token endpoint
)

// Grant is an origin the person allowed.
type Grant struct {
	// Origin is canonical: scheme and host lower-case, default port
	// dropped.
	Origin    string    `json:"origin"`
	GrantedAt time.Time `json:"grantedAt"`
	// By names the user action that made the grant (the By constants).
	By By `json:"by"`
}

// Pending is a refused request waiting for the person's decision, one
// per origin, purpose and server.
type Pending struct {
	Origin  string  `json:"origin"`
	Purpose Purpose `json:"purpose"`
	// ServerID is "" when no server is involved.
	ServerID  string    `json:"serverId,omitempty"`
	FirstSeen time.Time `json:"firstSeenAt"`
	LastSeen  time.Time `json:"lastSeenAt"`
	// Count is how many refusals were seen (best effort across
	// processes).
	Count int `json:"count"`
}

// UnmarshalJSON reads a pending approval in either spelling of its
// times: a daemon older than the …At names (issue #19 item 10) sent
// firstSeen and lastSeen.
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

// AddServerRequest adds a server. Token, ClientSecret and the values of
// Headers are write-only: stored sealed and never returned.
type AddServerRequest struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	URL  string `json:"url"`
	// Auth is none (default), bearer, oauth or auto.
	Auth         config.AuthKind `json:"auth,omitempty"`
	Token        string          `json:"token,omitempty"`
	ClientID     string          `json:"clientId,omitempty"`
	ClientSecret string          `json:"clientSecret,omitempty"`
	Scopes       []string        `json:"scopes,omitempty"`
	RedirectPort int             `json:"redirectPort,omitempty"`
	// ClientMetadataURL: see AuthInfo.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
	// Enabled and ConnectOnStartup default to true.
	Enabled          *bool  `json:"enabled,omitempty"`
	ConnectOnStartup *bool  `json:"connectOnStartup,omitempty"`
	ToolTimeout      string `json:"toolTimeout,omitempty"`
	// Headers are custom HTTP headers sent to the MCP endpoint only, name
	// → value (SPEC §9 A2). Values are write-only secrets. Names the
	// transport owns (Authorization, Host, Mcp-Session-Id …) are refused.
	Headers map[string]string `json:"headers,omitempty"`
	// ProtocolVersion pins the MCP revision (config.ProtocolVersions);
	// empty or "default" negotiates (SPEC §9 A6).
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// LogLevel is asked of the server with logging/setLevel
	// (config.LogLevels); empty or "default" is warning.
	LogLevel string `json:"logLevel,omitempty"`
	// Approval is host (the default; empty or "default" too) or ask
	// (config.Approvals; SPEC §9 A2).
	Approval config.Approval `json:"approval,omitempty"`
	// Trusted passes the server's tool annotations to MCP hosts (A8).
	Trusted bool `json:"trusted,omitempty"`
	// By names the user action for the grant of the server's origin (the
	// By constants; ByServersAdd when empty).
	By By `json:"by,omitempty"`
}

// AddServerResult is the added server and the origin granted for it
// (adding a server grants its own origin).
type AddServerResult struct {
	Server  Server   `json:"server"`
	Granted []string `json:"granted"`
}

// AuthChange replaces a server's auth section (servers set --auth); to
// change only the redirect port, see UpdateServerRequest.RedirectPort.
type AuthChange struct {
	Kind              config.AuthKind `json:"kind"`
	Token             string          `json:"token,omitempty"`
	ClientID          string          `json:"clientId,omitempty"`
	ClientSecret      string          `json:"clientSecret,omitempty"`
	Scopes            []string        `json:"scopes,omitempty"`
	RedirectPort      int             `json:"redirectPort,omitempty"`
	ClientMetadataURL string          `json:"clientMetadataUrl,omitempty"`
}

// UpdateServerRequest edits a server: only the fields present change.
// Edits are compare-and-swap on the stored revision: a field change is
// re-applied to the newest record when another writer got there first,
// and DisableTools/EnableTools add or remove only their own names, so no
// edit is lost. With Revision set, the edit applies to that revision only
// and fails with CodeConflict otherwise.
type UpdateServerRequest struct {
	Revision         int64   `json:"revision,omitempty"`
	URL              *string `json:"url,omitempty"`
	Name             *string `json:"name,omitempty"`
	Enabled          *bool   `json:"enabled,omitempty"`
	ConnectOnStartup *bool   `json:"connectOnStartup,omitempty"`
	ToolTimeout      *string `json:"toolTimeout,omitempty"`
	// IdleTimeout sets the idle time before hibernation ("0" never; ""
	// or "default" resets it to 10m).
	IdleTimeout *string `json:"idleTimeout,omitempty"`
	// Limits sets limits by name (config.LimitNames) to a value as
	// config.Limits.Set reads it ("16MiB", "90s"); "default" resets one.
	Limits       map[string]string `json:"limits,omitempty"`
	DisableTools []string          `json:"disableTools,omitempty"`
	EnableTools  []string          `json:"enableTools,omitempty"`
	// PinTools and UnpinTools add or remove pinned tools (offered to MCP
	// hosts even in tool-search mode), name by name like DisableTools.
	PinTools   []string    `json:"pinTools,omitempty"`
	UnpinTools []string    `json:"unpinTools,omitempty"`
	Auth       *AuthChange `json:"auth,omitempty"`
	// RedirectPort changes only an OAuth (or auto) server's redirect port,
	// auth.redirectPort (0: back to the default), and keeps the rest of
	// its auth section: client id and secret, scopes, client metadata URL
	// and what the sign-in is bound to (servers set ID --port P). Auth
	// replaces the whole section, its port included; a request gives one
	// of the two.
	RedirectPort *int `json:"redirectPort,omitempty"`
	// Token replaces a bearer server's token (write-only).
	Token *string `json:"token,omitempty"`
	// RebindBearer confirms that the token is meant for a changed URL.
	RebindBearer bool `json:"rebindBearer,omitempty"`
	// Headers sets custom headers, name → value (write-only), replacing a
	// header of the same name in any case; the other headers stay. A
	// header given here is meant for the server's (new) URL: when the URL
	// moves to another resource, every header it keeps must be given
	// again or removed (CodeConflict otherwise), like a bearer token.
	Headers map[string]string `json:"headers,omitempty"`
	// UnsetHeaders removes custom headers by name (any case).
	UnsetHeaders []string `json:"unsetHeaders,omitempty"`
	// ProtocolVersion pins the MCP revision; "" or "default" resets it.
	ProtocolVersion *string `json:"protocolVersion,omitempty"`
	// LogLevel sets the server's log level; "" or "default" resets it.
	LogLevel *string `json:"logLevel,omitempty"`
	// Approval sets who approves calls made through the MCP front end:
	// host or ask; "" or "default" resets it to host (SPEC §9 A2).
	Approval *config.Approval `json:"approval,omitempty"`
	// Trusted marks the server trusted (its tool annotations reach MCP
	// hosts) or not (SPEC §9 A8).
	Trusted *bool `json:"trusted,omitempty"`
}

// UpdateServerResult is the edited server and warnings about the edit
// (a disabled tool the server does not have, when its catalog is known).
type UpdateServerResult struct {
	Server   Server   `json:"server"`
	Warnings []string `json:"warnings"`
}

// ImportRequest imports another client's MCP config (Claude Code, Cursor,
// VS Code, Windsurf …) or remotemcp's own server list.
type ImportRequest struct {
	Config string `json:"config"`
	// Env holds the values of ${VAR} references. The engine never expands
	// references from its own environment: a pasted document must not pull
	// the daemon's secrets into a URL or header. The CLI passes its own.
	Env map[string]string `json:"env,omitempty"`
	// Update replaces servers whose id exists and whose entry differs;
	// without it they are reported as conflicts.
	Update bool `json:"update,omitempty"`
	// By names the user action, for the grant records (the By
	// constants; ByCLI when empty).
	By By `json:"by,omitempty"`
}

// ImportResult lists what happened to every entry. An import grants each
// imported server's own origin, as adding one does (Granted).
type ImportResult struct {
	Added     []ImportedServer `json:"added"`
	Updated   []ImportedServer `json:"updated"`
	Unchanged []ImportedServer `json:"unchanged"`
	// Conflicts are entries whose id exists with another config (use
	// Update).
	Conflicts []SkippedEntry `json:"conflicts"`
	Skipped   []SkippedEntry `json:"skipped"`
	Granted   []string       `json:"granted"`
}

// ImportedServer is one server an import added, updated or found unchanged.
type ImportedServer struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	URL    string          `json:"url"`
	Origin string          `json:"origin"`
	Auth   config.AuthKind `json:"auth"`
	// HeaderNames are the names of the entry's custom headers (values
	// are sealed and never returned).
	HeaderNames []string `json:"headerNames,omitempty"`
}

// SkippedEntry is one entry an import did not apply, and why.
type SkippedEntry struct {
	Name   string `json:"name"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
}

// Tool is one agent tool: the server's title, description and annotations
// (untrusted, for display) and its raw inputSchema bytes (R4.1).
type Tool struct {
	// Name is the agent tool name, mcp__{server}__{tool}.
	Name        string          `json:"name"`
	ServerID    string          `json:"serverId"`
	ToolName    string          `json:"toolName"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Effects     Effects         `json:"effects"`
	Retry       RetryPolicy     `json:"retry"`
	// OutputSchema and Meta (_meta) are the server's bytes, Icons its
	// icons; absent when it sent none (issue #19 item 4).
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	// Own is the server's own title and description when Title (taken
	// from the annotations) or Description (cut to the agent's bound)
	// differ from them; the MCP front end passes these.
	Own *ToolText `json:"own,omitempty"`
}

// ToolText is a tool's title and description as its server sent them.
type ToolText struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// Effects says what a tool may do to the world.
type Effects string

// Effects values. Every remote tool is EffectsWrite (R4.1); EffectsRead
// is for a host that knows better.
const (
	EffectsWrite Effects = "write"
	EffectsRead  Effects = "read"
)

// RetryPolicy says whether a host may repeat a failed call on its own.
type RetryPolicy string

// RetryNever: a remote call that failed may have run; never repeat it.
const RetryNever RetryPolicy = "never"

// ToolsRequest selects tools.
type ToolsRequest struct {
	// ServerID limits the list to one server ("" = every enabled server).
	ServerID string `json:"serverId,omitempty"`
	// Connect connects the servers (lazy ones too) and lists them afresh;
	// without it the known catalogs are used.
	Connect bool `json:"connect,omitempty"`
}

// ServerError is a server that could not be listed, and why.
type ServerError struct {
	ServerID string `json:"serverId"`
	Message  string `json:"message"`
}

// ToolList is the agent's tools.
type ToolList struct {
	Generation uint64        `json:"generation"`
	Tools      []Tool        `json:"tools"`
	Errors     []ServerError `json:"errors"`
}

// CallRequest calls a tool.
type CallRequest struct {
	// Tool is the agent tool name (mcp__server__tool) or "server/tool".
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Approved says the caller already asked the person (or the person
	// said --yes). Without it the engine asks CallHandler.Approve (over
	// the API: an "approval" event); with neither, nothing is sent.
	Approved bool `json:"approved,omitempty"`
	// OperationID names the call for CancelCall; generated when empty.
	OperationID string `json:"operationId,omitempty"`
	// Timeout ("30s") bounds the call besides the server's toolTimeout.
	Timeout string `json:"timeout,omitempty"`
	// Raw asks for the server's result unchanged in ToolResult.Raw when it
	// fits the size budget: for the MCP front end, whose host is the agent
	// (SPEC §9 A8).
	Raw bool `json:"raw,omitempty"`
	// AskByCard, for a call that is not Approved and has no
	// CallHandler.Approve, asks the person with a card on the settings
	// page and in "remotemcp elicitations" (accept approves) and waits for
	// the answer, instead of refusing: the MCP front end's approval "ask"
	// when its host cannot be asked.
	AskByCard bool `json:"askByCard,omitempty"`
}

// ApprovalRequest is the whole question put to the person before a call.
type ApprovalRequest struct {
	OperationID string          `json:"operationId"`
	ServerID    string          `json:"serverId"`
	ServerName  string          `json:"serverName,omitempty"`
	Tool        string          `json:"tool"`
	ToolName    string          `json:"toolName"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Arguments   json.RawMessage `json:"arguments"`
}

// Decision answers an ApprovalRequest.
type Decision struct {
	Approved bool `json:"approved"`
	// Reason is passed to the model when the call is denied.
	Reason string `json:"reason,omitempty"`
}

// Progress is one progress notification of a call.
type Progress struct {
	OperationID string  `json:"operationId"`
	Progress    float64 `json:"progress"`
	Total       float64 `json:"total,omitempty"`
	Message     string  `json:"message,omitempty"`
}

// CallHandler receives what happens during a call. Every field may be nil.
type CallHandler struct {
	// Approve is asked when CallRequest.Approved is false. nil denies.
	Approve func(ApprovalRequest) (Decision, error)
	// Progress receives each progress notification, in order. Only a
	// call with Progress asks its server for progress (a progressToken),
	// and only its progress extends its tool time; without it the server's
	// toolTimeout is the limit.
	Progress func(Progress)
	// Question is told of each server question (an elicitation card)
	// asked during the call. Answer it with Engine.Answer from any
	// goroutine or process; the call continues once it is answered.
	Question func(Card)
	// Sample answers the server's sampling/createMessage during the call
	// with a CreateMessageResult (JSON), asking the caller's model: for
	// an MCP host that declared sampling (the front end). nil refuses
	// the server's request.
	// ctx ends when the server's request does (or the call).
	Sample func(ctx context.Context, req SamplingRequest) (json.RawMessage, error)
}

// SamplingRequest is a server's sampling/createMessage during a call.
type SamplingRequest struct {
	OperationID string `json:"operationId"`
	// ID tells apart the sampling requests of one call.
	ID       string `json:"id"`
	ServerID string `json:"serverId"`
	// Params are the server's CreateMessageParams (untrusted).
	Params json.RawMessage `json:"params"`
}

// SamplingReply answers a SamplingRequest over the API (POST
// /api/calls/{operationId}/sampling/{id}): the CreateMessageResult, or
// why there is none.
type SamplingReply struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// CallEventType is the type of a line of a call's stream.
type CallEventType string

// Call-stream event types (the NDJSON lines of POST /api/calls).
const (
	CallEventApproval CallEventType = "approval"
	CallEventProgress CallEventType = "progress"
	CallEventQuestion CallEventType = "question"
	CallEventSampling CallEventType = "sampling"
	CallEventResult   CallEventType = "result"
	CallEventError    CallEventType = "error"
)

// CallEvent is one line of a call's stream.
type CallEvent struct {
	Type     CallEventType    `json:"type"`
	Approval *ApprovalRequest `json:"approval,omitempty"`
	Progress *Progress        `json:"progress,omitempty"`
	Question *Card            `json:"question,omitempty"`
	Sampling *SamplingRequest `json:"sampling,omitempty"`
	Result   *ToolResult      `json:"result,omitempty"`
	Error    *Error           `json:"error,omitempty"`
}

// Outcome classifies how a call ended.
type Outcome string

// Call outcomes. Only OutcomeOK carries the server's answer (which may
// still be a tool error, see ToolResult.IsError).
const (
	OutcomeOK               Outcome = "ok"
	OutcomeDenied           Outcome = "denied"
	OutcomeApprovalFailed   Outcome = "approval-failed"
	OutcomeInvalidArguments Outcome = "invalid-arguments"
	OutcomeUnavailable      Outcome = "unavailable"
	OutcomeCancelled        Outcome = "cancelled"
	OutcomeTimeout          Outcome = "timeout"
	OutcomeFailed           Outcome = "failed"
	// OutcomeInterrupted: the call was waiting for the person's answer to
	// a server question when remotemcp shut down or restarted (R6.2).
	OutcomeInterrupted Outcome = "interrupted"
)

// ToolResult is a call's outcome for the model. Message and Notes are
// remotemcp's own (trusted) words; Content is the server's (untrusted)
// output, to be fenced before a model sees it. MaybeExecuted says whether
// a call with no answer may have run.
type ToolResult struct {
	// Tool is the agent tool name; ServerID and ToolName the server's.
	Tool        string  `json:"tool"`
	ServerID    string  `json:"serverId,omitempty"`
	ToolName    string  `json:"toolName,omitempty"`
	OperationID string  `json:"operationId"`
	Outcome     Outcome `json:"outcome"`
	// IsError is the server's isError for OutcomeOK, and true for every
	// other outcome.
	IsError bool `json:"isError"`
	// MaybeExecuted is true when the request may have reached the server.
	// The call is never re-sent (R4.1).
	MaybeExecuted bool   `json:"maybeExecuted"`
	Message       string `json:"message,omitempty"`
	// Content is the server's output (or error text).
	Content []ContextBlock `json:"content,omitempty"`
	// StructuredContent is the server's structured result, when it fitted
	// the budget.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// Notes say what the size budget cut (R4.6).
	Notes []string `json:"notes,omitempty"`
	// Truncated is set when anything was cut; OriginalChars and ShownChars
	// count the text (and structured content) before and after.
	Truncated     bool `json:"truncated,omitempty"`
	OriginalChars int  `json:"originalChars,omitempty"`
	ShownChars    int  `json:"shownChars,omitempty"`
	// Raw is the server's validated CallToolResult, unchanged, when
	// CallRequest.Raw asked for it and it fitted the size budget whole
	// (nothing Truncated); otherwise the budgeted Content stands.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// BlockKind is where a ContextBlock's content came from.
type BlockKind string

// Content origins (R4.2, R4.3).
const (
	BlockTool     BlockKind = "tool"
	BlockPrompt   BlockKind = "prompt"
	BlockResource BlockKind = "resource"
)

// Provenance says which server produced a block, through which operation.
type Provenance struct {
	Server string    `json:"server"`
	Kind   BlockKind `json:"kind"`
	// Name is the tool or prompt name (the server's, not the agent
	// tool's).
	Name string `json:"name,omitempty"`
	// URI is the resource URI, for resources and embedded resources.
	URI string `json:"uri,omitempty"`
}

// ContextBlock is untrusted content from a server: what a model may see
// only inside a fence it cannot break out of.
type ContextBlock struct {
	Provenance Provenance `json:"provenance"`
	MIMEType   string     `json:"mimeType,omitempty"`
	// Role is the message role of a prompt message ("user", "assistant").
	Role string `json:"role,omitempty"`
	// Text is the content, or for binary content a one-line summary such
	// as "[binary image/png, 1234 bytes]".
	Text string `json:"text"`
	// Data holds the bytes of binary content (images, audio, blobs) for
	// hosts that pass them on natively; nil when it did not fit the
	// budget.
	Data []byte `json:"data,omitempty"`
	// Truncated is set when Text was cut to fit the budget (R4.6).
	Truncated *Truncation `json:"truncated,omitempty"`
}

// Truncation records how much of a block was cut.
type Truncation struct {
	// ShownChars and OriginalChars count characters (Unicode code points).
	ShownChars    int `json:"shownChars"`
	OriginalChars int `json:"originalChars"`
}

// Binary reports whether the block summarises binary content: it carries
// the bytes, or its text is the engine's summary of bytes that did not
// fit the budget.
func (b ContextBlock) Binary() bool { return b.Data != nil || strings.HasPrefix(b.Text, "[binary ") }

// Card is a server question (an elicitation card).
type Card struct {
	ID          string          `json:"id"`
	ServerID    string          `json:"serverId"`
	Tool        string          `json:"tool,omitempty"`
	OperationID string          `json:"operationId,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	// Kind is "" for a server's question and CardApproval for remotemcp's
	// own approval question (approval: ask), which no server can make
	// (issue #20 item 3). Description is, on an approval card, the tool's
	// description as the question shows it (ShownDescription): the
	// server's words.
	Kind        CardKind `json:"kind,omitempty"`
	Description string   `json:"description,omitempty"`
	// Message and RequestedSchema are the server's (untrusted) words; on
	// an approval card, Message is remotemcp's question
	// (ApprovalRequest.Question).
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	// Form is the requested schema as form fields, in the schema's order.
	Form           *Form      `json:"form,omitempty"`
	Status         CardStatus `json:"status"`
	Reason         string     `json:"reason,omitempty"`
	Response       *Answer    `json:"response,omitempty"`
	Created        time.Time  `json:"createdAt"`
	Updated        time.Time  `json:"updatedAt"`
	RetryConfirmed bool       `json:"retryConfirmed,omitempty"`
	Resent         bool       `json:"resent,omitempty"`
	Expires        *time.Time `json:"expiresAt,omitempty"`
	// FailureMessage is what the model was told for an interrupted card.
	FailureMessage string `json:"failureMessage,omitempty"`
}

// CardKind tells a server's question ("") from remotemcp's own.
type CardKind string

// CardApproval is the Kind of remotemcp's own approval card.
const CardApproval CardKind = "approval"

// CardStatus is where a card stands.
type CardStatus string

// Card statuses.
const (
	CardPending     CardStatus = "pending"
	CardAccepted    CardStatus = "accepted"
	CardDeclined    CardStatus = "declined"
	CardCancelled   CardStatus = "cancelled"
	CardInterrupted CardStatus = "interrupted"
)

// Form is a question's fields.
type Form struct {
	Fields []Field `json:"fields"`
}

// Field is one field of a question's form.
type Field struct {
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Type        string   `json:"type"`
	Required    bool     `json:"required,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	EnumTitles  []string `json:"enumTitles,omitempty"`
	Format      string   `json:"format,omitempty"`
	Default     any      `json:"default,omitempty"`
	MinLength   *int     `json:"minLength,omitempty"`
	MaxLength   *int     `json:"maxLength,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
}

// Answer is the person's answer to a question: accept (with Content),
// decline or cancel.
type Answer struct {
	Action  Action         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// Action is what the person did with a question.
type Action string

// The answers to a question.
const (
	ActionAccept  Action = "accept"
	ActionDecline Action = "decline"
	ActionCancel  Action = "cancel"
)

// FieldProblem is what is wrong with one field of an answer.
type FieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// Prompt is a server prompt offered as a /server:prompt command, with
// what a form needs to ask for its arguments. Titles and descriptions are
// the server's (untrusted), with invisible characters shown.
type Prompt struct {
	// Command is "/" + ServerID + ":" + Name.
	Command     string           `json:"command"`
	ServerID    string           `json:"serverId"`
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	// Icons and Meta (_meta) are the server's, as JSON; absent when it
	// sent none.
	Icons json.RawMessage `json:"icons,omitempty"`
	Meta  json.RawMessage `json:"_meta,omitempty"`
}

// PromptArgument is one argument of a prompt (a field of its form).
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// GetPromptRequest gets a prompt.
type GetPromptRequest struct {
	// Command is /server:prompt.
	Command   string            `json:"command"`
	Arguments map[string]string `json:"arguments,omitempty"`
	// Raw asks for the server's result unchanged in PromptResult.Raw when
	// it fits the size budget: for the MCP front end (SPEC §9 A8).
	Raw bool `json:"raw,omitempty"`
}

// PromptResult is a prompt's messages as fenced context blocks, to
// attach to the person's message as untrusted context.
type PromptResult struct {
	Command string `json:"command"`
	// Description is the server's description of this result (untrusted).
	Description string         `json:"description,omitempty"`
	Blocks      []ContextBlock `json:"blocks"`
	// Notes say what the size budget cut (remotemcp's words).
	Notes []string `json:"notes,omitempty"`
	// Raw is the server's validated GetPromptResult, unchanged, when
	// GetPromptRequest.Raw asked for it and nothing was cut to fit the
	// budget.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// RefType says what a CompleteRef names.
type RefType string

// Completion reference types (CompleteRef.Type).
const (
	RefPrompt   RefType = "ref/prompt"
	RefResource RefType = "ref/resource"
)

// CompleteRequest asks one server for completion values of an argument
// of one of its prompts or resource templates (MCP completion/complete).
type CompleteRequest struct {
	ServerID string      `json:"serverId"`
	Ref      CompleteRef `json:"ref"`
	Argument CompleteArg `json:"argument"`
	// Context holds the arguments already filled in, by name.
	Context map[string]string `json:"context,omitempty"`
}

// CompleteRef is what is being completed: a prompt by its server's own
// name (Type RefPrompt) or a resource template by its server's own URI
// template (Type RefResource).
type CompleteRef struct {
	Type RefType `json:"type"`
	Name string  `json:"name,omitempty"`
	URI  string  `json:"uri,omitempty"`
}

// CompleteArg is the argument being completed and what is typed so far.
type CompleteArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteResult is a server's completion values, at most 100, best
// first. Total, when not 0, is how many there are in all; HasMore says
// there are more than Values.
type CompleteResult struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// Resource is a resource or a resource template (Template set), as @
// search offers it. Titles and descriptions are the server's (untrusted),
// with invisible characters shown.
type Resource struct {
	ServerID string `json:"serverId"`
	// URI is the resource URI, or the URI template when Template is set.
	URI         string `json:"uri"`
	Template    bool   `json:"template,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
	// Annotations, Icons and Meta (_meta) are the server's, as JSON;
	// absent when it sent none.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Icons       json.RawMessage `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// Mention is how a ReadRequest names the resource: @server:URI.
func (r Resource) Mention() string { return "@" + r.ServerID + ":" + r.URI }

// ResourcesRequest lists or searches resources and templates.
type ResourcesRequest struct {
	ServerID string `json:"serverId,omitempty"`
	// Query searches names, titles and URIs ("" lists everything).
	Query string `json:"query,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// ReadRequest reads a resource.
type ReadRequest struct {
	// Mention is @server:URI.
	Mention string `json:"mention"`
}

// ReadResult is a read resource as fenced context blocks, to attach as
// untrusted context.
type ReadResult struct {
	Mention string         `json:"mention"`
	Blocks  []ContextBlock `json:"blocks"`
	// Notes say what the size budget cut (remotemcp's words).
	Notes []string `json:"notes,omitempty"`
}

// LogKind is what a LogEntry records besides a request to the MCP
// endpoint.
type LogKind string

// The kinds of log entries; an entry for the MCP endpoint has none ("").
const (
	// LogKindOAuth: a request of a sign-in or refresh (discovery,
	// registration, token).
	LogKindOAuth LogKind = "oauth"
	// LogKindLog: a log message of the server (notifications/message).
	LogKindLog LogKind = "log"
)

// LogEntry is one HTTP exchange of a server's request log, or one of its
// log messages: metadata only, redacted; never a header or a body.
type LogEntry struct {
	// Time is when the request was sent (or the message arrived); JSON
	// "at", in UTC (MarshalJSON).
	Time         time.Time `json:"at"`
	ConnectionID string    `json:"connectionId"`
	HTTPMethod   string    `json:"httpMethod"`
	// RPCMethod is the JSON-RPC method of a POST ("" for GET/DELETE).
	RPCMethod string `json:"rpcMethod,omitempty"`
	Status    int    `json:"status,omitempty"`
	// Millis is the time until the response headers (or the failure).
	Millis float64 `json:"ms"`
	Error  string  `json:"error,omitempty"`
	// Kind is LogKindOAuth for a request of a sign-in or refresh, with
	// Step and URL (redacted) saying which; "" for the MCP endpoint's.
	Kind LogKind `json:"kind,omitempty"`
	Step string  `json:"step,omitempty"`
	URL  string  `json:"url,omitempty"`
	// Level and Message are a server log message's (LogKindLog), bounded
	// and redacted.
	Level   string `json:"level,omitempty"`
	Message string `json:"message,omitempty"`
}

// EventType is the type of an Event: what changed, and what its Data
// holds.
type EventType string

// Event types of Engine.Subscribe (and GET /api/events). servers, grants
// and cards carry the whole current list, so a client keeps the newest.
const (
	EventServers EventType = "servers" // Data: []Server
	EventGrants  EventType = "grants"  // Data: GrantsState
	EventCards   EventType = "cards"   // Data: []Card
	EventCatalog EventType = "catalog" // Data: ToolList (the agent's tools changed)
	// EventNotices carries the servers' notifications since the
	// subscriber's previous notices event (Data: []Notice, oldest
	// first): each subscriber gets each notice once, while it keeps up
	// with the engine's bounded backlog (MaxNoticeBacklog).
	EventNotices EventType = "notices"
)

// NoticeType is the type of a Notice.
type NoticeType string

// Notice types.
const (
	NoticeLog             NoticeType = "log"              // a server's notifications/message
	NoticeResourceUpdated NoticeType = "resource-updated" // notifications/resources/updated of a subscribed URI
)

// MaxNoticeBacklog is how many notices the engine keeps for subscribers
// that fall behind; older ones are gone for them.
const MaxNoticeBacklog = 512

// Notice is one notification of a server that the engine passes on: a
// log message (bounded and redacted) or the update of a subscribed
// resource.
type Notice struct {
	Seq      uint64     `json:"seq"`
	Type     NoticeType `json:"type"`
	ServerID string     `json:"serverId"`
	Time     time.Time  `json:"at"`
	// Level, Logger and Text are a log message's (NoticeLog).
	Level  string `json:"level,omitempty"`
	Logger string `json:"logger,omitempty"`
	Text   string `json:"text,omitempty"`
	// URI is the updated resource's, as the server names it
	// (NoticeResourceUpdated).
	URI string `json:"uri,omitempty"`
}

// ResourceSubscription names one resource of one server, by the server's
// own URI (Engine.SubscribeResource).
type ResourceSubscription struct {
	ServerID string `json:"serverId"`
	URI      string `json:"uri"`
}

// LogLevelRequest asks servers for log messages at Level and above
// (logging/setLevel, RFC 5424 names: debug … emergency).
type LogLevelRequest struct {
	// ServerID is the server; "" means every enabled server.
	ServerID string `json:"serverId,omitempty"`
	Level    string `json:"level"`
}

// Event is one change the engine announces.
type Event struct {
	Type EventType       `json:"type"`
	Data json.RawMessage `json:"data"`
}

// GrantsState is the grants and pending approvals together, as the
// grants event carries them.
type GrantsState struct {
	Grants  []Grant   `json:"grants"`
	Pending []Pending `json:"pending"`
}

// LoginURL is a one-time login URL of the settings page.
type LoginURL struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expiresAt"`
}

// ApprovalSchema is the form of an approval question put to a person
// (the MCP front end's approval "ask"): nothing to fill in; accept is the
// approval, decline or cancel the refusal.
var ApprovalSchema = json.RawMessage(`{"type":"object","properties":{}}`)
