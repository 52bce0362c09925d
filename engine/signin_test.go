package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/authserver"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// TestSignInOptionRunsTheFlowInTheRequest: with Options.SignIn (the
// person is at hand), a connect that meets a server needing a sign-in
// opens the authorization URL through the callback, the browser comes
// back to the engine's loopback listener, and the connect goes on; the
// flow shows as the server's. Without it the same connect fails with
// CodeLoginRequired (R3.13).
func TestSignInOptionRunsTheFlowInTheRequest(t *testing.T) {
	as, err := authserver.Start(authserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	f := testkit.StartFixture(t, fixture.Options{Authorize: as.Authorize, Extra: as.PRMRoutes()})
	ctx := testkit.Context(t)

	background := openEngine(t, "", engine.Options{NoStartupConnect: true})
	if err := background.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	addServer(t, background, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: freePort(t)})
	if _, err := background.Connect(ctx, "secure"); err == nil || err.(*localapi.Error).Code != localapi.CodeLoginRequired {
		t.Fatalf("connect without SignIn: %v, want %s", err, localapi.CodeLoginRequired)
	}

	var mu sync.Mutex
	var opened []string
	c := openEngine(t, "", engine.Options{NoStartupConnect: true, SignIn: func(ctx context.Context, id, authURL string) error {
		mu.Lock()
		opened = append(opened, id)
		mu.Unlock()
		// The browser: the authorization server approves at once and
		// redirects back to the loopback redirect URI.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the callback page answered %d", resp.StatusCode)
		}
		return nil
	}})
	if err := c.Grant(ctx, as.URL(), ""); err != nil {
		t.Fatal(err)
	}
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: config.AuthOAuth, RedirectPort: freePort(t)})
	v, err := c.Connect(ctx, "secure")
	if err != nil || v.State != localapi.StateReady {
		t.Fatalf("connect with SignIn: %+v %v", v, err)
	}
	mu.Lock()
	got := slices.Clone(opened)
	mu.Unlock()
	if !slices.Equal(got, []string{"secure"}) {
		t.Fatalf("SignIn was called for %v, want once for secure", got)
	}
	if fl, err := c.Authorization(ctx, "secure"); err != nil || fl.Phase != localapi.PhaseDone {
		t.Fatalf("the flow: %+v %v", fl, err)
	}
	res, err := c.Call(ctx, localapi.CallRequest{Tool: "secure/echo", Arguments: json.RawMessage(`{"text":"hi"}`), Approved: true}, localapi.CallHandler{})
	if err != nil || res.Outcome != "ok" {
		t.Fatalf("call after the sign-in: %+v %v", res, err)
	}
}
