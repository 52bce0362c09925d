//go:build !unix

package main

import (
	"fmt"
	"net"
)

// reservePort is a loopback port that was free a moment ago (the suite
// runs on Linux; see port_unix.go for why that is not enough there).
func reservePort() (int, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, nil, fmt.Errorf("choose a redirect port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, func() {}, nil
}
