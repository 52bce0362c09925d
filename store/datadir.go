package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EnvHome is the environment variable that overrides the default data
// directory.
const EnvHome = "REMOTEMCP_HOME"

// DataDir resolves the data directory: flag if non-empty, else
// $REMOTEMCP_HOME, else <os.UserConfigDir()>/remotemcp. The directory is
// created with mode 0700 if missing (an existing directory keeps its mode)
// and returned as an absolute path, so lock and key paths do not depend on
// the working directory.
func DataDir(flag string) (string, error) {
	dir := flag
	if dir == "" {
		dir = os.Getenv(EnvHome)
	}
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("store: data directory: no --data-dir or $%s, and no user config directory: %w", EnvHome, err)
		}
		dir = filepath.Join(base, "remotemcp")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("store: data directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", mkdirError(abs, err)
	}
	return abs, nil
}

// mkdirError explains a failure to create the data directory dir; one for
// lack of permission wraps ErrDataDirNotWritable.
func mkdirError(dir string, err error) error {
	if errors.Is(err, fs.ErrPermission) || isReadOnlyFS(err) {
		return fmt.Errorf("store: create data directory %s: a parent directory is not writable by this user; create it yourself, make its parent writable (chmod u+w), or choose another data directory with --data-dir or $%s: %w (%w)", dir, EnvHome, ErrDataDirNotWritable, err)
	}
	return fmt.Errorf("store: create data directory %s: %w", dir, err)
}
