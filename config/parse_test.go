package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseServer(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Server
	}{
		{
			name: "defaults",
			in:   `{"id":"foo","name":"Foo","url":"https://mcp.example.com/mcp"}`,
			want: Server{ID: "foo", Name: "Foo", URL: "https://mcp.example.com/mcp", Auth: Auth{Kind: AuthNone}, Enabled: true, ConnectOnStartup: true},
		},
		{
			name: "explicit false and null auth",
			in:   `{"id":"foo","url":"https://mcp.example.com/mcp","enabled":false,"connectOnStartup":false,"auth":null}`,
			want: Server{ID: "foo", URL: "https://mcp.example.com/mcp", Auth: Auth{Kind: AuthNone}},
		},
		{
			name: "full oauth",
			in: `{
  "id": "slack",
  "name": "Slack",
  "url": "https://mcp.slack.com/mcp",
  "auth": {"kind": "oauth", "clientId": "1234.5678", "clientSecret": "s", "scopes": ["channels:read", "chat:write"],
           "binding": {"resource": "https://mcp.slack.com/mcp", "issuer": "https://slack.com"}, "redirectPort": 8080},
  "enabled": true,
  "disabledTools": ["post_message"],
  "connectOnStartup": false,
  "toolTimeout": "90s"
}`,
			want: Server{ID: "slack", Name: "Slack", URL: "https://mcp.slack.com/mcp",
				Auth: Auth{Kind: AuthOAuth, ClientID: "1234.5678", ClientSecret: "s", Scopes: []string{"channels:read", "chat:write"},
					Binding: &Binding{Resource: "https://mcp.slack.com/mcp", Issuer: "https://slack.com"}, RedirectPort: 8080},
				Enabled: true, DisabledTools: []string{"post_message"}, ToolTimeout: Duration(90 * time.Second)},
		},
		{
			name: "bearer, timeout in ms, BOM",
			in:   "\xef\xbb\xbf" + `{"id":"api","url":"http://127.0.0.1:3000/mcp","auth":{"kind":"bearer","token":"abc"},"toolTimeout":1500}`,
			want: Server{ID: "api", URL: "http://127.0.0.1:3000/mcp", Auth: Auth{Kind: AuthBearer, Token: "abc"}, Enabled: true, ConnectOnStartup: true, ToolTimeout: Duration(1500 * time.Millisecond)},
		},
		{
			name: "auto",
			in:   `{"id":"docs","url":"https://docs.example/mcp","auth":{"kind":"auto"}}`,
			want: Server{ID: "docs", URL: "https://docs.example/mcp", Auth: Auth{Kind: AuthAuto}, Enabled: true, ConnectOnStartup: true},
		},
		{
			name: "auto signed in",
			in:   `{"id":"docs","url":"https://docs.example/mcp","auth":{"kind":"auto","binding":{"resource":"https://docs.example/mcp","issuer":"https://as.example"}}}`,
			want: Server{ID: "docs", URL: "https://docs.example/mcp", Auth: Auth{Kind: AuthAuto,
				Binding: &Binding{Resource: "https://docs.example/mcp", Issuer: "https://as.example"}}, Enabled: true, ConnectOnStartup: true},
		},
		{
			name: "null timeout",
			in:   `{"id":"foo","url":"https://h/","toolTimeout":null}`,
			want: Server{ID: "foo", URL: "https://h/", Auth: Auth{Kind: AuthNone}, Enabled: true, ConnectOnStartup: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseServer([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseServer: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseServer =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

// parseErrorCases are documents ParseServer refuses; errHas is matched
// against the whole message, and parseErr says which error type is expected.
var parseErrorCases = []struct {
	name     string
	in       string
	errHas   string
	parseErr bool // *ParseError rather than *FieldError
}{
	{"empty", ``, "line 1, column 1: the document is empty", true},
	{"blank", "  \n ", "the document is empty", true},
	{"truncated", `{"id":"foo","url":"https://h/"`, "line 1, column 31: the document ends in the middle of a JSON value; is it truncated?", true},
	{"truncated string", "{\n  \"id\": \"fo", "line 2, column 12: the document ends", true},
	{"trailing comma", "{\n  \"id\": \"foo\",\n}", "line 3, column 1: invalid JSON: invalid character '}' looking for beginning of object key string", true},
	{"single quotes", `{'id':1}`, "line 1, column 2: invalid JSON: invalid character '\\''", true},
	{"comment", "{\n // c\n}", "line 2, column 2: invalid JSON", true},
	{"trailing data", `{"id":"foo"} {}`, "line 1, column 14: unexpected data after the JSON value", true},
	{"array", `[{"id":"foo"}]`, "line 1, column 1: a server must be a JSON object, not an array", true},
	{"string", `"https://h/"`, "a server must be a JSON object, not a string", true},

	{"enabled yes", `{"id":"foo","url":"https://h/","enabled":"yes"}`, "server foo: enabled: must be true or false, not a string (line 1, column 42)", false},
	{"enabled before id", `{"enabled":1,"id":"foo"}`, "server foo: enabled: must be true or false, not a number", false},
	{"id number", `{"id":5}`, "id: must be a string, not a number (line 1, column 7)", false},
	{"url array", `{"id":"foo","url":["https://h/"]}`, "server foo: url: must be a string, not an array", false},
	{"auth string", `{"id":"foo","auth":"none"}`, "server foo: auth: must be an object, not a string", false},
	{"scope number", `{"id":"foo","auth":{"kind":"oauth","scopes":["a",2]}}`, "server foo: auth.scopes: must be an array of strings, and this element is a number", false},
	{"scopes string", `{"id":"foo","auth":{"kind":"oauth","scopes":"a b"}}`, "server foo: auth.scopes: must be an array of strings, not a string", false},
	{"port fraction", `{"id":"foo","auth":{"kind":"oauth","redirectPort":80.5}}`, "auth.redirectPort: must be an integer, not 80.5", false},
	{"port overflow", `{"id":"foo","auth":{"kind":"oauth","redirectPort":99999999999999999999}}`, "auth.redirectPort: must be an integer, not 99999999999999999999, which is out of range", false},
	{"disabledTools object", `{"id":"foo","disabledTools":{}}`, "disabledTools: must be an array of strings, not an object", false},
	{"timeout word", `{"id":"foo","toolTimeout":"soon"}`, `server foo: toolTimeout: not a duration such as "90s"`, false},
	{"timeout bool", `{"id":"foo","toolTimeout":true}`, "toolTimeout: must be a duration string", false},
	{"timeout huge", `{"id":"foo","toolTimeout":1e300}`, "toolTimeout: is out of range", false},
	{"unknown field", `{"id":"foo","url":"https://h/","color":"red"}`, `server foo: color: unknown field (line 1, column 32); known fields: id, name, url, auth, enabled, disabledTools, connectOnStartup, toolTimeout`, false},
	{"typo", `{"id":"foo","connectOnStart":false}`, `connectOnStart: unknown field (line 1, column 13); did you mean "connectOnStartup"?`, false},
	{"wrong case", `{"id":"foo","URL":"https://h/"}`, `URL: unknown field (line 1, column 13); did you mean "url"? names are case-sensitive`, false},
	{"unknown auth field", `{"id":"foo","auth":{"kind":"bearer","tokn":"x"}}`, `server foo: auth.tokn: unknown field (line 1, column 37); did you mean "token"?`, false},
	{"unknown binding field", `{"id":"foo","auth":{"kind":"oauth","binding":{"resource":"r","iss":"i"}}}`, `server foo: auth.binding.iss: unknown field`, false},
	{"duplicate field", "{\"id\":\"foo\",\n\"url\":\"https://a/\",\n\"url\":\"https://b/\"}", "server foo: url: appears twice (second at line 3, column 1); keep one", false},
	{"mcpServers", `{"mcpServers":{}}`, `mcpServers: unknown field`, false},

	{"remote http", `{"id":"foo","url":"http://mcp.example.com/mcp"}`, "server foo: url: http:// is only allowed for loopback hosts (127.0.0.1, ::1, localhost); use https://", false},
	{"userinfo", `{"id":"foo","url":"https://me:pw@mcp.example.com/mcp"}`, "server foo: url: must not contain user information", false},
	{"fragment", `{"id":"foo","url":"https://mcp.example.com/mcp#x"}`, "server foo: url: must not contain a fragment", false},
	{"bad id", `{"id":"Foo Bar","url":"https://h/"}`, `id: "Foo Bar" contains upper-case`, false},
	{"no id", `{"url":"https://h/"}`, `id: is empty`, false},
	{"auto with client id", `{"id":"foo","url":"https://h/","auth":{"kind":"auto","clientId":"c"}}`, `server foo: auth.clientId: is not used with kind "auto"`, false},
	{"kind in capitals", `{"id":"foo","url":"https://h/","auth":{"kind":"AUTO"}}`, `server foo: auth.kind: "AUTO" is not a kind`, false},
	{"auth without kind", `{"id":"foo","url":"https://h/","auth":{}}`, `server foo: auth.kind: is missing; use "none"`, false},
}

func TestParseServerErrors(t *testing.T) {
	for _, tt := range parseErrorCases {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseServer([]byte(tt.in))
			if err == nil {
				t.Fatalf("ParseServer(%q) = %+v; want an error containing %q", tt.in, s, tt.errHas)
			}
			if !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("ParseServer(%q) error\n%q\nwant it to contain\n%q", tt.in, err, tt.errHas)
			}
			var pe *ParseError
			var fe *FieldError
			if tt.parseErr && !errors.As(err, &pe) || !tt.parseErr && !errors.As(err, &fe) {
				t.Fatalf("error type %T; want *ParseError: %v", err, tt.parseErr)
			}
			if !reflect.DeepEqual(s, Server{}) {
				t.Errorf("a failed parse returned a non-zero server %+v", s)
			}
		})
	}
}

func TestParseServers(t *testing.T) {
	foo := Server{ID: "foo", URL: "https://a.example/mcp", Auth: Auth{Kind: AuthNone}, Enabled: true, ConnectOnStartup: true}
	bar := Server{ID: "bar", URL: "https://b.example/mcp", Auth: Auth{Kind: AuthBearer, Token: "t0k"}, Enabled: false, ConnectOnStartup: true}
	tests := []struct {
		name string
		in   string
		want []Server
	}{
		{"array", `[{"id":"foo","url":"https://a.example/mcp"},{"id":"bar","url":"https://b.example/mcp","auth":{"kind":"bearer","token":"t0k"},"enabled":false}]`, []Server{foo, bar}},
		{"object", `{"servers":[{"id":"foo","url":"https://a.example/mcp"}]}`, []Server{foo}},
		{"empty array", ` [ ] `, []Server{}},
		{"empty object list", `{"servers":[]}`, []Server{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseServers([]byte(tt.in))
			if err != nil {
				t.Fatalf("ParseServers: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseServers =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseServersErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		errHas string
	}{
		{"duplicate ids", `[{"id":"foo","url":"https://a/"},{"id":"bar","url":"https://b/"},{"id":"foo","url":"https://c/"}]`,
			`server foo: id: duplicate id "foo" (servers[0] and servers[2]); ids must be unique`},
		{"type error without id", `[{"id":"foo","url":"https://a/"},{"enabled":"yes"}]`, `servers[1].enabled: must be true or false, not a string (line 1, column 45)`},
		{"type error with id", `[{"id":"foo","url":"https://a/"},{"id":"bar","enabled":"yes"}]`, `server bar: enabled: must be true or false`},
		{"validation without id", `[{"id":"foo","url":"https://a/"},{"id":"","url":"https://b/"}]`, `servers[1].id: is empty`},
		{"validation with id", `{"servers":[{"id":"foo","url":"http://remote.example/"}]}`, `server foo: url: http:// is only allowed for loopback hosts`},
		{"unknown field in element", "[\n {\"id\":\"foo\",\"url\":\"https://a/\"},\n {\"id\":\"bar\",\"colour\":1}\n]", `server bar: colour: unknown field (line 3, column 14)`},
		{"unknown field without id", "[{\"colour\":1}]", `servers[0].colour: unknown field (line 1, column 3)`},
		{"element not object", `[{"id":"foo","url":"https://a/"}, 5]`, `line 1, column 35: a server must be a JSON object, not a number`},
		{"truncated", `[{"id":"foo","url":"https://a/"},`, `the document ends in the middle`},
		{"wrong top level", `"servers"`, `expected a JSON array of servers or {"servers": [...]}, not a string`},
		{"missing servers", `{}`, `missing "servers"`},
		{"servers twice", `{"servers":[],"servers":[]}`, `line 1, column 15: "servers" appears twice`},
		{"servers object", `{"servers":{"github":{"type":"http","url":"https://api.githubcopilot.com/mcp"}}}`, `VS Code's format: import it instead`},
		{"servers string", `{"servers":"x"}`, `"servers" must be an array, not a string`},
		{"claude shape", `{"mcpServers":{}}`, `this looks like a Claude, Cursor or Windsurf config; import it instead`},
		{"unknown top level", `{"servers":[],"version":1}`, `unknown top-level field "version"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseServers([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("ParseServers(%q) = %v, %v; want an error containing\n%q", tt.in, got, err, tt.errHas)
			}
			if got != nil {
				t.Errorf("a failed parse returned servers %v", got)
			}
		})
	}
}

// TestParseServersRoundTrip: what we write, we read back unchanged.
func TestParseServersRoundTrip(t *testing.T) {
	in := []Server{
		{ID: "a", Name: "A", URL: "https://a.example/mcp", Auth: Auth{Kind: AuthNone}, Enabled: true},
		{ID: "b", URL: "http://[::1]:8080/mcp?x=1", Auth: Auth{Kind: AuthBearer, Token: "tok"}, ConnectOnStartup: true, DisabledTools: []string{"x"}, ToolTimeout: Duration(2500 * time.Millisecond)},
		{ID: "c", URL: "https://c.example", Auth: Auth{Kind: AuthOAuth, ClientID: "id", ClientSecret: "sec", Scopes: []string{"s1"}, RedirectPort: 1234,
			Binding: &Binding{Resource: "https://c.example", Issuer: "https://as.example"}}, Enabled: true, ConnectOnStartup: true},
		{ID: "d", URL: "https://d.example/mcp", Auth: Auth{Kind: AuthAuto}, Enabled: true},
		{ID: "e", URL: "https://e.example/mcp", Auth: Auth{Kind: AuthAuto, RedirectPort: 8080,
			Binding: &Binding{Resource: "https://e.example/mcp", Issuer: "https://as.example"}}, ConnectOnStartup: true},
	}
	data, err := json.Marshal(map[string]any{"servers": in})
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseServers(data)
	if err != nil {
		t.Fatalf("ParseServers(%s): %v", data, err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("round trip changed the servers:\n%+v\n%+v", in, out)
	}
}

func FuzzParseServers(f *testing.F) {
	for _, s := range []string{
		`[{"id":"foo","url":"https://a.example/mcp"}]`,
		`{"servers":[{"id":"foo","name":"Foo","url":"http://127.0.0.1:3000/mcp","auth":{"kind":"bearer","token":"t"},"enabled":false,"disabledTools":["x"],"connectOnStartup":false,"toolTimeout":"90s"}]}`,
		`{"servers":[{"id":"s","url":"https://s.example","auth":{"kind":"oauth","clientId":"c","scopes":["a"],"binding":{"resource":"https://s.example","issuer":"https://i"},"redirectPort":1}}]}`,
		`[{"id":"a","url":"https://a.example/mcp","auth":{"kind":"auto"}}]`,
		`{"servers":[{"id":"a","url":"https://a.example/mcp","auth":{"kind":"auto","binding":{"resource":"https://a.example/mcp","issuer":"https://i"},"redirectPort":7}}]}`,
		`[{"id":"a","url":"https://a.example/mcp","auth":{"kind":"auto","clientId":"c","scopes":["s"]}}]`,
		`[{"id":"foo","enabled":"yes"}]`,
		`[{"id":"foo","url":"https://a/"},{"id":"foo","url":"https://b/"}]`,
		`{"servers":[{"id":"foo"`,
		`[{"toolTimeout":1e308}]`,
		"\xef\xbb\xbf[]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := ParseServers(data)
		if single, serr := ParseServer(data); serr == nil {
			if err := single.Validate(); err != nil {
				t.Fatalf("ParseServer returned an invalid server: %v", err)
			}
		}
		if err != nil {
			var pe *ParseError
			var fe *FieldError
			if !errors.As(err, &pe) && !errors.As(err, &fe) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if err := ValidateAll(servers); err != nil {
			t.Fatalf("ParseServers returned invalid servers: %v", err)
		}
		// What we accept must survive our own writer.
		data2, err := json.Marshal(servers)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseServers(data2)
		if err != nil {
			t.Fatalf("re-reading %s: %v", data2, err)
		}
		if !reflect.DeepEqual(normalise(again), normalise(servers)) {
			t.Fatalf("round trip changed the servers:\n%+v\n%+v", servers, again)
		}
	})
}

// normalise makes empty and nil slices equal; omitempty cannot tell them
// apart, and neither can any reader of the config.
func normalise(ss []Server) []Server {
	out := make([]Server, len(ss))
	for i, s := range ss {
		s = s.Clone()
		if len(s.DisabledTools) == 0 {
			s.DisabledTools = nil
		}
		if len(s.Auth.Scopes) == 0 {
			s.Auth.Scopes = nil
		}
		out[i] = s
	}
	return out
}

// ParseServer reads one server in our own JSON shape (the JSON tags of
// Server) and validates it.
//
// Unknown and duplicated fields are refused, with a suggestion when the name
// looks like a typo, because a silently ignored "connectOnStartUp" would
// leave the user wondering why the setting has no effect. Absent fields take
// their defaults: enabled and connectOnStartup true, auth {"kind":"none"}.
//
// Errors are *ParseError for an unreadable document and *FieldError for a
// field that is wrong, both saying where.
func ParseServer(data []byte) (Server, error) {
	doc := blankBOM(data)
	if err := checkJSON(doc); err != nil {
		return Server{}, err
	}
	start := skipSpace(doc, 0)
	s, err := decodeServer(doc, start, doc[start:], "")
	if err != nil {
		return Server{}, err
	}
	if err := s.Validate(); err != nil {
		return Server{}, err
	}
	return s, nil
}
