package localapi

import (
	"context"
	"net/url"
)

// Engine is the one API of remotemcp. The engine (package remotemcp)
// implements it in-process; [Client] implements it by talking to a daemon
// whose handlers adapt HTTP to the daemon's Engine. Methods return an
// *Error for failures a caller can branch on.
type Engine interface {
	Health(ctx context.Context) (*Health, error)

	// Servers.
	Servers(ctx context.Context) ([]Server, error)
	Server(ctx context.Context, id string) (*Server, error)
	AddServer(ctx context.Context, req AddServerRequest) (*AddServerResult, error)
	Import(ctx context.Context, req ImportRequest) (*ImportResult, error)
	UpdateServer(ctx context.Context, id string, req UpdateServerRequest) (*UpdateServerResult, error)
	RemoveServer(ctx context.Context, id string) error
	SetEnabled(ctx context.Context, id string, enabled bool) (*Server, error)
	// SetTool enables or disables one tool; concurrent toggles of other
	// tools are never lost.
	SetTool(ctx context.Context, id, tool string, enabled bool) (*Server, error)
	// Connect connects (or reconnects) a server and waits for the outcome.
	Connect(ctx context.Context, id string) (*Server, error)
	Disconnect(ctx context.Context, id string) (*Server, error)
	Log(ctx context.Context, id string) ([]LogEntry, error)

	// Sign-in. Authorize starts a flow and returns once the authorization
	// URL is known (or the flow failed or was not needed); WaitAuthorization
	// waits until it ends. The callback reaches the owner's loopback
	// /mcp-oauth. At most one AuthorizeOptions is used; none means the
	// defaults. Logout forgets the tokens and ends the server's sessions.
	Authorize(ctx context.Context, id string, opts ...AuthorizeOptions) (*AuthFlow, error)
	Authorization(ctx context.Context, id string) (*AuthFlow, error)
	WaitAuthorization(ctx context.Context, id string) (*AuthFlow, error)
	Logout(ctx context.Context, id string) (*LogoutResult, error)
	// AuthStatus reports every server's sign-in, or the named ones.
	AuthStatus(ctx context.Context, ids ...string) ([]AuthStatus, error)

	// Host permissions.
	Grants(ctx context.Context) ([]Grant, error)
	Pending(ctx context.Context) ([]Pending, error)
	Grant(ctx context.Context, origin, by string) error
	Revoke(ctx context.Context, origin string) error
	DismissPending(ctx context.Context, origin string) error

	// Tools and calls.
	Tools(ctx context.Context, req ToolsRequest) (*ToolList, error)
	// Call runs one tool call; h receives the approval request, progress
	// and questions as they happen, and Call returns the result. A result
	// whose outcome is not ok is returned with a nil error: it is the
	// model's answer.
	Call(ctx context.Context, req CallRequest, h CallHandler) (*ToolResult, error)
	CancelCall(ctx context.Context, operationID string) error

	// Server questions (elicitation cards).
	Cards(ctx context.Context) ([]Card, error)
	Card(ctx context.Context, id string) (*Card, error)
	// Answer answers a pending question, from any process.
	Answer(ctx context.Context, cardID string, a Answer) error
	// Retry re-sends the call of an interrupted question once, after the
	// person confirmed it is safe (R6.2).
	Retry(ctx context.Context, cardID string, confirmed bool) (*ToolResult, error)

	// Prompts and resources.
	Prompts(ctx context.Context, serverID string) ([]Prompt, error)
	GetPrompt(ctx context.Context, req GetPromptRequest) (*PromptResult, error)
	Resources(ctx context.Context, req ResourcesRequest) ([]Resource, error)
	ReadResource(ctx context.Context, req ReadRequest) (*ReadResult, error)
	// Complete asks a server for completion values of an argument of
	// one of its prompts or resource templates.
	Complete(ctx context.Context, req CompleteRequest) (*CompleteResult, error)

	// SubscribeResource subscribes to updates of a server's resource
	// (resources/subscribe), connecting the server when needed; the
	// updates arrive as notices (EventNotices). Subscriptions are
	// counted: each needs its UnsubscribeResource, and they are renewed
	// on every new session of the server.
	SubscribeResource(ctx context.Context, req ResourceSubscription) error
	UnsubscribeResource(ctx context.Context, req ResourceSubscription) error
	// SetLogLevel asks a server (every enabled one when req.ServerID is
	// "") for log messages at req.Level and above, now if it is
	// connected and on its later sessions; it connects nothing. The
	// messages arrive as notices (EventNotices) and in the request log.
	SetLogLevel(ctx context.Context, req LogLevelRequest) error

	// Subscribe delivers events until ctx ends. A slow reader misses
	// intermediate events, never the newest of each type.
	Subscribe(ctx context.Context) (<-chan Event, error)
}

// CallbackReceiver is implemented by an engine that runs sign-in flows in
// this process. An owner that serves the loopback redirect URI
// http://127.0.0.1:PORT/mcp-oauth itself (the daemon) calls
// ServeCallbacks(port) once it listens, and hands every request to that
// path to CompleteAuthorization, which matches it to its flow by state
// and answers with the flow as it then stands. Flows of servers
// configured with another redirect port get a loopback listener of their
// own for the length of the flow, as do all flows of an engine whose
// owner serves none (a one-shot CLI command).
type CallbackReceiver interface {
	ServeCallbacks(port int)
	CompleteAuthorization(ctx context.Context, query url.Values) (*AuthFlow, error)
}

// AuthorizeOptions adjust one sign-in flow (Engine.Authorize; the body of
// POST /api/servers/{id}/authorize, which may also be empty).
type AuthorizeOptions struct {
	// Reregister forgets the server's dynamic client registration and
	// registers a new client before signing in ("auth login
	// --reregister"): for an authorization server that forgot the old
	// one. Refused (the flow fails at step registration) for a server
	// with a configured client id.
	Reregister bool `json:"reregister,omitempty"`
}
