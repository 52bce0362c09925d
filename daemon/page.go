package daemon

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// assets holds the settings page: html/template files rendered by the
// daemon and the static script and stylesheet. They are embedded, so the
// binary is the whole product and there is no Node build step.
//
//go:embed assets
var assets embed.FS

var templates = template.Must(template.ParseFS(assets, "assets/*.html"))

// pageData is what index.html renders before the script takes over.
type pageData struct {
	Version string
	Servers []ServerView
	Grants  Grants
}

// messageData is what message.html renders.
type messageData struct {
	Title, Message string
	// Refresh, when set, sends the browser on to this local path.
	Refresh string
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
	w.Write(s.scrub(buf.Bytes()))
}

func (s *Server) renderMessage(w http.ResponseWriter, status int, title, msg string) {
	s.render(w, status, "message.html", messageData{Title: title, Message: msg})
}

func (s *Server) renderCallback(w http.ResponseWriter, status int, p callbackPage) {
	s.render(w, status, "callback.html", p)
}

// handlePage serves GET <prefix>: the settings page, rendered with the
// current servers and grants; app.js then follows <prefix>api/events.
func (s *Server) handlePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	views, err := s.serverViews(ctx)
	if err != nil {
		s.renderMessage(w, http.StatusInternalServerError, "Cannot read the servers", err.Error())
		return
	}
	g, _ := s.grants(ctx)
	s.render(w, http.StatusOK, "index.html", pageData{Version: s.o.Version, Servers: views, Grants: g})
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

// handleStatic serves GET /static/…: app.js and style.css. They hold no
// data, so they need no token (the 401 page uses the stylesheet too).
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
