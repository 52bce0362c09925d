package localapi

import "strings"

// ReasonCode says why a server is in its state, finer than Reason.Class:
// the key of what the CLI and the page tell the person (WordTable). The
// manager sets it (manager.ReasonCode has the same values); nothing reads
// it out of a message.
type ReasonCode string

// Reason codes of the error state (and of reconnecting, which keeps the
// code of the loss).
const (
	ReasonNetwork       ReasonCode = "network"
	ReasonTLS           ReasonCode = "tls"
	ReasonTimeout       ReasonCode = "timeout"
	ReasonCanceled      ReasonCode = "canceled"
	ReasonPermission    ReasonCode = "permission"
	ReasonConfig        ReasonCode = "configuration"
	ReasonProtocol      ReasonCode = "protocol"
	ReasonAuth          ReasonCode = "auth"
	ReasonHTTP          ReasonCode = "http"
	ReasonHTTPNotFound  ReasonCode = "http-not-found"
	ReasonRateLimited   ReasonCode = "http-rate-limited"
	ReasonServerFailure ReasonCode = "http-server-failure"
	ReasonUnknown       ReasonCode = "unknown"
	// ReasonSessionExpired: the server forgot the session (HTTP 404).
	ReasonSessionExpired ReasonCode = "session-expired"
	// ReasonConnectionClosed: the connection closed under the session.
	ReasonConnectionClosed ReasonCode = "connection-closed"
)

// Reason codes of the needs-auth state: why the person must sign in.
const (
	ReasonSignedOut         ReasonCode = "signed-out"
	ReasonNotSignedIn       ReasonCode = "not-signed-in"
	ReasonLoginRequired     ReasonCode = "login-required"
	ReasonNoRefreshToken    ReasonCode = "no-refresh-token"
	ReasonRefreshRefused    ReasonCode = "refresh-refused"
	ReasonClientRejected    ReasonCode = "client-rejected"
	ReasonIssuerChanged     ReasonCode = "issuer-changed"
	ReasonInsufficientScope ReasonCode = "insufficient-scope"
	// ReasonNeedsAuth: a call of a ready server needed a sign-in.
	ReasonNeedsAuth ReasonCode = "needs-auth"
)

// Words are what the surfaces say about one state or reason code. The
// CLI's text may hold {id}, {url} and {origin}; the page's {status}
// (the HTTP status) and {scopes}.
type Words struct {
	// Label is the page's short name of the state ("can't reach the
	// server"); Class its style (ready, error, …).
	Label string `json:"label,omitempty"`
	Class string `json:"cls,omitempty"`
	// Hint is the page's sentence of what to do there; Waiting replaces
	// it while the server's origin waits for approval; Scopes follows it
	// when the server asks for scopes.
	Hint    string `json:"hint,omitempty"`
	Waiting string `json:"waiting,omitempty"`
	Scopes  string `json:"scopes,omitempty"`
	// CLI is the CLI's "what to do".
	CLI string `json:"cli,omitempty"`
	// Lead is what starts the CLI's short reason before the innermost
	// error of the chain: the words the manager put before the chain
	// (States) or the CLI's own (Reasons).
	Lead string `json:"lead,omitempty"`
	// Why says why a needs-auth server waits for the person (page banner,
	// desktop notification), lower-case without a full stop.
	Why string `json:"why,omitempty"`
	// ByAuth are the words for a server of an auth kind where they
	// differ: "signin" (oauth or auto), "bearer", "none".
	ByAuth map[string]Words `json:"byAuth,omitempty"`
}

// WordTable is every surface's words for states and reason codes: the
// CLI reads it here, the daemon serves it to the page (GET /api/words).
type WordTable struct {
	// States are the words of each state but error ("disabled": a
	// server switched off, whatever its state).
	States map[State]Words `json:"states"`
	// Reasons are the words of an error state's reason, and the Why of
	// a needs-auth one, by code ("" is the fallback).
	Reasons map[ReasonCode]Words `json:"reasons"`
	// Errors are the words of the libraries' typed errors, and of calls
	// refused unsent, by kind: the libraries' texts carry the data
	// (server, tool, time, limit) and never a command to run.
	Errors map[ErrorKind]ErrorWords `json:"errors"`
}

// ErrorKind names a typed error of the libraries, or a refusal of a
// call, that the surfaces show with advice (WordTable.Errors).
type ErrorKind string

// Error kinds.
const (
	// ErrorBackoff: a connect failed, or was not tried because the last
	// one failed recently and the next is not due (manager.BackoffError).
	ErrorBackoff ErrorKind = "backoff"
	// ErrorToolHeld: a tool's definition changed since it was first
	// seen and the person has not accepted the change
	// (manager.HeldError).
	ErrorToolHeld ErrorKind = "tool-held"
	// ErrorOverLimit: a server exceeded one of its limits
	// (session.LimitError).
	ErrorOverLimit ErrorKind = "over-limit"
	// ErrorLoginRequired: a call was refused unsent because its server
	// needs a sign-in.
	ErrorLoginRequired ErrorKind = "login-required"
	// ErrorPermission: a call was refused unsent because its server's
	// origin has no grant.
	ErrorPermission ErrorKind = "permission"
)

// ErrorWords are what the surfaces say with one kind of error.
// Placeholders: {id} the server's id, {tool} the tool's name, {limit}
// the limit's name, {origin} an origin, {step} a sign-in step; in Agent
// {server} and {toolName} stand for the server's id and the tool's name
// quoted (as Go's %q quotes them).
type ErrorWords struct {
	// Advice is what the person can do, added to the error's own text
	// wherever it is shown (an agent's result, the CLI, the page).
	Advice string `json:"advice,omitempty"`
	// Agent is the sentence an agent (the model) is told when a call
	// was refused for this kind of error.
	Agent string `json:"agent,omitempty"`
}

// StateDisabled is the words table's key of a disabled server.
const StateDisabled State = "disabled"

// Words several codes share.
const (
	tryAgain     = "Click Connect to try again."
	networkCLI   = `check that {url} is the right URL and that the server is up and reachable from here (change it with "remotemcp servers set {id} --url URL")`
	protocolHint = "Its answers do not follow the MCP protocol: check that the URL is its MCP endpoint."
	protocolCLI  = "the server's answers do not follow the MCP protocol; check that the URL is the server's Streamable HTTP MCP endpoint"
)

// Table is the one code→words table (issue #21 item 3).
var Table = WordTable{
	States: map[State]Words{
		StateDisabled:   {Label: "disabled", Class: "disconnected", Hint: "Enable it to use its tools."},
		StateReady:      {Label: "ready", Class: "ready"},
		StateConnecting: {Label: "connecting…", Class: "connecting"},
		StateReconnecting: {Label: "reconnecting…", Class: "reconnecting", Hint: "The connection was lost; remotemcp is restoring it.",
			Lead: "connection lost, reconnecting"},
		StateIdle:         {Label: "idle", Class: "idle", Hint: "Asleep to save resources; it reconnects when a tool is used."},
		StateDisconnected: {Label: "disconnected", Class: "disconnected"},
		StateNeedsAuth: {Label: "needs authorization", Class: "needs-auth", Hint: "Click Authorize to sign in.",
			Waiting: "Allow the origin beside the server's name, then click Authorize.",
			Scopes:  " It asks for more permissions: {scopes}.",
			CLI:     `sign in with "remotemcp auth login {id}"`,
			Lead:    "needs authorization"},
	},
	Reasons: map[ReasonCode]Words{
		"": {Label: "error", Class: "error", Hint: tryAgain, Why: "its sign-in is no longer valid"},
		ReasonNetwork: {Label: "can't reach the server", Class: "error", Hint: "Check the URL and that the server is running. " + tryAgain,
			CLI:  networkCLI,
			Lead: "cannot reach {url}"},
		ReasonConnectionClosed: {Label: "can't reach the server", Class: "error", Hint: "Check the URL and that the server is running. " + tryAgain,
			CLI:  networkCLI,
			Lead: "connection closed"},
		ReasonTLS: {Label: "secure connection failed", Class: "error", Hint: "The server's certificate was not accepted: check the host name in the URL.",
			CLI: "the server's TLS certificate was not accepted; check the host name in the URL, or the system's certificate store"},
		ReasonTimeout: {Label: "no answer in time", Class: "error", Hint: "The server did not answer in time. " + tryAgain,
			CLI: "the server did not answer in time; check that it is up, then try again"},
		ReasonPermission: {Label: "origin not allowed", Class: "error", Hint: "Allow the origin (beside the server's name), then click Connect.",
			CLI: `allow the origin with "remotemcp grants approve {origin}" (or on the settings page), then try again`},
		ReasonAuth: {Label: "needs credentials", Class: "error", Hint: "The server asks for credentials. Delete it and add it again with a bearer token or OAuth.",
			CLI: `the server wants credentials: sign in with "remotemcp auth login {id}", or give a token with "remotemcp servers set {id} --auth bearer --bearer-env VAR"`,
			ByAuth: map[string]Words{
				"signin": {Label: "authorization failed", Class: "error", Hint: "Click Authorize to sign in again.",
					CLI: `the server wants credentials: sign in with "remotemcp auth login {id}", or give a token with "remotemcp servers set {id} --auth bearer --bearer-env VAR"`},
				"bearer": {Label: "token refused", Class: "error", Hint: "The server refused the bearer token. Delete the server and add it again with a valid token.",
					CLI: `the server refused the bearer token; give a valid one with "remotemcp servers set {id} --bearer-env VAR" (or --bearer-stdin)`},
			}},
		ReasonHTTPNotFound: {Label: "not found (HTTP 404)", Class: "error", Hint: "Check the URL's path: MCP endpoints are often at /mcp.",
			CLI: `check the URL's path: MCP endpoints are often at /mcp (change it with "remotemcp servers set {id} --url URL")`},
		ReasonRateLimited: {Label: "rate limited (HTTP 429)", Class: "error", Hint: "Wait a moment. " + tryAgain,
			CLI: "the server is rate limiting; wait and try again"},
		ReasonServerFailure: {Label: "server failure (HTTP {status})", Class: "error", Hint: "The server failed. " + tryAgain,
			CLI: "the server failed; try again later or contact its operator"},
		ReasonHTTP: {Label: "unexpected answer (HTTP {status})", Class: "error", Hint: "The URL does not look like an MCP endpoint: check it.",
			CLI: "the URL does not look like a Streamable HTTP MCP endpoint; check it and the server's documentation"},
		ReasonProtocol: {Label: "not a working MCP server", Class: "error", Hint: protocolHint, CLI: protocolCLI},
		ReasonSessionExpired: {Label: "not a working MCP server", Class: "error", Hint: protocolHint, CLI: protocolCLI,
			Lead: "session expired on the server (HTTP 404)"},
		ReasonConfig: {Label: "configuration problem", Class: "error", Hint: "Check the server's URL and settings.",
			CLI: `check the configuration with "remotemcp servers show {id}"`},
		ReasonCanceled: {Label: "stopped", Class: "error", Hint: tryAgain},
		ReasonUnknown:  {Label: "error", Class: "error", Hint: tryAgain},

		ReasonSignedOut:         {Why: "you signed out"},
		ReasonNotSignedIn:       {Why: "it has not been signed in yet"},
		ReasonNeedsAuth:         {Why: "it has not been signed in yet"},
		ReasonLoginRequired:     {Why: "it no longer accepts the sign-in"},
		ReasonNoRefreshToken:    {Why: "its sign-in ended and there is nothing to renew it with"},
		ReasonRefreshRefused:    {Why: "its sign-in expired and could not be renewed"},
		ReasonClientRejected:    {Why: "the authorization server no longer knows remotemcp"},
		ReasonIssuerChanged:     {Why: "it moved to another authorization server"},
		ReasonInsufficientScope: {Why: "it asks for more permissions"},
	},
	Errors: map[ErrorKind]ErrorWords{
		ErrorBackoff: {Advice: `run "remotemcp connect {id}" to try now`},
		ErrorToolHeld: {Advice: `review it with "remotemcp tools review {id}", and accept it with "remotemcp tools accept {id} {tool} --hash HASH", HASH from the review`,
			Agent: `Tool {toolName} of MCP server {server} is held: the server changed its definition after it was first seen, and the user has not accepted the change; the call was not sent. The user can review the change with "remotemcp tools review {id}".`},
		ErrorOverLimit:     {Advice: `If the server is trusted and needs more, raise its limits.{limit} (servers set {id} --limit {limit}=…)`},
		ErrorLoginRequired: {Agent: `MCP server {server} needs a sign-in (step {step}): sign in (remotemcp auth login {id}), then call again`},
		ErrorPermission:    {Agent: `remotemcp has no permission to contact {origin} (for MCP server {server}); approve that origin (remotemcp grants approve {origin}), then call again`},
	},
}

// authGroup is the ByAuth key of an auth kind.
func authGroup(kind string) string {
	switch kind {
	case "oauth", "auto":
		return "signin"
	case "bearer":
		return "bearer"
	}
	return "none"
}

// WordsCode is r's code; a reason without one (from an older daemon) is
// keyed by its class, and an http one by its status, as the manager
// would have.
func WordsCode(r Reason) ReasonCode {
	if r.Code != "" {
		return r.Code
	}
	if r.Class == "http" {
		switch {
		case r.HTTPStatus == 404:
			return ReasonHTTPNotFound
		case r.HTTPStatus == 429:
			return ReasonRateLimited
		case r.HTTPStatus >= 500:
			return ReasonServerFailure
		}
	}
	return ReasonCode(r.Class)
}

// ReasonWords are the words of reason r of a server of auth kind
// authKind; ok is false when the table has none for its code (the
// fallback's words are returned then).
func (t WordTable) ReasonWords(r Reason, authKind string) (w Words, ok bool) {
	w, ok = t.Reasons[WordsCode(r)]
	if !ok {
		w = t.Reasons[""]
	}
	if v, has := w.ByAuth[authGroup(authKind)]; has {
		w = v
	}
	return w, ok
}

// Fill replaces the placeholders of a words text ({id}, {url}, …) with
// the values of vars (name → value), leaving unknown ones.
func Fill(text string, vars map[string]string) string {
	if !strings.Contains(text, "{") {
		return text
	}
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}
