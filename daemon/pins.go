package daemon

import (
	"net/http"

	"github.com/remotemcp/remotemcp/localapi"
)

// registerPins adds the routes of tool pinning (issue #20 item 3): the
// held tools with their old and new definitions, and accepting them.
// The page reaches them under its prefix, with its CSRF check, like the
// other page actions.
func (a *api) registerPins(mux routeMux) {
	mux.HandleFunc("GET /api/held-tools", a.heldTools)
	mux.HandleFunc("POST /api/servers/{id}/held-tools/accept", a.acceptTools)
}

// pinReviewer is the engine's pin review, or an error answer.
func (a *api) pinReviewer(w http.ResponseWriter) (localapi.PinReviewer, bool) {
	pr, ok := a.eng.(localapi.PinReviewer)
	if !ok {
		a.error(w, &localapi.Error{Status: http.StatusNotImplemented, Code: localapi.CodeUnavailable, Message: "this engine does not pin tool definitions"})
	}
	return pr, ok
}

func (a *api) heldTools(w http.ResponseWriter, r *http.Request) {
	pr, ok := a.pinReviewer(w)
	if !ok {
		return
	}
	v, err := pr.HeldTools(r.Context(), r.URL.Query().Get("server"))
	a.reply(w, http.StatusOK, nonNil(v), err)
}

func (a *api) acceptTools(w http.ResponseWriter, r *http.Request) {
	pr, ok := a.pinReviewer(w)
	if !ok {
		return
	}
	req, err := decode[localapi.AcceptToolsRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	v, err := pr.AcceptTools(r.Context(), r.PathValue("id"), req)
	a.reply(w, http.StatusOK, v, err)
}
