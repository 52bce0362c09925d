package session

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// HTTPStatusError is an HTTP status the MCP endpoint answered a POST with,
// typed so callers can branch on it (go-sdk only gives a string, issue #579).
type HTTPStatusError struct {
	StatusCode int
	// RPCMethod is the JSON-RPC method of the request, when known.
	RPCMethod string
	// WWWAuthenticate holds the challenges of a 401/403.
	WWWAuthenticate []string
	// RetryAfter is the raw Retry-After header, if any.
	RetryAfter string
}

func (e *HTTPStatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.RPCMethod != "" {
		fmt.Fprintf(&b, " for %s", e.RPCMethod)
	}
	switch e.StatusCode {
	case http.StatusUnauthorized:
		b.WriteString(": the server refused the credentials")
	case http.StatusForbidden:
		b.WriteString(": the server refused access")
	case http.StatusNotFound:
		b.WriteString(": no MCP endpoint at this URL (check the path, e.g. /mcp)")
	case http.StatusTooManyRequests:
		b.WriteString(": rate limited by the server")
		if e.RetryAfter != "" {
			b.WriteString(" (Retry-After: " + e.RetryAfter + ")")
		}
	}
	return b.String()
}

// ErrValidation marks a result from the server that failed run-time
// validation (R2.10); it is never committed to the catalog or returned as a
// result.
var ErrValidation = errors.New("invalid response from server")

// ErrClosed is returned by calls on a session that was closed by its owner.
var ErrClosed = errors.New("session closed")

// ErrCancelledBeforeDispatch is returned when a call's operation was
// cancelled before the call was admitted (R4.5); nothing was sent.
var ErrCancelledBeforeDispatch = errors.New("call cancelled before it was sent")

func validationErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrValidation, fmt.Sprintf(format, args...))
}
