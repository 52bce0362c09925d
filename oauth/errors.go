package oauth

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Step names the part of the MCP authorization flow that failed, so the
// manager's state can say exactly where (R3.12).
type Step string

// The steps of SPEC §3, in flow order.
const (
	StepDiscoveryPRM  Step = "discovery-PRM" // protected resource metadata (RFC 9728)
	StepDiscoveryAS   Step = "discovery-AS"  // authorization server metadata (RFC 8414 / OIDC)
	StepRegistration  Step = "registration"  // pre-configured client or dynamic registration (RFC 7591)
	StepAuthorization Step = "authorization" // the browser part: authorization request and callback
	StepToken         Step = "token"         // authorization code exchange
	StepRefresh       Step = "refresh"       // refresh token grant
	StepScope         Step = "scope"         // 403 insufficient_scope step-up
)

// Error is a failure of one OAuth step for one server. Error() reads like
//
//	oauth: discovery-AS: https://as.example: code_challenge_methods_supported does not list S256; ...
//
// and errors.Is / errors.As reach the cause (one of the Err… sentinels
// below, a *url.Error, a context error …) through Unwrap.
type Error struct {
	Step     Step
	ServerID string
	Err      error
}

// Error formats as "oauth: <step>: <cause>".
func (e *Error) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	return "oauth: " + string(e.Step) + ": " + msg
}

// AuthStep names the failed step for the manager's error attribution
// (R5.1, R3.12) without it importing this package.
func (e *Error) AuthStep() string { return string(e.Step) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Sentinel causes callers and tests branch on with errors.Is. Each is
// wrapped with the specifics (which URL, which value) by the step that
// found it.
var (
	// ErrLoginRequired: no usable refresh token and no interactive browser
	// (background work, R3.13); the user must authorize explicitly.
	ErrLoginRequired = errors.New("login required")
	// ErrRedirectRefused: a discovery, registration or token request was
	// answered with an HTTP redirect, which is never followed (R3.2).
	ErrRedirectRefused = errors.New("HTTP redirect refused")
	// ErrInsecureURL: a URL that must be HTTPS is not (loopback may be http).
	ErrInsecureURL = errors.New("URL must use https (http is allowed only for loopback hosts)")
	// ErrNoMetadata: no protected resource or authorization server metadata
	// was found at any of the well-known locations.
	ErrNoMetadata = errors.New("no metadata found")
	// ErrResourceMismatch: the protected resource metadata names another resource (R3.7).
	ErrResourceMismatch = errors.New("protected resource metadata is for another resource")
	// ErrNoAuthServers: the protected resource metadata lists no authorization server.
	ErrNoAuthServers = errors.New("protected resource metadata lists no authorization_servers")
	// ErrSeveralAuthServers: first discovery found more than one
	// authorization server and there is no binding to choose by (R3.7).
	ErrSeveralAuthServers = errors.New("several authorization servers")
	// ErrIssuerMismatch: the authorization server metadata, or the
	// callback's iss parameter, names another issuer (R3.8, RFC 9207).
	ErrIssuerMismatch = errors.New("issuer mismatch")
	// ErrNoS256: the authorization server does not advertise PKCE S256 (R3.8).
	ErrNoS256 = errors.New("the server does not support PKCE S256, which MCP requires")
	// ErrBadMetadata: a metadata document is malformed or lacks a required field.
	ErrBadMetadata = errors.New("malformed metadata")
	// ErrBadRegistration: the registration response is unusable (R2.11).
	ErrBadRegistration = errors.New("invalid client registration response")
	// ErrNoRegistration: no client id is configured and the authorization
	// server offers no dynamic client registration.
	ErrNoRegistration = errors.New("no way to obtain a client id")
	// ErrClientMismatch: the configured client id was issued by another
	// authorization server than the one the server now names (R3.10).
	ErrClientMismatch = errors.New("configured client id belongs to another authorization server")
	// ErrStateMismatch: the callback's state is not the one we sent.
	ErrStateMismatch = errors.New("state mismatch")
	// ErrAccessDenied: the authorization server answered the authorization
	// request with an error (the user declined, or the request was refused).
	ErrAccessDenied = errors.New("authorization refused")
	// ErrBadCallback: the callback parameters are malformed.
	ErrBadCallback = errors.New("malformed authorization callback")
	// ErrTokenRejected: the token endpoint refused the request (RFC 6749 §5.2).
	ErrTokenRejected = errors.New("token request refused")
	// ErrBadToken: the token endpoint's success response is unusable.
	ErrBadToken = errors.New("malformed token response")
	// ErrStepUpLimit: the server kept demanding more scopes after three
	// step-up authorizations.
	ErrStepUpLimit = errors.New("scope step-up limit reached")
	// ErrForbidden: a 403 that is not insufficient_scope; authorization
	// cannot fix it.
	ErrForbidden = errors.New("forbidden")
	// ErrNotOAuth: the server is configured with neither auth kind
	// "oauth" nor "auto".
	ErrNotOAuth = errors.New(`server is not configured with auth kind "oauth" or "auto"`)
	// ErrNoChallenge: a server of auth kind "auto" that has not asked for
	// OAuth answered 401 without a Bearer challenge (WWW-Authenticate), so
	// nothing says OAuth would help (SPEC §9 A2).
	ErrNoChallenge = errors.New("the server demands authentication but sent no OAuth challenge")
	// ErrNothingToReregister: a new registration was asked for a server
	// whose client id is configured.
	ErrNothingToReregister = errors.New("nothing to re-register")
	// ErrBadClientMetadataURL: the configured client ID metadata document
	// URL is unusable (not https, no path, …).
	ErrBadClientMetadataURL = errors.New("invalid client ID metadata document URL")
	// ErrRefusedBeforeRun marks every error of the Handler's Authorize:
	// the MCP server answered the request with 401 or 403, so it refused
	// the request before running it, and no sign-in made it go through.
	// A tool call that fails with it did not run ("not sent", R4.1). The
	// error's message is the cause's; only errors.Is sees the mark.
	ErrRefusedBeforeRun = errors.New("the server refused the request before running it")
	// ErrMaybeForgottenClient: the browser never came back from the
	// authorization server with a dynamically registered client. An
	// authorization server that forgot the client (an in-memory server
	// restarted) shows invalid_client and never redirects back (RFC 6749
	// §4.1.2.1), so the next login registers a new client.
	ErrMaybeForgottenClient = errors.New("the authorization server may have forgotten remotemcp's client registration")
)

// refusedError is an error of Handler.Authorize: the cause, marked with
// ErrRefusedBeforeRun. It is a new value around the cause, since a flight
// hands the same cause to every caller.
type refusedError struct{ err error }

func (e *refusedError) Error() string   { return e.err.Error() }
func (e *refusedError) Unwrap() []error { return []error{e.err, ErrRefusedBeforeRun} }

// refused marks err (nil stays nil) with ErrRefusedBeforeRun.
func refused(err error) error {
	if err == nil || errors.Is(err, ErrRefusedBeforeRun) {
		return err
	}
	return &refusedError{err}
}

// InsufficientScopeError is the cause of a StepScope *Error when the
// server answered 403 insufficient_scope and no browser could step up
// (background work, R3.13): the person must sign in again, and that
// sign-in asks for Scopes. errors.Is(err, ErrLoginRequired) holds.
type InsufficientScopeError struct {
	ServerID string
	// Missing are the scopes the server demanded that the current token
	// lacks (all demanded scopes when the granted ones are unknown).
	Missing []string
	// Scopes are the scopes recorded for the server's binding, which the
	// next authorization asks for (with what R3.9 selects).
	Scopes []string
}

// Error says what is missing; what the person does about it is each
// surface's to say (localapi's words), from LoginReason.
func (e *InsufficientScopeError) Error() string {
	what := "more scopes than the current token has (it named none)"
	if len(e.Missing) > 0 {
		what = fmt.Sprintf("the scopes %q", strings.Join(e.Missing, " "))
	}
	asks := ""
	if len(e.Scopes) > 0 {
		asks = fmt.Sprintf(" (it asks for %q)", strings.Join(e.Scopes, " "))
	}
	return fmt.Sprintf("%v: the server refused the request for want of %s, which need a new authorization%s",
		ErrLoginRequired, what, asks)
}

// LoginReason is LoginInsufficientScope.
func (e *InsufficientScopeError) LoginReason() string { return string(LoginInsufficientScope) }

// MissingScopes are the scopes the server demanded that the token lacks.
func (e *InsufficientScopeError) MissingScopes() []string { return e.Missing }

// ScopesToAsk are the scopes the next authorization asks for.
func (e *InsufficientScopeError) ScopesToAsk() []string { return e.Scopes }

// Unwrap makes errors.Is(err, ErrLoginRequired) true.
func (e *InsufficientScopeError) Unwrap() error { return ErrLoginRequired }

// TokenError is an error response of the token endpoint (RFC 6749 §5.2).
// The description is sanitized; the response body is never kept, since a
// misbehaving server might echo credentials in it.
type TokenError struct {
	Status      int    // HTTP status
	Code        string // "invalid_grant", "invalid_client", … ("" when the body had none)
	Description string
}

// Error formats as "token request refused: HTTP <status>: <code> (<description>)".
func (e *TokenError) Error() string {
	s := fmt.Sprintf("%v: HTTP %d", ErrTokenRejected, e.Status)
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	return s
}

// Unwrap makes errors.Is(err, ErrTokenRejected) true.
func (e *TokenError) Unwrap() error { return ErrTokenRejected }

func stepErr(step Step, serverID string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		// Keep the innermost step: it is the one that actually failed.
		return err
	}
	return &Error{Step: step, ServerID: serverID, Err: err}
}

// LoginReason says why background work could not authorize and the
// person must sign in (R3.13). The manager reports it as the code of a
// needs-auth server's reason (manager.ReasonCode has the same values).
type LoginReason string

// Why a sign-in is needed.
const (
	LoginNotSignedIn       LoginReason = "not-signed-in"      // never signed in
	LoginNoRefreshToken    LoginReason = "no-refresh-token"   // nothing renews the sign-in
	LoginRefreshRefused    LoginReason = "refresh-refused"    // the refresh token was refused
	LoginClientRejected    LoginReason = "client-rejected"    // the client registration is gone
	LoginIssuerChanged     LoginReason = "issuer-changed"     // another authorization server
	LoginInsufficientScope LoginReason = "insufficient-scope" // a step-up (InsufficientScopeError)
)

// LoginReasons lists every LoginReason.
var LoginReasons = []LoginReason{LoginNotSignedIn, LoginNoRefreshToken, LoginRefreshRefused,
	LoginClientRejected, LoginIssuerChanged, LoginInsufficientScope}

// LoginRequiredError is the cause of a StepAuthorization *Error when
// background work needs the person's sign-in. Its text says why, never
// what to run: the CLI and the page say that in their own words.
// errors.Is(err, ErrLoginRequired) holds.
type LoginRequiredError struct {
	ServerID string
	Reason   LoginReason
	// Why is the sentence after "login required: ".
	Why string
}

// Error formats as "login required: <why>".
func (e *LoginRequiredError) Error() string { return ErrLoginRequired.Error() + ": " + e.Why }

// Unwrap makes errors.Is(err, ErrLoginRequired) true.
func (e *LoginRequiredError) Unwrap() error { return ErrLoginRequired }

// LoginReason is Reason, for the manager's attribution without it
// importing this package.
func (e *LoginRequiredError) LoginReason() string { return string(e.Reason) }

func loginRequired(serverID string, reason LoginReason, why string) error {
	return &Error{Step: StepAuthorization, ServerID: serverID,
		Err: &LoginRequiredError{ServerID: serverID, Reason: reason, Why: why}}
}

// sanitize makes a server-supplied string safe for one log line or error
// message: control and bidi characters become '?', and it is cut to max
// runes. Outside data never reaches a message unsanitized.
func sanitize(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' || r == unicode.ReplacementChar {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
