package oauth

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

const (
	// maxDocBytes bounds every metadata, registration and token response
	// read from outside; real documents are a few KB.
	maxDocBytes = 1 << 20
	// requestTimeout bounds one discovery, registration or token request.
	// The base client has no Timeout (it also carries SSE streams), so
	// every OAuth request gets its own deadline.
	requestTimeout = 30 * time.Second
)

// noRedirectClient returns a copy of base that never follows redirects:
// CheckRedirect hands the 3xx back (http.ErrUseLastResponse) and the caller
// turns it into ErrRedirectRefused. Following one would let a compromised or
// misconfigured server move discovery, registration or token requests (with
// client credentials and codes in them) to another origin (R3.2).
func noRedirectClient(base *http.Client) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	c := *base
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// redirectError describes a 3xx answer without following it. The Location
// is shown without its query, which could carry codes or tokens.
func redirectError(method, target string, resp *http.Response) error {
	loc := resp.Header.Get("Location")
	where := ""
	if loc != "" {
		where = " to " + redactURL(loc)
	}
	return fmt.Errorf("%s %s answered %d with a redirect%s; redirects are never followed for OAuth requests: %w",
		method, redactURL(target), resp.StatusCode, where, ErrRedirectRefused)
}

// redactURL drops the query and fragment (and any user info) of a URL for
// logs and messages: authorization URLs and callbacks carry state, codes and
// challenges there.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	u.User = nil
	q := u.RawQuery != ""
	u.RawQuery, u.ForceQuery = "", false
	u.Fragment, u.RawFragment = "", ""
	s := sanitize(u.String(), 300)
	if q {
		s += "?…"
	}
	return s
}

// response is what fetch read: the status, the headers and at most
// maxDocBytes of the body.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends req with the no-redirect client and reads the bounded body. A 3xx
// is an ErrRedirectRefused error; other statuses are returned for the caller
// to judge.
func (a *Authenticator) do(req *http.Request) (*response, error) {
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, redirectError(req.Method, req.URL.String(), resp)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the response: %w", req.Method, redactURL(req.URL.String()), err)
	}
	if len(body) > maxDocBytes {
		return nil, fmt.Errorf("%s %s: response is larger than %d bytes", req.Method, redactURL(req.URL.String()), maxDocBytes)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// getDoc GETs a JSON metadata document. It returns the response even for
// non-200 statuses so discovery can decide whether to try the next URL.
func (a *Authenticator) getDoc(ctx context.Context, target string) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	return a.do(req)
}

// checkJSONType refuses a document served with a non-JSON media type (an
// HTML error page with status 200 is the usual case). A missing
// Content-Type is tolerated: some servers omit it and the body is checked
// anyway.
func checkJSONType(h http.Header) error {
	ct := h.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return fmt.Errorf("%w: content type is %q, not application/json", ErrBadMetadata, sanitize(ct, 80))
	}
	return nil
}

// checkEndpointURL checks a URL we will send requests (and credentials) to:
// absolute, no user info, no fragment, and https unless the host is a
// loopback address (R3.2: remote endpoints HTTPS).
func checkEndpointURL(field, raw string) error {
	if raw == "" {
		return fmt.Errorf("%w: %s is missing", ErrBadMetadata, field)
	}
	if len(raw) > config.MaxURLLength {
		return fmt.Errorf("%w: %s is %d bytes long", ErrBadMetadata, field, len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%w: %s %q is not an absolute URL", ErrBadMetadata, field, sanitize(raw, 200))
	}
	if u.User != nil {
		return fmt.Errorf("%w: %s %s contains user information", ErrBadMetadata, field, redactURL(raw))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("%w: %s %s contains a fragment", ErrBadMetadata, field, redactURL(raw))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !config.IsLoopbackHost(u.Hostname()) {
			return fmt.Errorf("%s %s: %w", field, redactURL(raw), ErrInsecureURL)
		}
	default:
		return fmt.Errorf("%s %s: scheme %q: %w", field, redactURL(raw), sanitize(u.Scheme, 20), ErrInsecureURL)
	}
	return nil
}

// isClientError reports a 4xx status: discovery moves on to the next
// well-known location on these, and stops on anything else.
func isClientError(status int) bool { return status >= 400 && status < 500 }

// statusError describes an unexpected HTTP status.
func statusError(method, target string, status int) error {
	return fmt.Errorf("%s %s: unexpected HTTP status %d %s", method, redactURL(target), status, http.StatusText(status))
}
