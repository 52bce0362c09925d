package hosts

import (
	"strings"
	"testing"
)

// DataDir: --data-dir, else the environment variable, else remotemcp in
// the user's configuration directory; always absolute.
func TestDataDir(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		name, flag string
		env        map[string]string
		want       string
		err        string
	}{
		{"flag", "/d/flag", map[string]string{"RM_HOME": "/d/env"}, "/d/flag", ""},
		{"env", "", map[string]string{"RM_HOME": "/d/env"}, "/d/env", ""},
		{"xdg", "", map[string]string{"XDG_CONFIG_HOME": "/x"}, "/x/remotemcp", ""},
		{"home", "", map[string]string{}, "/home/u/.config/remotemcp", ""},
		{"relative xdg", "", map[string]string{"XDG_CONFIG_HOME": "x"}, "", "no --data-dir, $RM_HOME or user config directory"},
	} {
		sys := System{OS: "linux", Home: "/home/u", Env: env(tc.env)}
		got, err := DataDir(sys, tc.flag, "RM_HOME")
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q %v, want %q %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}
