package hosts

import (
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
