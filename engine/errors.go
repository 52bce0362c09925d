package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/advice"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/store"
)

// apiError maps an error of the library to the local API's code and HTTP
// status. The message is the library's, which names the step and the
// server, with the advice of localapi.Table (internal/advice). An *localapi.Error in err's chain wins.
func apiError(err error) *localapi.Error {
	if err == nil {
		return nil
	}
	if le, ok := localapi.AsError(err); ok {
		return le
	}
	e := &localapi.Error{Status: http.StatusInternalServerError, Code: localapi.CodeInternal, Message: advice.Text(err)}
	var (
		pe  *hostperm.PermissionRequiredError
		fe  *config.FieldError
		ve  *elicit.ValidationError
		pse *config.ParseError
		ae  *agent.ArgumentError
		oe  *oauth.Error
	)
	switch {
	case errors.As(err, &pe):
		e.Status, e.Code, e.NotSent = http.StatusConflict, localapi.CodePermissionRequired, true
		e.Permission = &localapi.PermissionInfo{Origin: pe.Origin, Purpose: purposeOf(pe.Purpose), ServerID: pe.ServerID}
	case errors.Is(err, hostperm.ErrPermissionRequired):
		e.Status, e.Code, e.NotSent = http.StatusConflict, localapi.CodePermissionRequired, true
	case errors.Is(err, oauth.ErrLoginRequired):
		e.Status, e.Code, e.NotSent = http.StatusConflict, localapi.CodeLoginRequired, true
		e.Step = string(oauth.StepAuthorization)
		if errors.As(err, &oe) {
			e.Step = string(oe.Step)
		}
	case errors.As(err, &ve):
		e.Status, e.Code = http.StatusBadRequest, localapi.CodeBadRequest
		for _, p := range ve.Problems {
			e.Problems = append(e.Problems, localapi.FieldProblem{Field: p.Field, Problem: p.Problem})
		}
	case errors.As(err, &fe):
		e.Status, e.Code, e.Field = http.StatusBadRequest, localapi.CodeBadRequest, fe.Field
	case errors.As(err, &ae):
		e.Status, e.Code, e.Field = http.StatusBadRequest, localapi.CodeBadRequest, ae.Argument
	case errors.As(err, &pse), errors.Is(err, hostperm.ErrInvalidOrigin), errors.Is(err, agent.ErrBadMention):
		e.Status, e.Code = http.StatusBadRequest, localapi.CodeBadRequest
	case errors.Is(err, store.ErrNotFound), errors.Is(err, manager.ErrUnknownServer),
		errors.Is(err, elicit.ErrUnknownCard), errors.Is(err, hostperm.ErrNotGranted), errors.Is(err, agent.ErrUnknownCommand):
		e.Status, e.Code = http.StatusNotFound, localapi.CodeNotFound
	case errors.Is(err, store.ErrDuplicate), errors.Is(err, elicit.ErrNotPending), errors.Is(err, elicit.ErrOwnerGone),
		errors.Is(err, elicit.ErrNotInterrupted), errors.Is(err, elicit.ErrNotAttributed), errors.Is(err, elicit.ErrAlreadyResent),
		errors.Is(err, elicit.ErrRetryNotConfirmed), errors.Is(err, elicit.ErrNotOwner),
		errors.Is(err, manager.ErrDisabled), errors.Is(err, oauth.ErrNotOAuth),
		errors.Is(err, store.ErrBearerRebind), errors.Is(err, store.ErrHeaderRebind), errors.Is(err, store.ErrConflict):
		e.Status, e.Code = http.StatusConflict, localapi.CodeConflict
	case errors.Is(err, manager.ErrBackoff):
		// Before DeadlineExceeded: a refusal inside the backoff window
		// wraps the last attempt's failure, which may be a handshake
		// timeout, but nothing timed out now (issue #20 item 1).
		e.Status, e.Code = http.StatusServiceUnavailable, localapi.CodeUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		e.Status, e.Code = http.StatusGatewayTimeout, localapi.CodeTimeout
	case errors.Is(err, context.Canceled), errors.Is(err, manager.ErrClosed), errors.Is(err, elicit.ErrClosed):
		e.Status, e.Code = http.StatusServiceUnavailable, localapi.CodeUnavailable
	case errors.As(err, new(*jsonrpc.Error)):
		// The server answered the request with an error.
		e.Status, e.Code = http.StatusBadGateway, localapi.CodeUnavailable
	}
	if be := (*manager.BackoffError)(nil); errors.As(err, &be) && !be.Attempted {
		// Inside the server's backoff window nothing was attempted, let
		// alone sent (issue #20 item 1).
		e.NotSent = true
	}
	return e
}

// fail returns err as an *localapi.Error (nil for nil), so every engine
// method answers with a code a caller can branch on.
func fail(err error) error {
	if err == nil {
		return nil
	}
	return apiError(err)
}

// badRequest is a request that is wrong in field.
func badRequest(field, format string, args ...any) *localapi.Error {
	return &localapi.Error{Status: http.StatusBadRequest, Code: localapi.CodeBadRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// notFound is a missing thing.
func notFound(format string, args ...any) *localapi.Error {
	return &localapi.Error{Status: http.StatusNotFound, Code: localapi.CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

// conflict is a request the current state refuses.
func conflict(format string, args ...any) *localapi.Error {
	return &localapi.Error{Status: http.StatusConflict, Code: localapi.CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// unavailable is a server that could not be reached or failed (a failed
// connect or listing), keeping the code of a more specific cause.
func unavailable(err error) *localapi.Error {
	e := apiError(err)
	if e.Code == localapi.CodeInternal {
		e.Status, e.Code = http.StatusBadGateway, localapi.CodeUnavailable
	}
	return e
}

// errNoServer is the not-found error of a server id.
func errNoServer(id string) *localapi.Error {
	return notFound("there is no server %q (see the server list)", id)
}
