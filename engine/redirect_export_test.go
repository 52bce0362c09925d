package engine

import "testing"

// SetDefaultRedirectPort makes port the redirect port a sign-in uses when
// neither the server's config nor a daemon names one (7717 in use), for
// the rest of the test: tests never depend on 7717 itself.
func SetDefaultRedirectPort(t testing.TB, port int) {
	old := defaultRedirectPort
	defaultRedirectPort = port
	t.Cleanup(func() { defaultRedirectPort = old })
}
