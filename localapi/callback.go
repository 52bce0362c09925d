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
// never echoes a parameter back. render draws the page of how it ended
// in the words of its listener (the daemon's styled template); nil draws
// CallbackOutcome's page, plain, with its own security headers.
func CallbackHandler(cr CallbackReceiver, render func(w http.ResponseWriter, v *AuthFlow, err error)) http.Handler {
	plain := render == nil
	if plain {
		render = func(w http.ResponseWriter, v *AuthFlow, err error) { plainCallbackPage(w, CallbackOutcome(v, err)) }
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if plain {
			// A listener of its own: every answer carries the headers
			// of a page that loads nothing.
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-store")
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		}
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
		render(w, v, err)
	})
}

// CallbackOutcome is the page of what CompleteAuthorization returned, in
// the words of the engine's own loopback listeners: a response that
// cannot be read or belongs to no sign-in is 400, a second delivery 409.
func CallbackOutcome(v *AuthFlow, err error) CallbackPage {
	if err != nil {
		e, _ := AsError(err)
		switch {
		case e != nil && e.Code == CodeBadRequest:
			return CallbackPage{Status: http.StatusBadRequest, Title: "Authorization response not understood",
				Message: "remotemcp could not read this authorization response. Return to remotemcp and sign in again."}
		case e != nil && e.Code == CodeConflict:
			return CallbackPage{Status: http.StatusConflict, Title: "Already received",
				Message: "remotemcp already has the answer for this sign-in. You can close this tab."}
		}
		return CallbackPage{Status: http.StatusBadRequest, Title: "Unexpected authorization response",
			Message: "This response does not belong to a sign-in remotemcp is waiting for, and was ignored."}
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

// plainCallbackPage draws p as a small page of its own (CallbackHandler
// set its headers).
func plainCallbackPage(w http.ResponseWriter, p CallbackPage) {
	w.WriteHeader(p.Status)
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>remotemcp</title>"+
		"<body style=\"font-family:system-ui,sans-serif;margin:3em auto;max-width:36em\"><h1>%s</h1><p>%s</p>\n",
		html.EscapeString(p.Title), html.EscapeString(p.Message))
}
