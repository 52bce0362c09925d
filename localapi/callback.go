package localapi

import (
	"fmt"
	"html"
	"net/http"
)

// CallbackPath is the path of the loopback redirect URI of every sign-in
// (oauth.CallbackPath).
const CallbackPath = "/mcp-oauth"

// CallbackPage is what the browser tab that delivered a sign-in callback
// shows: the HTTP status, a title and a message. OK is set for a sign-in
// that completed; ServerID names its server when known.
type CallbackPage struct {
	Status         int
	Title, Message string
	ServerID       string
	OK             bool
}

// CallbackHandler is the one handler of GET /mcp-oauth, the loopback
// redirect URI: it hands the callback to cr.CompleteAuthorization, which
// matches it to its flow by state, and shows how it ended. The daemon
// mounts it on its listener, the engine on its own loopback listeners.
// It needs no credential (the browser comes from the authorization
// server): only a state the engine waits for is accepted, and the page
// never echoes a parameter back. render draws the page (the daemon's
// styled template); nil draws a plain one with its own security headers.
func CallbackHandler(cr CallbackReceiver, render func(w http.ResponseWriter, p CallbackPage)) http.Handler {
	if render == nil {
		render = plainCallbackPage
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != CallbackPath {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		v, err := cr.CompleteAuthorization(r.Context(), r.URL.Query())
		render(w, callbackOutcome(v, err))
	})
}

// callbackOutcome is the page of what CompleteAuthorization returned. A
// refused callback keeps its code's status, never a 5xx: the response
// was not the daemon's failure.
func callbackOutcome(v *AuthFlow, err error) CallbackPage {
	if err != nil {
		p := CallbackPage{Status: http.StatusBadRequest, Title: "Unexpected authorization response",
			Message: "This response does not belong to a sign-in remotemcp is waiting for, and was ignored."}
		e, ok := AsError(err)
		if ok && e.Status >= 400 && e.Status < 500 {
			p.Status = e.Status
		}
		switch {
		case ok && e.Code == CodeBadRequest:
			p.Title, p.Message = "Authorization response not understood", "remotemcp could not read this authorization response. Return to remotemcp and sign in again."
		case ok && e.Code == CodeConflict:
			p.Title, p.Message = "Already received", "remotemcp already has the answer for this sign-in. You can close this tab."
		}
		return p
	}
	p := CallbackPage{Status: http.StatusOK}
	if v != nil {
		p.ServerID = v.ServerID
	}
	switch {
	case v == nil || v.Phase != PhaseDone && v.Phase != PhaseFailed:
		p.Title, p.Message = "Authorization in progress", "remotemcp is finishing the sign-in; it shows the result where you started it."
	case v.Phase == PhaseDone:
		p.OK = true
		p.Title, p.Message = "Authorization complete", "remotemcp is signed in to "+v.ServerID+". You can close this tab."
	default:
		p.Title, p.Message = "Authorization failed", v.Error
	}
	return p
}

// plainCallbackPage draws p as a small page of its own, with the headers
// of a page that loads nothing.
func plainCallbackPage(w http.ResponseWriter, p CallbackPage) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(p.Status)
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>remotemcp</title>"+
		"<body style=\"font-family:system-ui,sans-serif;margin:3em auto;max-width:36em\"><h1>%s</h1><p>%s</p>\n",
		html.EscapeString(p.Title), html.EscapeString(p.Message))
}
