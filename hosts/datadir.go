package hosts

import "strings"

// A host does not start a stdio server with the environment of the shell
// that wrote its entry: it starts it with a handful of its own variables.
// Codex keeps HOME, LOGNAME, PATH, SHELL, USER, __CF_USER_TEXT_ENCODING,
// LANG, LC_ALL, TERM, TMPDIR and TZ on Unix (codex-rs rmcp-client,
// DEFAULT_ENV_VARS), and on Windows, in versions before 0.150 or so, only
// PATH, PATHEXT, USERNAME, USERDOMAIN, USERPROFILE, TEMP and TMP; the
// TypeScript SDK's getDefaultEnvironment, which Claude Desktop, Cursor and
// the Inspector use, keeps HOME, LOGNAME, PATH, SHELL, TERM and USER on
// Unix. So XDG_CONFIG_HOME and REMOTEMCP_HOME are gone and HOME stays,
// and the remotemcp the host starts computes its data directory from HOME
// alone (issue #19 item 3: with XDG_CONFIG_HOME set, Codex's remotemcp
// opened an empty ~/.config/remotemcp, started a second daemon and saw no
// tools).

// ConfigDir is os.UserConfigDir computed for s rather than for this
// process: $XDG_CONFIG_HOME (absolute) or $HOME/.config on Linux and other
// Unix systems, $HOME/Library/Application Support on macOS, %APPDATA% on
// Windows. ok is false when the variable it needs is unset or relative,
// where os.UserConfigDir fails.
func (s System) ConfigDir() (string, bool) {
	switch s.OS {
	case "windows":
		return s.expand("$APPDATA")
	case "darwin":
		return s.expand("$HOME/Library/Application Support")
	}
	if v, ok := s.lookup("XDG_CONFIG_HOME"); ok && v != "" {
		if !isAbs(s.OS, v) {
			return "", false
		}
		return strings.TrimRight(v, "/"), true
	}
	return s.expand("$HOME/.config")
}

// lookup reads one variable of s's environment.
func (s System) lookup(key string) (string, bool) {
	if s.Env == nil {
		return "", false
	}
	return s.Env(key)
}

// DefaultDataDir is the data directory a remotemcp started by a host
// computes: <config dir>/remotemcp for the environment hosts keep, in
// which only HOME of the variables that matter survives. ok is false on
// Windows, where the config directory comes from %APPDATA%, which some
// hosts (Codex before it kept APPDATA) drop: there no default is safe.
func DefaultDataDir(s System) (string, bool) {
	if s.OS == "windows" {
		return "", false
	}
	kept := System{OS: s.OS, Home: s.Home} // HOME only: s.Env is the shell's
	base, ok := kept.ConfigDir()
	if !ok {
		return "", false
	}
	return base + sep(s.OS) + "remotemcp", true
}

// DataDirArg is the --data-dir an entry must pass so that the remotemcp a
// host starts uses the data directory dir (an absolute path): "" when that
// process would compute dir by itself (DefaultDataDir), else dir. Whether
// dir came from --data-dir, $REMOTEMCP_HOME or $XDG_CONFIG_HOME does not
// matter: the host passes on none of them.
func DataDirArg(s System, dir string) string {
	dir = trimSep(s.OS, dir)
	if def, ok := DefaultDataDir(s); ok && def == dir {
		return ""
	}
	return dir
}

// trimSep drops trailing separators of p, but not from a root ("/").
func trimSep(goos, p string) string {
	cut := "/"
	if goos == "windows" {
		cut = `/\`
	}
	if t := strings.TrimRight(p, cut); t != "" && !(goos == "windows" && strings.HasSuffix(t, ":")) {
		return t
	}
	return p
}
