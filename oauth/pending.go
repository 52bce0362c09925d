package oauth

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/remotemcp/remotemcp/config"
)

// Sign-ins across processes (SPEC §9 A11, issue #23): a gateway runs as
// several replicas behind a load balancer, and the authorization server
// sends the person's browser back to whichever replica the balancer
// picks. The flow that started the sign-in hands its PendingFlow to
// LoginOptions.Share (the gateway keeps it, sealed, in PostgreSQL); the
// replica the callback reaches completes it with CompletePending — the
// code exchange, the grant stored as a Login stores it — and the flow
// that started it ends through its Browser returning *CompletedElsewhere.

// PendingFlow is everything the code exchange of one authorization
// request needs once the browser comes back: secret (the PKCE verifier,
// the state, a client secret), so whoever keeps it seals it.
type PendingFlow struct {
	ServerID string `json:"serverId"`
	// State is the state sent in the authorization request.
	State string `json:"state"`
	// RedirectURI is the redirect URI sent (and to send again).
	RedirectURI string `json:"redirectUri"`
	// Binding is the resource + issuer the grant is bound to (R3.10).
	Binding config.Binding `json:"binding"`
	// Resource is the RFC 8707 resource sent.
	Resource string `json:"resource"`
	// Issuer is the authorization server's issuer, which the callback's
	// RFC 9207 iss must equal; IssRequired: its metadata advertises the
	// parameter, so it must be there.
	Issuer      string `json:"issuer"`
	IssRequired bool   `json:"issRequired,omitempty"`
	// TokenEndpoint is where the code is exchanged.
	TokenEndpoint string `json:"tokenEndpoint"`
	// The client: its id, secret (none for a public client) and token
	// endpoint authentication; Dynamic: registered (DCR), CIMD: a client
	// ID metadata document URL.
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	AuthMethod   string `json:"authMethod"`
	Dynamic      bool   `json:"dynamic,omitempty"`
	CIMD         bool   `json:"cimd,omitempty"`
	// Verifier is the PKCE code verifier.
	Verifier string `json:"verifier"`
	// Scopes are the scopes asked for.
	Scopes []string `json:"scopes,omitempty"`
}

// CompletedElsewhere is what a Browser of a Login with Share returns when
// another process took the callback and completed the flow
// (CompletePending): the grant is stored, and Login reports Result.
type CompletedElsewhere struct {
	Result LoginResult
}

func (e *CompletedElsewhere) Error() string {
	return "the sign-in was completed by another remotemcp process"
}

// CompletePending completes pf with the callback res, as the flow that
// started it would have: the state and RFC 9207 iss checks, the code
// exchange (with the verifier, resource and redirect URI of the
// authorization request), then, under the server's OAuth lock, the grant
// stored (the refresh token sealed in the store, the access token in this
// process's memory only, R3.11) and the binding recorded. A client the
// token endpoint rejects is dropped when it was registered, so that the
// next sign-in registers a new one (the flow that started cannot retry:
// the code is spent).
func (a *Authenticator) CompletePending(ctx context.Context, pf *PendingFlow, res *CallbackResult) (*LoginResult, error) {
	if pf == nil {
		return nil, errNoPending
	}
	id := pf.ServerID
	cl := &client{ID: pf.ClientID, Secret: pf.ClientSecret, AuthMethod: pf.AuthMethod, Dynamic: pf.Dynamic, CIMD: pf.CIMD}
	if cl.Dynamic {
		// Any callback proves the authorization server knows the client
		// (runFlow).
		a.setAwaiting(ctx, id, pf.Binding, cl.ID, false)
	}
	asm := &oauthex.AuthServerMeta{Issuer: pf.Issuer, AuthorizationResponseIssParameterSupported: pf.IssRequired, TokenEndpoint: pf.TokenEndpoint}
	if err := checkCallback(res, pf.State, asm); err != nil {
		return nil, stepErr(StepAuthorization, id, err)
	}
	cfg := &oauth2.Config{
		ClientID:     cl.ID,
		ClientSecret: cl.Secret,
		Endpoint:     oauth2.Endpoint{TokenURL: pf.TokenEndpoint, AuthStyle: authStyle(cl.AuthMethod)},
		RedirectURL:  pf.RedirectURI,
		Scopes:       pf.Scopes,
	}
	if cl.AuthMethod == authNone {
		cfg.ClientSecret = ""
	}
	tok, err := a.exchangeCode(ctx, id, cfg, res.Code, pf.Verifier, pf.Resource)
	if err != nil {
		switch {
		case clientRejected(err) && cl.Dynamic:
			if derr := a.dropClient(context.WithoutCancel(ctx), id, pf.Binding, cl.ID); derr != nil {
				return nil, stepErr(StepRegistration, id, derr)
			}
			err = fmt.Errorf("%w; the authorization server no longer knows remotemcp's client, and the next sign-in registers a new one", err)
		case clientRejected(err) && cl.CIMD:
			err = fmt.Errorf("%w; the authorization server refused the client ID metadata document %s as client id", err, cl.ID)
		case clientRejected(err):
			err = fmt.Errorf("%w; check the configured auth.clientId and client secret", err)
		}
		return nil, stepErr(StepToken, id, err)
	}
	g, err := grantFromOAuth2(tok, a.now(), pf.Scopes)
	if err != nil {
		return nil, stepErr(StepToken, id, err)
	}
	// As authorize stores a grant: not cut short by a caller giving up.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	unlock, err := a.lockServer(pctx, id)
	if err != nil {
		return nil, stepErr(StepToken, id, fmt.Errorf("taking the server's OAuth lock: %w", err))
	}
	err = a.persist(pctx, id, pf.Binding, cl.ID, g, false)
	if err == nil {
		err = a.rebind(pctx, config.Server{ID: id}, pf.Binding)
	}
	unlock()
	if err != nil {
		return nil, stepErr(StepToken, id, err)
	}
	a.resetStepUps(id)
	a.log.Info("oauth: authorized (a callback of a sign-in started elsewhere)", "server", id, "issuer", pf.Binding.Issuer, "scopes", g.Scopes, "refresh_token", g.RefreshToken != "")
	return &LoginResult{Binding: pf.Binding, ClientID: cl.ID, Registered: cl.Dynamic, Scopes: g.Scopes,
		ExpiresAt: g.Expiry, RefreshToken: g.RefreshToken != ""}, nil
}

// errNoPending is CompletePending's answer for a nil flow.
var errNoPending = errors.New("no pending flow")
