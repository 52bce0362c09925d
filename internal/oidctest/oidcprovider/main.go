// Command oidcprovider runs the tests' OpenID provider (package oidctest:
// zitadel/oidc's example provider) by hand, to try a gateway's sign-in
// without an organisation's provider:
//
//	go run ./internal/oidctest/oidcprovider -addr 127.0.0.1:9998 \
//	    -redirect-uri http://127.0.0.1:7717/oidc/callback
//
// It serves on loopback only, keeps everything in memory, and signs in
// alice (alice-Secret-1) and bob (bob-Secret-2), and whoever -user adds.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"

	"github.com/remotemcp/remotemcp/internal/oidctest"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:9998", "loopback `host:port` to listen on")
	id := flag.String("client-id", oidctest.ClientID, "the client's id")
	secret := flag.String("client-secret", oidctest.ClientSecret, "the client's secret")
	var redirects, users list
	flag.Var(&redirects, "redirect-uri", "a redirect URI of the client (repeatable)")
	flag.Var(&users, "user", "one more person, `username:password:email` (repeatable)")
	flag.Parse()
	if host, _, err := net.SplitHostPort(*addr); err != nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprintln(os.Stderr, "oidcprovider: -addr must be a loopback IP address and port (this provider is for tests)")
		os.Exit(2)
	}
	p, err := oidctest.Listen(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "oidcprovider:", err)
		os.Exit(1)
	}
	defer p.Close()
	p.AddClient(*id, *secret, redirects...)
	for _, u := range users {
		f := strings.SplitN(u, ":", 3)
		if len(f) != 3 {
			fmt.Fprintf(os.Stderr, "oidcprovider: -user %q: want username:password:email\n", u)
			os.Exit(2)
		}
		p.AddUser(oidctest.User{Username: f[0], Password: f[1], Email: f[2], EmailVerified: true})
	}
	fmt.Printf("issuer %s\nclient %s (secret %s), redirect URIs %v\npeople: alice (%s), bob (%s)", p.Issuer, *id, *secret, redirects, oidctest.AlicePassword, oidctest.BobPassword)
	for _, u := range users {
		fmt.Printf(", %s", strings.SplitN(u, ":", 2)[0])
	}
	fmt.Println("\nCtrl-C stops it.")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
}
