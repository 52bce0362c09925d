package authserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Approve is the browser of a test sign-in: it GETs authURL without
// following the redirect, checks that the Location goes back to the
// request's redirect_uri, and returns the callback parameters it carries
// (code, state, iss, or error). It works with authorization servers that
// approve at once, as this one does. hc is the client to use (its
// redirects are not followed); nil is http.DefaultClient's transport.
func Approve(ctx context.Context, hc *http.Client, authURL string) (url.Values, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if hc != nil {
		c.Transport, c.Jar, c.Timeout = hc.Transport, hc.Jar, hc.Timeout
	}
	au, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	redirect, err := url.Parse(au.Query().Get("redirect_uri"))
	if err != nil {
		return nil, fmt.Errorf("authorization URL has a bad redirect_uri: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return nil, fmt.Errorf("the authorization endpoint answered %d instead of redirecting back", resp.StatusCode)
	}
	loc, err := au.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, fmt.Errorf("unparsable Location: %w", err)
	}
	if loc.Scheme != redirect.Scheme || loc.Host != redirect.Host || loc.Path != redirect.Path {
		return nil, fmt.Errorf("the authorization endpoint redirected to %s%s, not to the redirect URI", loc.Host, loc.Path)
	}
	return loc.Query(), nil
}
