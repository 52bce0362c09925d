package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateID(t *testing.T) {
	ok := []string{"a", "0", "github", "my-server_2", "a-", "a_", strings.Repeat("a", 63)}
	for _, id := range ok {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v; want nil", id, err)
		}
	}
	bad := []struct{ id, errHas string }{
		{"", "is empty"},
		{strings.Repeat("a", 64), "the limit is 63"},
		{"-a", "must start with"},
		{"_a", "must start with"},
		{"GitHub", `ids are lower-case ("github")`},
		{"my server", `contains ' '`},
		{"a.b", `contains '.'`},
		{"a/b", `contains '/'`},
		{"ü", `contains 'ü'`},
		{"a:b", `contains ':'`},
	}
	for _, tt := range bad {
		err := ValidateID(tt.id)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "id" || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("ValidateID(%q) = %v; want a *FieldError for id containing %q", tt.id, err, tt.errHas)
		}
	}
}

func TestValidateURL(t *testing.T) {
	ok := []string{
		"https://mcp.example.com/mcp",
		"https://mcp.example.com",
		"https://mcp.example.com/mcp?tenant=1",
		"http://localhost:8080/mcp",
		"http://LOCALHOST/mcp",
		"http://127.0.0.1/mcp",
		"http://127.8.9.10:3000/",
		"http://[::1]:3000/mcp",
		"http://[::ffff:127.0.0.1]/mcp",
		"https://[2001:db8::1]/mcp",
	}
	for _, u := range ok {
		if err := ValidateURL(u); err != nil {
			t.Errorf("ValidateURL(%q) = %v; want nil", u, err)
		}
	}
	bad := []struct{ url, errHas string }{
		{"http://mcp.example.com/mcp", "http:// is only allowed for loopback hosts (127.0.0.1, ::1, localhost); use https://"},
		{"http://10.0.0.1/mcp", "only allowed for loopback"},
		{"http://0.0.0.0/mcp", "only allowed for loopback"},
		{"http://localhost.evil.com/mcp", "only allowed for loopback"},
		{"http://127.0.0.1.nip.io/mcp", "only allowed for loopback"},
		{"https://user:secret@mcp.example.com/mcp", "user information"},
		{"https://mcp.example.com/mcp#top", "fragment"},
		{"https:///mcp", "no host"},
		{"mcp.example.com/mcp", "no scheme"},
		{"", "empty"},
	}
	for _, tt := range bad {
		err := ValidateURL(tt.url)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "url" || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("ValidateURL(%q) = %v; want a *FieldError for url containing %q", tt.url, err, tt.errHas)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST", true},
		{"LocalHost", true},
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"[::1]", true},
		{"::ffff:127.0.0.1", true},
		{"[0:0:0:0:0:0:0:1]", true},
		{"::1%lo", true},
		{"", false},
		{"[]", false},
		{"localhost.", false},
		{"localhost:80", false}, // a port is the caller's to strip
		{"sub.localhost", false},
		{"128.0.0.1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"10.0.0.1", false},
		{"127.1", false},
		{"mcp.example.com", false},
	}
	for _, tt := range tests {
		if got := IsLoopbackHost(tt.host); got != tt.want {
			t.Errorf("IsLoopbackHost(%q) = %v; want %v", tt.host, got, tt.want)
		}
	}
}

func validServer() Server {
	return Server{
		ID:               "foo",
		Name:             "Foo",
		URL:              "https://mcp.example.com/mcp",
		Auth:             Auth{Kind: AuthNone},
		Enabled:          true,
		ConnectOnStartup: true,
	}
}

func TestServerValidate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Server)
		errHas string // "" means valid
	}{
		{"minimal", func(s *Server) {}, ""},
		{"empty name", func(s *Server) { s.Name = "" }, ""},
		{"unicode name", func(s *Server) { s.Name = "Café ☕ 👩‍💻" }, ""},
		{"name at limit", func(s *Server) { s.Name = strings.Repeat("é", 200) }, ""},
		{"bearer", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: "ghp_abc.DEF-123~+/="} }, ""},
		{"oauth dcr", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth} }, ""},
		{"oauth full", func(s *Server) {
			s.Auth = Auth{Kind: AuthOAuth, ClientID: "1234.5678", ClientSecret: "s3cret", Scopes: []string{"read", "mcp:tools", "offline_access"},
				RedirectPort: 65535, Binding: &Binding{Resource: "https://mcp.example.com/mcp", Issuer: "https://auth.example.com"}}
		}, ""},
		{"oauth empty binding", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, Binding: &Binding{}} }, ""},
		{"auto", func(s *Server) { s.Auth = Auth{Kind: AuthAuto} }, ""},
		{"auto after sign-in", func(s *Server) {
			s.Auth = Auth{Kind: AuthAuto, RedirectPort: 8080, Binding: &Binding{Resource: "https://mcp.example.com/mcp", Issuer: "https://auth.example.com"}}
		}, ""},
		{"disabled tools", func(s *Server) { s.DisabledTools = []string{"delete_repo", "a b"} }, ""},
		{"timeout", func(s *Server) { s.ToolTimeout = Duration(24 * time.Hour) }, ""},
		{"approval host", func(s *Server) { s.Approval = ApprovalHost }, ""},
		{"approval ask, trusted", func(s *Server) { s.Approval, s.Trusted = ApprovalAsk, true }, ""},
		{"approval unknown", func(s *Server) { s.Approval = "always" }, `approval: "always" is not an approval; use host`},

		{"bad id", func(s *Server) { s.ID = "Foo" }, `id: "Foo" contains upper-case`},
		{"remote http", func(s *Server) { s.URL = "http://mcp.example.com/mcp" }, "server foo: url: http:// is only allowed for loopback hosts (127.0.0.1, ::1, localhost); use https://"},
		{"userinfo", func(s *Server) { s.URL = "https://a:b@mcp.example.com/mcp" }, "server foo: url: must not contain user information"},
		{"fragment", func(s *Server) { s.URL = "https://mcp.example.com/mcp#x" }, "server foo: url: must not contain a fragment"},
		{"long name", func(s *Server) { s.Name = strings.Repeat("x", 201) }, "server foo: name: is 201 characters long; the limit is 200"},
		{"control in name", func(s *Server) { s.Name = "a\nb" }, "name: contains the control character U+000A"},
		{"bidi in name", func(s *Server) { s.Name = "abc\u202edcba" }, "name: contains the bidirectional control U+202E"},
		{"invalid utf8 name", func(s *Server) { s.Name = "a\xffb" }, "name: is not valid UTF-8"},
		{"empty kind", func(s *Server) { s.Auth.Kind = "" }, `auth.kind: is missing; use "none"`},
		{"unknown kind", func(s *Server) { s.Auth.Kind = "basic" }, `auth.kind: "basic" is not a kind; use "none", "bearer", "oauth" or "auto"`},
		{"bearer empty", func(s *Server) { s.Auth = Auth{Kind: AuthBearer} }, "auth.token: is empty"},
		{"bearer prefix", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: "Bearer abc"} }, `auth.token: starts with "Bearer "`},
		{"bearer space", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: "abc def"} }, "auth.token: contains whitespace at byte 3"},
		{"bearer newline", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: "abc\n"} }, "auth.token: contains whitespace"},
		{"bearer control", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: "ab\x01c"} }, "auth.token: contains a control character"},
		{"bearer non-ascii", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: "tökén"} }, "auth.token: contains a non-ASCII character"},
		{"bearer too long", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: strings.Repeat("a", 16<<10+1)} }, "auth.token: is 16385 bytes long"},
		{"token under none", func(s *Server) { s.Auth.Token = "abc" }, `auth.token: is only used with kind "bearer" (kind is "none")`},
		{"token under oauth", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, Token: "abc"} }, `auth.token: is only used with kind "bearer"`},
		{"client id under bearer", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: "tok123", ClientID: "x"} }, `auth.clientId: is only used with kind "oauth"`},
		{"scopes under none", func(s *Server) { s.Auth.Scopes = []string{"a"} }, `auth.scopes: is only used with kind "oauth"`},
		{"binding under none", func(s *Server) { s.Auth.Binding = &Binding{} }, `auth.binding: is only used with kind "oauth"`},
		{"port under none", func(s *Server) { s.Auth.RedirectPort = 1 }, `auth.redirectPort: is only used with kind "oauth"`},
		{"client id under auto", func(s *Server) { s.Auth = Auth{Kind: AuthAuto, ClientID: "x"} }, `auth.clientId: is not used with kind "auto", which discovers everything; use kind "oauth"`},
		{"secret under auto", func(s *Server) { s.Auth = Auth{Kind: AuthAuto, ClientSecret: "x"} }, `auth.clientSecret: is not used with kind "auto"`},
		{"scopes under auto", func(s *Server) { s.Auth = Auth{Kind: AuthAuto, Scopes: []string{"a"}} }, `auth.scopes: is not used with kind "auto"`},
		{"token under auto", func(s *Server) { s.Auth = Auth{Kind: AuthAuto, Token: "abc"} }, `auth.token: is only used with kind "bearer" (kind is "auto")`},
		{"binding under bearer", func(s *Server) { s.Auth = Auth{Kind: AuthBearer, Token: "tok123", Binding: &Binding{}} }, `auth.binding: is only used with kind "oauth" or "auto" (kind is "bearer")`},
		{"auto half binding", func(s *Server) { s.Auth = Auth{Kind: AuthAuto, Binding: &Binding{Issuer: "https://a"}} }, "auth.binding.resource: is empty while binding.issuer is set"},
		{"auto port too big", func(s *Server) { s.Auth = Auth{Kind: AuthAuto, RedirectPort: 65536} }, "auth.redirectPort: 65536 is out of range"},
		{"secret without id", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, ClientSecret: "x"} }, "auth.clientSecret: is set without auth.clientId"},
		{"client id spaces", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, ClientID: " abc"} }, "auth.clientId: has leading or trailing whitespace"},
		{"client id control", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, ClientID: "a\x00"} }, "auth.clientId: contains a character outside printable ASCII"},
		{"empty scope", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, Scopes: []string{"a", ""}} }, "auth.scopes[1]: is empty"},
		{"scope with space", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, Scopes: []string{"read write"}} }, `auth.scopes[0]: "read write" contains a space; give each scope as its own array element`},
		{"scope with quote", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, Scopes: []string{`a"b`}} }, "not allowed in a scope"},
		{"negative port", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, RedirectPort: -1} }, "auth.redirectPort: -1 is out of range"},
		{"port too big", func(s *Server) { s.Auth = Auth{Kind: AuthOAuth, RedirectPort: 65536} }, "auth.redirectPort: 65536 is out of range"},
		{"half binding", func(s *Server) {
			s.Auth = Auth{Kind: AuthOAuth, Binding: &Binding{Resource: "https://mcp.example.com/mcp"}}
		}, "auth.binding.issuer: is empty while binding.resource is set"},
		{"half binding 2", func(s *Server) {
			s.Auth = Auth{Kind: AuthOAuth, Binding: &Binding{Issuer: "https://auth.example.com"}}
		}, "auth.binding.resource: is empty while binding.issuer is set"},
		{"empty disabled tool", func(s *Server) { s.DisabledTools = []string{"a", ""} }, "disabledTools[1]: is empty"},
		{"negative timeout", func(s *Server) { s.ToolTimeout = Duration(-time.Second) }, "toolTimeout: is negative (-1s)"},
		{"timeout too long", func(s *Server) { s.ToolTimeout = Duration(25 * time.Hour) }, "toolTimeout: is 25h0m0s; the limit is 24h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validServer()
			tt.edit(&s)
			err := s.Validate()
			if tt.errHas == "" {
				if err != nil {
					t.Fatalf("Validate() = %v; want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %T %v; want a *FieldError containing %q", err, err, tt.errHas)
			}
			if !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("Validate() = %q; want it to contain %q", err, tt.errHas)
			}
			if s.Auth.Token != "" && s.Auth.Kind == AuthBearer && strings.Contains(err.Error(), s.Auth.Token) {
				t.Errorf("the error %q reveals the token", err)
			}
		})
	}
}

func TestValidateAll(t *testing.T) {
	a, b, c := validServer(), validServer(), validServer()
	b.ID, c.ID = "bar", "foo"
	err := ValidateAll([]Server{a, b, c})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.ServerID != "foo" || fe.Field != "id" ||
		!strings.Contains(err.Error(), `duplicate id "foo" (servers[0] and servers[2])`) {
		t.Errorf("ValidateAll with a duplicate = %v", err)
	}

	c.ID = "Bad id"
	err = ValidateAll([]Server{a, b, c})
	if !errors.As(err, &fe) || fe.Field != "servers[2].id" {
		t.Errorf("ValidateAll with a bad id = %v; want it placed at servers[2].id", err)
	}

	c.ID, c.URL = "baz", "http://example.com"
	err = ValidateAll([]Server{a, b, c})
	if !errors.As(err, &fe) || fe.ServerID != "baz" || fe.Field != "url" {
		t.Errorf("ValidateAll with a bad url = %v; want it named server baz", err)
	}

	if err := ValidateAll(nil); err != nil {
		t.Errorf("ValidateAll(nil) = %v", err)
	}
	if err := ValidateAll([]Server{a, b}); err != nil {
		t.Errorf("ValidateAll(valid) = %v", err)
	}
}
