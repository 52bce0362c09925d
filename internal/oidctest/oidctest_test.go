package oidctest

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// TestMain keeps the example provider's log of every request out of the
// output (it logs to the default logger); its warnings stay.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}

// The provider signs Alice in with an authorization code (PKCE, nonce),
// through its own login form, for a client registered while it runs: the
// ID token verifies against its keys, and its user info names Alice. A
// wrong password and an unregistered redirect URI are refused.
func TestCodeFlow(t *testing.T) {
	p := Start(t)
	ctx := context.Background()
	prov, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://127.0.0.1:1/cb"
	conf := oauth2.Config{ClientID: ClientID, ClientSecret: ClientSecret, Endpoint: prov.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "email"}}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("st4te", oidc.Nonce("n0nce"), oauth2.S256ChallengeOption(verifier))

	if _, err := p.SignIn(c, authURL, "alice", AlicePassword); err == nil || !strings.Contains(err.Error(), "redirect_uri") {
		t.Fatalf("a redirect URI nobody registered: %v", err)
	}
	if err := p.AddRedirectURI(ClientID, redirect); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SignIn(c, authURL, "alice", "wrong"); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("wrong password: %v", err)
	}
	back, err := p.SignIn(c, authURL, "alice", AlicePassword)
	if err != nil {
		t.Fatal(err)
	}
	if back.Host != "127.0.0.1:1" || back.Query().Get("state") != "st4te" || back.Query().Get("code") == "" {
		t.Fatalf("redirect back: %s", back)
	}
	tok, err := conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := prov.Verifier(&oidc.Config{ClientID: ClientID}).Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if idt.Nonce != "n0nce" {
		t.Fatalf("nonce %q", idt.Nonce)
	}
	ui, err := prov.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatal(err)
	}
	if ui.Email != Alice.Email || !ui.EmailVerified || ui.Subject != idt.Subject {
		t.Fatalf("user info %+v, subject %s", ui, idt.Subject)
	}
	// The code works once.
	if _, err := conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier)); err == nil {
		t.Fatal("a code was exchanged twice")
	}
}
