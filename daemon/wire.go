package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/remotemcp/remotemcp/localapi"
)

const (
	// maxBody bounds a JSON request body.
	maxBody = 1 << 20
	// maxImportBody bounds a pasted config (real ones are a few KiB).
	maxImportBody = 4 << 20
	// maxCallBody bounds a call request: the arguments may be as large as
	// the agent accepts (4 MiB), plus the rest.
	maxCallBody = 4<<20 + maxBody
)

// marshal encodes v without HTML escaping: raw bytes from servers (a
// tool's inputSchema) must reach the caller unchanged (R4.1), and no
// answer is ever rendered as HTML (application/json, nosniff, CSP; the
// page's script puts text in with textContent only).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// toError maps an engine error to the API's error answer: the engine's
// *localapi.Error as it is, context errors to timeout and unavailable,
// anything else to internal with its message (which names the step).
func toError(err error) *localapi.Error {
	if e, ok := localapi.AsError(err); ok {
		c := *e
		if c.Status == 0 {
			c.Status = localapi.StatusOf(c.Code)
		}
		return &c
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &localapi.Error{Status: http.StatusGatewayTimeout, Code: localapi.CodeTimeout, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		// The caller went away, or the daemon is shutting down.
		return &localapi.Error{Status: http.StatusServiceUnavailable, Code: localapi.CodeUnavailable, Message: err.Error()}
	}
	return &localapi.Error{Status: http.StatusInternalServerError, Code: localapi.CodeInternal, Message: err.Error()}
}

func badRequest(field, format string, args ...any) *localapi.Error {
	return &localapi.Error{Status: http.StatusBadRequest, Code: localapi.CodeBadRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// out writes JSON answers and error answers, scrubbed of known secrets.
type out struct {
	log   *slog.Logger
	scrub *scrubber
}

// json writes v with the status.
func (o out) json(w http.ResponseWriter, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		o.log.Error("daemon: encode the answer", "err", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"cannot encode the answer"}}`)
	}
	o.encoded(w, status, b)
}

// encoded writes the JSON answer b (as marshal encodes) with the status.
// The length is sent, so a client reading a large answer (a tool list of
// many MB) can size its buffer once.
func (o out) encoded(w http.ResponseWriter, status int, b []byte) {
	b = o.scrub.scrub(b)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte("\n"))
}

// error writes {"error": …} with its status.
func (o out) error(w http.ResponseWriter, err error) {
	e := toError(err)
	if e.Code == localapi.CodeInternal {
		o.log.Warn("daemon: request failed", "err", err)
	}
	o.json(w, e.Status, localapi.ErrorBody{Error: e})
}

// reply answers one engine call: the error, or v with status (204 and no
// body when v is nil).
func (o out) reply(w http.ResponseWriter, status int, v any, err error) {
	switch {
	case err != nil:
		o.error(w, err)
	case v == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		o.json(w, status, v)
	}
}

// decode reads a JSON body into a T. Unknown fields are refused (a
// misspelled "approved" must not pass silently), and the Content-Type
// must be JSON, which a cross-site form cannot send.
func decode[T any](w http.ResponseWriter, r *http.Request, limit int64) (T, error) {
	return decodeBody[T](r.Header.Get("Content-Type"), http.MaxBytesReader(w, r.Body, limit), limit)
}

// decodeBody is decode without the request: the Content-Type header's
// value and a body that http.MaxBytesReader already bounds to limit
// bytes. Every failure is a *localapi.Error with CodeBadRequest: 415 for
// the content type, 413 for the size, 400 for the rest.
func decodeBody[T any](contentType string, body io.Reader, limit int64) (T, error) {
	var v T
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return v, &localapi.Error{Status: http.StatusUnsupportedMediaType, Code: localapi.CodeBadRequest, Message: "the request body must be application/json"}
	}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return v, &localapi.Error{Status: http.StatusRequestEntityTooLarge, Code: localapi.CodeBadRequest,
				Message: fmt.Sprintf("the request body is larger than %d bytes", limit)}
		}
		return v, badRequest("", "the request body is not valid: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return v, badRequest("", "the request body has data after the JSON value")
	}
	return v, nil
}

// scrubber holds the secrets scrubbed from every answer: the write-only
// secrets the API received (a bearer token, a client secret, an import's
// variables) and those the engine names (localapi.SecretLister).
type scrubber struct {
	mu     sync.RWMutex
	seen   map[string]bool
	engine []string
}

// minSecret: shorter values would scrub ordinary words; no real token is
// that short.
const minSecret = 8

func newScrubber() *scrubber { return &scrubber{seen: map[string]bool{}} }

// add remembers secrets the API received.
func (s *scrubber) add(vals ...string) {
	s.mu.Lock()
	for _, v := range vals {
		if len(v) >= minSecret {
			s.seen[v] = true
		}
	}
	s.mu.Unlock()
}

// refresh re-reads the engine's secrets, if it can name them.
func (s *scrubber) refresh(ctx context.Context, eng localapi.Engine) {
	sl, ok := eng.(localapi.SecretLister)
	if !ok {
		return
	}
	l, err := sl.KnownSecrets(ctx)
	if err != nil && len(l) == 0 {
		return
	}
	keep := l[:0:0]
	for _, v := range l {
		if len(v) >= minSecret {
			keep = append(keep, v)
		}
	}
	s.mu.Lock()
	s.engine = keep
	s.mu.Unlock()
}

// scrub replaces every known secret in b.
func (s *scrubber) scrub(b []byte) []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.seen) == 0 && len(s.engine) == 0 {
		return b
	}
	str := string(b)
	changed := false
	repl := func(sec string) {
		if strings.Contains(str, sec) {
			str = strings.ReplaceAll(str, sec, "[redacted]")
			changed = true
		}
	}
	for sec := range s.seen {
		repl(sec)
	}
	for _, sec := range s.engine {
		repl(sec)
	}
	if !changed {
		return b
	}
	return []byte(str)
}
