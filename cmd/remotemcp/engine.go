package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/localapi"
)

// Engine is what every command talks to: the local API, through a
// *localapi.Client connected to the daemon or to the in-process handlers.
type Engine interface {
	localapi.Engine
	LoginURL(ctx context.Context) (*localapi.LoginURL, error)
}

// envHome is the environment variable naming the data directory.
const envHome = "REMOTEMCP_HOME"

// dataDirPath is --data-dir, else $REMOTEMCP_HOME, else <config dir>/remotemcp.
func (a *app) dataDirPath() string {
	if a.dataDir != "" {
		return a.dataDir
	}
	if v, ok := a.env(envHome); ok && v != "" {
		return v
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "remotemcp")
}

// do wraps a command body: it gets the engine, and the engine is released
// when the body returns.
func (a *app) do(fn func(ctx context.Context, e Engine, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		e, release, err := a.engine(ctx)
		if err != nil {
			return err
		}
		defer release()
		return fn(ctx, e, args)
	}
}

// loopbackAddr accepts PORT, :PORT, localhost:PORT and HOST:PORT (of
// --addr: see flagLoopbackAddr).
func loopbackAddr(s string) (string, error) { return flagLoopbackAddr("--addr", s) }

// flagLoopbackAddr is loopbackAddr of the flag named flag, which its
// usage error names.
func flagLoopbackAddr(flag, s string) (string, error) {
	hp := s
	if strings.Trim(s, "0123456789") == "" {
		hp = ":" + s
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil || port == "" || strings.Trim(port, "0123456789") != "" {
		return "", usageErrorf("%s %q: want PORT or HOST:PORT, e.g. 7717 or 127.0.0.1:7717", flag, s)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

func newOpenCmd(a *app) *cobra.Command {
	var noBrowser bool
	cmd := &cobra.Command{
		Use:   "open",
		Short: "Open the running daemon's settings page in a browser (prints its one-time URL too)",
		Long: `Ask the running daemon for a one-time login URL of its settings page,
print it on its own line, and launch the system browser on it (unless
--no-browser). When no browser can be started, open the printed URL
yourself; it works once.`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := a.dial(ctx)
			if err != nil {
				return err
			}
			u, err := c.LoginURL(ctx)
			if err != nil {
				return err
			}
			if note := a.movedPageNote(ctx); note != "" {
				fmt.Fprintln(a.streams.Err, note)
			}
			a.browse(ctx, u.URL, noBrowser)
			return nil
		},
	}
	cmd.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the URL")
	return cmd
}

// browse prints u on its own line and, unless noBrowser, opens it in a
// browser and waits for the opener's verdict. The URL carries secrets, so
// the opener's argv (readable in /proc) names a 0600 redirect page instead.
func (a *app) browse(ctx context.Context, u string, noBrowser bool) {
	fmt.Fprintln(a.streams.Out, u)
	if noBrowser {
		return
	}
	if err := a.openBrowser(ctx, u); err != nil {
		a.log.Debug("browser", "err", err)
		fmt.Fprintln(a.streams.Err, "could not open a browser: open the URL above yourself")
		return
	}
	fmt.Fprintln(a.streams.Err, "opened the URL above in your browser")
}

// openBrowser runs the desktop's opener on a redirect page to u and waits
// for it to exit.
func (a *app) openBrowser(ctx context.Context, u string) error {
	name, args := "xdg-open", []string{}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		d, _ := a.env("DISPLAY")
		w, _ := a.env("WAYLAND_DISPLAY")
		if d == "" && w == "" {
			return errors.New("no display ($DISPLAY and $WAYLAND_DISPLAY are empty)")
		}
	}
	page, err := writeRedirectPage(a.dataDirPath(), u)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, name, append(args, page)...).Run()
}

// redirectPageTTL is how long a redirect page may stay: long enough for a
// browser to start, and its secrets are short-lived or single-use anyway.
const redirectPageTTL = 10 * time.Minute

// writeRedirectPage writes a 0600 HTML page that sends the browser on to
// u, and removes the ones left from earlier runs.
func writeRedirectPage(dir, u string) (string, error) {
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
