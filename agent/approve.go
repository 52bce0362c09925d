package agent

import (
	"context"
	"encoding/json"
)

// ApprovalRequest is what the person is asked to approve.
type ApprovalRequest struct {
	Tool AgentTool
	// Server is the server id.
	Server    string
	Arguments json.RawMessage
	// Annotations are the server's hints, for display only: a host must
	// not skip or soften the question because of them (R4.1).
	Annotations *Annotations
	OperationID string
}

// Decision is the answer to an ApprovalRequest.
type Decision struct {
	Approved bool
	// Reason is an optional note from the person, passed to the model
	// when the call is denied.
	Reason string
}

// Allow approves a call.
func Allow() Decision { return Decision{Approved: true} }

// Deny refuses a call, with an optional reason for the model.
func Deny(reason string) Decision { return Decision{Reason: reason} }

// Approver decides every remote tool call before it is sent. All remote
// tools are write tools (R4.1), so the registry asks for every call; an
// error means no decision, and the call is not sent.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Decision, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (Decision, error) {
	return f(ctx, req)
}
