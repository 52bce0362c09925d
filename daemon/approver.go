package daemon

import (
	"context"

	"github.com/remotemcp/remotemcp/agent"
)

type ctxKey int

const (
	approvalKey ctxKey = iota
	authKey
)

// WithApproval returns a context carrying the person's decision about the
// tool call made with it. The daemon sets it for POST /api/call with
// "approved": true, because the CLI asked the person before sending.
func WithApproval(ctx context.Context, d agent.Decision) context.Context {
	return context.WithValue(ctx, approvalKey, d)
}

// ApprovalFrom returns the decision WithApproval put into ctx.
func ApprovalFrom(ctx context.Context) (agent.Decision, bool) {
	d, ok := ctx.Value(approvalKey).(agent.Decision)
	return d, ok
}

// NewApprover returns the agent.Approver of a registry that serves the
// daemon's API: a decision carried by the call's context (WithApproval)
// wins; otherwise fallback decides (an embedding host's own prompt), and
// without one the call is denied, since every remote tool is a write tool
// that needs the person's approval (R4.1).
func NewApprover(fallback agent.Approver) agent.Approver {
	return agent.ApproverFunc(func(ctx context.Context, req agent.ApprovalRequest) (agent.Decision, error) {
		if d, ok := ApprovalFrom(ctx); ok {
			return d, nil
		}
		if fallback != nil {
			return fallback.Approve(ctx, req)
		}
		return agent.Deny("the call was not approved: remotemcp sends a remote tool call only after the person approved it " +
			"(the daemon's API takes \"approved\": true from a client that asked them)"), nil
	})
}

// withAuth records how the request authenticated.
func withAuth(ctx context.Context, k authKind) context.Context {
	return context.WithValue(ctx, authKey, k)
}

// authFrom returns how the request authenticated.
func authFrom(ctx context.Context) authKind {
	k, _ := ctx.Value(authKey).(authKind)
	return k
}
