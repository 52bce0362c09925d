package localapi

import (
	"context"
	"encoding/json"
	"net/http"
)

// The wire: what the daemon's handlers and Client agree on beyond the
// Engine's own types. One route per Engine method (see package daemon's
// documentation for the table); JSON in and out; an error answer is
// {"error": Error} with the HTTP status of StatusOf.

// SocketName is the daemon's Unix socket in the data directory (or in a
// short per-user runtime directory when that path would be too long; the
// daemon records where in daemon.json).
const SocketName = "api.sock"

// By names the user action that made a grant. Every value starts with
// "user:": grants come only from the person.
type By string

// The user actions that may grant an origin.
const (
	BySettingsPage By = "user: settings page"
	ByCLI          By = "user: cli"
	ByServersAdd   By = "user: servers add"
	// ByPrompt: the person answered yes when asked.
	ByPrompt By = "user: prompt"
)

// Content types of the streamed answers.
const (
	// ContentTypeNDJSON is the call stream of POST /api/calls: one
	// CallEvent per line.
	ContentTypeNDJSON = "application/x-ndjson"
	// ContentTypeSSE is the event stream of GET /api/events.
	ContentTypeSSE = "text/event-stream"
)

// OriginRequest names an origin: POST /api/grants (By says who asked; the
// daemon sets it for the settings page), /api/grants/revoke and
// /api/pending/dismiss.
type OriginRequest struct {
	Origin string `json:"origin"`
	By     By     `json:"by,omitempty"`
}

// ToolSwitch is the body of POST /api/servers/{id}/tools: one tool on or
// off for agents.
type ToolSwitch struct {
	Tool    string `json:"tool"`
	Enabled bool   `json:"enabled"`
}

// ApprovalReply is the body of POST /api/calls/{operationId}/approval:
// the caller's Decision, or Error when it could not decide
// (CallHandler.Approve failed), which the engine treats as it treats the
// error of an in-process Approve.
type ApprovalReply struct {
	Decision
	Error string `json:"error,omitempty"`
}

// RetryRequest is the body of POST /api/cards/{id}/retry.
type RetryRequest struct {
	Confirmed bool `json:"confirmed"`
}

// ErrorBody is every error answer: {"error": {...}}.
type ErrorBody struct {
	Error *Error `json:"error"`
}

// StatusOf is the HTTP status of an error code (CodeInternal for an
// unknown one).
func StatusOf(code string) int {
	switch code {
	case CodeBadRequest, CodeUserRequired:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict, CodePermissionRequired, CodeLoginRequired:
		return http.StatusConflict
	case CodeUnavailable:
		return http.StatusBadGateway
	case CodeQuota:
		return http.StatusTooManyRequests
	case CodeTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// CodeOf is the error code of an HTTP status, for an error answer that
// carries none (a proxy's, or a body that could not be read).
func CodeOf(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return CodeUnavailable
	case http.StatusGatewayTimeout:
		return CodeTimeout
	}
	return CodeInternal
}

// EncodedToolLister is implemented by an engine that can give its tool
// list already encoded: the JSON of Engine.Tools, byte for byte as the
// local API sends it ({"generation":…,"tools":[…],"errors":[…]}). The
// daemon answers GET /api/tools with these bytes (the engine keeps the
// encoding of its current catalog), and Client reads them without
// decoding, for a caller that passes the tools on as JSON (remotemcp
// tools --json; see SplitToolList). With 500 servers of 50 tools, the
// list is ~16 MB: encoding and decoding it again on every listing cost
// most of one (issue #21).
type EncodedToolLister interface {
	EncodedTools(ctx context.Context, req ToolsRequest) (json.RawMessage, error)
}

// SecretLister is implemented by an engine that can name the write-only
// secrets it stores (bearer tokens, client secrets, header values). The
// daemon scrubs each of them from everything it sends: no answer is meant
// to carry one (the types reduce auth material to flags), and this is the
// net under that rule, for error text a server or library echoed a
// secret into.
type SecretLister interface {
	KnownSecrets(ctx context.Context) ([]string, error)
}
