package daemon

import (
	"net/http"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// A server's view is shown where the person acts (the page, the CLI),
// each with its own advice from the reason's codes: the reasons and the
// sign-in error it carries leave out the libraries' advice to run a
// command ("run \"remotemcp auth login X\""), and keep what failed.
func TestServerViewsLeaveCLIAdviceOut(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	secure := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	locked := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusUnauthorized)
		return false
	}})
	plain := testkit.StartFixture(t, fixture.Options{})
	s := newStack(t, stackOpts{})
	ctx := testkit.Context(t)
	secrets.add("bearer token of the locked server", "locked-bearer-token")
	for _, req := range []localapi.AddServerRequest{
		{ID: "secure", URL: secure.URL(), Auth: config.AuthOAuth, RedirectPort: s.srv.Port()},
		{ID: "locked", URL: locked.URL(), Auth: config.AuthBearer, Token: "locked-bearer-token"},
		{ID: "plain", URL: plain.URL()},
	} {
		if _, err := s.c.AddServer(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// plain loses its origin's grant: connecting is refused locally.
	if err := s.c.Revoke(ctx, originOf(t, plain.URL())); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.Connect(ctx, "plain"); !localapi.HasCode(err, localapi.CodePermissionRequired) {
		t.Fatalf("connect without a grant: %v", err)
	}
	// secure's sign-in stops at the authorization server's origin.
	if _, err := s.c.Authorize(ctx, "secure"); !localapi.HasCode(err, localapi.CodePermissionRequired) {
		t.Fatalf("authorize without the AS grant: %v", err)
	}

	tests := []struct {
		id    string
		state localapi.State
		class localapi.Class
		// says is what the reason keeps.
		says string
	}{
		{"secure", localapi.StateNeedsAuth, "auth", "needs authorization"},
		{"locked", localapi.StateError, "auth", "refused the credentials"},
		{"plain", localapi.StateError, "permission", "has no grant for " + originOf(t, plain.URL())},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			var v *localapi.Server
			testkit.WaitFor(t, tc.id+" "+string(tc.state), func() bool {
				v, err = s.c.Server(ctx, tc.id)
				return err == nil && v.State == tc.state && v.Reason != nil
			})
			if v.Reason.Class != tc.class || !strings.Contains(v.Reason.Message, tc.says) {
				t.Errorf("reason %+v, want class %s saying %q", v.Reason, tc.class, tc.says)
			}
			if strings.Contains(v.Reason.Message, `"remotemcp `) || strings.HasSuffix(strings.TrimSpace(v.Reason.Message), ";") {
				t.Errorf("the reason keeps the CLI's advice: %q", v.Reason.Message)
			}
			if f := v.Authorization; f != nil && (f.Error == "" || strings.Contains(f.Error, `"remotemcp `)) {
				t.Errorf("the sign-in error reads %q", f.Error)
			}
		})
	}
	v, _ := s.c.Server(ctx, "secure")
	if f := v.Authorization; f == nil || f.Phase != localapi.PhaseFailed || f.Permission == nil || !strings.Contains(f.Error, "permission required") {
		t.Fatalf("secure's sign-in %+v", f)
	}
}
