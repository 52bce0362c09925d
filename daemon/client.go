package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/session"
)

// Client is a typed client of the daemon's API, for the CLI (the Tailscale
// LocalAPI model: the daemon owns the state, the CLI asks it). Every
// method sends the API token as a bearer header and no Origin, and turns
// an error answer into an *APIError. Safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// NewClient returns a client of the daemon at baseURL (http://127.0.0.1:PORT)
// with the API token. hc nil means a client without an overall timeout
// (tool calls may take minutes; bound each call with its context) that
// never follows redirects, since the token must go nowhere else.
func NewClient(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), token: token, hc: hc}
}

// URL returns the daemon's base URL.
func (c *Client) URL() string { return c.base }

// do sends one request; out (a pointer) receives a 2xx JSON answer.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readAPIError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("remotemcp daemon: %s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}

// readAPIError reads an error answer.
func readAPIError(resp *http.Response) error {
	var eb errorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
		return &APIError{Status: resp.StatusCode, Code: CodeInternal, Message: fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
	}
	eb.Error.Status = resp.StatusCode
	return &eb.Error
}

func serverPath(id string, rest ...string) string {
	return "/api/servers/" + url.PathEscape(id) + strings.Join(rest, "")
}

// Health checks the daemon (GET /api/health).
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	return &h, c.do(ctx, http.MethodGet, "/api/health", nil, &h)
}

// LoginURL asks for a new one-time login URL of the settings page.
func (c *Client) LoginURL(ctx context.Context) (*LoginURLResponse, error) {
	var l LoginURLResponse
	return &l, c.do(ctx, http.MethodPost, "/api/login-url", nil, &l)
}

// Servers lists the servers with their live state.
func (c *Client) Servers(ctx context.Context) ([]ServerView, error) {
	var l []ServerView
	return l, c.do(ctx, http.MethodGet, "/api/servers", nil, &l)
}

// Server returns one server.
func (c *Client) Server(ctx context.Context, id string) (*ServerView, error) {
	var v ServerView
	return &v, c.do(ctx, http.MethodGet, serverPath(id), nil, &v)
}

// AddServer adds a server and grants its origin.
func (c *Client) AddServer(ctx context.Context, req AddServerRequest) (*ServerView, error) {
	var v ServerView
	return &v, c.do(ctx, http.MethodPost, "/api/servers", req, &v)
}

// Import imports another client's config (or remotemcp's own list).
func (c *Client) Import(ctx context.Context, req ImportRequest) (*ImportResult, error) {
	var r ImportResult
	return &r, c.do(ctx, http.MethodPost, "/api/servers/import", req, &r)
}

// UpdateServer changes the fields set in req.
func (c *Client) UpdateServer(ctx context.Context, id string, req UpdateServerRequest) (*ServerView, error) {
	var v ServerView
	return &v, c.do(ctx, http.MethodPatch, serverPath(id), req, &v)
}

// DeleteServer deletes a server with its secrets.
func (c *Client) DeleteServer(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, serverPath(id), nil, nil)
}

// Connect connects a server and waits for ready or failure. A failure is
// an *APIError whose Server has the state and reason.
func (c *Client) Connect(ctx context.Context, id string) (*ServerView, error) {
	var v ServerView
	return &v, c.do(ctx, http.MethodPost, serverPath(id, "/connect"), nil, &v)
}

// Disconnect disconnects a server.
func (c *Client) Disconnect(ctx context.Context, id string) (*ServerView, error) {
	var v ServerView
	return &v, c.do(ctx, http.MethodPost, serverPath(id, "/disconnect"), nil, &v)
}

// SetEnabled enables or disables a server.
func (c *Client) SetEnabled(ctx context.Context, id string, enabled bool) (*ServerView, error) {
	action := "/disable"
	if enabled {
		action = "/enable"
	}
	var v ServerView
	return &v, c.do(ctx, http.MethodPost, serverPath(id, action), nil, &v)
}

// SetTool switches one tool on or off (R5.2).
func (c *Client) SetTool(ctx context.Context, id, tool string, enabled bool) (*ServerView, error) {
	var v ServerView
	return &v, c.do(ctx, http.MethodPost, serverPath(id, "/tools"), ToolSwitch{Tool: tool, Enabled: enabled}, &v)
}

// Catalog lists a server's tools, prompts and resources, connecting
// lazily.
func (c *Client) Catalog(ctx context.Context, id string) (*CatalogView, error) {
	var v CatalogView
	return &v, c.do(ctx, http.MethodGet, serverPath(id, "/catalog"), nil, &v)
}

// Authorize starts the OAuth flow; open the returned AuthorizationURL in
// the person's browser, then WaitAuthorization.
func (c *Client) Authorize(ctx context.Context, id string) (*AuthFlow, error) {
	var f AuthFlow
	return &f, c.do(ctx, http.MethodPost, serverPath(id, "/authorize"), nil, &f)
}

// Authorization returns the server's latest Authorize flow.
func (c *Client) Authorization(ctx context.Context, id string) (*AuthFlow, error) {
	var f AuthFlow
	return &f, c.do(ctx, http.MethodGet, serverPath(id, "/authorize"), nil, &f)
}

// WaitAuthorization polls the server's flow until it is done or failed,
// or ctx ends. A failed flow is returned without error: read its Error.
func (c *Client) WaitAuthorization(ctx context.Context, id string) (*AuthFlow, error) {
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		f, err := c.Authorization(ctx, id)
		if err != nil {
			return nil, err
		}
		if f.Phase == PhaseDone || f.Phase == PhaseFailed {
			return f, nil
		}
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-t.C:
		}
	}
}

// OAuthLogout forgets a server's OAuth tokens and registration.
func (c *Client) OAuthLogout(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, serverPath(id, "/logout"), nil, nil)
}

// Grants lists the grants and pending approvals.
func (c *Client) Grants(ctx context.Context) (*Grants, error) {
	var g Grants
	return &g, c.do(ctx, http.MethodGet, "/api/grants", nil, &g)
}

// Grant approves an origin (the person's explicit action, R2.2).
func (c *Client) Grant(ctx context.Context, origin string) (*Grants, error) {
	var g Grants
	return &g, c.do(ctx, http.MethodPost, "/api/grants", OriginRequest{Origin: origin}, &g)
}

// Revoke removes an origin's grant.
func (c *Client) Revoke(ctx context.Context, origin string) (*Grants, error) {
	var g Grants
	return &g, c.do(ctx, http.MethodPost, "/api/grants/revoke", OriginRequest{Origin: origin}, &g)
}

// DismissPending drops an origin's pending approvals without granting it.
func (c *Client) DismissPending(ctx context.Context, origin string) (*Grants, error) {
	var g Grants
	return &g, c.do(ctx, http.MethodPost, "/api/pending/dismiss", OriginRequest{Origin: origin}, &g)
}

// Cards lists the elicitation cards, newest first.
func (c *Client) Cards(ctx context.Context) ([]CardView, error) {
	var l []CardView
	return l, c.do(ctx, http.MethodGet, "/api/cards", nil, &l)
}

// Answer answers a pending card; a bad answer is an *APIError listing
// every problem.
func (c *Client) Answer(ctx context.Context, cardID string, r elicit.Response) error {
	return c.do(ctx, http.MethodPost, "/api/cards/"+url.PathEscape(cardID)+"/answer", r, nil)
}

// Log returns the server's request log, oldest first (R5.3).
func (c *Client) Log(ctx context.Context, id string) ([]session.Exchange, error) {
	var log []session.Exchange
	return log, c.do(ctx, http.MethodGet, "/api/servers/"+url.PathEscape(id)+"/log", nil, &log)
}

// Retry re-sends the call of an interrupted card, once; confirmed must be
// the person's confirmation that this is safe (R6.2).
func (c *Client) Retry(ctx context.Context, cardID string, confirmed bool) (*agent.ToolResult, error) {
	var res agent.ToolResult
	if err := c.do(ctx, http.MethodPost, "/api/cards/"+url.PathEscape(cardID)+"/retry", RetryRequest{Confirmed: confirmed}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Tools lists the agent tools; refresh re-lists every enabled server first.
func (c *Client) Tools(ctx context.Context, refresh bool) (*ToolsView, error) {
	p := "/api/tools"
	if refresh {
		p += "?refresh=1"
	}
	var v ToolsView
	return &v, c.do(ctx, http.MethodGet, p, nil, &v)
}

// Call calls a tool. Set req.Approved only after asking the person.
// Cancelling ctx cancels the call.
func (c *Client) Call(ctx context.Context, req CallRequest) (*agent.ToolResult, error) {
	var r agent.ToolResult
	return &r, c.do(ctx, http.MethodPost, "/api/call", req, &r)
}

// Cancel cancels a call by its operation id.
func (c *Client) Cancel(ctx context.Context, operationID string) error {
	return c.do(ctx, http.MethodPost, "/api/call/cancel", CancelRequest{OperationID: operationID}, nil)
}

// Events follows GET /api/events. The channel delivers each event (the
// full current list of its topic) and is closed when ctx ends or the
// stream does; its goroutine belongs to ctx. A slow reader blocks the
// stream, never loses the newest state.
func (c *Client) Events(ctx context.Context) (<-chan Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/api/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	ch := make(chan Event)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		var ev Event
		var data []byte
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Type != "" {
					ev.Data = json.RawMessage(data)
					select {
					case ch <- ev:
					case <-ctx.Done():
						return
					}
				}
				ev, data = Event{}, nil
			case strings.HasPrefix(line, "event: "):
				ev.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: ")...)
			}
		}
	}()
	return ch, nil
}

// IsPermissionRequired reports whether err is the daemon's
// "permission_required" answer, and for which origin.
func IsPermissionRequired(err error) (*PermissionInfo, bool) {
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == CodePermissionRequired && ae.Permission != nil {
		return ae.Permission, true
	}
	return nil, false
}
