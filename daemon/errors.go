package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/store"
)

// APIError is an error answer of the API. Client returns it for every
// non-2xx response, so callers can branch on Code (and, for
// "permission_required", on Permission).
type APIError struct {
	// Status is the HTTP status (not part of the JSON body).
	Status int `json:"-"`
	// Code is one of the Code… constants.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the request field that is wrong (CodeBadRequest).
	Field string `json:"field,omitempty"`
	// Permission is set for CodePermissionRequired.
	Permission *PermissionInfo `json:"permission,omitempty"`
	// Problems lists every bad field of an elicitation answer.
	Problems []elicit.FieldProblem `json:"problems,omitempty"`
	// Server is the server's status after a failed connect.
	Server *ServerView `json:"server,omitempty"`
}

// Error codes of APIError.
const (
	CodeBadRequest         = "bad_request"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeNotFound           = "not_found"
	CodeConflict           = "conflict"
	CodePermissionRequired = "permission_required"
	CodeUnavailable        = "unavailable" // the server could not be reached or failed
	CodeTimeout            = "timeout"
	CodeInternal           = "internal"
)

// Error returns the daemon's message, prefixed so a CLI user knows who
// said it.
func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("remotemcp daemon: HTTP %d %s", e.Status, e.Code)
	}
	return "remotemcp daemon: " + e.Message
}

// apiError maps an error of the library to the API's status and code. The
// message is the library's, which names the step and the server; secrets
// are scrubbed from the body on the way out (see Server.scrub).
func apiError(err error) *APIError {
	e := &APIError{Status: http.StatusInternalServerError, Code: CodeInternal, Message: err.Error()}
	var (
		ae  *APIError
		pe  *hostperm.PermissionRequiredError
		fe  *config.FieldError
		ve  *elicit.ValidationError
		pse *config.ParseError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &pe):
		e.Status, e.Code = http.StatusConflict, CodePermissionRequired
		e.Permission = &PermissionInfo{Origin: pe.Origin, Purpose: pe.Purpose, ServerID: pe.ServerID}
	case errors.As(err, &ve):
		e.Status, e.Code, e.Problems = http.StatusBadRequest, CodeBadRequest, ve.Problems
	case errors.As(err, &fe):
		e.Status, e.Code, e.Field = http.StatusBadRequest, CodeBadRequest, fe.Field
	case errors.As(err, &pse):
		e.Status, e.Code = http.StatusBadRequest, CodeBadRequest
	case errors.Is(err, hostperm.ErrInvalidOrigin):
		e.Status, e.Code = http.StatusBadRequest, CodeBadRequest
	case errors.Is(err, store.ErrNotFound), errors.Is(err, manager.ErrUnknownServer),
		errors.Is(err, elicit.ErrUnknownCard), errors.Is(err, hostperm.ErrNotGranted):
		e.Status, e.Code = http.StatusNotFound, CodeNotFound
	case errors.Is(err, store.ErrDuplicate), errors.Is(err, elicit.ErrNotPending),
		errors.Is(err, manager.ErrDisabled), errors.Is(err, oauth.ErrNotOAuth), errors.Is(err, store.ErrBearerRebind):
		e.Status, e.Code = http.StatusConflict, CodeConflict
	case errors.Is(err, context.DeadlineExceeded):
		e.Status, e.Code = http.StatusGatewayTimeout, CodeTimeout
	case errors.Is(err, context.Canceled):
		// The client went away or the daemon is shutting down.
		e.Status, e.Code = http.StatusServiceUnavailable, CodeUnavailable
	}
	return e
}

// errBadRequest is a malformed request.
func errBadRequest(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}
