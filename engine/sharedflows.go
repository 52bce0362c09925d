package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/store"
)

// Sign-ins across a gateway's replicas (SPEC §9 A11, issue #23). A
// gateway runs N replicas behind a load balancer, and the authorization
// server sends the person's browser back to whichever one the balancer
// picks. With Options.SharedFlows:
//
//   - every authorization request of a flow is recorded in the store
//     before the browser is sent off (oauth.PendingFlow: verifier,
//     client, binding …, sealed for the person), until the flow ends;
//   - a callback is taken once, whichever replica it reaches
//     (ClaimAuthFlow): a replay, here or elsewhere, is refused;
//   - the replica that started the flow completes it as a personal engine
//     does when the callback reaches it; any other replica completes it
//     from the record (CompleteSharedAuthorization: the code exchange,
//     the refresh token sealed in the store, the access token in its own
//     memory only, R3.11) and records how it ended, which the replica
//     that started it learns through the store's change feed: its flow
//     ends as if it had done the exchange itself (the access token it
//     needs comes from a refresh);
//   - a flow abandoned because its engine closes keeps its record, so
//     that another replica still completes it (a replica restarted or
//     killed mid-sign-in costs the person nothing); other ends forget it.
//
// With a public page URL (ServeCallbacksAt), the redirect URI of every
// sign-in is that URL's /mcp-oauth instead of the loopback one.

// SharedFlows keeps sign-ins waiting for their callback where every
// replica of a gateway finds them: a gateway user's *store.DB.
type SharedFlows interface {
	PutAuthFlow(ctx context.Context, state, serverID string, record []byte, expires time.Time) error
	ClaimAuthFlow(ctx context.Context, state string) (store.AuthFlow, error)
	GetAuthFlow(ctx context.Context, state string) (store.AuthFlow, error)
	FinishAuthFlow(ctx context.Context, state string, outcome []byte, keep time.Duration) error
	DeleteAuthFlow(ctx context.Context, state string) error
	// Subscribe is the store's change feed: how the replica that started
	// a flow learns that another completed it.
	Subscribe(ctx context.Context) <-chan store.Change
}

var _ SharedFlows = (*store.DB)(nil)

const (
	// sharedWait bounds one store operation of a shared flow.
	sharedWait = 10 * time.Second
	// outcomeKeep is how long a flow completed by another replica is
	// kept for the one that started it to learn how it ended (that one
	// forgets it as soon as it has); a replay meanwhile is "already
	// received".
	outcomeKeep = 2 * time.Minute
)

// sharedRecord is a flow's record in the store.
type sharedRecord struct {
	Flow oauth.PendingFlow `json:"flow"`
	// Owner is the engine that started the flow (diagnostics: which
	// replica waits for it).
	Owner   string    `json:"owner"`
	Started time.Time `json:"started"`
}

// sharedOutcome is how a replica that took a flow's callback ended it.
type sharedOutcome struct {
	OK     bool               `json:"ok"`
	Result *oauth.LoginResult `json:"result,omitempty"`
	Step   string             `json:"step,omitempty"`
	Error  string             `json:"error,omitempty"`
}

// ServeCallbacksAt tells the engine that its owner serves redirectURI
// (a gateway's public page URL + /mcp-oauth) and hands every request to
// it to CompleteAuthorization: from then on every sign-in uses it as its
// redirect URI (registered, sent in the authorization request and the
// code exchange) instead of a loopback one, so a browser anywhere can
// finish it. "" goes back to loopback.
func (c *Engine) ServeCallbacksAt(redirectURI string) {
	if redirectURI == "" {
		c.public.Store(nil)
		return
	}
	c.public.Store(&redirectURI)
}

// publicRedirect is the redirect URI of ServeCallbacksAt, "" for none.
func (c *Engine) publicRedirect() string {
	if p := c.public.Load(); p != nil {
		return *p
	}
	return ""
}

// shareFlow is the oauth.LoginOptions.Share of flow f: it records each
// authorization request in the store before the browser is sent off.
func (c *Engine) shareFlow(f *flow, started time.Time) func(ctx context.Context, pf *oauth.PendingFlow) error {
	return func(ctx context.Context, pf *oauth.PendingFlow) error {
		rec, err := json.Marshal(sharedRecord{Flow: *pf, Owner: c.instance, Started: started})
		if err != nil {
			return fmt.Errorf("encoding the sign-in's record: %w", err)
		}
		expires := time.Now().Add(flowTimeout)
		if d, ok := ctx.Deadline(); ok {
			expires = d
		}
		sctx, cancel := context.WithTimeout(ctx, sharedWait)
		defer cancel()
		if err := c.o.SharedFlows.PutAuthFlow(sctx, pf.State, pf.ServerID, rec, expires); err != nil {
			return fmt.Errorf("recording the sign-in in the gateway's database, where any replica can take its callback: %w", err)
		}
		c.flows.mu.Lock()
		f.shared = append(f.shared, pf.State)
		c.flows.mu.Unlock()
		return nil
	}
}

// isShared reports whether f's authorization request with state was
// recorded in the store.
func (c *Engine) isShared(f *flow, state string) bool {
	c.flows.mu.Lock()
	defer c.flows.mu.Unlock()
	for _, s := range f.shared {
		if s == state {
			return true
		}
	}
	return false
}

// forgetShared deletes f's records from the store once it has ended,
// unless the engine is closing: then another replica may still take the
// callback (the record expires with the flow's time).
func (c *Engine) forgetShared(f *flow) {
	c.flows.mu.Lock()
	states := f.shared
	f.shared = nil
	c.flows.mu.Unlock()
	if len(states) == 0 || c.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
	defer cancel()
	for _, s := range states {
		if err := c.o.SharedFlows.DeleteAuthFlow(ctx, s); err != nil {
			c.log.Warn("remotemcp: forget a finished sign-in (it expires by itself)", "server", f.server, "err", err)
		}
	}
}

// watchShared waits, until ctx ends, for another replica to end the
// shared flow with state: it reads the flow at every change of the
// store, and sends its outcome as the flow's Browser error, once
// (*oauth.CompletedElsewhere for a success).
func (c *Engine) watchShared(ctx context.Context, serverID, state string) <-chan error {
	out := make(chan error, 1)
	changes := c.o.SharedFlows.Subscribe(ctx)
	go func() {
		for {
			rctx, cancel := context.WithTimeout(ctx, sharedWait)
			sf, err := c.o.SharedFlows.GetAuthFlow(rctx, state)
			cancel()
			if err == nil && sf.Outcome != nil {
				out <- outcomeError(serverID, sf.Outcome)
				return
			}
			select {
			case _, ok := <-changes:
				if !ok {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// outcomeError is a recorded outcome as the flow's Browser error.
func outcomeError(serverID string, raw []byte) error {
	var o sharedOutcome
	if err := json.Unmarshal(raw, &o); err != nil {
		return fmt.Errorf("another replica took the callback, and how it ended cannot be read: %w", err)
	}
	if o.OK && o.Result != nil {
		return &oauth.CompletedElsewhere{Result: *o.Result}
	}
	return &oauth.Error{Step: oauth.Step(o.Step), ServerID: serverID, Err: errors.New(o.Error)}
}

// claimShared takes the callback of a shared flow in the store: the
// answers of CompleteAuthorization for one that is not there (404) or
// was taken (409).
func (c *Engine) claimShared(ctx context.Context, state string) (store.AuthFlow, error) {
	sctx, cancel := context.WithTimeout(ctx, sharedWait)
	defer cancel()
	sf, err := c.o.SharedFlows.ClaimAuthFlow(sctx, state)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return sf, notFound("this authorization response does not belong to a sign-in remotemcp is waiting for, and was ignored")
	case errors.Is(err, store.ErrAuthFlowTaken):
		return sf, conflict("remotemcp already has the answer for this sign-in")
	case err != nil:
		return sf, fail(fmt.Errorf("taking the sign-in's callback: %w", err))
	}
	return sf, nil
}

// CompleteSharedAuthorization completes the sign-in a callback belongs to
// when it was started by another replica of the gateway (or by this
// engine before it was closed and opened again): matched by the state's
// hash in the store, taken once, exchanged from the stored record, the
// grant stored for this engine's person, and the outcome recorded for
// the replica that waits for it. A flow of this engine goes to
// CompleteAuthorization. Answers as CompleteAuthorization: a callback
// that cannot be read is CodeBadRequest, an unknown or expired state
// CodeNotFound (nothing changed), a second delivery CodeConflict.
func (c *Engine) CompleteSharedAuthorization(ctx context.Context, query url.Values) (*localapi.AuthFlow, error) {
	res, err := oauth.ParseCallback(query)
	if err != nil {
		return nil, badRequest("", "the authorization response could not be read: %v", err)
	}
	if c.flows.byState(res.State) != nil || c.o.SharedFlows == nil {
		return c.CompleteAuthorization(ctx, query)
	}
	sf, err := c.claimShared(ctx, res.State)
	if err != nil {
		return nil, err
	}
	var rec sharedRecord
	if err := json.Unmarshal(sf.Record, &rec); err != nil || rec.Flow.ServerID != sf.ServerID {
		return nil, fail(fmt.Errorf("the sign-in's record cannot be read: %v", err))
	}
	id := sf.ServerID
	v := &localapi.AuthFlow{ServerID: id, Started: rec.Started, RedirectURI: rec.Flow.RedirectURI}
	// The code is spent by the exchange: it is not cut short by the
	// browser going away.
	xctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callbackWait)
	defer cancel()
	xctx = hostperm.WithPurpose(xctx, hostperm.PurposeAuthorization, id)
	lr, err := c.OAuth.CompletePending(xctx, &rec.Flow, res)
	now := time.Now().UTC()
	v.Finished = &now
	out := sharedOutcome{OK: err == nil, Result: lr}
	if err != nil {
		v.Phase, v.Error = localapi.PhaseFailed, err.Error()
		out.Error = err.Error()
		var oe *oauth.Error
		if errors.As(err, &oe) {
			v.Step, out.Step = string(oe.Step), string(oe.Step)
			if oe.Err != nil {
				out.Error = oe.Err.Error()
			}
		}
	} else {
		v.Phase = localapi.PhaseDone
		v.Result = loginResult(lr)
		if err := c.Manager.SetSignedOut(xctx, id, false); err != nil {
			c.log.Warn("remotemcp: clear the sign-out mark", "server", id, "err", err)
		}
		c.Manager.ResetBackoff(id)
	}
	raw, merr := json.Marshal(out)
	if merr == nil {
		merr = c.o.SharedFlows.FinishAuthFlow(xctx, res.State, raw, outcomeKeep)
	}
	if merr != nil {
		// The replica that started the flow waits until its time is up;
		// the grant (if any) is stored all the same.
		c.log.Warn("remotemcp: record how a sign-in started elsewhere ended", "server", id, "err", merr)
	}
	c.hub.bump(topicServers)
	if err != nil {
		c.log.Info("remotemcp: sign-in failed (a callback of a sign-in started elsewhere)", "server", id, "err", err)
		return v, nil
	}
	c.log.Info("remotemcp: signed in (a callback of a sign-in started elsewhere)", "server", id)
	c.goBackground(func(ctx context.Context) { c.connectAfterSignIn(ctx, id) })
	return v, nil
}

// loginResult is an oauth.LoginResult as the local API has it.
func loginResult(res *oauth.LoginResult) *localapi.LoginResult {
	li := &localapi.LoginResult{NotNeeded: res.NotNeeded, ClientID: res.ClientID, Registered: res.Registered,
		Scopes: res.Scopes, RefreshToken: res.RefreshToken}
	if !res.ExpiresAt.IsZero() {
		e := res.ExpiresAt.UTC()
		li.ExpiresAt = &e
	}
	if !res.Binding.IsZero() {
		b := res.Binding
		li.Binding = &b
	}
	return li
}
