package hosts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Current is the System this program runs on, its environment read
// through env ($HOME, or %USERPROFILE% on Windows, else the user's home
// directory).
func Current(env func(key string) (string, bool)) (System, error) {
	key := "HOME"
	if runtime.GOOS == "windows" {
		key = "USERPROFILE"
	}
	home, _ := env(key)
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return System{}, fmt.Errorf("hosts: find the home directory: %w", err)
		}
		home = h
	}
	return System{OS: runtime.GOOS, Home: home, Env: env}, nil
}

// DataDir is the absolute data directory that a host's entry must reach:
// dir (--data-dir) when given, else the value of the environment variable
// envHome, else remotemcp in sys's user configuration directory.
func DataDir(sys System, dir, envHome string) (string, error) {
	if dir == "" && sys.Env != nil {
		dir, _ = sys.Env(envHome)
	}
	if dir == "" {
		base, ok := sys.ConfigDir()
		if !ok {
			return "", fmt.Errorf("hosts: find the data directory: no --data-dir, $%s or user config directory; give one with --data-dir", envHome)
		}
		dir = filepath.Join(base, "remotemcp")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("hosts: data directory %s: %w", dir, err)
	}
	return abs, nil
}

// ErrCommand marks a --command path that cannot be a host's program; the
// error that wraps it says why.
var ErrCommand = errors.New("not a usable program path")

// Program is the program a host's entry runs: command when given (it
// must be an absolute path to a file), else this running program, its
// symbolic links resolved, refused when it is a temporary build
// (CheckCommand).
func Program(goos, command string) (string, error) {
	if command != "" {
		if !filepath.IsAbs(command) {
			return "", fmt.Errorf("--command %s: give an absolute path: %w", command, ErrCommand)
		}
		if fi, err := os.Stat(command); err != nil || fi.IsDir() {
			return "", fmt.Errorf("--command %s: not a program file: %w", command, ErrCommand)
		}
		return command, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("hosts: find this program's path: %w (give it with --command)", err)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	if err := CheckCommand(goos, p); err != nil {
		return "", fmt.Errorf("%w; or name the program with --command PATH", err)
	}
	return p, nil
}
