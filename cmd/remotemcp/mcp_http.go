package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/store"
)

// mcpHTTPPath is where the Streamable HTTP endpoint is served.
const mcpHTTPPath = "/mcp"

// mcpHTTPListen listens on addr, which must be a loopback HOST:PORT (or
// PORT alone, on 127.0.0.1): the endpoint is for hosts on this machine,
// and its bearer token is no reason to offer it to the network.
func mcpHTTPListen(flag, addr string) (net.Listener, error) {
	hp, err := loopbackAddr(addr)
	if err != nil {
		return nil, usageErrorf("%s %q: want 127.0.0.1:PORT, [::1]:PORT, localhost:PORT or PORT", flag, addr)
	}
	host, _, _ := net.SplitHostPort(hp)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, usageErrorf("%s %q: only a loopback address is allowed (127.0.0.1, [::1] or localhost): the endpoint must not be reachable from the network", flag, addr)
	}
	ln, err := net.Listen("tcp", hp)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w (is the port taken?)", flag, hp, err)
	}
	return ln, nil
}

// mcpHTTPHandler is everything the endpoint's listener serves: the
// settings page's Host and Origin checks (daemon.GuardLoopback) around the
// bearer token check around the front end, at mcpHTTPPath only.
func mcpHTTPHandler(fe *frontend.Frontend, tokens *frontend.Tokens, port int) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(mcpHTTPPath, fe.HTTPHandler(tokens))
	return daemon.GuardLoopback(port, mux)
}

// serveMcpHTTP serves fe on ln until ctx ends, checking bearer tokens
// against the store in dir; it says where on w and closes ln.
func serveMcpHTTP(ctx context.Context, fe *frontend.Frontend, dir string, ln net.Listener, w io.Writer, log *slog.Logger) error {
	st, err := store.Open(ctx, dir, store.Options{Logger: log})
	if err != nil {
		ln.Close()
		return fmt.Errorf("mcp http: open the data directory for the tokens: %w", err)
	}
	defer st.Close()
	tokens := frontend.NewTokens(st)
	port := ln.Addr().(*net.TCPAddr).Port
	fmt.Fprintf(w, "remotemcp: MCP endpoint (Streamable HTTP) on %s\n", mcpURL(ln))
	if list, err := tokens.List(ctx); err == nil && len(list) == 0 {
		fmt.Fprintln(w, "remotemcp: no tokens yet, so every request gets 401: create one with \"remotemcp mcp token create NAME\"")
	}
	return fe.RunHTTP(ctx, ln, mcpHTTPHandler(fe, tokens, port))
}

// mcpURL is the endpoint's URL as a host is configured with it.
func mcpURL(ln net.Listener) string {
	a := ln.Addr().(*net.TCPAddr)
	host := a.IP.String()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("http://%s:%d%s", host, a.Port, mcpHTTPPath)
}
