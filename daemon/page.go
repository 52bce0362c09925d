package daemon

import (
	"bytes"
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/remotemcp/remotemcp/localapi"
)

// assets holds the settings page: html/template files rendered by the
// daemon and the static script and stylesheet. They are embedded, so the
// binary is the whole product and there is no Node build step.
//
//go:embed assets
var assets embed.FS

var templates = template.Must(template.New("").Funcs(template.FuncMap{"stateLabel": stateLabel}).ParseFS(assets, "assets/*.html"))

// stateLabel is a state in the page's words (localapi.Table) for the
// first paint, before app.js takes over with the same table and the finer
// words of the reason ("can't reach the server").
func stateLabel(s localapi.State) string {
	if w := localapi.Table.States[s]; w.Label != "" && s != localapi.StateDisabled {
		return w.Label
	}
	return string(s)
}

// wordsJSON is localapi.Table as the page reads it (index.html's
// data-words): the page has no words of its own for states and reasons.
var wordsJSON = func() string {
	b, err := json.Marshal(localapi.Table)
	if err != nil {
		panic(err) // a table of strings always encodes
	}
	return string(b)
}()

// pageData is what index.html renders before the script takes over.
type pageData struct {
	Version string
	Words   string // wordsJSON
	Servers []localapi.Server
	Grants  localapi.GrantsState
	// Person is who is signed in on a gateway's page ("" on a personal
	// daemon's), Admin whether they are one of its admins, SignOut
	// whether the page can sign them out (not through a proxy).
	Person         string
	Admin, SignOut bool
}

// messageData is what message.html renders.
type messageData struct {
	Title, Message string
	// Refresh, when set, sends the browser on to this local path.
	Refresh string
	// Link, when set, is a local path offered as LinkText.
	Link, LinkText string
}

// callbackPage is what callback.html renders.
type callbackPage struct {
	Server, Title, Message string
	OK                     bool
}

// render executes a template into a buffer first, so a failure never
// sends half a page, and scrubs the result like every API answer.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("daemon: render", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(s.scrub.scrub(buf.Bytes()))
}

func (s *Server) renderMessage(w http.ResponseWriter, status int, title, msg string) {
	s.render(w, status, "message.html", messageData{Title: title, Message: msg})
}

// handlePage serves GET <prefix>: the settings page, rendered with the
// current servers and grants; app.js then follows <prefix>api/events.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	s.renderPage(w, r, s.o.Engine, pageData{})
}

// renderPage renders the settings page of eng, the engine the request
// acts for, with what data says of who is signed in.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, eng localapi.Engine, data pageData) {
	ctx := r.Context()
	srvs, err := eng.Servers(ctx)
	if err != nil {
		s.renderMessage(w, http.StatusInternalServerError, "Cannot read the servers", err.Error())
		return
	}
	// The grants show when they can be read; the live updates follow.
	g, _ := eng.Grants(ctx)
	p, _ := eng.Pending(ctx)
	version := s.o.Version
	if version == "" {
		if h, err := eng.Health(ctx); err == nil {
			version = h.Version
		}
	}
	data.Version, data.Words, data.Servers, data.Grants = version, wordsJSON, srvs, localapi.GrantsState{Grants: g, Pending: p}
	s.render(w, http.StatusOK, "index.html", data)
}

// handleRoot serves GET /: the settings page is not here (it lives under
// the secret prefix, which only a login link leads to), so this says how
// to get there.
func (s *Server) handleRoot(w http.ResponseWriter, r *http.Request) {
	s.renderMessage(w, http.StatusUnauthorized, "Log in to remotemcp",
		"The settings page opens through a one-time login link: run `remotemcp open`, or use the link `remotemcp serve` printed.")
}

// handleLogin serves GET /login?token=…: redeems a one-time login token
// for a session cookie (HttpOnly, SameSite=Strict, Path=<prefix>, so the
// browser sends it to the settings page and its API only). The answer is a
// page that moves on to the settings page by itself rather than a
// redirect: a Strict cookie is not sent along a redirect chain that began
// on another site (the person clicked the link in a chat or mail page),
// but it is sent when our own page navigates.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.sessions.redeem(r.URL.Query().Get("token"))
	if !ok {
		s.renderMessage(w, http.StatusUnauthorized, "This login link does not work",
			"A login link works once and only for a few minutes. Ask for a new one: run `remotemcp open`, or restart `remotemcp serve`.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: sess, Path: s.prefix,
		MaxAge: int(SessionTTL.Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
	s.render(w, http.StatusOK, "message.html", messageData{Title: "Logged in", Message: "Opening the remotemcp settings page…", Refresh: s.prefix})
}

// handleLogout serves POST <prefix>api/logout: ends the page's session.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		s.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: s.prefix, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// handleStatic serves GET /static/…: app.js and style.css. They hold no
// data, so they need no credential (the 401 page uses the stylesheet too).
func (s *Server) handleStatic(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/static/")
	if name == "" || strings.Contains(name, "/") || strings.HasSuffix(name, ".html") {
		s.renderMessage(w, http.StatusNotFound, "Not found", "There is no such file.")
		return
	}
	b, err := fs.ReadFile(assets, "assets/"+name)
	if err != nil {
		s.renderMessage(w, http.StatusNotFound, "Not found", "There is no such file.")
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Write(b)
}

// callbackHandler serves GET /mcp-oauth, the loopback redirect URI of the
// engine's sign-in flows: localapi.CallbackHandler (the engine's own
// loopback listeners serve the same), drawn with the daemon's template.
func (s *Server) callbackHandler() http.Handler {
	cr, ok := s.o.Engine.(localapi.CallbackReceiver)
	if !ok {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.render(w, http.StatusNotFound, "callback.html", callbackPage{Title: "No sign-in here",
				Message: "This remotemcp daemon runs no sign-in flows. Start the sign-in again from the settings page or the CLI."})
		})
	}
	return localapi.CallbackHandler(cr, s.renderCallback)
}

// renderCallback draws how a callback ended in the settings page's words
// and look: a refused one keeps its code's status (never a 5xx: the
// response was not the daemon's failure).
func (s *Server) renderCallback(w http.ResponseWriter, f *localapi.AuthFlow, err error) {
	if err != nil {
		status := toError(err).Status
		if status >= 500 {
			status = http.StatusBadRequest
		}
		s.render(w, status, "callback.html", callbackPage{Title: "Authorization response not accepted",
			Message: "This response does not belong to a sign-in remotemcp is waiting for, or it arrived already, and was ignored. " +
				"Return to the settings page and click Authorize again if the server still needs it."})
		return
	}
	page := callbackPage{Server: f.ServerID}
	switch f.Phase {
	case localapi.PhaseDone:
		page.OK = true
		page.Title = "Authorization complete"
		page.Message = "remotemcp is authorized for " + f.ServerID + ". You can close this tab."
	case localapi.PhaseFailed:
		page.Title = "Authorization failed"
		page.Message = f.Error
	default:
		page.Title = "Authorization in progress"
		page.Message = "remotemcp is finishing the authorization; the settings page shows the result."
	}
	s.render(w, http.StatusOK, "callback.html", page)
}
