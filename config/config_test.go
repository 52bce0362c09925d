package config

import (
	"encoding/json"
	"testing"
	"time"
)

func TestConnectionEqual(t *testing.T) {
	base := Server{ID: "a", Name: "A", URL: "https://a.example/mcp", Auth: Auth{Kind: AuthOAuth, ClientID: "c",
		Binding: &Binding{Resource: "https://a.example/mcp", Issuer: "https://as.example"}}, Enabled: true}
	tests := []struct {
		name string
		edit func(*Server)
		want bool
	}{
		{"identical", func(s *Server) {}, true},
		{"name, enabled, tools, timeout do not matter", func(s *Server) {
			s.Name, s.Enabled, s.DisabledTools, s.ConnectOnStartup, s.ToolTimeout = "B", false, []string{"x"}, true, Duration(time.Second)
		}, true},
		{"approval and trusted do not matter", func(s *Server) { s.Approval, s.Trusted = ApprovalAsk, true }, true},
		{"binding copied", func(s *Server) { b := *s.Auth.Binding; s.Auth.Binding = &b }, true},
		{"scopes do not matter", func(s *Server) { s.Auth.Scopes = []string{"x"} }, true},
		{"path", func(s *Server) { s.URL = "https://a.example/mcp/" }, false},
		{"id", func(s *Server) { s.ID = "b" }, false},
		{"kind", func(s *Server) { s.Auth = Auth{Kind: AuthNone} }, false},
		{"client id", func(s *Server) { s.Auth.ClientID = "d" }, false},
		{"secret", func(s *Server) { s.Auth.ClientSecret = "s" }, false},
		{"issuer", func(s *Server) { s.Auth.Binding = &Binding{Resource: "https://a.example/mcp", Issuer: "https://other"} }, false},
		{"binding dropped", func(s *Server) { s.Auth.Binding = nil }, false},
	}
	for _, tt := range tests {
		b := base.Clone()
		tt.edit(&b)
		if got := ConnectionEqual(base, b); got != tt.want {
			t.Errorf("%s: ConnectionEqual = %v; want %v", tt.name, got, tt.want)
		}
	}
	x := Server{ID: "a", URL: "https://a/", Auth: Auth{Kind: AuthBearer, Token: "1"}}
	y := x
	y.Auth.Token = "2"
	if ConnectionEqual(x, y) {
		t.Error("a changed bearer token must reconnect")
	}
}

// SPEC §9 A2: an auto server reconnects when its binding or kind changes,
// as an oauth one does.
func TestConnectionEqualAuto(t *testing.T) {
	a := Server{ID: "a", URL: "https://a.example/mcp", Auth: Auth{Kind: AuthAuto}}
	b := a.Clone()
	if !ConnectionEqual(a, b) {
		t.Error("identical auto servers differ")
	}
	b.Auth.Binding = &Binding{Resource: "https://a.example/mcp", Issuer: "https://as.example"}
	if ConnectionEqual(a, b) {
		t.Error("a sign-in (new binding) of an auto server must reconnect")
	}
	c := a.Clone()
	c.Auth.Kind = AuthOAuth
	if ConnectionEqual(a, c) {
		t.Error("auto → oauth must reconnect")
	}
}

func TestUsesOAuth(t *testing.T) {
	bound := &Binding{Resource: "https://a.example/mcp", Issuer: "https://as.example"}
	for _, tt := range []struct {
		name    string
		auth    Auth
		url     string
		capable bool
		uses    bool
	}{
		{"none", Auth{Kind: AuthNone}, "", false, false},
		{"bearer", Auth{Kind: AuthBearer, Token: "t"}, "", false, false},
		{"oauth", Auth{Kind: AuthOAuth}, "", true, true},
		{"auto, never signed in", Auth{Kind: AuthAuto}, "", true, false},
		{"auto, empty binding", Auth{Kind: AuthAuto, Binding: &Binding{}}, "", true, false},
		{"auto, signed in", Auth{Kind: AuthAuto, Binding: bound}, "", true, true},
		{"auto, signed in, same resource spelled otherwise", Auth{Kind: AuthAuto, Binding: bound}, "https://A.EXAMPLE:443/mcp", true, true},
		{"auto, binding of an old URL", Auth{Kind: AuthAuto, Binding: bound}, "https://b.example/mcp", true, false},
	} {
		s := Server{ID: "a", URL: "https://a.example/mcp", Auth: tt.auth}
		if tt.url != "" {
			s.URL = tt.url
		}
		if got := s.Auth.Kind.OAuthCapable(); got != tt.capable {
			t.Errorf("%s: OAuthCapable = %v, want %v", tt.name, got, tt.capable)
		}
		if got := s.UsesOAuth(); got != tt.uses {
			t.Errorf("%s: UsesOAuth = %v, want %v", tt.name, got, tt.uses)
		}
	}
}

func TestClone(t *testing.T) {
	s := Server{DisabledTools: []string{"a"}, Auth: Auth{Scopes: []string{"s"}, Binding: &Binding{Resource: "r", Issuer: "i"}}}
	c := s.Clone()
	c.DisabledTools[0], c.Auth.Scopes[0], c.Auth.Binding.Issuer = "x", "x", "x"
	if s.DisabledTools[0] != "a" || s.Auth.Scopes[0] != "s" || s.Auth.Binding.Issuer != "i" {
		t.Errorf("Clone shares memory with the original: %+v", s)
	}
	if !s.ToolDisabled("a") || s.ToolDisabled("b") {
		t.Error("ToolDisabled")
	}
	if !(Binding{}).IsZero() || (Binding{Issuer: "i"}).IsZero() {
		t.Error("Binding.IsZero")
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(Duration(90 * time.Second))
	if err != nil || string(b) != `"1m30s"` {
		t.Errorf("Marshal = %s, %v", b, err)
	}
	for in, want := range map[string]time.Duration{`"90s"`: 90 * time.Second, `1500`: 1500 * time.Millisecond, `0`: 0, `null`: 0, `"1h"`: time.Hour} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{`"soon"`, `true`, `{}`, `1e300`, `-1e300`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal(%s) = %v; want an error", in, time.Duration(d))
		}
	}
}
