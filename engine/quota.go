package engine

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
)

// Quotas bound what one engine (a gateway's person) may hold at once
// (issue #22): a zero field is no limit, as in the personal mode.
type Quotas struct {
	// Servers is the most servers the person may have.
	Servers int
	// Calls is the most tool calls of the person in flight at once; one
	// more is refused at once, unsent.
	Calls int
	// Questions is the most server questions (elicitation cards) waiting
	// for the person at once; one more is declined for them.
	Questions int
}

// quota counts what Quotas bound.
type quota struct {
	q         Quotas
	addMu     sync.Mutex // one add at a time, so two cannot both take the last place
	calls     atomic.Int64
	questions atomic.Int64
}

// quotaError is the answer over a quota: 429, and nothing was done.
func quotaError(format string, args ...any) error {
	return &localapi.Error{Status: http.StatusTooManyRequests, Code: localapi.CodeQuota, Message: fmt.Sprintf(format, args...), NotSent: true}
}

// reserveServers holds the add lock while the caller adds n servers and
// refuses when they would pass Quotas.Servers; release ends it.
func (c *Engine) reserveServers(ctx context.Context, n int) (release func(), err error) {
	if c.quota.q.Servers <= 0 {
		return func() {}, nil
	}
	c.quota.addMu.Lock()
	have, err := c.Store.ServerRevisions(ctx)
	if err != nil {
		c.quota.addMu.Unlock()
		return nil, fail(fmt.Errorf("count the servers for the quota: %w", err))
	}
	if len(have)+n > c.quota.q.Servers {
		c.quota.addMu.Unlock()
		return nil, quotaError("you have %d servers, and this gateway allows %d per person: remove one first (or ask an admin to raise --quota-servers)", len(have), c.quota.q.Servers)
	}
	return c.quota.addMu.Unlock, nil
}

// enterCall takes a place for one call, false when Quotas.Calls are in
// flight; leaveCall gives it back.
func (c *Engine) enterCall() bool {
	if c.quota.q.Calls <= 0 {
		return true
	}
	if c.quota.calls.Add(1) > int64(c.quota.q.Calls) {
		c.quota.calls.Add(-1)
		return false
	}
	return true
}

func (c *Engine) leaveCall() {
	if c.quota.q.Calls > 0 {
		c.quota.calls.Add(-1)
	}
}

// boundQuestions wraps the elicitation handler so that at most
// Quotas.Questions wait for the person at once; one more is declined
// for them (the server is told "decline"), and logged.
func (c *Engine) boundQuestions(h func(context.Context, manager.ElicitInfo, *ElicitRequest) (*ElicitResult, error)) func(context.Context, manager.ElicitInfo, *ElicitRequest) (*ElicitResult, error) {
	if c.quota.q.Questions <= 0 || h == nil {
		return h
	}
	return func(ctx context.Context, info manager.ElicitInfo, req *ElicitRequest) (*ElicitResult, error) {
		if c.quota.questions.Add(1) > int64(c.quota.q.Questions) {
			c.quota.questions.Add(-1)
			c.log.Warn("remotemcp: a server's question was declined: the person has as many questions waiting as the quota allows",
				"server", info.ServerID, "quota", c.quota.q.Questions)
			return &ElicitResult{Action: "decline"}, nil
		}
		defer c.quota.questions.Add(-1)
		return h(ctx, info, req)
	}
}
