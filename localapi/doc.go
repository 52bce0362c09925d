// Package localapi is the one API of the remotemcp engine: the request and
// response types, the [Engine] interface every surface uses, the error type
// with its codes and exit codes, and [Client], the typed client that talks
// to a running daemon over its Unix socket.
//
// There is one implementation of Engine: the engine in package remotemcp
// (the facade). The daemon's HTTP handlers are thin adapters over an
// Engine, and Client is an Engine too, so the CLI, the settings page and
// embedders all take the same path whether the engine runs in the daemon
// or in-process (Tailscale's LocalAPI and client/local are the model).
// Package daemon imports this package and never the facade; the facade
// never imports daemon.
//
// JSON shapes follow one style: camelCase keys, a listing is an array,
// the server id is always "serverId" (a server's own record says "id"),
// and absent times are omitted rather than written as the zero time.
package localapi
