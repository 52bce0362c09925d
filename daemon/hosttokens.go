package daemon

import (
	"net/http"

	"github.com/remotemcp/remotemcp/localapi"
)

// The bearer tokens of the MCP endpoint over HTTP (localapi.HostTokens),
// for the socket and a gateway's page: a token is a credential shown
// once; a person on a gateway makes theirs on the page (their engine's
// tokens, for their hosts), while a personal daemon's page has no use for
// one.

// hostTokens is the engine's localapi.HostTokens, or the error answer of
// a request that may not or cannot reach it.
func (a *api) hostTokens(r *http.Request) (localapi.HostTokens, error) {
	// A person signed in on a gateway's page manages their own tokens
	// there; a personal daemon's page leaves them to the CLI.
	if c := callerOf(r.Context()); c.page != "" && c.person == "" {
		return nil, &localapi.Error{Status: http.StatusForbidden, Code: localapi.CodeForbidden,
			Message: "the MCP endpoint's tokens are managed with \"remotemcp mcp token\", not on the settings page"}
	}
	ht, ok := a.eng.(localapi.HostTokens)
	if !ok {
		return nil, &localapi.Error{Status: http.StatusNotImplemented, Code: localapi.CodeUnavailable,
			Message: "this engine keeps no tokens for the MCP endpoint"}
	}
	return ht, nil
}

func (a *api) listHostTokens(w http.ResponseWriter, r *http.Request) {
	ht, err := a.hostTokens(r)
	if err != nil {
		a.error(w, err)
		return
	}
	v, err := ht.HostTokens(r.Context())
	a.reply(w, http.StatusOK, nonNil(v), err)
}

// hostTokenRequest decodes the body of a token request whose field (name
// or token) must be given.
func (a *api) hostTokenRequest(w http.ResponseWriter, r *http.Request, field string) (localapi.HostTokens, localapi.HostTokenRequest, bool) {
	ht, err := a.hostTokens(r)
	if err != nil {
		a.error(w, err)
		return nil, localapi.HostTokenRequest{}, false
	}
	req, err := decode[localapi.HostTokenRequest](w, r, maxBody)
	if err == nil && field == "name" && req.Name == "" {
		err = badRequest("name", "give the token's name")
	}
	if err == nil && field == "token" && req.Token == "" {
		err = badRequest("token", "give the token to check")
	}
	if err != nil {
		a.error(w, err)
		return nil, req, false
	}
	return ht, req, true
}

func (a *api) createHostToken(w http.ResponseWriter, r *http.Request) {
	if ht, req, ok := a.hostTokenRequest(w, r, "name"); ok {
		v, err := ht.CreateHostToken(r.Context(), req.Name)
		a.reply(w, http.StatusCreated, v, err)
	}
}

func (a *api) revokeHostToken(w http.ResponseWriter, r *http.Request) {
	if ht, req, ok := a.hostTokenRequest(w, r, "name"); ok {
		a.reply(w, 0, nil, ht.RevokeHostToken(r.Context(), req.Name))
	}
}

func (a *api) checkHostToken(w http.ResponseWriter, r *http.Request) {
	if ht, req, ok := a.hostTokenRequest(w, r, "token"); ok {
		v, err := ht.CheckHostToken(r.Context(), req.Token)
		a.reply(w, http.StatusOK, v, err)
	}
}
