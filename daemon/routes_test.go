package daemon

import (
	"net/http/httptest"
	"testing"
)

// On a gateway, a request without --user for a route the API does not
// have is "no such route", not "say which user" (isAPIRoute).
func TestIsAPIRoute(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/api/servers", true},
		{"GET", "/api/servers/alice-files", true},
		{"POST", "/api/servers/x/authorize", true},
		{"POST", "/api/calls/op-1/cancel", true},
		{"GET", "/api/no-such-route", false},
		{"DELETE", "/api/tools", false},
		{"GET", "/api/", false},
	} {
		if got := isAPIRoute(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("%s %s: isAPIRoute = %t, want %t", tc.method, tc.path, got, tc.want)
		}
	}
}
