package localapi

import (
	"errors"
	"fmt"
)

// Error is an error answer of the engine. Every Engine method (the engine
// itself, and Client over the socket) returns one for a failure the caller
// can branch on; Code is stable, Message is for people and names the step
// that failed and what to do.
type Error struct {
	// Status is the HTTP status of the answer (not part of the JSON).
	Status int `json:"-"`
	// Code is one of the Code… constants.
	Code    string `json:"code"`
	Message string `json:"message"`
	// Step is the step that failed (discovery-PRM, token, connect …).
	Step string `json:"step,omitempty"`
	// Field names the request field that is wrong (CodeBadRequest).
	Field string `json:"field,omitempty"`
	// Permission is set for CodePermissionRequired.
	Permission *PermissionInfo `json:"permission,omitempty"`
	// Problems lists every bad field of an answer to a question.
	Problems []FieldProblem `json:"problems,omitempty"`
	// Server is the server's status after a failed connect or call.
	Server *Server `json:"server,omitempty"`
	// NotSent: the request was refused before anything reached the server
	// (so a tool call certainly did not run).
	NotSent bool `json:"notSent,omitempty"`
}

// Error codes.
const (
	CodeBadRequest         = "bad_request"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeNotFound           = "not_found"
	CodeConflict           = "conflict"
	CodePermissionRequired = "permission_required"
	CodeLoginRequired      = "login_required"
	CodeUnavailable        = "unavailable"
	CodeTimeout            = "timeout"
	CodeInternal           = "internal"
)

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s (HTTP %d)", e.Code, e.Status)
	}
	return e.Message
}

// AsError returns the *Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// HasCode reports whether err carries an *Error with the code.
func HasCode(err error, code string) bool {
	e, ok := AsError(err)
	return ok && e.Code == code
}

// Exit codes of the CLI, one table for every command (README "Exit
// codes").
const (
	// ExitOK: the command did what was asked. A tool call that the server
	// answered with isError is still 0: the answer is printed.
	ExitOK = 0
	// ExitFailed: the command failed (the message says which step).
	ExitFailed = 1
	// ExitUsage: the command line is wrong (unknown command or flag,
	// missing or extra arguments, malformed JSON argument).
	ExitUsage = 2
	// ExitNotReady: `status ID` found the server in error or needs-auth.
	ExitNotReady = 3
	// ExitNoAnswer: a tool call got no answer; it may have run (the
	// message says whether), and it is never re-sent.
	ExitNoAnswer = 4
)
