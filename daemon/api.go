package daemon

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/remotemcp/remotemcp/localapi"
)

// api is the local API: one handler per Engine method, each of which
// decodes, makes one engine call and encodes (Tailscale's LocalAPI
// shape). The same api serves the Unix socket (full access), the
// settings page under its secret prefix (session cookie) and the
// in-memory connections of one CLI command (InProcess).
type api struct {
	eng localapi.Engine
	out
	// version overrides the engine's in /api/health when set.
	version string
	// inProcess marks /api/health of InProcess.
	inProcess bool
	calls     *calls
	// holders are the open event streams and the resource
	// subscriptions each holds (holders.go).
	holders holders
	// loginURL makes a login link of the settings page; nil when there is
	// no page (in-process).
	loginURL func() *localapi.LoginURL

	muxOnce sync.Once
	mux     http.Handler // handler's
}

func newAPI(eng localapi.Engine, log *slog.Logger, scrub *scrubber) *api {
	return &api{eng: eng, out: out{log: log, scrub: scrub}, calls: newCalls()}
}

// caller is who sent a request: the socket (whoever may open it) or one
// settings page session. An approval is taken only from the caller whose
// call asked for it.
type caller struct {
	// page is the session's hash for a settings page request, "" on the
	// socket.
	page string
	// person is the email of the person signed in on a gateway's page;
	// "" on a personal daemon's.
	person string
}

type callerKey struct{}

func withCaller(ctx context.Context, c caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// register adds the API routes to mux (patterns rooted at /api/).
func (a *api) register(mux routeMux) {
	mux.HandleFunc("GET /api/health", a.health)
	mux.HandleFunc("POST /api/login-url", a.login)
	mux.HandleFunc("GET /api/events", a.events)
	mux.HandleFunc("GET /api/subscriptions/hold", a.hold)

	mux.HandleFunc("GET /api/servers", a.servers)
	mux.HandleFunc("POST /api/servers", a.addServer)
	mux.HandleFunc("POST /api/servers/import", a.importServers)
	mux.HandleFunc("GET /api/servers/{id}", a.server)
	mux.HandleFunc("PATCH /api/servers/{id}", a.updateServer)
	mux.HandleFunc("DELETE /api/servers/{id}", a.removeServer)
	mux.HandleFunc("POST /api/servers/{id}/enable", a.setEnabled(true))
	mux.HandleFunc("POST /api/servers/{id}/disable", a.setEnabled(false))
	mux.HandleFunc("POST /api/servers/{id}/tools", a.setTool)
	mux.HandleFunc("POST /api/servers/{id}/connect", a.connect)
	mux.HandleFunc("POST /api/servers/{id}/disconnect", a.disconnect)
	mux.HandleFunc("GET /api/servers/{id}/log", a.serverLog)
	mux.HandleFunc("POST /api/servers/{id}/authorize", a.authorize)
	mux.HandleFunc("GET /api/servers/{id}/authorize", a.authorization)
	mux.HandleFunc("GET /api/servers/{id}/authorize/wait", a.waitAuthorization)
	mux.HandleFunc("POST /api/servers/{id}/logout", a.logout)
	mux.HandleFunc("GET /api/auth", a.authStatus)

	mux.HandleFunc("GET /api/grants", a.grants)
	mux.HandleFunc("POST /api/grants", a.grant)
	mux.HandleFunc("POST /api/grants/revoke", a.revoke)
	mux.HandleFunc("GET /api/pending", a.pending)
	mux.HandleFunc("POST /api/pending/dismiss", a.dismiss)

	mux.HandleFunc("GET /api/host-tokens", a.listHostTokens)
	mux.HandleFunc("POST /api/host-tokens", a.createHostToken)
	mux.HandleFunc("POST /api/host-tokens/revoke", a.revokeHostToken)
	mux.HandleFunc("POST /api/host-tokens/check", a.checkHostToken)

	mux.HandleFunc("GET /api/tools", a.tools)
	mux.HandleFunc("POST /api/calls", a.call)
	mux.HandleFunc("POST /api/calls/{operationId}/approval", a.approval)
	mux.HandleFunc("POST /api/calls/{operationId}/cancel", a.cancelCall)

	mux.HandleFunc("GET /api/cards", a.cards)
	mux.HandleFunc("GET /api/cards/{id}", a.card)
	mux.HandleFunc("POST /api/cards/{id}/answer", a.answer)
	mux.HandleFunc("POST /api/cards/{id}/retry", a.retry)

	mux.HandleFunc("GET /api/prompts", a.prompts)
	mux.HandleFunc("POST /api/prompts/get", a.getPrompt)
	mux.HandleFunc("POST /api/complete", a.complete)
	mux.HandleFunc("POST /api/calls/{operationId}/sampling/{id}", a.sampling)
	mux.HandleFunc("POST /api/subscriptions", a.subscribeResource)
	mux.HandleFunc("POST /api/subscriptions/remove", a.unsubscribeResource)
	mux.HandleFunc("POST /api/log-level", a.setLogLevel)
	mux.HandleFunc("GET /api/resources", a.resources)
	mux.HandleFunc("POST /api/resources/read", a.readResource)
	a.registerPins(mux) // pins.go (issue #20 item 3)

	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		a.error(w, &localapi.Error{Status: http.StatusNotFound, Code: localapi.CodeNotFound, Message: "no such API route: " + r.Method + " " + r.URL.Path})
	})
}

// handler is the API alone, for a socket (made once).
func (a *api) handler() http.Handler {
	a.muxOnce.Do(func() {
		mux := http.NewServeMux()
		a.register(mux)
		a.mux = mux
	})
	return a.mux
}

// by is who a grant made through this request is attributed to: the
// settings page for its requests (a page cannot claim to be the CLI),
// else what the caller said (the engine's default when nothing).
func by(ctx context.Context, said localapi.By) localapi.By {
	if callerOf(ctx).page != "" {
		return localapi.BySettingsPage
	}
	return said
}

func (a *api) health(w http.ResponseWriter, r *http.Request) {
	h, err := a.eng.Health(r.Context())
	if err == nil {
		if a.version != "" {
			h.Version = a.version
		}
		h.InProcess = a.inProcess
	}
	a.reply(w, http.StatusOK, h, err)
}

// login serves POST /api/login-url: a one-time login URL of the settings
// page (`remotemcp open`).
func (a *api) login(w http.ResponseWriter, r *http.Request) {
	if a.loginURL == nil {
		a.error(w, &localapi.Error{Status: http.StatusNotFound, Code: localapi.CodeNotFound,
			Message: "there is no settings page: no daemon is running (start one with `remotemcp serve`)"})
		return
	}
	a.json(w, http.StatusOK, a.loginURL())
}

func (a *api) servers(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Servers(r.Context())
	a.reply(w, http.StatusOK, nonNil(v), err)
}

func (a *api) server(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Server(r.Context(), r.PathValue("id"))
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) addServer(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.AddServerRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	a.scrub.add(req.Token, req.ClientSecret)
	for _, v := range req.Headers {
		a.scrub.add(v)
	}
	req.By = by(r.Context(), req.By)
	v, err := a.eng.AddServer(r.Context(), req)
	a.reply(w, http.StatusCreated, v, err)
}

func (a *api) importServers(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.ImportRequest](w, r, maxImportBody)
	if err != nil {
		a.error(w, err)
		return
	}
	for _, v := range req.Env {
		a.scrub.add(v)
	}
	req.By = by(r.Context(), req.By)
	v, err := a.eng.Import(r.Context(), req)
	if err == nil {
		a.scrub.refresh(r.Context(), a.eng)
	}
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) updateServer(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.UpdateServerRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	if req.Token != nil {
		a.scrub.add(*req.Token)
	}
	if req.Auth != nil {
		a.scrub.add(req.Auth.Token, req.Auth.ClientSecret)
	}
	for _, v := range req.Headers {
		a.scrub.add(v)
	}
	v, err := a.eng.UpdateServer(r.Context(), r.PathValue("id"), req)
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) removeServer(w http.ResponseWriter, r *http.Request) {
	a.reply(w, 0, nil, a.eng.RemoveServer(r.Context(), r.PathValue("id")))
}

func (a *api) setEnabled(on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := a.eng.SetEnabled(r.Context(), r.PathValue("id"), on)
		a.reply(w, http.StatusOK, v, err)
	}
}

func (a *api) setTool(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.ToolSwitch](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	if req.Tool == "" {
		a.error(w, badRequest("tool", "tool is required"))
		return
	}
	v, err := a.eng.SetTool(r.Context(), r.PathValue("id"), req.Tool, req.Enabled)
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) connect(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Connect(r.Context(), r.PathValue("id"))
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) disconnect(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Disconnect(r.Context(), r.PathValue("id"))
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) serverLog(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Log(r.Context(), r.PathValue("id"))
	a.reply(w, http.StatusOK, nonNil(v), err)
}

// authorize takes optional AuthorizeOptions as its body; the settings
// page sends none.
func (a *api) authorize(w http.ResponseWriter, r *http.Request) {
	var opts []localapi.AuthorizeOptions
	if r.ContentLength != 0 {
		o, err := decode[localapi.AuthorizeOptions](w, r, maxBody)
		if err != nil {
			a.error(w, err)
			return
		}
		opts = append(opts, o)
	}
	v, err := a.eng.Authorize(r.Context(), r.PathValue("id"), opts...)
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) authorization(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Authorization(r.Context(), r.PathValue("id"))
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) waitAuthorization(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.WaitAuthorization(r.Context(), r.PathValue("id"))
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) logout(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Logout(r.Context(), r.PathValue("id"))
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) authStatus(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.AuthStatus(r.Context(), r.URL.Query()["serverId"]...)
	a.reply(w, http.StatusOK, nonNil(v), err)
}

func (a *api) grants(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Grants(r.Context())
	a.reply(w, http.StatusOK, nonNil(v), err)
}

func (a *api) pending(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Pending(r.Context())
	a.reply(w, http.StatusOK, nonNil(v), err)
}

func (a *api) grant(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.OriginRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	a.reply(w, 0, nil, a.eng.Grant(r.Context(), req.Origin, string(by(r.Context(), req.By))))
}

func (a *api) revoke(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.OriginRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	a.reply(w, 0, nil, a.eng.Revoke(r.Context(), req.Origin))
}

func (a *api) dismiss(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.OriginRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	a.reply(w, 0, nil, a.eng.DismissPending(r.Context(), req.Origin))
}

func (a *api) tools(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := localapi.ToolsRequest{ServerID: q.Get("serverId"), Connect: truthy(q.Get("connect"))}
	if el, ok := a.eng.(localapi.EncodedToolLister); ok {
		// The engine keeps the list encoded (the same bytes as encoding
		// Tools): with 500 servers of 50 tools, encoding ~16 MB on every
		// listing cost most of it (issue #21).
		b, err := el.EncodedTools(r.Context(), req)
		if err != nil {
			a.error(w, err)
			return
		}
		a.encoded(w, http.StatusOK, b)
		return
	}
	v, err := a.eng.Tools(r.Context(), req)
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) cancelCall(w http.ResponseWriter, r *http.Request) {
	a.reply(w, 0, nil, a.eng.CancelCall(r.Context(), r.PathValue("operationId")))
}

func (a *api) cards(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Cards(r.Context())
	a.reply(w, http.StatusOK, nonNil(v), err)
}

func (a *api) card(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Card(r.Context(), r.PathValue("id"))
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) answer(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.Answer](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	a.reply(w, 0, nil, a.eng.Answer(r.Context(), r.PathValue("id"), req))
}

func (a *api) retry(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.RetryRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	v, err := a.eng.Retry(r.Context(), r.PathValue("id"), req.Confirmed)
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) prompts(w http.ResponseWriter, r *http.Request) {
	v, err := a.eng.Prompts(r.Context(), r.URL.Query().Get("serverId"))
	a.reply(w, http.StatusOK, nonNil(v), err)
}

func (a *api) getPrompt(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.GetPromptRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	v, err := a.eng.GetPrompt(r.Context(), req)
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) resources(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := localapi.ResourcesRequest{ServerID: q.Get("serverId"), Query: q.Get("q")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			a.error(w, badRequest("limit", "limit must be a number of entries"))
			return
		}
		req.Limit = n
	}
	v, err := a.eng.Resources(r.Context(), req)
	a.reply(w, http.StatusOK, nonNil(v), err)
}

func (a *api) readResource(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.ReadRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	v, err := a.eng.ReadResource(r.Context(), req)
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) complete(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.CompleteRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	v, err := a.eng.Complete(r.Context(), req)
	a.reply(w, http.StatusOK, v, err)
}

func (a *api) subscribeResource(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.ResourceSubscription](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	if id := r.Header.Get(localapi.HolderHeader); id != "" {
		a.reply(w, 0, nil, a.holders.subscribe(r.Context(), id, a.eng, req))
		return
	}
	a.reply(w, 0, nil, a.eng.SubscribeResource(r.Context(), req))
}

func (a *api) unsubscribeResource(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.ResourceSubscription](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	if id := r.Header.Get(localapi.HolderHeader); id != "" {
		a.reply(w, 0, nil, a.holders.unsubscribe(r.Context(), id, a.eng, req))
		return
	}
	a.reply(w, 0, nil, a.eng.UnsubscribeResource(r.Context(), req))
}

func (a *api) setLogLevel(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.LogLevelRequest](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	a.reply(w, 0, nil, a.eng.SetLogLevel(r.Context(), req))
}

// nonNil makes a nil listing an empty JSON array: a listing is an array.
func nonNil[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

func truthy(s string) bool { return s == "1" || s == "true" }
