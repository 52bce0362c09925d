package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/advice"
	"github.com/remotemcp/remotemcp/internal/opid"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
)

// CallOptions carry what travels with one call.
type CallOptions struct {
	// OperationID names the call from the AgentTool down to the SDK (it is
	// also the MCP progress token when Progress is set), so Cancel can
	// reach it at every stage (R4.5). Generated when empty; it must be
	// unique among calls in flight.
	OperationID string
	// Approved: the person already approved this call where the caller
	// asked (R4.1 is met before the registry sees it), so there is no
	// approval step.
	Approved bool
	// Approve decides this call (R4.1); nil asks Options.Approver. An
	// error wrapping ErrNobodyToAsk denies the call: nobody could be
	// asked.
	Approve func(ctx context.Context, req ApprovalRequest) (Decision, error)
	// NotSent, when set, says in the caller's words why a call that the
	// host permission guard or the server refused before it ran was not
	// sent (a sign-in or an origin grant is missing; err is the manager's
	// CallError). The result then says the call was not sent, and why.
	NotSent func(serverID string, err error) string
	// Progress receives the server's progress notifications; only a call
	// with Progress asks the server for progress (a progress token), and
	// only its progress restarts its tool time. Their Message is server
	// text: show it as such.
	Progress func(Progress)
	// Timeout, when positive, bounds this call in addition to the server's
	// toolTimeout (default 60 s); the shorter one wins.
	Timeout time.Duration
	// Raw asks for the server's validated result as it came
	// (ToolResult.Raw), for a host that is the agent (SPEC §9 A8).
	Raw bool
	// Sample answers the server's sampling requests during the call;
	// nil refuses them (see session.CallOptions.Sample).
	Sample func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
}

// Progress is one progress notification of a call.
type Progress = session.Progress

// Outcome classifies how a call ended.
type Outcome string

// Call outcomes. Only OutcomeOK carries the server's answer (which may
// still be a tool error, see ToolResult.IsError).
const (
	OutcomeOK               Outcome = "ok"
	OutcomeDenied           Outcome = "denied"
	OutcomeApprovalFailed   Outcome = "approval-failed"
	OutcomeInvalidArguments Outcome = "invalid-arguments"
	OutcomeUnavailable      Outcome = "unavailable"
	OutcomeCancelled        Outcome = "cancelled"
	OutcomeTimeout          Outcome = "timeout"
	OutcomeFailed           Outcome = "failed"
	// OutcomeInterrupted: the call was waiting for the person's answer to
	// a server question when remotemcp shut down or restarted (R6.2).
	OutcomeInterrupted Outcome = "interrupted"
)

// ToolResult is what a call gives back for the model. Message and Notes
// are remotemcp's own (trusted) words; Content is the server's (untrusted)
// output. Render puts them together.
type ToolResult struct {
	// Tool is the AgentTool name; ServerID and ToolName the server's.
	Tool        string  `json:"tool"`
	ServerID    string  `json:"serverId,omitempty"`
	ToolName    string  `json:"toolName,omitempty"`
	OperationID string  `json:"operationId"`
	Outcome     Outcome `json:"outcome"`
	// IsError is the server's isError for OutcomeOK, and true for every
	// other outcome.
	IsError bool `json:"isError"`
	// MaybeExecuted is true when the request may have reached the server.
	// The call is never re-sent (R4.1).
	MaybeExecuted bool   `json:"maybeExecuted"`
	Message       string `json:"message,omitempty"`
	// Content is the server's output (or error text), fenced on Render.
	Content []ContextBlock `json:"content,omitempty"`
	// StructuredContent is the server's structured result, when it fitted
	// the budget.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// Notes say what the size budget cut (R4.6).
	Notes []string `json:"notes,omitempty"`
	// Truncated is set when anything was cut; OriginalChars and ShownChars
	// count the text (and structured content) before and after.
	Truncated     bool `json:"truncated,omitempty"`
	OriginalChars int  `json:"originalChars,omitempty"`
	ShownChars    int  `json:"shownChars,omitempty"`
	// Raw is the server's validated CallToolResult, unchanged, when
	// CallOptions.Raw asked for it and it fitted the size budget whole
	// (nothing Truncated): the MCP front end passes it to the host as it
	// is (SPEC §9 A8). Otherwise the budgeted Content stands.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Render returns the text to give the model: the trusted message, the
// fenced server content, then the notes.
func (r *ToolResult) Render() string {
	var parts []string
	if r.Message != "" {
		parts = append(parts, r.Message)
	}
	for _, b := range r.Content {
		parts = append(parts, b.Render())
	}
	parts = append(parts, r.Notes...)
	if len(parts) == 0 {
		return "[remotemcp: the tool returned no content]"
	}
	return strings.Join(parts, "\n\n")
}

// ErrNobodyToAsk is an Approve error that denies a call because nobody
// could be asked for its approval (no approval handler, and the call was
// not marked approved).
var ErrNobodyToAsk = errors.New("nobody could be asked for the approval")

// Call runs one tool call: lookup, lenient argument parsing, approval,
// admission behind open elicitations, one dispatch through the manager,
// and the size budget. It never retries. The call's one record and
// cancellation context are the manager's (Backend.Begin): the registry
// keeps none, and Cancel reaches the call through the manager.
//
// Call returns a ToolResult in every case, written so the model can read
// why a call did not happen (denied, unknown, bad arguments, timeout …).
// The error is non-nil only when the call was cancelled (wrapping
// ErrCancelled, and the context's cause) or the registry is closed; a
// ToolResult describing that is returned too.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage, o CallOptions) (*ToolResult, error) {
	snap := r.Snapshot()
	t, ok := snap.tool(name) // read-only: call copies what leaves the registry
	if !ok {
		if o.OperationID == "" {
			o.OperationID = opid.New("op-")
		}
		res := &ToolResult{Tool: name, OperationID: o.OperationID, Outcome: OutcomeUnavailable, IsError: true}
		if k, off := snap.disabled[name]; off {
			res.ServerID, res.ToolName = k.server, k.tool
			res.Message = fmt.Sprintf("Tool %q is disabled by the user for MCP server %q; the call was not sent.", name, k.server)
		} else if k, h := snap.held[name]; h {
			res.ServerID, res.ToolName = k.server, k.tool
			res.Message = heldMessage(name, k.server)
			if why, ok := snap.unpinnable[name]; ok {
				res.Message = unpinnableMessage(name, k.server, why)
			}
		} else {
			res.Message = fmt.Sprintf("There is no tool named %q (the server's tool list may have changed); the call was not sent.", name)
		}
		// Consume a cancel that overtook this call, so it cannot hit a
		// later call that reuses the id.
		if op, err := r.be.Begin(ctx, o.OperationID); err == nil {
			op.End()
		}
		return res, nil
	}
	return r.call(ctx, *t, args, o)
}

// Cancel cancels a call by operation id at whatever stage it is: waiting
// for approval or admission (it is then never dispatched), or in flight
// (the SDK sends notifications/cancelled). A cancel that arrives before
// its call is remembered for a while, so the call is refused (R4.5). It
// is the manager's Cancel: the call's record is there.
func (r *Registry) Cancel(operationID string) { r.be.Cancel(operationID) }

// call runs one call of t through the pipeline: begin the operation,
// parse the arguments, approve, admit, dispatch, convert.
//
// Long: the one call pipeline (issue #21 item 2) as one straight line, so
// each stage's refusal is a return with its own Outcome, the operation's
// End and the admission's Finish are deferred once for every exit, and a
// cancel between any two stages is checked where it can happen; split into
// stages, each would need the op, the admission and the result builder
// passed along.
func (r *Registry) call(parent context.Context, t AgentTool, rawArgs json.RawMessage, o CallOptions) (*ToolResult, error) {
	base := func(out Outcome) *ToolResult {
		return &ToolResult{Tool: t.Name, ServerID: t.ServerID, ToolName: t.ToolName, OperationID: o.OperationID, Outcome: out, IsError: true}
	}
	r.opsMu.Lock()
	closed := r.closed
	r.opsMu.Unlock()
	if closed {
		if o.OperationID == "" {
			o.OperationID = opid.New("op-")
		}
		res := base(OutcomeFailed)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: %v.", t.Name, ErrClosed)
		return res, ErrClosed
	}
	op, err := r.be.Begin(parent, o.OperationID)
	if err != nil {
		if o.OperationID == "" {
			o.OperationID = opid.New("op-")
		}
		if errors.Is(err, manager.ErrCancelledEarly) {
			return r.cancelled(base, nil, false)
		}
		res := base(OutcomeFailed)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: %v.", t.Name, err)
		return res, err
	}
	defer op.End()
	o.OperationID = op.ID()
	ctx := op.Context()

	args, err := ParseArguments(rawArgs)
	if err != nil {
		res := base(OutcomeInvalidArguments)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: its %v.", t.Name, err)
		return res, nil
	}

	// The approver is host code: it gets copies of the snapshot's schema
	// and annotations (one copy of the annotations serves both fields)
	// and of the arguments that will be sent.
	dec, err := Allow(), error(nil)
	if !o.Approved {
		approve := o.Approve
		if approve == nil {
			approve = r.o.Approver.Approve
		}
		at := t.clone()
		dec, err = approve(ctx, ApprovalRequest{
			Tool: at, Server: t.ServerID, Arguments: json.RawMessage(append([]byte(nil), args...)),
			Annotations: at.Annotations, OperationID: o.OperationID,
		})
	}
	switch {
	case ctx.Err() != nil:
		return r.cancelled(base, ctx, false)
	case errors.Is(err, ErrNobodyToAsk):
		res := base(OutcomeDenied)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: every remote tool call needs the person's approval, and nobody could be asked (no approval handler, and the call was not marked approved). Nothing reached MCP server %q.", t.Name, t.ServerID)
		return res, nil
	case err != nil:
		res := base(OutcomeApprovalFailed)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: approval could not be obtained (%v).", t.Name, err)
		return res, nil
	case !dec.Approved:
		res := base(OutcomeDenied)
		res.Message = fmt.Sprintf("The user denied this call of tool %q (MCP server %q); it was not run.", t.Name, t.ServerID)
		if dec.Reason != "" {
			res.Message += " The user's reason: " + dec.Reason
		}
		res.Message += " Nothing was sent to the server."
		return res, nil
	}

	var adm *elicit.Admission
	if r.o.Cards != nil {
		adm, err = r.o.Cards.Admit(ctx, elicit.CallInfo{ServerID: t.ServerID, Tool: t.ToolName, OperationID: o.OperationID, Arguments: args})
		if err != nil {
			if ctx.Err() != nil {
				return r.cancelled(base, ctx, false)
			}
			res := base(OutcomeFailed)
			res.Message = fmt.Sprintf("The call of tool %q was not sent: %v.", t.Name, err)
			return res, nil
		}
		defer adm.Finish()
	}
	if ctx.Err() != nil {
		// Cancelled after admission but before dispatch: never send it.
		return r.cancelled(base, ctx, false)
	}

	if o.Timeout > 0 {
		// The caller's bound runs from dispatch, not from approval: a
		// timer that ends the call's own context, with its own cause.
		tm := time.AfterFunc(o.Timeout, func() { op.Cancel(errCallTimeout) })
		defer tm.Stop()
	}
	res, err := r.be.CallOp(op, t.ServerID, t.ToolName, args,
		session.CallOptions{OperationID: o.OperationID, Progress: o.Progress, Sample: o.Sample})
	var intr *elicit.Card
	if adm != nil {
		intr = adm.Finish()
	}
	if intr != nil {
		// The person's answer never reached the server (R6.2): say so
		// rather than pass on whatever the server made of the failure.
		out := base(OutcomeInterrupted)
		out.MaybeExecuted = true
		out.Message = intr.FailureMessage()
		return out, nil
	}
	if err != nil {
		return r.callFailed(base, op, o, t, err)
	}
	// The session validated the result (session.ValidateCallResult).
	out := r.toolResult(t, o.OperationID, res)
	if o.Raw && !out.Truncated {
		// Unchanged, since the host is the agent (A8); a result the
		// budget cut goes the budgeted way instead (G's limits apply).
		out.Raw, _ = json.Marshal(res)
	}
	return out, nil
}

// errCallTimeout ends a call's context when CallOptions.Timeout passed.
var errCallTimeout = errors.New("the call's timeout passed")

// callFailed turns the manager's error into the model's result. The
// call's context says whether it was cancelled or timed out (its cause);
// the error's types say what else happened, and whether it may have run.
func (r *Registry) callFailed(base func(Outcome) *ToolResult, op *manager.Op, o CallOptions, t AgentTool, err error) (*ToolResult, error) {
	ctx := op.Context()
	callerTimeout := errors.Is(context.Cause(ctx), errCallTimeout)
	cancelled := ctx.Err() != nil && !callerTimeout && !op.TimedOut()
	maybe := true
	var ce *manager.CallError
	if errors.As(err, &ce) {
		maybe = ce.MaybeExecuted
	}
	res, rerr := r.failure(base, ctx, cancelled, callerTimeout, o.Timeout, t, maybe, err)
	if ce != nil && ce.Refused && o.NotSent != nil && !res.MaybeExecuted &&
		(res.Outcome == OutcomeFailed || res.Outcome == OutcomeUnavailable) {
		// The guard or the server refused it before it ran: say that it
		// was not sent, and what the person can do.
		res.Outcome = OutcomeUnavailable
		res.Message = fmt.Sprintf("The call of tool %q was not sent: %s. Nothing reached the server, so the tool did not run.", t.Name, o.NotSent(t.ServerID, err))
	}
	return res, rerr
}

func (r *Registry) failure(base func(Outcome) *ToolResult, ctx context.Context, cancelled, callerTimeout bool, timeout time.Duration, t AgentTool, maybe bool, err error) (*ToolResult, error) {
	switch {
	case errors.Is(err, session.ErrCancelledBeforeDispatch):
		return r.cancelled(base, ctx, false)
	case cancelled:
		return r.cancelled(base, ctx, maybe)
	case errors.As(err, new(*session.LimitError)):
		res := base(OutcomeFailed)
		res.MaybeExecuted = true
		res.Message = fmt.Sprintf("The call of tool %q reached the server, but its answer exceeded one of the server's limits and was not read; the call was not re-sent. The problem follows.", t.Name)
		res.Content = []ContextBlock{errorBlock(t, err)}
		return res, nil
	case errors.Is(err, session.ErrValidation):
		res := base(OutcomeFailed)
		res.MaybeExecuted = true
		res.Message = fmt.Sprintf("The call of tool %q ran, but the server's result was invalid and was dropped; the call was not re-sent. The problem follows.", t.Name)
		res.Content = []ContextBlock{errorBlock(t, err)}
		return res, nil
	case errors.Is(err, manager.ErrToolUnpinnable):
		res := base(OutcomeUnavailable)
		res.Message = fmt.Sprintf("Tool %q of MCP server %q is not offered; the call was not sent (%v). There is nothing for the user to review or accept.", t.Name, t.ServerID, err)
		return res, nil
	case errors.Is(err, manager.ErrToolHeld):
		res := base(OutcomeUnavailable)
		res.Message = heldMessage(t.Name, t.ServerID)
		return res, nil
	case errors.Is(err, manager.ErrToolDisabled):
		res := base(OutcomeUnavailable)
		res.Message = fmt.Sprintf("Tool %q is disabled by the user for MCP server %q; the call was not sent.", t.Name, t.ServerID)
		return res, nil
	case errors.Is(err, manager.ErrBackoff) && !maybe:
		// Refused inside the server's backoff window: nothing was sent,
		// whatever the last attempt's failure was (a handshake timeout is
		// not this call's timeout; issue #20 item 1).
		res := base(OutcomeFailed)
		res.Message = fmt.Sprintf("The call of tool %q was not sent: MCP server %q could not be connected, and is not tried again before the time the error names. The error follows.", t.Name, t.ServerID)
		res.Content = []ContextBlock{errorBlock(t, err)}
		return res, nil
	case callerTimeout:
		res := base(OutcomeTimeout)
		res.MaybeExecuted = true
		res.Message = fmt.Sprintf("The call of tool %q timed out after %s. The server was told to stop, but the call may have partly run; it was not re-sent.", t.Name, timeout)
		return res, nil
	case errors.Is(err, context.DeadlineExceeded):
		res := base(OutcomeTimeout)
		res.MaybeExecuted = true
		res.Message = fmt.Sprintf("The call of tool %q timed out (the server's tool timeout). The server was told to stop, but the call may have partly run; it was not re-sent.", t.Name)
		res.Content = []ContextBlock{errorBlock(t, err)}
		return res, nil
	}
	res := base(OutcomeFailed)
	res.MaybeExecuted = maybe
	if maybe {
		res.Message = fmt.Sprintf("The call of tool %q failed without a result. It was not re-sent, and it may or may not have run on the server. The error follows.", t.Name)
	} else {
		res.Message = fmt.Sprintf("The call of tool %q failed before it was sent; it did not run. The error follows.", t.Name)
	}
	// Errors can carry server text (JSON-RPC error messages): fence them.
	res.Content = []ContextBlock{errorBlock(t, err)}
	return res, nil
}

func errorBlock(t AgentTool, err error) ContextBlock {
	return ContextBlock{Provenance: Provenance{Server: t.ServerID, Kind: KindTool, Name: t.ToolName},
		MIMEType: "text/plain", Text: advice.Text(err), fence: newFence()}
}

// cancelled builds the result and error of a cancelled call.
func (r *Registry) cancelled(base func(Outcome) *ToolResult, ctx context.Context, dispatched bool) (*ToolResult, error) {
	res := base(OutcomeCancelled)
	res.MaybeExecuted = dispatched
	if dispatched {
		res.Message = fmt.Sprintf("The call of tool %q was cancelled while it ran. The server was told to stop, but the call may have partly run; it was not re-sent.", res.Tool)
	} else {
		res.Message = fmt.Sprintf("The call of tool %q was cancelled before it was sent; it did not run.", res.Tool)
	}
	err := fmt.Errorf("%w (operation %s)", ErrCancelled, res.OperationID)
	if ctx != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, ErrCancelled) {
			err = fmt.Errorf("%w (operation %s): %w", ErrCancelled, res.OperationID, cause)
		}
	}
	return res, err
}

// toolResult converts a validated server result under the size budget.
func (r *Registry) toolResult(t AgentTool, opID string, res *mcp.CallToolResult) *ToolResult {
	out := &ToolResult{Tool: t.Name, ServerID: t.ServerID, ToolName: t.ToolName, OperationID: opID,
		Outcome: OutcomeOK, IsError: res.IsError, MaybeExecuted: true}
	bu := newBudget(r.o.ResultBudget, r.o.BinaryCost)
	prov := Provenance{Server: t.ServerID, Kind: KindTool, Name: t.ToolName}
	hasText := false
	for _, c := range res.Content {
		if b, ok := bu.content(c, prov, ""); ok {
			out.Content = append(out.Content, b)
			hasText = hasText || !b.Binary()
		}
	}
	var structNote string
	if res.StructuredContent != nil {
		out.StructuredContent, structNote = bu.structured(res.StructuredContent)
		if out.StructuredContent != nil && !hasText {
			// Nothing else for the model to read: show the JSON itself
			// (already counted against the budget).
			out.Content = append(out.Content, ContextBlock{Provenance: prov, MIMEType: "application/json",
				Text: string(out.StructuredContent), fence: newFence()})
		}
	}
	out.Notes = bu.notes()
	if structNote != "" {
		out.Notes = append(out.Notes, structNote)
	}
	out.Truncated, out.OriginalChars, out.ShownChars = bu.truncated, bu.originalChars, bu.shownChars
	if res.IsError {
		out.Message = fmt.Sprintf("Tool %q reported an error; its output follows.", t.Name)
	}
	return out
}

// Resend re-sends the tool call of an interrupted elicitation card, once,
// after the person confirmed it is safe (elicit.Cards.ConfirmRetry, R6.2).
// The call goes through approval and admission like any other. An error
// means nothing was sent: no confirmation, already re-sent, no Cards, or
// the tool is gone.
func (r *Registry) Resend(ctx context.Context, cardID string, o CallOptions) (*ToolResult, error) {
	cards := r.o.Cards
	if cards == nil {
		return nil, errors.New("agent: Resend needs Options.Cards")
	}
	card, err := cards.Get(ctx, cardID)
	if err != nil {
		return nil, err
	}
	if !card.RetryConfirmed {
		return nil, fmt.Errorf("card %s: %w", cardID, elicit.ErrRetryNotConfirmed)
	}
	t, ok := r.Snapshot().ToolFor(card.ServerID, card.Tool)
	if !ok {
		return nil, fmt.Errorf("card %s: tool %q of server %q is not available any more; nothing was re-sent", cardID, card.Tool, card.ServerID)
	}
	if o.OperationID == "" {
		o.OperationID = opid.New("op-")
	}
	if _, err := cards.ClaimResend(ctx, cardID, o.OperationID); err != nil {
		return nil, err
	}
	return r.call(ctx, t, card.Arguments, o)
}

// InterruptedResult is the explicit failure the model gets for an
// interrupted card found after a restart (elicit.Cards.Interrupted): the
// answer never reached the server and nothing was re-sent (R6.2).
func (r *Registry) InterruptedResult(card elicit.Card) *ToolResult {
	name := ""
	if card.Tool != "" {
		name = ToolName(card.ServerID, card.Tool)
	}
	if t, ok := r.Snapshot().ToolFor(card.ServerID, card.Tool); ok {
		name = t.Name
	}
	return &ToolResult{Tool: name, ServerID: card.ServerID, ToolName: card.Tool, OperationID: card.OperationID,
		Outcome: OutcomeInterrupted, IsError: true, MaybeExecuted: true, Message: card.FailureMessage()}
}

// heldMessage says why a call of a held tool was not sent (issue #20
// item 3): the server changed the tool's definition after it was first
// seen, and the person has not accepted the change.
// unpinnableMessage says why a call of a tool that cannot be pinned was
// not sent; why is the manager's "cannot be pinned: …; it is never
// offered" (issue #20 item 3 review).
func unpinnableMessage(name, server, why string) string {
	return fmt.Sprintf("Tool %q of MCP server %q %s; the call was not sent. There is nothing for the user to review or accept.", name, server, why)
}

func heldMessage(name, server string) string { return advice.Held(name, server) }
