package localapi

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

// UserHeader names the person a request on a gateway daemon's socket acts
// for (the CLI's global --user EMAIL; SPEC §9 A11). A gateway answers a
// request for a person without it with CodeUserRequired; a personal
// daemon refuses it, so a command meant for a gateway never acts on the
// wrong store.
const UserHeader = "Remotemcp-User"

// CodeUserRequired: the daemon is a gateway and the request did not say
// which person it acts for. The message names the users it could mean.
const CodeUserRequired = "user_required"

// CodeQuota: the request would pass one of the person's quotas on a
// gateway (servers, calls in flight); nothing was done (HTTP 429).
const CodeQuota = "quota_exceeded"

// User is one person of a gateway: never their secrets.
type User struct {
	ID      string    `json:"id"`
	Email   string    `json:"email"`
	Created time.Time `json:"createdAt"`
	// Servers is how many servers they have (in listings; never which).
	Servers int `json:"servers"`
}

// UserList is the answer of GET /api/users.
type UserList struct {
	Users []User `json:"users"`
}

// AddUserRequest is the body of POST /api/users.
type AddUserRequest struct {
	Email string `json:"email"`
}

// Users lists a gateway's people (GET /api/users; admins only: the
// socket).
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var out UserList
	if err := c.do(ctx, http.MethodGet, "/api/users", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Users, nil
}

// AddUser adds a person to a gateway (POST /api/users).
func (c *Client) AddUser(ctx context.Context, email string) (*User, error) {
	var out User
	if err := c.do(ctx, http.MethodPost, "/api/users", nil, AddUserRequest{Email: email}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveUser removes a person and everything of theirs from a gateway
// (DELETE /api/users/{email}).
func (c *Client) RemoveUser(ctx context.Context, email string) error {
	return c.do(ctx, http.MethodDelete, "/api/users/"+url.PathEscape(email), nil, nil, nil)
}

// ActAs makes every later request of c act for the person with email on
// a gateway daemon (UserHeader). Call it before c is used.
func (c *Client) ActAs(email string) {
	c.hc.Transport = userTransport{next: c.hc.Transport, email: email}
}

// userTransport adds UserHeader to every request.
type userTransport struct {
	next  http.RoundTripper
	email string
}

func (t userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(UserHeader, t.email)
	return t.next.RoundTrip(r)
}

// SharedServer is a server a gateway's admins share with everyone (no
// secrets: each person signs in with their own account).
type SharedServer struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	URL  string          `json:"url"`
	Auth config.AuthKind `json:"auth"`
}

// SharedServerList is the answer of GET /api/shared-servers.
type SharedServerList struct {
	Servers []SharedServer `json:"servers"`
}

// SharedServers lists the servers shared with everyone (admins).
func (c *Client) SharedServers(ctx context.Context) ([]SharedServer, error) {
	var out SharedServerList
	if err := c.do(ctx, http.MethodGet, "/api/shared-servers", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Servers, nil
}

// AddSharedServer shares a server with everyone (admins).
func (c *Client) AddSharedServer(ctx context.Context, req AddServerRequest) (*SharedServer, error) {
	var out SharedServer
	if err := c.do(ctx, http.MethodPost, "/api/shared-servers", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveSharedServer stops sharing a server (admins): every person's copy
// goes.
func (c *Client) RemoveSharedServer(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/shared-servers/"+url.PathEscape(id), nil, nil, nil)
}
