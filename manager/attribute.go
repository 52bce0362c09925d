package manager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/session"
)

// Class is the kind of failure a Reason attributes an error to (R5.1).
type Class string

// Failure classes.
const (
	ClassConfig   Class = "configuration"
	ClassNetwork  Class = "network"
	ClassTLS      Class = "tls"
	ClassHTTP     Class = "http"
	ClassAuth     Class = "auth"
	ClassProtocol Class = "protocol"
	ClassTimeout  Class = "timeout"
	ClassCanceled Class = "canceled"
	// ClassPermission: the origin has no host grant yet (R2.2).
	ClassPermission Class = "permission"
	ClassUnknown    Class = "unknown"
)

// Reason explains why a server is in the error state.
type Reason struct {
	Class Class `json:"class"`
	// Step names the auth step (discovery-PRM, token, refresh, …) for
	// ClassAuth, or the handshake step when known.
	Step string `json:"step,omitempty"`
	// HTTPStatus is set for ClassHTTP and HTTP-caused ClassAuth.
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Message    string `json:"message"`
	// Code says why, for the words a surface shows (states.go).
	Code ReasonCode `json:"code,omitempty"`
	// Scopes are the scopes a needs-auth server asks for, when known.
	Scopes []string `json:"scopes,omitempty"`
	// err is the error Attribute made the reason of.
	err error
}

// Err is the error the reason was made of (Message holds its text), nil
// for a reason the manager states itself (a sign-out): a surface shows
// its typed errors with its own advice.
func (r Reason) Err() error { return r.err }

func (r Reason) String() string {
	if r.Step != "" {
		return fmt.Sprintf("%s (%s): %s", r.Class, r.Step, r.Message)
	}
	return fmt.Sprintf("%s: %s", r.Class, r.Message)
}

// authStepper is implemented by the oauth package's typed errors; manager
// only needs the step name, so it does not import oauth.
type authStepper interface{ AuthStep() string }

// Attribute classifies an error from connecting or calling (R5.1). The
// order matters: context errors satisfy net.Error too, and go-sdk wraps
// transport errors in a JSON-RPC error with code -32005.
func Attribute(err error) Reason {
	if err == nil {
		return Reason{}
	}
	r := attribute(err)
	if r.Code == "" {
		r.Code = codeOf(err, r)
	}
	r.err = err
	return r
}

// attribute is Attribute without the code.
func attribute(err error) Reason {
	msg := err.Error()
	var (
		as     authStepper
		hs     *session.HTTPStatusError
		fe     *config.FieldError
		rhe    tls.RecordHeaderError
		uae    x509.UnknownAuthorityError
		hne    x509.HostnameError
		cie    x509.CertificateInvalidError
		cve    *tls.CertificateVerificationError
		dnse   *net.DNSError
		opErr  *net.OpError
		urlErr *url.Error
		rpc    *jsonrpc.Error
		ute    *json.UnmarshalTypeError
		syn    *json.SyntaxError
		le     *session.LimitError
	)
	switch {
	case errors.As(err, &as) && errors.Is(err, context.DeadlineExceeded):
		// A timeout inside an OAuth step keeps its step (R3.12).
		return Reason{Class: ClassTimeout, Step: as.AuthStep(), Message: msg}
	case errors.Is(err, context.DeadlineExceeded):
		return Reason{Class: ClassTimeout, Message: msg}
	case errors.Is(err, context.Canceled):
		return Reason{Class: ClassCanceled, Message: msg}
	case errors.Is(err, hostperm.ErrPermissionRequired):
		return Reason{Class: ClassPermission, Message: msg}
	case errors.As(err, &as):
		r := Reason{Class: ClassAuth, Step: as.AuthStep(), Message: msg}
		if errors.As(err, &hs) {
			r.HTTPStatus = hs.StatusCode
		}
		return r
	case errors.As(err, &fe), errors.Is(err, ErrDisabled), errors.Is(err, ErrUnknownServer), errors.Is(err, ErrNoOAuth), errors.Is(err, ErrToolDisabled):
		return Reason{Class: ClassConfig, Message: msg}
	case errors.As(err, &hs):
		if hs.StatusCode == 401 || hs.StatusCode == 403 {
			return Reason{Class: ClassAuth, Step: "authorization", HTTPStatus: hs.StatusCode, Message: msg}
		}
		return Reason{Class: ClassHTTP, HTTPStatus: hs.StatusCode, Message: msg}
	case errors.Is(err, mcp.ErrSessionMissing):
		return Reason{Class: ClassProtocol, HTTPStatus: 404, Code: CodeSessionExpired, Message: leadSessionExpired + ": " + msg}
	case errors.Is(err, session.ErrValidation), errors.As(err, &ute), errors.As(err, &syn), errors.As(err, &le):
		return Reason{Class: ClassProtocol, Message: msg}
	case errors.As(err, &rhe), errors.As(err, &uae), errors.As(err, &hne), errors.As(err, &cie), errors.As(err, &cve),
		errors.As(err, &opErr) && opErr.Op == "remote error": // a TLS alert from the peer
		return Reason{Class: ClassTLS, Message: msg}
	case errors.As(err, &dnse), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.As(err, &opErr):
		return Reason{Class: ClassNetwork, Message: msg}
	case errors.As(err, &urlErr):
		return Reason{Class: ClassNetwork, Message: msg}
	case errors.Is(err, mcp.ErrConnectionClosed):
		return Reason{Class: ClassNetwork, Code: CodeConnectionClosed, Message: leadConnectionClosed + ": " + msg}
	case errors.As(err, &rpc) && rpc.Code != -32005:
		return Reason{Class: ClassProtocol, Message: msg}
	}
	return Reason{Class: ClassUnknown, Message: msg}
}
