// Package daemon is remotemcp's local daemon: thin HTTP adapters over one
// [localapi.Engine] (the engine of package remotemcp), the settings page,
// the OAuth loopback callback and local-access security. It owns no state
// of its own and imports neither the engine nor its parts; the CLI and
// embedders reach the engine through it with [localapi.Client] (the
// Tailscale LocalAPI model), so the daemon, the page and every command
// never disagree. Without a daemon, [InProcess] serves the same handlers
// to one command.
//
// # Two transports
//
// The local API, with full access, is served on a Unix domain socket:
// api.sock in the data directory (directory 0700, socket 0600). Access is
// the file permissions; there is no token. On Linux the daemon also
// refuses connections whose peer (SO_PEERCRED) is another user, and the
// client refuses a daemon that runs as one. Socket paths are short (108
// bytes on Linux, 104 on macOS): when the data directory's path would make
// it longer than 100 bytes, the socket goes into a per-user runtime
// directory, <base>/remotemcp-<uid>/<hash of the data directory>/api.sock
// with base $XDG_RUNTIME_DIR when usable, else $TMPDIR (both directories
// 0700 and ours, checked with lstat, never a symbolic link); when another
// user took that name in $TMPDIR first, a directory with an unpredictable
// name instead. daemon.json records where it is.
//
// The TCP listener (loopback only, default 127.0.0.1:7717) is also the
// OAuth redirect URI http://127.0.0.1:PORT/mcp-oauth of every server
// without a configured redirect port, on the port it actually bound
// (the engine is told through CallbackReceiver.ServeCallbacks); a
// gateway's page with a public URL (SignIn.PublicURL) serves its people's
// sign-ins at <public URL>/mcp-oauth instead (the gateway is told through
// ServeCallbacksAt), so a browser anywhere finishes them, on whichever
// replica the load balancer sends it to (issue #23). A daemon
// started in the background by a host (Options.AddrFallback) takes a
// free loopback port when its address is taken, since hosts need only the
// socket, and daemon.json records both (Info.RequestedAddr); "serve
// --addr" refuses instead (ErrAddrInUse). It serves only the settings page
// with the API it uses under a secret per-start prefix and a session
// cookie, the one-time login URL, the OAuth callback /mcp-oauth and the
// static assets. /api/… on TCP is a 404 whatever comes with it: the old
// API token is not accepted, and the CLI sends nothing to TCP.
//
// # Finding the daemon
//
// Listen takes the data directory's daemon lock (flock on daemon.lock),
// binds both listeners and writes daemon.json (0600: the page's URL, the
// socket's path, the pid). [Dial] reads it, checks that the socket is
// where this data directory's daemon puts it and is private to this user
// (a socket owned by us, mode 0600, in directories of ours with mode
// 0700; on Linux the peer's uid on every connection), and only then asks
// GET /api/health. When the daemon is gone (no daemon.json, or a socket
// that is missing or refuses: kill -9 leaves both behind), Dial returns
// [ErrNotRunning] and the CLI runs in-process; a socket that is not
// private is [ErrUntrustedSocket], and nothing is sent to it. A process
// that takes the dead daemon's TCP port receives nothing.
//
// Windows: the socket is an AF_UNIX socket too (Windows 10 1803 and
// later), in the data directory under the user's profile, whose ACL keeps
// other users out; Windows has no owner and mode bits to check, so Dial
// only checks that it exists, and there is no daemon lock but the TCP
// port. The planned hardening is a challenge (the daemon proves it can
// read a 0600 nonce file before the client sends a request). Everything
// else is as on Unix.
//
// # The settings page (security.go)
//
// A browser gets in through a one-time login URL (Server.LoginURL, or
// POST /api/login-url on the socket: `remotemcp open`), which sets an
// HttpOnly, SameSite=Strict session cookie scoped to the page's secret
// path prefix, /s/<random>/ (130 random bits, new at every start), and
// moves on to the page; sessions live in memory only. Every response
// carries ContentSecurityPolicy, nosniff, no-referrer and no-store, and
// never a CORS header. The Host header must be 127.0.0.1, [::1] or
// localhost with the daemon's port (DNS rebinding); a foreign Origin is
// refused; a state-changing request must carry the daemon's own Origin
// (CSRF). /mcp-oauth needs no credential and is protected by the OAuth
// state, which the engine checks (localapi.CallbackReceiver). No response
// carries a bearer token, client secret or OAuth token: the types have no
// field for one, and every answer is scrubbed of the write-only secrets
// the API received and those the engine names (localapi.SecretLister).
//
// Residual risk: a local web server that learns the prefix (it is in the
// browser's history) could have the browser send it the cookie by linking
// to that path on its own port. Sessions end with the daemon and after
// SessionTTL unused; on a machine shared with untrusted users, prefer the
// CLI.
//
// # Routes
//
// Pages (TCP, text/html):
//
//	GET  /s/<random>/                    settings page (session)
//	GET  /                               how to log in (the page is not here)
//	GET  /login?token=T                  redeem a one-time login token → session cookie, on to /s/<random>/
//	GET  /mcp-oauth                      OAuth redirect URI → CallbackReceiver.CompleteAuthorization
//	GET  /static/{app.js,style.css}      embedded assets
//
// The API, on the socket at /api/…, and for the page at
// /s/<random>/api/… with its session. One route per Engine method; JSON
// in and out with the localapi types (unknown request fields are
// refused); errors are {"error": localapi.Error} with the status of its
// code (localapi.StatusOf):
//
//	GET    /api/health                          Health
//	GET    /api/servers                         Servers
//	POST   /api/servers                         AddServer (201)
//	POST   /api/servers/import                  Import
//	GET    /api/servers/{id}                    Server
//	PATCH  /api/servers/{id}                    UpdateServer
//	DELETE /api/servers/{id}                    RemoveServer (204)
//	POST   /api/servers/{id}/enable             SetEnabled(true)
//	POST   /api/servers/{id}/disable            SetEnabled(false)
//	POST   /api/servers/{id}/tools              SetTool (localapi.ToolSwitch)
//	POST   /api/servers/{id}/connect            Connect
//	POST   /api/servers/{id}/disconnect         Disconnect
//	GET    /api/servers/{id}/log                Log
//	POST   /api/servers/{id}/authorize          Authorize
//	GET    /api/servers/{id}/authorize          Authorization
//	GET    /api/servers/{id}/authorize/wait     WaitAuthorization
//	POST   /api/servers/{id}/logout             Logout
//	GET    /api/auth[?serverId=…]               AuthStatus
//	GET    /api/grants                          Grants
//	POST   /api/grants                          Grant (localapi.OriginRequest; 204)
//	POST   /api/grants/revoke                   Revoke (204)
//	GET    /api/pending                         Pending
//	POST   /api/pending/dismiss                 DismissPending (204)
//	GET    /api/tools[?serverId=&connect=1]     Tools
//	POST   /api/calls[?ask=0]                   Call: NDJSON of localapi.CallEvent (ask=0: no Approve)
//	POST   /api/calls/{operationId}/approval    the caller's localapi.ApprovalReply (204)
//	POST   /api/calls/{operationId}/cancel      CancelCall (204)
//	GET    /api/cards                           Cards
//	GET    /api/cards/{id}                      Card
//	POST   /api/cards/{id}/answer               Answer (204)
//	POST   /api/cards/{id}/retry                Retry (localapi.RetryRequest)
//	GET    /api/prompts[?serverId=]             Prompts
//	POST   /api/prompts/get                     GetPrompt
//	GET    /api/resources[?serverId=&q=&limit=] Resources
//	POST   /api/resources/read                  ReadResource
//	POST   /api/complete                        Complete (completion/complete)
//	POST   /api/calls/{op}/sampling/{id}        answer a server's sampling request of a call
//	                                            made with ?sample=1 (localapi.SamplingReply, 204)
//	POST   /api/subscriptions                   SubscribeResource (204); with a Remotemcp-Holder
//	                                            header, held by that hold stream (below)
//	POST   /api/subscriptions/remove            UnsubscribeResource (204)
//	GET    /api/subscriptions/hold              a hold stream: its Remotemcp-Holder header names it
//	POST   /api/log-level                       SetLogLevel (204)
//	GET    /api/events                          Subscribe: text/event-stream of localapi.Event
//	POST   /api/login-url                       a one-time login URL of the page (not in-process)
//	POST   /s/<random>/api/logout               end the page's session (page only)
//
// A grant, an add or an import made by the page is attributed to the
// settings page whatever the request says.
//
// A resource subscription taken with the Remotemcp-Holder header of an
// open hold stream (localapi.Client opens one with its first subscription
// and closes it with its last) is given back by the daemon when that
// stream ends: a front end that is killed does not keep its servers
// subscribed, and awake. A subscription for a stream that is not open is
// refused (409); giving one back for a stream that ended does nothing (the
// daemon already did).
//
// # The call stream
//
// POST /api/calls answers with one localapi.CallEvent per line, each
// flushed: approval, progress and question events as they happen, then
// one result or error event, which ends the stream. An approval event
// waits (at most 10 minutes) for POST /api/calls/{operationId}/approval
// from the same caller (the socket, or the page session that made the
// call); a caller that goes away first has denied the call, and nothing
// is sent to the server. Closing the request cancels the call.
//
// # Lifetime
//
// New, then Listen (optional, to learn the URL first), then Serve(ctx)
// once. When ctx ends, Serve cancels requests in flight (tool calls and
// streams included), forgets every session, removes daemon.json and the
// socket, releases the lock and returns; the caller then closes the
// engine.
package daemon
