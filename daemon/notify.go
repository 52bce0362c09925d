package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/remotemcp/remotemcp/localapi"
)

// NotifyCommand is the program the daemon runs for a desktop
// notification (Options.Notify), looked up on PATH each time.
const NotifyCommand = "notify-send"

// notifyTimeout bounds one run of NotifyCommand: a notification daemon
// that does not answer must not keep processes around.
const notifyTimeout = 10 * time.Second

// notifyCooldown is the least time between two notifications about the
// same server: a server that keeps falling back into needs-auth is told
// once, not on every turn.
const notifyCooldown = 10 * time.Minute

// Lengths, in characters, of the parts of a notification taken from a
// server's config or answers.
const (
	notifyMaxName = 80
	notifyMaxWhy  = 200
)

// notifier tells the person on the desktop when background work needs
// them (SPEC §9 A4, B2): when a server the daemon already knew enters
// needs-auth, it runs notify-send, where it is installed, with the
// server's name and why. A server that shows up already waiting (added
// just now, or waiting when the daemon started) and a sign-out (the
// person's own doing) are not announced: the page's banner and `status`
// show them.
type notifier struct {
	log      *slog.Logger
	cooldown time.Duration
	// run starts one notification; the daemon tracks it with its wait
	// group.
	run func(func())
	// last is when each server was last announced.
	last map[string]time.Time
	// prev is each server's state in the previous list (disabled servers
	// count as not waiting); nil until the first list.
	prev map[string]localapi.State
}

// startNotifier follows the engine's server lists until the daemon
// stops, announcing servers that enter needs-auth.
func (s *Server) startNotifier() {
	ch, err := s.o.Engine.Subscribe(s.ctx)
	if err != nil {
		s.log.Warn("daemon: cannot follow the servers' states; no desktop notifications", "err", err)
		return
	}
	if _, err := exec.LookPath(NotifyCommand); err != nil {
		s.log.Info("daemon: "+NotifyCommand+" is not installed; desktop notifications are off until it is", "err", err)
	}
	n := &notifier{log: s.log, cooldown: notifyCooldown, run: s.wg.Go, last: map[string]time.Time{}}
	s.wg.Go(func() {
		for {
			select {
			case ev, ok := <-ch:
				if !ok {
					return
				}
				n.event(s.ctx, ev)
			case <-s.ctx.Done():
				return
			}
		}
	})
}

// event handles one engine event: a servers list is compared with the
// previous one.
func (n *notifier) event(ctx context.Context, ev localapi.Event) {
	if ev.Type != localapi.EventServers {
		return
	}
	var list []localapi.Server
	if err := json.Unmarshal(ev.Data, &list); err != nil {
		n.log.Warn("daemon: unreadable servers event", "err", err)
		return
	}
	next := make(map[string]localapi.State, len(list))
	for _, srv := range list {
		st := srv.State
		if !srv.Enabled {
			st = localapi.StateDisconnected
		}
		next[srv.ID] = st
		was, known := n.prev[srv.ID]
		if n.prev == nil || !known || was == localapi.StateNeedsAuth || st != localapi.StateNeedsAuth {
			continue
		}
		// A server waiting for its first sign-in (a fresh add passes
		// through connecting on its way to needs-auth) is no news; the
		// reason says so, whatever states a busy reader skipped.
		if srv.Reason != nil && quiet(srv.Reason.Code) {
			continue
		}
		if t, ok := n.last[srv.ID]; ok && time.Since(t) < n.cooldown {
			continue
		}
		n.last[srv.ID] = time.Now()
		summary, body := notification(srv)
		n.run(func() { n.send(ctx, srv.ID, summary, body) })
	}
	for id := range n.last {
		if _, ok := next[id]; !ok {
			delete(n.last, id)
		}
	}
	n.prev = next
}

// quiet reports whether a needs-auth reason is no news: the person's own
// sign-out, and a server never signed in (a fresh add passes through
// connecting on its way there; a call found it so).
func quiet(c localapi.ReasonCode) bool {
	return c == localapi.ReasonSignedOut || c == localapi.ReasonNotSignedIn || c == localapi.ReasonNeedsAuth
}

// send runs NotifyCommand with the summary and body as arguments of their
// own, after "--", so that nothing in them can be taken for an option;
// without the command it does nothing.
func (n *notifier) send(ctx context.Context, id, summary, body string) {
	path, err := exec.LookPath(NotifyCommand)
	if err != nil {
		n.log.Debug("daemon: no desktop notification: "+NotifyCommand+" is not installed", "server", id)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--app-name=remotemcp", "--", summary, body)
	if out, err := cmd.CombinedOutput(); err != nil {
		n.log.Warn("daemon: desktop notification failed", "server", id, "err", err, "output", plain(string(out), 200))
		return
	}
	n.log.Info("daemon: desktop notification sent", "server", id)
}

// notification is the summary and body announcing that srv needs the
// person's sign-in, in plain text (plain).
func notification(srv localapi.Server) (summary, body string) {
	name := srv.Name
	if name == "" {
		name = srv.ID
	}
	summary = "remotemcp: " + plain(name, notifyMaxName) + " needs you to sign in"
	body = plain(needsAuthWhy(srv.Reason), notifyMaxWhy) +
		". It is paused until you sign in: open the settings page (remotemcp open) and click Authorize."
	return summary, body
}

// needsAuthWhy says why a server waits for the person's sign-in, from
// its reason's code and scopes: the Why of localapi.Table, which the
// settings page shows too (app.js authWhy), as a sentence.
func needsAuthWhy(r *localapi.Reason) string {
	if r == nil {
		r = &localapi.Reason{}
	}
	w, _ := localapi.Table.ReasonWords(*r, "")
	why := w.Why
	if why == "" {
		why = localapi.Table.Reasons[""].Why
	}
	if len(r.Scopes) > 0 {
		why += " (" + strings.Join(r.Scopes, " ") + ")"
	}
	return strings.ToUpper(why[:1]) + why[1:]
}

// plain makes text from a server's config or answers safe to show in a
// notification: control characters become spaces, the characters of a
// notification body's markup (<, >, &) become look-alikes that mean
// nothing, invisible formatting (bidirectional overrides) goes, and it is cut to at most max characters.
func plain(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if n == max {
			b.WriteString("…")
			break
		}
		switch {
		case r == '<':
			r = '‹'
		case r == '>':
			r = '›'
		case r == '&':
			r = '＆'
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}
