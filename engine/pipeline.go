package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/advice"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// The one call pipeline (issue #21 item 2): resolve the name in the
// snapshot → begin the operation (manager.Op: the call's one record and
// cancellation context, which Cancel finds by id at every stage) → parse
// the arguments → approve (an explicit parameter) → admit behind the
// server's open questions → manager.CallOp → convert (agent.NewToolResult)
// or explain the failure. It never retries (R4.1). Every exit is a result
// the model can read: why a call did not happen (denied, unknown, bad
// arguments, cancelled, timed out …), or the server's answer.

// approveFunc asks for a call's approval (R4.1). An error wrapping
// errNobodyToAsk denies the call: nobody could be asked; any other error
// is no decision, and the call is not sent either.
type approveFunc func(ctx context.Context, req localapi.ApprovalRequest) (localapi.Decision, error)

// errNobodyToAsk is an approval error that denies a call because nobody
// could be asked (no approval handler, and the call was not marked
// approved).
var errNobodyToAsk = errors.New("nobody could be asked for the approval")

// errCallTimeout ends a call's context when callOptions.timeout passed.
var errCallTimeout = errors.New("the call's timeout passed")

// callOptions are what travels with one call through the pipeline.
type callOptions struct {
	// opID names the call from the request down to the SDK (and is its
	// progress token when progress is set) (R4.5); never empty.
	opID string
	// approve decides the call; nil: its caller approved it already.
	approve approveFunc
	// progress receives the server's progress notifications; only a call
	// with progress asks for them, and only its progress restarts its
	// tool time.
	progress func(session.Progress)
	// sample answers the server's sampling requests during the call; nil
	// refuses them.
	sample func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// timeout, when positive, bounds the call from its dispatch, in
	// addition to the server's toolTimeout; the shorter one wins.
	timeout time.Duration
	// raw asks for the server's validated result as it came
	// (ToolResult.Raw), for a host that is the agent (SPEC §9 A8).
	raw bool
}

// call runs the call of the tool named name (an AgentTool name) through
// the pipeline.
func (c *Engine) call(ctx context.Context, name string, args json.RawMessage, o callOptions) *agent.ToolResult {
	snap := c.reg.Snapshot()
	t, ok := snap.ToolRef(name)
	if !ok {
		return c.notOffered(ctx, snap, name, o.opID)
	}
	return c.callTool(ctx, snap, t, args, o)
}

// notOffered is the result of a call of a tool the snapshot does not
// offer: switched off, held by its pin, or unknown. Nothing is sent.
func (c *Engine) notOffered(ctx context.Context, snap *agent.Snapshot, name, opID string) *agent.ToolResult {
	res := &agent.ToolResult{Tool: name, OperationID: opID, Outcome: agent.OutcomeUnavailable, IsError: true}
	switch u, ok := snap.Unavailable(name); {
	case ok && u.Disabled:
		res.ServerID, res.ToolName = u.ServerID, u.ToolName
		res.Message = disabledMessage(name, u.ServerID)
	case ok && u.Unpinnable != "":
		res.ServerID, res.ToolName = u.ServerID, u.ToolName
		res.Message = fmt.Sprintf("Tool %q of MCP server %q %s; the call was not sent. There is nothing for the user to review or accept.", name, u.ServerID, u.Unpinnable)
	case ok:
		res.ServerID, res.ToolName = u.ServerID, u.ToolName
		res.Message = heldMessage(name, u.ServerID)
	default:
		res.Message = fmt.Sprintf("There is no tool named %q (the server's tool list may have changed); the call was not sent.", name)
	}
	// Consume a cancel that overtook this call, so it cannot hit a later
	// call that reuses the id.
	if op, err := c.Manager.Begin(ctx, opID); err == nil {
		op.End()
	}
	return res
}

// callTool runs one call of t, a tool of snap, through the pipeline.
//
// Long: the one call pipeline (issue #21 item 2) as one straight line, so
// each stage's refusal is a return with its own Outcome, the operation's
// End and the admission's Finish are deferred once for every exit, and a
// cancel between any two stages is checked where it can happen; split into
// stages, each would need the op, the admission and the result builder
// passed along.
func (c *Engine) callTool(parent context.Context, snap *agent.Snapshot, t agent.ToolRef, rawArgs json.RawMessage, o callOptions) *agent.ToolResult {
	base := func(out agent.Outcome) *agent.ToolResult {
		return &agent.ToolResult{Tool: t.Name, ServerID: t.ServerID, ToolName: t.ToolName, OperationID: o.opID, Outcome: out, IsError: true}
	}
	op, err := c.Manager.Begin(parent, o.opID)
	if err != nil {
		if errors.Is(err, manager.ErrCancelledEarly) {
			return cancelled(base, false)
		}
		res := base(agent.OutcomeFailed)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: %v.", t.Name, err)
		return res
	}
	defer op.End()
	if !c.enterCall() {
		res := base(agent.OutcomeUnavailable)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: the user has %d calls running, as many as this gateway allows per person; try again when one has finished.", t.Name, c.quota.q.Calls)
		return res
	}
	defer c.leaveCall()
	ctx := op.Context()
	// The op's context follows the caller's a moment later (it is not a
	// child of it: see session.Request); a cancel before dispatch must
	// win at once (R4.5), so the stages check the caller's too.
	stopped := func() bool { return ctx.Err() != nil || parent.Err() != nil }

	args, err := agent.ParseArguments(rawArgs)
	if err != nil {
		res := base(agent.OutcomeInvalidArguments)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: its %v.", t.Name, err)
		return res
	}

	dec := localapi.Decision{Approved: true}
	if o.approve != nil {
		dec, err = o.approve(ctx, c.approvalRequest(ctx, snap, t, args, o.opID))
	}
	switch {
	case stopped():
		return cancelled(base, false)
	case errors.Is(err, errNobodyToAsk):
		res := base(agent.OutcomeDenied)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: every remote tool call needs the person's approval, and nobody could be asked (no approval handler, and the call was not marked approved). Nothing reached MCP server %q.", t.Name, t.ServerID)
		return res
	case err != nil:
		res := base(agent.OutcomeApprovalFailed)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: approval could not be obtained (%v).", t.Name, err)
		return res
	case !dec.Approved:
		res := base(agent.OutcomeDenied)
		res.Message = fmt.Sprintf("The user denied this call of tool %q (MCP server %q); it was not run.", t.Name, t.ServerID)
		if dec.Reason != "" {
			res.Message += " The user's reason: " + dec.Reason
		}
		res.Message += " Nothing was sent to the server."
		return res
	}

	var adm *elicit.Admission
	if c.Elicit != nil {
		adm, err = c.Elicit.Admit(ctx, elicit.CallInfo{ServerID: t.ServerID, Tool: t.ToolName, OperationID: o.opID, Arguments: args})
		if err != nil {
			if stopped() {
				return cancelled(base, false)
			}
			res := base(agent.OutcomeFailed)
			res.Message = fmt.Sprintf("The call of tool %q was not sent: %v.", t.Name, err)
			return res
		}
		defer adm.Finish()
	}
	if stopped() {
		// Cancelled after admission but before dispatch: never send it.
		return cancelled(base, false)
	}

	if o.timeout > 0 {
		// The caller's bound runs from dispatch, not from approval: a
		// timer that ends the call's own context, with its own cause.
		tm := time.AfterFunc(o.timeout, func() { op.Cancel(errCallTimeout) })
		defer tm.Stop()
	}
	res, err := c.Manager.CallOp(op, t.ServerID, t.ToolName, args,
		session.CallOptions{OperationID: o.opID, Progress: o.progress, Sample: o.sample})
	if adm != nil {
		if intr := adm.Finish(); intr != nil {
			// The person's answer never reached the server (R6.2): say so
			// rather than pass on whatever the server made of the failure.
			out := base(agent.OutcomeInterrupted)
			out.MaybeExecuted = true
			out.Message = intr.FailureMessage()
			return out
		}
	}
	if err != nil {
		return c.callFailed(base, op, o, t, err)
	}
	// The session validated the result (session.ValidateCallResult).
	out := agent.NewToolResult(t, o.opID, res, agent.Budget{})
	if o.raw && !out.Truncated {
		// Unchanged, since the host is the agent (A8); a result the
		// budget cut goes the budgeted way instead (G's limits apply).
		out.Raw, _ = json.Marshal(res)
	}
	return out
}

// approvalRequest is the question about a call of t, as the API puts it:
// the tool's text and annotations from snap, the arguments that will be
// sent (a copy: the approver is host code).
func (c *Engine) approvalRequest(ctx context.Context, snap *agent.Snapshot, t agent.ToolRef, args json.RawMessage, opID string) localapi.ApprovalRequest {
	req := localapi.ApprovalRequest{
		OperationID: opID, ServerID: t.ServerID, Tool: t.Name, ToolName: t.ToolName,
		Arguments: json.RawMessage(append([]byte(nil), args...)),
	}
	if at, ok := snap.Tool(t.Name); ok {
		req.Title, req.Description = at.Title, at.Description
		if own := at.Own; own != nil {
			// The server's own text: the question removes what cannot be
			// seen itself, rather than quote the agent's [U+XXXX] markers,
			// and cuts it to its own bound (issue #20 item 3).
			req.Description = own.Description
		}
		if at.Annotations != nil {
			req.Annotations, _ = json.Marshal(at.Annotations)
		}
	}
	if srv, err := c.Store.GetServer(ctx, t.ServerID); err == nil || errors.Is(err, store.ErrSealOpen) {
		req.ServerName = srv.Name
	}
	if len(req.Arguments) == 0 {
		req.Arguments = json.RawMessage(`{}`)
	}
	return req
}

// callFailed turns the manager's error into the model's result. The
// call's context says whether it was cancelled or timed out (its cause);
// the error's types say what else happened, and whether it may have run.
// A call the guard or the server refused before it ran says why it was
// not sent, and what the person can do (whyNotSent).
func (c *Engine) callFailed(base func(agent.Outcome) *agent.ToolResult, op *manager.Op, o callOptions, t agent.ToolRef, err error) *agent.ToolResult {
	callerTimeout := errors.Is(context.Cause(op.Context()), errCallTimeout)
	cancel := op.Cancelled() && !callerTimeout
	maybe := true
	var ce *manager.CallError
	if errors.As(err, &ce) {
		maybe = ce.MaybeExecuted
	}
	res := failure(base, cancel, callerTimeout, o.timeout, t, maybe, err)
	if ce != nil && ce.Refused && !res.MaybeExecuted &&
		(res.Outcome == agent.OutcomeFailed || res.Outcome == agent.OutcomeUnavailable) {
		res.Outcome = agent.OutcomeUnavailable
		res.Message = fmt.Sprintf("The call of tool %q was not sent: %s. Nothing reached the server, so the tool did not run.", t.Name, c.whyNotSent(t.ServerID, err))
	}
	return res
}

// failure is the result of a call that ended with err: cancelled (by its
// caller or Cancel), cut by a limit, invalid, refused by the manager
// (held, disabled, unpinnable, inside the backoff window), timed out
// (the caller's timeout or the server's toolTimeout), or failed.
func failure(base func(agent.Outcome) *agent.ToolResult, cancel, callerTimeout bool, timeout time.Duration, t agent.ToolRef, maybe bool, err error) *agent.ToolResult {
	withError := func(out agent.Outcome, maybe bool, msg string) *agent.ToolResult {
		res := base(out)
		res.MaybeExecuted, res.Message = maybe, msg
		// Errors can carry server text (JSON-RPC error messages): fence them.
		res.Content = []agent.ContextBlock{agent.ErrorBlock(t.ServerID, t.ToolName, advice.Text(err))}
		return res
	}
	switch {
	case errors.Is(err, session.ErrCancelledBeforeDispatch):
		return cancelled(base, false)
	case cancel:
		return cancelled(base, maybe)
	case errors.As(err, new(*session.LimitError)):
		return withError(agent.OutcomeFailed, true, fmt.Sprintf("The call of tool %q reached the server, but its answer exceeded one of the server's limits and was not read; the call was not re-sent. The problem follows.", t.Name))
	case errors.Is(err, session.ErrValidation):
		return withError(agent.OutcomeFailed, true, fmt.Sprintf("The call of tool %q ran, but the server's result was invalid and was dropped; the call was not re-sent. The problem follows.", t.Name))
	case errors.Is(err, manager.ErrToolUnpinnable):
		res := base(agent.OutcomeUnavailable)
		res.Message = fmt.Sprintf("Tool %q of MCP server %q is not offered; the call was not sent (%v). There is nothing for the user to review or accept.", t.Name, t.ServerID, err)
		return res
	case errors.Is(err, manager.ErrToolHeld):
		res := base(agent.OutcomeUnavailable)
		res.Message = heldMessage(t.Name, t.ServerID)
		return res
	case errors.Is(err, manager.ErrToolDisabled):
		res := base(agent.OutcomeUnavailable)
		res.Message = disabledMessage(t.Name, t.ServerID)
		return res
	case errors.Is(err, manager.ErrBackoff) && !maybe:
		// Refused inside the server's backoff window: nothing was sent,
		// whatever the last attempt's failure was (a handshake timeout is
		// not this call's timeout; issue #20 item 1).
		return withError(agent.OutcomeFailed, false, fmt.Sprintf("The call of tool %q was not sent: MCP server %q could not be connected, and is not tried again before the time the error names. The error follows.", t.Name, t.ServerID))
	case callerTimeout:
		res := base(agent.OutcomeTimeout)
		res.MaybeExecuted = true
		res.Message = fmt.Sprintf("The call of tool %q timed out after %s. The server was told to stop, but the call may have partly run; it was not re-sent.", t.Name, timeout)
		return res
	case errors.Is(err, context.DeadlineExceeded):
		return withError(agent.OutcomeTimeout, true, fmt.Sprintf("The call of tool %q timed out (the server's tool timeout). The server was told to stop, but the call may have partly run; it was not re-sent.", t.Name))
	case maybe:
		return withError(agent.OutcomeFailed, true, fmt.Sprintf("The call of tool %q failed without a result. It was not re-sent, and it may or may not have run on the server. The error follows.", t.Name))
	}
	return withError(agent.OutcomeFailed, false, fmt.Sprintf("The call of tool %q failed before it was sent; it did not run. The error follows.", t.Name))
}

// cancelled is the result of a cancelled call; dispatched says whether it
// may have reached the server.
func cancelled(base func(agent.Outcome) *agent.ToolResult, dispatched bool) *agent.ToolResult {
	res := base(agent.OutcomeCancelled)
	res.MaybeExecuted = dispatched
	if dispatched {
		res.Message = fmt.Sprintf("The call of tool %q was cancelled while it ran. The server was told to stop, but the call may have partly run; it was not re-sent.", res.Tool)
	} else {
		res.Message = fmt.Sprintf("The call of tool %q was cancelled before it was sent; it did not run.", res.Tool)
	}
	return res
}

// disabledMessage says why a call of a tool the person switched off was
// not sent.
func disabledMessage(name, server string) string {
	return fmt.Sprintf("Tool %q is disabled by the user for MCP server %q; the call was not sent.", name, server)
}

// heldMessage says why a call of a held tool was not sent (issue #20
// item 3): the server changed the tool's definition after it was first
// seen, and the person has not accepted the change.
func heldMessage(name, server string) string { return advice.Held(name, server) }
