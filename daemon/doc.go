// Package daemon is remotemcp's local daemon: a JSON API for the CLI and
// embedders, the settings page, and the OAuth loopback callback, all on
// one loopback port (default 127.0.0.1:7717, which is also the default
// OAuth redirect port, SPEC §7). It owns no state of its own: the store,
// manager, host permission broker, elicitation cards, agent registry and
// OAuth authenticator are handed in (Options), and the CLI talks to them
// through the daemon rather than opening its own (the Tailscale LocalAPI
// model), so the two never disagree.
//
// # Finding and authenticating to the daemon
//
// Listen writes daemon.json (0600) into the data directory with the URL,
// pid and a fresh 256-bit API token. Discover reads it and checks the
// daemon answers; ClientInfo.Client returns a Client that sends the token
// as "Authorization: Bearer". A browser gets in through a one-time login
// URL (Server.LoginURL, or POST /api/login-url), which sets an HttpOnly,
// SameSite=Strict session cookie and moves on to the settings page; sessions
// live in memory only.
//
// The settings page and the API it uses live under a secret path prefix,
// /s/<random>/ (130 random bits, new at every daemon start), and the
// session cookie is scoped to it (Path=/s/<random>/) and accepted nowhere
// else. Browsers do not isolate cookies by port: with Path=/ the cookie
// would also go to every other web server on 127.0.0.1 the person visits,
// which could replay it with our Origin. With the prefix, the browser
// sends it only to URLs under the prefix, and only the answer to a login
// URL reveals the prefix. The bearer token works at /api/… and under the
// prefix alike.
//
// # Local-access security (security.go)
//
// Every response carries ContentSecurityPolicy, nosniff, no-referrer and
// no-store, and never a CORS header. The Host header must be 127.0.0.1,
// [::1] or localhost with the daemon's port (DNS rebinding); a foreign
// Origin is refused on every request; a state-changing request
// authenticated by the cookie must carry the daemon's own Origin (CSRF).
// Bearer requests (the CLI) carry no Origin. /mcp-oauth needs no token and
// is protected by the OAuth state. No response ever carries a bearer
// token, client secret, OAuth token or the API token; the only secrets the
// daemon sends are the session cookie and the page prefix, once, in the
// answer to /login (and the prefix in the URLs below it).
//
// Residual risk: a local web server that learns the prefix (it is in the
// browser's history) could have the browser send it the cookie by linking
// to that path on its own port. Sessions live in memory, end with the
// daemon and after SessionTTL unused; on a machine shared with untrusted
// users, prefer the CLI (bearer token in a 0600 file).
//
// # Routes
//
// Pages (text/html):
//
//	GET  /s/<random>/                    settings page (session or token)
//	GET  /                               how to log in (the page is not here)
//	GET  /login?token=T                  redeem a one-time login token → session cookie, on to /s/<random>/
//	GET  /mcp-oauth                      OAuth redirect URI; matched to a flow by state
//	GET  /static/{app.js,style.css}      embedded assets (no token)
//
// JSON API, at /api/… with the token, and at /s/<random>/api/… with the
// token or a session (the settings page's relative URLs); errors are
// {"error": APIError}:
//
//	GET    /api/health                   Health
//	POST   /api/login-url                LoginURLResponse: a new one-time login URL
//	POST   /api/logout                   end the page session
//	GET    /api/events                   text/event-stream of Event: servers, grants, cards
//	GET    /api/servers                  []ServerView
//	POST   /api/servers                  AddServerRequest → ServerView (grants the server's origin)
//	POST   /api/servers/import           ImportRequest → ImportResult (grants nothing)
//	GET    /api/servers/{id}             ServerView
//	PATCH  /api/servers/{id}             UpdateServerRequest → ServerView
//	DELETE /api/servers/{id}             delete with secrets and OAuth state
//	POST   /api/servers/{id}/connect     → ServerView; permission_required when an origin needs a grant
//	POST   /api/servers/{id}/disconnect  → ServerView
//	POST   /api/servers/{id}/enable      → ServerView
//	POST   /api/servers/{id}/disable     → ServerView
//	POST   /api/servers/{id}/tools       ToolSwitch → ServerView (disabledTools, R5.2)
//	GET    /api/servers/{id}/catalog     CatalogView (connects lazily)
//	GET    /api/servers/{id}/log         []session.Exchange: the last 50 HTTP exchanges (R5.3), no secrets
//	POST   /api/servers/{id}/authorize   → AuthFlow with the authorization URL to open
//	GET    /api/servers/{id}/authorize   → the latest AuthFlow
//	POST   /api/servers/{id}/logout      forget the server's OAuth tokens
//	GET    /api/grants                   Grants (grants and pending approvals)
//	POST   /api/grants                   OriginRequest → Grants (approve; failed servers reconnect)
//	POST   /api/grants/revoke            OriginRequest → Grants (servers of the origin disconnect)
//	POST   /api/pending/dismiss          OriginRequest → Grants
//	GET    /api/cards                    []CardView, newest first
//	POST   /api/cards/{id}/answer        elicit.Response → 204 (400 lists every bad field)
//	POST   /api/cards/{id}/retry         RetryRequest{confirmed} → agent.ToolResult (R6.2 re-send, once)
//	GET    /api/tools[?refresh=1]        ToolsView (agent tools, disabled ones left out)
//	POST   /api/call                     CallRequest → agent.ToolResult ("approved": true required)
//	POST   /api/call/cancel              CancelRequest
//
// # Lifetime
//
// New, then Listen (optional, to learn the URL first), then Serve(ctx)
// once. When ctx ends, Serve cancels requests in flight (tool calls
// included), ends SSE streams and OAuth flows, forgets every session,
// removes daemon.json and returns; the caller then closes the cards, the
// manager and the store, in that order (package elicit explains why).
package daemon
