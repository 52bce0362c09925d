package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/oauth"
)

// Interactive sign-in (Options.SignIn). Without it, a request that meets
// a server needing the person's sign-in fails with CodeLoginRequired and
// the person signs in with Authorize (R3.13). With it, the embedder has
// said that the person is at hand: the sign-in runs inside the request
// that needs it (a connect, a call, a step-up to more scopes), with the
// challenge that request met, and shows in the server's view as a flow
// like one Authorize started. The callback comes back the same way:
// to the engine's loopback listener (or the owner's, ServeCallbacks),
// matched by state.

// interactiveBrowser is the oauth.Browser of Options.SignIn for srv.
func (c *Engine) interactiveBrowser(srv config.Server) oauth.Browser {
	return func(ctx context.Context, authURL string) (*oauth.CallbackResult, error) {
		fctx, cancel := context.WithTimeout(ctx, flowTimeout)
		defer cancel()
		f := &flow{
			server: srv.ID, cancel: cancel, urlc: make(chan string, 1), callback: make(chan oauth.CallbackResult, 1), done: make(chan struct{}),
			view: localapi.AuthFlow{ServerID: srv.ID, Phase: localapi.PhaseStarting, Started: time.Now().UTC()},
		}
		c.flows.replace(f)
		// The page is opened once the flow waits for its callback (the
		// state is registered and the listener is up).
		var wg sync.WaitGroup
		var openErr error
		wg.Go(func() {
			select {
			case u := <-f.urlc:
				if openErr = c.o.SignIn(fctx, srv.ID, u); openErr != nil {
					cancel()
				}
			case <-fctx.Done():
			}
		})
		res, err := c.browserFor(f, srv)(fctx, authURL)
		c.flows.update(f, func(v *localapi.AuthFlow) {
			now := time.Now().UTC()
			v.Finished, v.AuthorizationURL = &now, ""
			switch {
			case err != nil:
				v.Phase, v.Error = localapi.PhaseFailed, err.Error()
			default:
				// The code exchange follows in the request that asked;
				// its outcome is that request's.
				v.Phase = localapi.PhaseDone
			}
		})
		// Done before the wait: the callback request (CompleteAuthorization)
		// answers once the flow is done, and SignIn may be waiting on it.
		close(f.done)
		cancel()
		wg.Wait()
		c.flows.mu.Lock()
		release := f.release
		f.release = nil
		c.flows.mu.Unlock()
		for _, r := range release {
			r()
		}
		c.hub.bump(topicServers)
		if err != nil {
			if openErr != nil {
				return nil, fmt.Errorf("sign-in of server %s: open the authorization page: %w", srv.ID, openErr)
			}
			return nil, err
		}
		return res, nil
	}
}
