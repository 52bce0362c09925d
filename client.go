package remotemcp

// The methods of Client: each delegates to the engine's method of the same
// name and signature (TestClientHasEveryEngineMethod keeps the two sets
// equal).

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/remotemcp/remotemcp/localapi"
)

// AcceptTools pins the new definitions of a server's held tools, so they
// are offered again (remotemcp tools accept; the page's Accept).
func (c *Client) AcceptTools(ctx context.Context, serverID string, req localapi.AcceptToolsRequest) (*localapi.AcceptToolsResult, error) {
	return c.e.AcceptTools(ctx, serverID, req)
}

// AddServer adds a server and grants its own origin in the same user
// action (R2.2); Granted lists the origin when this add granted it (not
// when it had a grant already). A taken id is CodeConflict.
func (c *Client) AddServer(ctx context.Context, req localapi.AddServerRequest) (*localapi.AddServerResult, error) {
	return c.e.AddServer(ctx, req)
}

// Answer answers a pending question, from any process on the data
// directory: the call that asked continues where it waits. An accepted
// answer is checked against the question's form first; every bad field
// is in the error's Problems.
func (c *Client) Answer(ctx context.Context, cardID string, a localapi.Answer) error {
	return c.e.Answer(ctx, cardID, a)
}

// AuthStatus reports what this engine knows about the sign-in of every
// server (or of ids), never the tokens themselves. HasAccessToken is this
// process's in-memory token: through a daemon, the daemon's. A server
// that does not use OAuth is listed with its kind, signed in false.
func (c *Client) AuthStatus(ctx context.Context, ids ...string) ([]localapi.AuthStatus, error) {
	return c.e.AuthStatus(ctx, ids...)
}

// Authorization returns the server's latest sign-in flow.
func (c *Client) Authorization(ctx context.Context, id string) (*localapi.AuthFlow, error) {
	return c.e.Authorization(ctx, id)
}

// Authorize starts the sign-in flow of an OAuth server and returns once
// the authorization URL is known (phase waiting), the flow failed, or it
// was not needed. A flow that failed is returned together with an
// *localapi.Error (CodePermissionRequired when an origin needs a grant
// first). Starting a flow abandons the server's previous one.
//
// Registration recovery (issue #11): a flow whose browser step never came
// back with a dynamically registered client leaves the registration
// marked, and the next flow registers a new client — the authorization
// server may have forgotten the old one, and it never redirects back for
// an unknown client. Options.Reregister forces a new registration. The
// scopes asked for include those a 403 insufficient_scope recorded.
func (c *Client) Authorize(ctx context.Context, id string, opts ...localapi.AuthorizeOptions) (*localapi.AuthFlow, error) {
	return c.e.Authorize(ctx, id, opts...)
}

// Call runs one tool call through the one call pipeline: it resolves the
// name, connecting the tool's server if it has no session (that server
// only); then it asks for approval unless req.Approved
// (CallHandler.Approve gets the whole request; without it nothing is
// sent), waits behind open questions, sends the call once through the
// manager, and budgets the session's validated result. The call's one
// record is the manager's (CancelCall finds it there). h.Progress gets
// each progress notification in order; only with h.Progress is the
// server asked for progress (a progress token), and only then does
// progress extend the call's tool time. h.Question gets each server
// question asked during the call; answer it with Answer, from any
// goroutine or process, and the call continues.
//
// A call refused before anything was sent (the server needs a sign-in or
// an origin grant, the approval was denied or not asked for) has
// MaybeExecuted false and a message that says so. A result whose outcome
// is not ok is returned with a nil error: it is the model's answer. The
// error is for a request that is wrong (CodeBadRequest, CodeNotFound for
// an unknown server, CodeConflict for a disabled one).
func (c *Client) Call(ctx context.Context, req localapi.CallRequest, h localapi.CallHandler) (*localapi.ToolResult, error) {
	return c.e.Call(ctx, req, h)
}

// CancelCall cancels a call by its operation id at whatever stage it is
// (R4.5); a cancel that arrives before its call is remembered for a while.
// The id is the call's capability: ids are unguessable (package opid).
func (c *Client) CancelCall(ctx context.Context, operationID string) error {
	return c.e.CancelCall(ctx, operationID)
}

// Card returns one server question.
func (c *Client) Card(ctx context.Context, id string) (*localapi.Card, error) {
	return c.e.Card(ctx, id)
}

// Cards lists the server questions, newest first (pending, answered,
// cancelled and interrupted ones within the retention; at most 100).
func (c *Client) Cards(ctx context.Context) ([]localapi.Card, error) {
	return c.e.Cards(ctx)
}

// CheckHostToken reports which bearer token tok is.
func (c *Client) CheckHostToken(ctx context.Context, tok string) (*localapi.HostToken, error) {
	return c.e.CheckHostToken(ctx, tok)
}

// Close stops the engine in the order package elicit documents: sign-in
// flows and background work end, the registry stops, open questions are
// closed as interrupted while their connections can still carry the
// refusal, then the manager closes every session (cancelling calls in
// flight), then the broker and the store. Idempotent.
func (c *Client) Close() error {
	return c.e.Close()
}

// Complete asks a server for completion values of an argument of one of
// its prompts or resource templates (completion/complete), connecting it
// when it has no session. A request without a server, a reference or an
// argument name is CodeBadRequest before anything is sent, as is one the
// server refuses.
func (c *Client) Complete(ctx context.Context, req localapi.CompleteRequest) (*localapi.CompleteResult, error) {
	return c.e.Complete(ctx, req)
}

// CompleteAuthorization completes the flow a callback to /mcp-oauth
// belongs to, matched by its state, and answers with the flow once the
// code has been exchanged (or after a while, as it then stands). A
// callback that cannot be read is CodeBadRequest; one that belongs to no
// waiting flow (forged, stale or replayed) is CodeNotFound and changes
// nothing; a second delivery of one is CodeConflict.
func (c *Client) CompleteAuthorization(ctx context.Context, query url.Values) (*localapi.AuthFlow, error) {
	return c.e.CompleteAuthorization(ctx, query)
}

// Connect connects (or reconnects) a server and waits for the outcome. A
// failure is an *localapi.Error whose Server has the state and reason:
// CodePermissionRequired (with Permission) when an origin needs a grant
// first, CodeLoginRequired (with Step) when the person must sign in,
// CodeUnavailable otherwise.
func (c *Client) Connect(ctx context.Context, id string) (*localapi.Server, error) {
	return c.e.Connect(ctx, id)
}

// CreateHostToken creates the bearer token called name.
func (c *Client) CreateHostToken(ctx context.Context, name string) (*localapi.NewHostToken, error) {
	return c.e.CreateHostToken(ctx, name)
}

// Disconnect closes the server's session.
func (c *Client) Disconnect(ctx context.Context, id string) (*localapi.Server, error) {
	return c.e.Disconnect(ctx, id)
}

// DismissPending drops the pending approvals of an origin without
// granting it.
func (c *Client) DismissPending(ctx context.Context, origin string) error {
	return c.e.DismissPending(ctx, origin)
}

// GetPrompt runs a /server:prompt command. Missing required arguments and
// unknown ones are CodeBadRequest naming the argument, before anything is
// sent.
func (c *Client) GetPrompt(ctx context.Context, req localapi.GetPromptRequest) (*localapi.PromptResult, error) {
	return c.e.GetPrompt(ctx, req)
}

// Grant allows an origin (R2.2); by names the user action (hostperm.By…,
// default the CLI's). Enabled servers of that origin that failed are
// connected again in the background.
func (c *Client) Grant(ctx context.Context, origin, by string) error {
	return c.e.Grant(ctx, origin, by)
}

// Grants lists the origins the person allowed.
func (c *Client) Grants(ctx context.Context) ([]localapi.Grant, error) {
	return c.e.Grants(ctx)
}

// Health reports that the engine runs. InProcess is true unless an owner
// serves its callbacks (ServeCallbacks): the daemon, seen from its
// clients, is not in their process.
func (c *Client) Health(ctx context.Context) (*localapi.Health, error) {
	return c.e.Health(ctx)
}

// EncodedTools is Tools encoded as the local API sends it
// (localapi.EncodedToolLister): the list of every enabled server is
// encoded once per catalog generation and kept, so a daemon answers a
// listing without encoding it. The bytes are the caller's own.
func (c *Client) EncodedTools(ctx context.Context, req localapi.ToolsRequest) (json.RawMessage, error) {
	return c.e.EncodedTools(ctx, req)
}

// HeldTools lists the tools held because their definition changed since
// it was pinned (issue #20 item 3), of one server or ("") of all, with
// the old and new definitions and what changed.
func (c *Client) HeldTools(ctx context.Context, serverID string) ([]localapi.HeldTool, error) {
	return c.e.HeldTools(ctx, serverID)
}

// HostTokens lists the endpoint's bearer tokens.
func (c *Client) HostTokens(ctx context.Context) ([]localapi.HostToken, error) {
	return c.e.HostTokens(ctx)
}

// Import imports another client's MCP config (config.Import, ${VAR}
// expanded from req.Env only) or remotemcp's own server list. Every entry
// is reported: added; unchanged (the same entry is there already);
// updated (req.Update, and the id exists with another entry); a conflict
// (the id exists with another entry, without req.Update); or skipped with
// its reason. Like adding a server, an import grants each imported
// server's own origin and lists the origins it granted.
func (c *Client) Import(ctx context.Context, req localapi.ImportRequest) (*localapi.ImportResult, error) {
	return c.e.Import(ctx, req)
}

// KnownSecrets names the write-only secrets the store holds for servers
// (bearer tokens, client secrets, header values), so the daemon can scrub them from
// anything it sends (localapi.SecretLister). A secret that cannot be
// opened is left out; the servers are still listed.
func (c *Client) KnownSecrets(ctx context.Context) ([]string, error) {
	return c.e.KnownSecrets(ctx)
}

// Log returns the server's last HTTP exchanges, oldest first (R5.3):
// metadata only, redacted, never a header or a body. A lazy engine (one
// command) that has not talked to the server yet connects it first to
// record the handshake, or where it failed.
func (c *Client) Log(ctx context.Context, id string) ([]localapi.LogEntry, error) {
	return c.e.Log(ctx, id)
}

// Logout signs out of an OAuth server: it forgets the access token, the
// refresh token and the client registration, and ends the server's
// sessions; its state is then needs-auth, reason "signed out", until it
// signs in or connects again. A server that does not use OAuth is
// CodeConflict: there is nothing to sign out of.
func (c *Client) Logout(ctx context.Context, id string) (*localapi.LogoutResult, error) {
	return c.e.Logout(ctx, id)
}

// Pending lists the refused requests waiting for the person's decision.
func (c *Client) Pending(ctx context.Context) ([]localapi.Pending, error) {
	return c.e.Pending(ctx)
}

// Prompts lists the prompts of a server (every enabled one when serverID
// is ""), as /server:prompt commands, connecting the servers that have no
// session. A server that cannot be listed is an error when it is the one
// asked for, and left out otherwise.
func (c *Client) Prompts(ctx context.Context, serverID string) ([]localapi.Prompt, error) {
	return c.e.Prompts(ctx, serverID)
}

// ReadResource reads a resource named @server:URI. A URI template must be
// filled in first (CodeBadRequest).
func (c *Client) ReadResource(ctx context.Context, req localapi.ReadRequest) (*localapi.ReadResult, error) {
	return c.e.ReadResource(ctx, req)
}

// RemoveServer deletes a server: its config, its secrets, its OAuth state
// and any sign-in flow.
func (c *Client) RemoveServer(ctx context.Context, id string) error {
	return c.e.RemoveServer(ctx, id)
}

// Resources lists or searches the resources and resource templates of a
// server (every enabled one when req.ServerID is ""), best match first
// (see agent.Snapshot.SearchResources), connecting what has no session.
func (c *Client) Resources(ctx context.Context, req localapi.ResourcesRequest) ([]localapi.Resource, error) {
	return c.e.Resources(ctx, req)
}

// Retry re-sends the call of an interrupted question once, after the
// person confirmed it is safe (R6.2: an answer that never reached the
// server is never pretended to have). The confirmation is its approval.
// Without confirmed nothing is sent.
func (c *Client) Retry(ctx context.Context, cardID string, confirmed bool) (*localapi.ToolResult, error) {
	return c.e.Retry(ctx, cardID, confirmed)
}

// Revoke removes a grant and disconnects the servers of that origin,
// whose open sessions the broker does not close by itself.
func (c *Client) Revoke(ctx context.Context, origin string) error {
	return c.e.Revoke(ctx, origin)
}

// RevokeHostToken revokes the bearer token called name.
func (c *Client) RevokeHostToken(ctx context.Context, name string) error {
	return c.e.RevokeHostToken(ctx, name)
}

// ServeCallbacks tells the engine that its owner serves the loopback
// redirect URI http://127.0.0.1:port/mcp-oauth and hands every request to
// it to CompleteAuthorization. Flows of servers with another redirect
// port still get a listener of their own.
func (c *Client) ServeCallbacks(port int) {
	c.e.ServeCallbacks(port)
}

// ServeCallbacksAt tells the engine that its owner serves redirectURI (a
// gateway's public page URL + /mcp-oauth): every sign-in uses it as its
// redirect URI from then on; "" goes back to loopback (see
// engine.Engine.ServeCallbacksAt).
func (c *Client) ServeCallbacksAt(redirectURI string) { c.e.ServeCallbacksAt(redirectURI) }

// CompleteSharedAuthorization completes a sign-in another replica of a
// gateway started, from its record in the gateway's database (see
// engine.Engine.CompleteSharedAuthorization).
func (c *Client) CompleteSharedAuthorization(ctx context.Context, query url.Values) (*localapi.AuthFlow, error) {
	return c.e.CompleteSharedAuthorization(ctx, query)
}

// ServersChanged makes the engine take the store's servers now (see
// engine.Engine.ServersChanged).
func (c *Client) ServersChanged(ctx context.Context) { c.e.ServersChanged(ctx) }

// OwnsAuthState reports whether a sign-in of this engine waits for the
// authorization response with this state (see engine.Engine.OwnsAuthState).
func (c *Client) OwnsAuthState(state string) bool { return c.e.OwnsAuthState(state) }

// Server returns one server.
func (c *Client) Server(ctx context.Context, id string) (*localapi.Server, error) {
	return c.e.Server(ctx, id)
}

// Servers lists every server as every surface shows it.
func (c *Client) Servers(ctx context.Context) ([]localapi.Server, error) {
	return c.e.Servers(ctx)
}

// SetEnabled switches a server on or off.
func (c *Client) SetEnabled(ctx context.Context, id string, enabled bool) (*localapi.Server, error) {
	return c.e.SetEnabled(ctx, id, enabled)
}

// SetLogLevel asks servers for log messages at a level; see
// localapi.Engine. A server without logging is skipped when every server
// is asked, and an error when it is the one asked.
func (c *Client) SetLogLevel(ctx context.Context, req localapi.LogLevelRequest) error {
	return c.e.SetLogLevel(ctx, req)
}

// SetTool enables or disables one tool. It re-applies its own toggle to
// the newest record, so concurrent toggles of other tools are never lost.
func (c *Client) SetTool(ctx context.Context, id, tool string, enabled bool) (*localapi.Server, error) {
	return c.e.SetTool(ctx, id, tool, enabled)
}

// Subscribe delivers events until ctx ends or the engine closes: first
// the current list of every type (servers, grants, cards, catalog), then
// the new list of a type each time it changes. A slow reader misses
// intermediate events, never the newest of each type.
func (c *Client) Subscribe(ctx context.Context) (<-chan localapi.Event, error) {
	return c.e.Subscribe(ctx)
}

// SubscribeResource subscribes to updates of a server's resource; see
// localapi.Engine.
func (c *Client) SubscribeResource(ctx context.Context, req localapi.ResourceSubscription) error {
	return c.e.SubscribeResource(ctx, req)
}

// Tools lists the agent's tools (mcp__server__tool; disabled tools left
// out) with their raw inputSchema bytes. With req.Connect the servers
// (lazy ones too) are connected and listed afresh; without it the known
// catalogs are used. Servers that could not be listed are in Errors.
func (c *Client) Tools(ctx context.Context, req localapi.ToolsRequest) (*localapi.ToolList, error) {
	return c.e.Tools(ctx, req)
}

// UnsubscribeResource gives back one subscription; see localapi.Engine.
func (c *Client) UnsubscribeResource(ctx context.Context, req localapi.ResourceSubscription) error {
	return c.e.UnsubscribeResource(ctx, req)
}

// UpdateServer edits a server by compare-and-swap (store.EditServer): each
// change is applied to the newest record, DisableTools and EnableTools add
// or remove their own names only, so no concurrent edit is lost. With
// req.Revision set the edit applies to that revision only (CodeConflict
// otherwise). A new URL gets its origin granted. Warnings name disabled
// tools the server does not have, when its catalog is known.
func (c *Client) UpdateServer(ctx context.Context, id string, req localapi.UpdateServerRequest) (*localapi.UpdateServerResult, error) {
	return c.e.UpdateServer(ctx, id, req)
}

// WaitAuthorization waits until the server's latest flow ends (or ctx
// does) and returns it.
func (c *Client) WaitAuthorization(ctx context.Context, id string) (*localapi.AuthFlow, error) {
	return c.e.WaitAuthorization(ctx, id)
}
