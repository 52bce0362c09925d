package hosts

import "testing"

func TestCheckHTTPURL(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765/mcp", ""},
		{"http://localhost:1/mcp", "http://localhost:1/mcp", ""},
		{"http://[::1]:65535/mcp", "http://[::1]:65535/mcp", ""},
		{"127.0.0.1:8765/mcp", "", "not an absolute http URL"},
		{"https://127.0.0.1:8765/mcp", "", "the scheme must be http (the endpoint is plain HTTP on loopback)"},
		{"http://u:p@127.0.0.1:8765/mcp", "", "a URL with a user name or password is refused"},
		{"http://127.0.0.1:8765/mcp?x=1", "", "a query or fragment is refused"},
		{"http://127.0.0.1:8765/mcp?", "", "a query or fragment is refused"},
		{"http://127.0.0.1:8765/mcp#f", "", "a query or fragment is refused"},
		{"http://example.com:8765/mcp", "", "only a loopback address (127.0.0.1, [::1] or localhost) is allowed: the endpoint listens on nothing else"},
		{"http://10.0.0.1:8765/mcp", "", "only a loopback address (127.0.0.1, [::1] or localhost) is allowed: the endpoint listens on nothing else"},
		{"http://127.0.0.1/mcp", "", "give the port"},
		{"http://127.0.0.1:0/mcp", "", "give the port"},
		{"http://127.0.0.1:8765/", "", "the path must be /mcp"},
		{"http://127.0.0.1:8765/mcp/", "", "the path must be /mcp"},
	} {
		got, err := CheckHTTPURL(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("CheckHTTPURL(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}
