package daemon

import (
	"net/http"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/localapi"
)

// The MCP endpoint's bearer tokens over the socket: create, list, check
// and revoke through the Client, typed errors for a taken name, a bad
// name and an unknown one, and a clear 400 for a malformed request; the
// settings page may not reach them (issue #21 item 7).
func TestHostTokensAPI(t *testing.T) {
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	c := s.c

	if l, err := c.HostTokens(ctx); err != nil || len(l) != 0 {
		t.Fatalf("empty list: %+v %v", l, err)
	}
	nt, err := c.CreateHostToken(ctx, "cursor")
	if err != nil || nt.Name != "cursor" || !strings.HasPrefix(nt.Token, "rmcp_") || nt.CreatedAt.IsZero() {
		t.Fatalf("create: %+v %v", nt, err)
	}
	got, err := c.CheckHostToken(ctx, nt.Token)
	if err != nil || got.Name != "cursor" || !got.CreatedAt.Equal(nt.CreatedAt) {
		t.Fatalf("check: %+v %v", got, err)
	}
	if l, err := c.HostTokens(ctx); err != nil || len(l) != 1 || l[0] != nt.HostToken {
		t.Fatalf("list: %+v %v, want %+v", l, err, nt.HostToken)
	}
	for _, tc := range []struct {
		what string
		err  error
		code string
		msg  string
	}{
		{"taken name", second(c.CreateHostToken(ctx, "cursor")), localapi.CodeConflict, `create token "cursor": a token of that name exists (revoke it first, or choose another name)`},
		{"bad name", second(c.CreateHostToken(ctx, "-no")), localapi.CodeBadRequest, `create token "-no": a name is 1 to 64`},
		{"unknown token", second(c.CheckHostToken(ctx, "rmcp_nope")), localapi.CodeNotFound, "not a valid token"},
		{"unknown name", c.RevokeHostToken(ctx, "nope"), localapi.CodeNotFound, `revoke token "nope": no token of that name`},
	} {
		if code(tc.err) != tc.code || !strings.HasPrefix(tc.err.Error(), tc.msg) {
			t.Errorf("%s: %v (%s), want %s %q…", tc.what, tc.err, code(tc.err), tc.code, tc.msg)
		}
	}
	if err := c.RevokeHostToken(ctx, "cursor"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckHostToken(ctx, nt.Token); code(err) != localapi.CodeNotFound {
		t.Fatalf("check after revoke: %v", err)
	}

	// Malformed requests on the real socket get a 400 that says why.
	rc := newSocketRawClient(t, s.srv.SocketPath())
	for _, tc := range []struct {
		path, body string
		field, msg string
	}{
		{"/api/host-tokens", `{}`, "name", "give the token's name"},
		{"/api/host-tokens", `{"name":"x","nmae":"y"}`, "", "the request body is not valid"},
		{"/api/host-tokens", `{"name":`, "", "the request body is not valid"},
		{"/api/host-tokens", `{"name":"x"} {}`, "", "the request body has data after the JSON value"},
		{"/api/host-tokens/revoke", `{"token":"rmcp_x"}`, "name", "give the token's name"},
		{"/api/host-tokens/check", `{"name":"x"}`, "token", "give the token to check"},
		{"/api/host-tokens/check", `[]`, "", "the request body is not valid"},
	} {
		r := rc.do(t, http.MethodPost, sock+tc.path, tc.body, nil)
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, `"code":"bad_request"`) ||
			!strings.Contains(r.body, tc.msg) || (tc.field != "" && !strings.Contains(r.body, `"field":"`+tc.field+`"`)) {
			t.Errorf("POST %s %s: %d %s, want 400 %q", tc.path, tc.body, r.status, r.body, tc.msg)
		}
	}

	// The settings page's session may not list or make tokens.
	tcp := newRawClient(t)
	sess := s.login(t, tcp)
	page := map[string]string{"Cookie": CookieName + "=" + sess, "Origin": s.srv.URL()}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		r := tcp.do(t, m, s.page()+"api/host-tokens", `{"name":"page"}`, page)
		if r.status != http.StatusForbidden {
			t.Errorf("%s host-tokens from the page: %d %s, want 403", m, r.status, r.body)
		}
	}
	if l, err := c.HostTokens(ctx); err != nil || len(l) != 0 {
		t.Fatalf("after the page's attempt: %+v %v", l, err)
	}
}

// second is the error of a two-valued call.
func second[T any](_ T, err error) error { return err }
