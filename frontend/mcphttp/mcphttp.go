// Package mcphttp serves the front end to MCP hosts over Streamable HTTP
// on a loopback listener ("remotemcp mcp --http", "serve --mcp-http"):
// the settings page's Host and Origin checks around the bearer token
// check around the front end, at Path only.
package mcphttp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/store"
)

// Path is where the endpoint is served.
const Path = "/mcp"

// Handler is everything the endpoint's listener serves: daemon.GuardLoopback
// for port around the check of tokens around fe, at Path only.
func Handler(fe *frontend.Frontend, tokens *frontend.Tokens, port int, o frontend.HTTPOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, fe.HTTPHandlerWith(tokens, o))
	return daemon.GuardLoopback(port, mux)
}

// NoTokenHandler is Handler without the token check, for the official
// conformance suite in server mode (it cannot send a token): the front
// end's handler checks tokens kept in memory, holding one token made
// here, which every request is given after the Host and Origin checks
// (whatever Authorization it carried is replaced). It refuses a listener
// that is not on loopback.
func NoTokenHandler(ctx context.Context, fe *frontend.Frontend, ln net.Listener, o frontend.HTTPOptions) (http.Handler, error) {
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !a.IP.IsLoopback() {
		return nil, fmt.Errorf("the listener %s is not on loopback", ln.Addr())
	}
	tokens := frontend.NewTokens(&memKV{})
	tok, err := tokens.Create(ctx, "insecure-test")
	if err != nil {
		return nil, err
	}
	inner := fe.HTTPHandlerWith(tokens, o)
	mux := http.NewServeMux()
	mux.Handle(Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok)
		inner.ServeHTTP(w, r)
	}))
	return daemon.GuardLoopback(a.Port, mux), nil
}

// URL is the endpoint's URL on ln as a host is configured with it.
func URL(ln net.Listener) string {
	a := ln.Addr().(*net.TCPAddr)
	host := a.IP.String()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("http://%s:%d%s", host, a.Port, Path)
}

// memKV is a frontend.KV in memory, for the one token of NoTokenHandler.
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte // ns + "\x00" + key
}

func (k *memKV) GetKV(_ context.Context, ns, key string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[ns+"\x00"+key]
	if !ok {
		return nil, store.ErrNotFound
	}
	return v, nil
}

func (k *memKV) PutKV(_ context.Context, ns, key string, value []byte) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string][]byte{}
	}
	k.m[ns+"\x00"+key] = value
	return nil
}

func (k *memKV) ListKV(_ context.Context, ns string) (map[string][]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string][]byte{}
	for nk, v := range k.m {
		if key, ok := strings.CutPrefix(nk, ns+"\x00"); ok {
			out[key] = v
		}
	}
	return out, nil
}

func (k *memKV) DeleteKV(_ context.Context, ns, key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, ns+"\x00"+key)
	return nil
}
