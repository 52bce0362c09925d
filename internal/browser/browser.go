// Package browser opens a URL in the desktop's browser. The URL may carry
// secrets (a one-time login link, an authorization request), so the
// opener's argv, which any local user can read in /proc, names a private
// redirect page in the data directory instead.
package browser

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// openWait bounds the desktop opener.
const openWait = 30 * time.Second

// Open runs the desktop's opener on a redirect page to u, written below
// the data directory dir, and waits for it to exit. env reads the
// environment ($DISPLAY, $WAYLAND_DISPLAY).
func Open(ctx context.Context, dir, u string, env func(string) (string, bool)) error {
	name, args := "xdg-open", []string{}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		d, _ := env("DISPLAY")
		w, _ := env("WAYLAND_DISPLAY")
		if d == "" && w == "" {
			return errors.New("no display ($DISPLAY and $WAYLAND_DISPLAY are empty)")
		}
	}
	page, err := WriteRedirectPage(dir, u)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, openWait)
	defer cancel()
	return exec.CommandContext(ctx, name, append(args, page)...).Run()
}

// redirectPageTTL is how long a redirect page may stay: long enough for a
// browser to start, and its secrets are short-lived or single-use anyway.
const redirectPageTTL = 10 * time.Minute

// WriteRedirectPage writes a 0600 HTML page in dir/open that sends the
// browser on to u, removes the ones left from earlier runs, and returns
// its path.
func WriteRedirectPage(dir, u string) (string, error) {
	pages := filepath.Join(dir, "open")
	if err := os.MkdirAll(pages, 0o700); err != nil {
		return "", err
	}
	if old, err := os.ReadDir(pages); err == nil {
		for _, e := range old {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > redirectPageTTL {
				os.Remove(filepath.Join(pages, e.Name()))
			}
		}
	}
	f, err := os.CreateTemp(pages, "open-*.html")
	if err != nil {
		return "", err
	}
	esc := html.EscapeString(u)
	_, err = fmt.Fprintf(f, "<!doctype html><meta charset=utf-8><meta name=referrer content=no-referrer>"+
		"<meta http-equiv=refresh content=\"0;url=%s\"><title>remotemcp</title><a href=\"%s\">Continue</a>\n", esc, esc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
