// Command testserver runs the remotemcp MCP test server (package fixture) on
// its own, for manual testing of the client:
//
//	go run ./internal/testserver --addr 127.0.0.1:8931
//	go run ./internal/testserver --addr 127.0.0.1:8931 --oauth   # behind a test OAuth server
//
// It prints the MCP endpoint URL (and its process id) on stdout and stops
// cleanly on SIGINT, SIGTERM or SIGHUP, and on Unix also when the process
// that started it exits, so `go run ./internal/testserver … &` leaves no
// orphan holding the port once the job is killed (--exit-with-parent=false
// keeps it running). With --oauth the endpoint demands a bearer token from
// a real OAuth 2.1 authorization server (package authserver) started beside
// it on another loopback port; its authorization page approves at once.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8931", "TCP address to listen on (port 0 picks a free port)")
	path := flag.String("path", fixture.DefaultPath, "MCP endpoint path")
	delay := flag.Duration("delay", 0, "delay applied to every tool call")
	stateless := flag.Bool("stateless", false, "serve MCP without sessions")
	withOAuth := flag.Bool("oauth", false, "protect the endpoint with a test OAuth authorization server")
	withParent := flag.Bool("exit-with-parent", true, "stop when the process that started this one exits (Unix)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "testserver: unexpected arguments: %v\n", flag.Args())
		os.Exit(2)
	}
	if err := run(*addr, *path, *delay, *stateless, *withOAuth, *withParent); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

func run(addr, path string, delay time.Duration, stateless, withOAuth, withParent bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	var orphaned <-chan struct{}
	if withParent {
		orphaned = parentGone()
	}

	o := fixture.Options{Addr: addr, Path: path, Stateless: stateless}
	if withOAuth {
		as, err := authserver.Start(authserver.Options{MCPPath: path})
		if err != nil {
			return err
		}
		defer as.Close()
		o.Authorize, o.Extra = as.Authorize, as.PRMRoutes()
		fmt.Printf("remotemcp test server: OAuth authorization server %s\n", as.URL())
	}
	srv, err := fixture.Start(o)
	if err != nil {
		return err
	}
	srv.SetDelay(delay)
	fmt.Printf("remotemcp test server: MCP endpoint %s\n", srv.URL())
	if orphaned != nil {
		fmt.Printf("remotemcp test server: pid %d; stops when its parent (pid %d) exits\n", os.Getpid(), os.Getppid())
	} else {
		fmt.Printf("remotemcp test server: pid %d\n", os.Getpid())
	}

	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "testserver: shutting down")
	case <-orphaned:
		fmt.Fprintln(os.Stderr, "testserver: the parent process exited; shutting down")
	}
	return srv.Close()
}
