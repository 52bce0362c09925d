package daemon

import (
	"encoding/json"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/manager"
)

// The JSON shapes of the API, shared by the handlers and Client. None of
// them has a field that could carry a secret: auth material is reduced to
// "is there one" flags (AuthView).

// Health is the answer of GET /api/health.
type Health struct {
	OK      bool      `json:"ok"`
	Version string    `json:"version"`
	PID     int       `json:"pid"`
	URL     string    `json:"url"`
	Started time.Time `json:"started"`
}

// AuthView is a server's auth section without its secrets.
type AuthView struct {
	Kind            config.AuthKind `json:"kind"`
	HasToken        bool            `json:"hasToken,omitempty"`
	ClientID        string          `json:"clientId,omitempty"`
	HasClientSecret bool            `json:"hasClientSecret,omitempty"`
	Scopes          []string        `json:"scopes,omitempty"`
	Binding         *config.Binding `json:"binding,omitempty"`
	RedirectPort    int             `json:"redirectPort,omitempty"`
}

// ServerView is one server as the API and the settings page show it: the
// stored config (secrets reduced to flags), the manager's live state, the
// host permission of its origin, the approvals waiting beside it and the
// last Authorize flow.
type ServerView struct {
	ID               string          `json:"id"`
	Name             string          `json:"name"`
	URL              string          `json:"url"`
	Origin           string          `json:"origin"`
	Enabled          bool            `json:"enabled"`
	ConnectOnStartup bool            `json:"connectOnStartup"`
	Auth             AuthView        `json:"auth"`
	DisabledTools    []string        `json:"disabledTools"`
	ToolTimeout      string          `json:"toolTimeout,omitempty"`
	State            manager.State   `json:"state"`
	Reason           *manager.Reason `json:"reason,omitempty"`
	ToolCount        int             `json:"toolCount"`
	// OriginGranted: the server's own origin has a host permission grant.
	OriginGranted bool `json:"originGranted"`
	// Pending are the refused requests waiting for the user's approval that
	// concern this server: recorded for it, or to its origin.
	Pending []hostperm.Pending `json:"pending"`
	// Authorization is the latest Authorize flow of an oauth server.
	Authorization *AuthFlow `json:"authorization,omitempty"`
	// OAuth is what the authenticator knows about an oauth server (no
	// secrets), when the daemon has one that reports it.
	OAuth *OAuthView `json:"oauth,omitempty"`
}

// OAuthView is oauth.Status without the server id: whether tokens exist,
// never the tokens.
type OAuthView struct {
	Binding           *config.Binding `json:"binding,omitempty"`
	BindingCurrent    bool            `json:"bindingCurrent"`
	ClientID          string          `json:"clientId,omitempty"`
	Registered        bool            `json:"registered,omitempty"`
	RegisteredAt      time.Time       `json:"registeredAt,omitzero"`
	HasRefreshToken   bool            `json:"hasRefreshToken"`
	HasAccessToken    bool            `json:"hasAccessToken"`
	AccessTokenExpiry time.Time       `json:"accessTokenExpiry,omitzero"`
	Scopes            []string        `json:"scopes,omitempty"`
	Problem           string          `json:"problem,omitempty"`
}

// AuthFlow is the state of an Authorize flow (POST
// /api/servers/{id}/authorize).
type AuthFlow struct {
	Server string `json:"server"`
	// Phase is "starting", "waiting" (the authorization page is open),
	// "exchanging" (the callback arrived), "done" or "failed".
	Phase string `json:"phase"`
	// AuthorizationURL is the page to open while Phase is "waiting".
	AuthorizationURL string    `json:"authorizationUrl,omitempty"`
	Started          time.Time `json:"started"`
	Finished         time.Time `json:"finished,omitzero"`
	// Error says which step failed and why (Phase "failed").
	Error string `json:"error,omitempty"`
	// Step is the OAuth step that failed, when known.
	Step string `json:"step,omitempty"`
	// Permission is set when the flow stopped at an origin without a
	// host permission grant: approve it, then Authorize again.
	Permission *PermissionInfo `json:"permission,omitempty"`
	// Result is set when Phase is "done".
	Result *LoginInfo `json:"result,omitempty"`
}

// Flow phases.
const (
	PhaseStarting   = "starting"
	PhaseWaiting    = "waiting"
	PhaseExchanging = "exchanging"
	PhaseDone       = "done"
	PhaseFailed     = "failed"
)

// LoginInfo is what a successful Authorize achieved (no tokens).
type LoginInfo struct {
	NotNeeded    bool            `json:"notNeeded,omitempty"`
	Binding      *config.Binding `json:"binding,omitempty"`
	ClientID     string          `json:"clientId,omitempty"`
	Registered   bool            `json:"registered,omitempty"`
	Scopes       []string        `json:"scopes,omitempty"`
	ExpiresAt    time.Time       `json:"expiresAt,omitzero"`
	RefreshToken bool            `json:"refreshToken,omitempty"`
}

// PermissionInfo describes a request refused for lack of a host
// permission grant (hostperm.PermissionRequiredError).
type PermissionInfo struct {
	Origin   string           `json:"origin"`
	Purpose  hostperm.Purpose `json:"purpose,omitempty"`
	ServerID string           `json:"serverId,omitempty"`
}

// Grants is the answer of GET /api/grants.
type Grants struct {
	Grants  []hostperm.Grant   `json:"grants"`
	Pending []hostperm.Pending `json:"pending"`
}

// AddServerRequest is the body of POST /api/servers. Token and
// ClientSecret are write-only: they are stored sealed and never returned.
type AddServerRequest struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	URL  string `json:"url"`
	// Auth is "none" (default), "bearer" or "oauth".
	Auth         config.AuthKind `json:"auth,omitempty"`
	Token        string          `json:"token,omitempty"`
	ClientID     string          `json:"clientId,omitempty"`
	ClientSecret string          `json:"clientSecret,omitempty"`
	Scopes       []string        `json:"scopes,omitempty"`
	RedirectPort int             `json:"redirectPort,omitempty"`
	// Enabled and ConnectOnStartup default to true.
	Enabled          *bool  `json:"enabled,omitempty"`
	ConnectOnStartup *bool  `json:"connectOnStartup,omitempty"`
	ToolTimeout      string `json:"toolTimeout,omitempty"`
}

// UpdateServerRequest is the body of PATCH /api/servers/{id}: only the
// fields present change.
type UpdateServerRequest struct {
	Name             *string   `json:"name,omitempty"`
	Enabled          *bool     `json:"enabled,omitempty"`
	ConnectOnStartup *bool     `json:"connectOnStartup,omitempty"`
	DisabledTools    *[]string `json:"disabledTools,omitempty"`
	ToolTimeout      *string   `json:"toolTimeout,omitempty"`
}

// ToolSwitch is the body of POST /api/servers/{id}/tools (R5.2).
type ToolSwitch struct {
	Tool    string `json:"tool"`
	Enabled bool   `json:"enabled"`
}

// ImportRequest is the body of POST /api/servers/import.
type ImportRequest struct {
	// Config is the pasted document: another client's MCP config (Claude
	// Code, Cursor, VS Code, Windsurf …) or remotemcp's own server list.
	Config string `json:"config"`
	// Env holds the values of ${VAR} references. The daemon never expands
	// references from its own environment: a pasted document must not be
	// able to pull the daemon's secrets into a URL or header.
	Env map[string]string `json:"env,omitempty"`
}

// ImportResult is the answer of POST /api/servers/import: every entry of
// the document is either added or skipped with its reason.
type ImportResult struct {
	Added   []ImportedServer `json:"added"`
	Skipped []SkippedEntry   `json:"skipped"`
}

// ImportedServer is one server an import added. Imports grant nothing:
// the origins show up as pending approvals once the servers connect.
type ImportedServer struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	URL           string          `json:"url"`
	Origin        string          `json:"origin"`
	Auth          config.AuthKind `json:"auth"`
	OriginGranted bool            `json:"originGranted"`
}

// SkippedEntry is one entry an import did not add, and why.
type SkippedEntry struct {
	Name   string `json:"name"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
}

// OriginRequest is the body of the grant, revoke and dismiss routes.
type OriginRequest struct {
	Origin string `json:"origin"`
}

// CatalogView is the answer of GET /api/servers/{id}/catalog.
type CatalogView struct {
	Server    string         `json:"server"`
	Tools     []ToolView     `json:"tools"`
	Prompts   []PromptView   `json:"prompts"`
	Resources []ResourceView `json:"resources"`
	Templates []ResourceView `json:"templates"`
	// Errors are per-category refresh failures (the last good list is
	// shown, R4.4).
	Errors map[string]string `json:"errors,omitempty"`
}

// ToolView is one tool of a catalog. Title, description and annotations
// are the server's words, for display only.
type ToolView struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Enabled     bool            `json:"enabled"`
	// AgentName is mcp__{server}__{tool}.
	AgentName string `json:"agentName"`
}

// PromptView is one prompt of a catalog.
type PromptView struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
}

// ResourceView is one resource or resource template of a catalog.
type ResourceView struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// CardView is an elicitation card with its parsed form.
type CardView struct {
	elicit.Card
	// Form is the requested schema as form fields; nil when it cannot be
	// shown (the card was declined then).
	Form *elicit.Form `json:"form,omitempty"`
}

// AnswerRequest is the body of POST /api/cards/{id}/answer.
type AnswerRequest = elicit.Response

// RetryRequest is the body of POST /api/cards/{id}/retry.
type RetryRequest struct {
	// Confirmed says the person confirmed that re-sending the interrupted
	// call is safe (R6.2).
	Confirmed bool `json:"confirmed"`
}

// ToolsView is the answer of GET /api/tools.
type ToolsView struct {
	Generation uint64 `json:"generation"`
	Tools      []Tool `json:"tools"`
	// Errors are servers that could not be listed.
	Errors map[string]string `json:"errors,omitempty"`
}

// Tool is one agent tool (agent.AgentTool without the Go-only parts).
type Tool struct {
	Name        string          `json:"name"`
	ServerID    string          `json:"serverId"`
	ToolName    string          `json:"toolName"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Effects     string          `json:"effects"`
	Retry       string          `json:"retry"`
}

// CallRequest is the body of POST /api/call.
type CallRequest struct {
	// Tool is the agent tool name (mcp__server__tool) or "server/tool".
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Approved says the caller asked the person and they approved this
	// call. Every remote tool is a write tool (R4.1); without it the call
	// is denied and nothing is sent.
	Approved bool `json:"approved"`
	// OperationID names the call for POST /api/call/cancel; generated
	// when empty.
	OperationID string `json:"operationId,omitempty"`
	// Timeout ("30s") bounds the call in addition to the server's
	// toolTimeout.
	Timeout string `json:"timeout,omitempty"`
}

// CancelRequest is the body of POST /api/call/cancel.
type CancelRequest struct {
	OperationID string `json:"operationId"`
}

// LoginURLResponse is the answer of POST /api/login-url.
type LoginURLResponse struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

// Event is one Server-Sent Event of GET /api/events. Type is "servers"
// (Data: []ServerView), "grants" (Grants) or "cards" ([]CardView); each
// carries the full current list, so a client only keeps the newest.
type Event struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Event types.
const (
	EventServers = "servers"
	EventGrants  = "grants"
	EventCards   = "cards"
)

// errorBody is the JSON of every API error.
type errorBody struct {
	Error APIError `json:"error"`
}
