package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/localapi"
)

// sseKeepAlive is how often an idle event stream gets a comment line, so
// that the browser and the client notice a dead connection.
const sseKeepAlive = 25 * time.Second

// events serves GET /api/events: Server-Sent Events of the engine's
// Subscribe, one event per localapi.Event ("event: servers", a data line
// of JSON): the engine's first events are the current lists, so a page
// that just opened shows them, then every change.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ch, err := a.eng.Subscribe(ctx)
	if err != nil {
		a.error(w, err)
		return
	}
	rc, ok := startSSE(w, nil)
	if !ok {
		return
	}
	write := func(ev localapi.Event) error {
		var data bytes.Buffer
		// One data line: JSON needs no newline.
		if err := json.Compact(&data, ev.Data); err != nil {
			a.log.Warn("daemon: unreadable event", "type", ev.Type, "err", err)
			return nil
		}
		typ := strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, string(ev.Type))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, a.scrub.scrub(data.Bytes())); err != nil {
			return err
		}
		return rc.Flush()
	}
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok || write(ev) != nil {
				return
			}
		case <-keep.C:
			if keepAlive(w, rc) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// startSSE starts a Server-Sent Events answer, with the extra headers
// given, and flushes it; false when the client is already gone.
func startSSE(w http.ResponseWriter, extra http.Header) (*http.ResponseController, bool) {
	rc := http.NewResponseController(w)
	for k, v := range extra {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", localapi.ContentTypeSSE)
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return rc, rc.Flush() == nil
}

// keepAlive writes an SSE comment, so that both ends notice a dead
// connection.
func keepAlive(w http.ResponseWriter, rc *http.ResponseController) error {
	if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return rc.Flush()
}
