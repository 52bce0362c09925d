package frontend_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/internal/clocktest"
	"github.com/remotemcp/remotemcp/internal/testkit"
)

// fakeAuth verifies the bearer tokens "cred-SUBJECT-N": SUBJECT is who it
// is, N tells one credential of theirs from another (a refreshed OAuth
// access token). "expired-…" has gone by; anything else is refused with a
// challenge of its own.
type fakeAuth struct{ calls atomic.Int32 }

func (a *fakeAuth) Authenticate(w http.ResponseWriter, r *http.Request) (frontend.Identity, bool) {
	a.calls.Add(1)
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if rest, ok := strings.CutPrefix(tok, "expired-"); ok {
		return frontend.Identity{Subject: rest, Name: rest, Expiry: time.Now().Add(-time.Minute)}, true
	}
	rest, ok := strings.CutPrefix(tok, "cred-")
	subject, _, ok2 := strings.Cut(rest, "-")
	if !ok || !ok2 {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="http://x/.well-known/oauth-protected-resource"`)
		http.Error(w, "fake: refused", http.StatusUnauthorized)
		return frontend.Identity{}, false
	}
	return frontend.Identity{Subject: subject, Name: subject + "@example.org", Expiry: time.Now().Add(time.Hour)}, true
}

// Issue #22 (hosts signing in by OAuth): HTTPHandlerAuth sends a bearer
// token that is not remotemcp's to the Authenticator, whose refusal is the
// answer; remotemcp's tokens are checked as ever (the Authenticator never
// sees them, a wrong one is invalid_token). A session belongs to the
// identity's subject: another credential of the same subject continues it
// (a host refreshes its access token mid-session), another subject's and
// a remotemcp token's are refused on it, and an expired credential is
// refused by go-sdk. The revocation of tokens ends a token's sessions and
// leaves the signed-in ones alone.
func TestHTTPHandlerAuth(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	auth := &fakeAuth{}
	e := startEndpointAuth(t, frontend.HTTPOptions{SessionIdle: -1, AfterFunc: clk.AfterFunc}, nil, auth)
	tok := e.token(t, "laptop")

	// remotemcp's tokens: the token check, never the Authenticator.
	st := e.session(t, tok)
	if code, _, body := e.post(t, "rmcp_wrong", "", initMsg); code != http.StatusUnauthorized || !strings.Contains(body, "invalid_token") {
		t.Fatalf("a wrong remotemcp token: %d %s", code, body)
	}
	if n := auth.calls.Load(); n != 0 {
		t.Fatalf("the Authenticator saw %d remotemcp tokens", n)
	}
	// Anything else: the Authenticator's.
	if code, _, body := e.post(t, "garbage", "", initMsg); code != http.StatusUnauthorized || body != "fake: refused\n" {
		t.Fatalf("a refused credential: %d %q", code, body)
	}
	sa := e.session(t, "cred-alice-1")
	if code, body := e.ping(t, "cred-alice-2", sa); code != http.StatusOK {
		t.Fatalf("alice's session with her refreshed credential: %d %s", code, body)
	}
	if code, body := e.ping(t, "cred-bob-1", sa); code != http.StatusForbidden || !strings.Contains(body, "started with another") {
		t.Fatalf("alice's session with bob's credential: %d %s", code, body)
	}
	if code, body := e.ping(t, tok, sa); code != http.StatusForbidden {
		t.Fatalf("alice's session with a remotemcp token: %d %s", code, body)
	}
	if code, body := e.ping(t, "cred-alice-3", st); code != http.StatusForbidden {
		t.Fatalf("a token's session with alice's credential: %d %s", code, body)
	}
	if code, _, body := e.post(t, "expired-alice", "", initMsg); code != http.StatusUnauthorized || !strings.Contains(body, "expired") {
		t.Fatalf("an expired credential: %d %s", code, body)
	}
	if code, body := e.ping(t, "expired-alice", sa); code != http.StatusUnauthorized {
		t.Fatalf("alice's session with an expired credential: %d %s", code, body)
	}

	// The revocation check ends the token's session, not alice's.
	if err := e.tokens.Revoke(t.Context(), "laptop"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the revocation check", func() bool { return clk.Pending(testRecheck) == 1 })
	clk.Advance(testRecheck)
	testkit.WaitFor(t, "the revoked token's session to end", func() bool {
		code, _ := e.ping(t, "cred-alice-4", st)
		return code == http.StatusNotFound
	})
	if code, body := e.ping(t, "cred-alice-5", sa); code != http.StatusOK {
		t.Fatalf("alice's session after a revocation check: %d %s", code, body)
	}
}
