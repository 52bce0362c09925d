// Package demo runs the bundled test MCP server for "remotemcp serve
// --demo" and adds it to an engine as an ordinary server, under a free
// id, through the same API as any other; Stop undoes exactly what Start
// did.
package demo

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// Server is the running test server and what its addition changed.
type Server struct {
	eng     localapi.Engine
	f       *fixture.Server
	id      string
	granted []string
}

// maxIDs bounds the search for a free id.
const maxIDs = 100

// Start runs the test server on a free loopback port and adds it under a
// free id ("demo", else "demo-2" …): an existing server is never touched
// (issue #19 item 8).
func Start(ctx context.Context, eng localapi.Engine) (*Server, error) {
	f, err := fixture.Start(fixture.Options{})
	if err != nil {
		return nil, fmt.Errorf("start the test server: %w", err)
	}
	for i := 1; i <= maxIDs; i++ {
		id := "demo"
		if i > 1 {
			id = fmt.Sprintf("demo-%d", i)
		}
		res, err := eng.AddServer(ctx, localapi.AddServerRequest{ID: id, Name: "Demo (bundled test server)", URL: f.URL(), By: localapi.ByServersAdd})
		if localapi.HasCode(err, localapi.CodeConflict) {
			continue
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("add the test server as %s: %w", id, err)
		}
		return &Server{eng: eng, f: f, id: id, granted: res.Granted}, nil
	}
	f.Close()
	return nil, fmt.Errorf("the ids demo … demo-%d are all taken; remove some with \"remotemcp servers remove ID\"", maxIDs)
}

// ID is the server's id in the engine.
func (d *Server) ID() string { return d.id }

// URL is the test server's MCP endpoint.
func (d *Server) URL() string { return d.f.URL() }

// cleanupWait bounds the removal of the server at exit.
const cleanupWait = 10 * time.Second

// Stop removes the server and the grants its addition made, then stops
// the test server. It runs as serve exits, after a signal: its context is
// not the command's.
func (d *Server) Stop(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupWait)
	defer cancel()
	if err := d.eng.RemoveServer(ctx, d.id); err != nil && !localapi.HasCode(err, localapi.CodeNotFound) {
		log.Warn("--demo: could not remove the demo server", "server", d.id, "err", err)
	}
	for _, o := range d.granted {
		if err := d.eng.Revoke(ctx, o); err != nil && !localapi.HasCode(err, localapi.CodeNotFound) {
			log.Warn("--demo: could not revoke the demo server's origin", "origin", o, "err", err)
		}
	}
	d.f.Close()
}
