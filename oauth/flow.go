package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
)

// CallbackResult is what the authorization server sent back to the
// redirect URI (RFC 6749 §4.1.2, RFC 9207).
type CallbackResult struct {
	Code             string
	State            string
	Iss              string
	Error            string
	ErrorDescription string
}

// Browser hands the authorization URL to the user and returns the callback
// parameters once the authorization server has redirected back. The
// engine opens the system browser and serves the loopback redirect URI
// (localapi.CallbackHandler, the one /mcp-oauth handler); tests GET the
// URL and read the redirect. It must honour ctx. The redirect
// URI in the URL is RedirectURI(srv.Auth.RedirectPort), so a listening
// Browser must listen on that port: an engine sets it to the port it
// serves for the length of the flow.
type Browser func(ctx context.Context, authURL string) (*CallbackResult, error)

// Limits on callback parameters: generous for real servers, small enough
// that a hostile redirect cannot make us carry megabytes around.
const (
	maxCodeLen  = 4096
	maxStateLen = 512
	maxIssLen   = config.MaxURLLength
	maxErrLen   = 128
	maxDescLen  = 1024
)

// ParseCallback reads the parameters of a redirect to the callback URI.
// Each parameter may appear at most once (RFC 6749 §3.1); code, state,
// error and iss must be printable ASCII within bounds; either code or error
// must be present. error_description is free text from the server: it is
// sanitized (control characters replaced, length cut), never refused.
func ParseCallback(q url.Values) (*CallbackResult, error) {
	r := &CallbackResult{}
	for _, f := range []struct {
		name string
		dst  *string
		max  int
	}{
		{"code", &r.Code, maxCodeLen},
		{"state", &r.State, maxStateLen},
		{"iss", &r.Iss, maxIssLen},
		{"error", &r.Error, maxErrLen},
	} {
		v := q[f.name]
		switch {
		case len(v) > 1:
			return nil, fmt.Errorf("%w: parameter %q appears %d times", ErrBadCallback, f.name, len(v))
		case len(v) == 0:
			continue
		case len(v[0]) > f.max:
			return nil, fmt.Errorf("%w: parameter %q is %d bytes long; the limit is %d", ErrBadCallback, f.name, len(v[0]), f.max)
		case !vschar(v[0]):
			return nil, fmt.Errorf("%w: parameter %q contains control or non-ASCII characters", ErrBadCallback, f.name)
		}
		*f.dst = v[0]
	}
	if d := q["error_description"]; len(d) > 1 {
		return nil, fmt.Errorf("%w: parameter \"error_description\" appears %d times", ErrBadCallback, len(d))
	} else if len(d) == 1 {
		r.ErrorDescription = sanitize(d[0], maxDescLen)
	}
	if r.Code == "" && r.Error == "" {
		return nil, fmt.Errorf("%w: neither code nor error is present", ErrBadCallback)
	}
	return r, nil
}

// checkCallback validates a callback against the request we made: state
// (compared in constant time), RFC 9207 iss, then the error or the code.
//
// iss: when the metadata advertises authorization_response_iss_parameter_supported
// the iss must be present and equal the issuer; when it does not, an iss
// that is present anyway must still equal it (conformance auth/iss-unexpected),
// and a matching one is accepted (there is nothing unsafe in a server
// sending what it did not advertise). Comparison is exact, without URL
// normalization (auth/iss-normalized).
func checkCallback(r *CallbackResult, state string, asm *oauthex.AuthServerMeta) error {
	if r == nil {
		return fmt.Errorf("%w: no callback parameters", ErrBadCallback)
	}
	if subtle.ConstantTimeCompare([]byte(r.State), []byte(state)) != 1 {
		return fmt.Errorf("%w: the callback's state is not the one sent with the authorization request (a stale or forged redirect)", ErrStateMismatch)
	}
	switch {
	case r.Iss == "" && asm.AuthorizationResponseIssParameterSupported:
		return fmt.Errorf("%w: %s advertises the RFC 9207 iss parameter but the callback has none", ErrIssuerMismatch, asm.Issuer)
	case r.Iss != "" && r.Iss != asm.Issuer:
		return fmt.Errorf("%w: the callback's iss is %q, not %q (RFC 9207: possible mix-up attack)", ErrIssuerMismatch, sanitize(r.Iss, 200), asm.Issuer)
	}
	if r.Error != "" {
		if r.ErrorDescription != "" {
			return fmt.Errorf("%w: the authorization server answered %s: %s", ErrAccessDenied, r.Error, sanitize(r.ErrorDescription, 200))
		}
		return fmt.Errorf("%w: the authorization server answered %s", ErrAccessDenied, r.Error)
	}
	if r.Code == "" {
		return fmt.Errorf("%w: no code", ErrBadCallback)
	}
	return nil
}

// selectScopes decides what to ask for (R3.9): the challenge's scope is
// authoritative; without it PRM scopes_supported; without those the
// configured scopes. A step-up adds the scopes already granted, so the new
// token does not lose them (SEP-2350). offline_access is added only when
// the authorization server lists it (SEP-2207: a client MUST NOT request
// it otherwise).
func selectScopes(challenged, prm, configured, asSupported, granted []string) []string {
	var s []string
	switch {
	case len(challenged) > 0:
		s = challenged
	case len(prm) > 0:
		s = prm
	default:
		s = configured
	}
	s = uniq(append(slices.Clone(granted), s...))
	if slices.Contains(asSupported, "offline_access") && !slices.Contains(s, "offline_access") {
		s = append(s, "offline_access")
	}
	return s
}

// flowParams is the input of one interactive authorization.
type flowParams struct {
	srv     config.Server
	binding config.Binding
	prm     *resourceMeta
	asm     *oauthex.AuthServerMeta
	scopes  []string
	browser Browser
	// reregister registers a new client whatever is stored (auth login
	// --reregister); like any new registration it replaces the one in
	// use only when its code exchange succeeds.
	reregister bool
	// share, when set, is told of each authorization request before the
	// browser step (LoginOptions.Share).
	share func(ctx context.Context, pf *PendingFlow) error
}

// clientRejected reports a token endpoint answer saying the client itself
// is no good: invalid_client (unknown client, failed authentication) or
// unauthorized_client. For a dynamically registered client it means the
// authorization server has forgotten the registration (an in-memory
// server restarted), and a new registration is the cure.
func clientRejected(err error) bool {
	var te *TokenError
	return errors.As(err, &te) && (te.Code == "invalid_client" || te.Code == "unauthorized_client")
}

// runFlow performs the authorization code flow with PKCE S256, state,
// RFC 8707 resource and RFC 9207 iss checks, and exchanges the code.
//
// Registration recovery: when the token endpoint rejects a dynamically
// registered client (clientRejected), the code is spent, so the flow drops
// that client, registers again and runs the authorization once more
// with the new client — once only, so a server that rejects every client
// cannot make us loop. A browser step that never comes back with a
// dynamically registered client leaves the registration marked
// (setAwaiting), and the next flow registers a new client. A client
// registered here stays pending until the grant is stored (persist,
// promote): a flow that does not finish leaves the client in use, and
// its refresh token, as they were.
//
// Long: one authorization code flow (client, authorization URL, browser,
// callback checks, code exchange) inside the retry loop of the
// registration recovery above; the verifier, state and client of one
// iteration are used from the first step to the last, and the retry is a
// continue at the one place a rejected client is known.
func (a *Authenticator) runFlow(ctx context.Context, p flowParams) (*grant, *client, error) {
	id := p.srv.ID
	for attempt := 0; ; attempt++ {
		markStep(ctx, StepRegistration)
		if attempt == 0 && p.reregister {
			a.log.Info("oauth: registering a new client as asked", "server", id, "issuer", p.asm.Issuer)
		}
		cl, err := a.resolveFlowClient(ctx, p.srv, p.binding, p.asm, true, p.reregister)
		if err != nil {
			return nil, nil, stepErr(StepRegistration, id, err)
		}
		cfg := &oauth2.Config{
			ClientID:     cl.ID,
			ClientSecret: cl.Secret,
			Endpoint: oauth2.Endpoint{
				AuthURL:   p.asm.AuthorizationEndpoint,
				TokenURL:  p.asm.TokenEndpoint,
				AuthStyle: authStyle(cl.AuthMethod),
			},
			RedirectURL: a.redirectURI(p.srv),
			Scopes:      p.scopes,
		}
		if cl.AuthMethod == authNone {
			cfg.ClientSecret = ""
		}
		verifier := oauth2.GenerateVerifier()
		state := rand.Text()
		authURL := cfg.AuthCodeURL(state,
			oauth2.S256ChallengeOption(verifier),
			oauth2.SetAuthURLParam("resource", p.prm.Resource))
		a.log.Info("oauth: authorization needed; opening the authorization page",
			"server", id, "issuer", p.asm.Issuer, "authorization_endpoint", redactURL(p.asm.AuthorizationEndpoint),
			"scopes", p.scopes)

		markStep(ctx, StepAuthorization)
		if cl.Dynamic {
			a.setAwaiting(ctx, id, p.binding, cl.ID, true)
		}
		if p.share != nil {
			pf := &PendingFlow{ServerID: id, State: state, RedirectURI: cfg.RedirectURL, Binding: p.binding,
				Resource: p.prm.Resource, Issuer: p.asm.Issuer, IssRequired: p.asm.AuthorizationResponseIssParameterSupported,
				TokenEndpoint: p.asm.TokenEndpoint, ClientID: cl.ID, ClientSecret: cfg.ClientSecret, AuthMethod: cl.AuthMethod,
				Dynamic: cl.Dynamic, CIMD: cl.CIMD, Verifier: verifier, Scopes: p.scopes}
			if err := p.share(ctx, pf); err != nil {
				if cl.Dynamic {
					a.setAwaiting(ctx, id, p.binding, cl.ID, false)
				}
				return nil, nil, stepErr(StepAuthorization, id, err)
			}
		}
		res, err := p.browser(ctx, authURL)
		var elsewhere *CompletedElsewhere
		if errors.As(err, &elsewhere) {
			// Another process took the callback and stored the grant
			// (CompletePending): nothing is left to do here.
			return nil, cl, err
		}
		if err != nil {
			if cl.Dynamic {
				if neverCameBack(err) {
					// The mark stays: the next flow registers anew.
					err = &forgottenClientError{err: err}
				} else {
					// The browser step failed before it began (port
					// taken, origin not granted): nothing is suspect.
					a.setAwaiting(ctx, id, p.binding, cl.ID, false)
				}
			}
			return nil, nil, stepErr(StepAuthorization, id, err)
		}
		if cl.Dynamic {
			// Any callback, even an error, proves the authorization
			// server knows the client: it never redirects for an
			// unknown one.
			a.setAwaiting(ctx, id, p.binding, cl.ID, false)
		}
		if err := checkCallback(res, state, p.asm); err != nil {
			return nil, nil, stepErr(StepAuthorization, id, err)
		}

		tok, err := a.exchangeCode(ctx, id, cfg, res.Code, verifier, p.prm.Resource)
		if err != nil {
			if clientRejected(err) && cl.Dynamic {
				if derr := a.dropClient(context.WithoutCancel(ctx), id, p.binding, cl.ID); derr != nil {
					return nil, nil, stepErr(StepRegistration, id, derr)
				}
				if attempt == 0 {
					a.log.Warn("oauth: the token endpoint rejected the registered client; registering again and authorizing once more",
						"server", id, "issuer", p.asm.Issuer)
					continue
				}
				err = fmt.Errorf("%w; the authorization server rejected a freshly registered client as well, so registering again will not help", err)
			} else if clientRejected(err) && cl.CIMD {
				err = fmt.Errorf("%w; the authorization server refused the client ID metadata document %s as client id", err, cl.ID)
			} else if clientRejected(err) {
				err = fmt.Errorf("%w; check the configured auth.clientId and client secret", err)
			}
			return nil, nil, stepErr(StepToken, id, err)
		}
		g, err := grantFromOAuth2(tok, a.now(), p.scopes)
		if err != nil {
			return nil, nil, stepErr(StepToken, id, err)
		}
		return g, cl, nil
	}
}

// exchangeCode runs the token request of the authorization code grant:
// the PKCE verifier and RFC 8707 resource with the code, through the
// authenticator's client (no redirects, host permissions, exchange log).
// Its errors are exchangeError's.
func (a *Authenticator) exchangeCode(ctx context.Context, serverID string, cfg *oauth2.Config, code, verifier, resource string) (*oauth2.Token, error) {
	markStep(ctx, StepToken)
	xctx := withStep(hostperm.WithPurpose(context.WithValue(ctx, oauth2.HTTPClient, a.hc), hostperm.PurposeToken, serverID), StepToken)
	xctx, cancel := context.WithTimeout(xctx, requestTimeout)
	defer cancel()
	tok, err := cfg.Exchange(xctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		return nil, exchangeError(err, cfg.Endpoint.TokenURL)
	}
	return tok, nil
}

// neverCameBack reports a browser step that ended without a callback
// because nobody came back: it was abandoned or timed out, or (a headless
// browser) the authorization endpoint answered instead of redirecting.
func neverCameBack(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, ErrBadCallback)
}

// forgottenClientError is a browser step with a dynamically registered
// client that never came back: the cause, with the advice that the next
// login registers a new client (ErrMaybeForgottenClient).
type forgottenClientError struct {
	err error
}

func (e *forgottenClientError) Error() string {
	return fmt.Sprintf("%v; if the authorization page showed an error such as invalid_client or \"unknown client\", the authorization server has forgotten remotemcp's registration (for example after a restart): the next sign-in registers a new client", e.err)
}

func (e *forgottenClientError) Unwrap() []error { return []error{e.err, ErrMaybeForgottenClient} }

// exchangeError turns x/oauth2's errors into ours: a redirect becomes
// ErrRedirectRefused, an error response a *TokenError (without the body,
// which x/oauth2 would otherwise print).
func exchangeError(err error, tokenURL string) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
		if status >= 300 && status < 400 {
			return redirectError(http.MethodPost, tokenURL, re.Response)
		}
	}
	return &TokenError{Status: status, Code: sanitize(re.ErrorCode, 60), Description: sanitize(re.ErrorDescription, 200)}
}

// authStyle maps a token endpoint auth method to x/oauth2's style. It is
// never AutoDetect: that retries a failed request the other way, sending
// the credentials twice.
func authStyle(method string) oauth2.AuthStyle {
	if method == authBasic {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}
