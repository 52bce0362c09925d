package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/opid"
)

// CallOptions carry what travels with one tool call.
type CallOptions struct {
	// OperationID identifies the call end to end (R4.5); it is also the
	// progress token when Progress is set. Generated when empty.
	OperationID string
	// Progress receives the call's progress notifications.
	Progress func(Progress)
	// Sample answers the server's sampling/createMessage while the call
	// is in flight (the host of the call asks its model); nil refuses.
	Sample func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
}

// CallTool calls a tool once. It is never retried here: a failure after the
// request may have reached the server is ambiguous (R4.1). args is passed
// as is; the server does the final validation. The result is validated
// here, once (ValidateCallResult). The call is cancelled through ctx, the
// call's one context (the manager's Op): the session keeps no cancel
// records, only the calls in flight by id, for their progress and the
// server requests that belong to them. A progress token is sent only
// when o.Progress listens.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage, o CallOptions) (*mcp.CallToolResult, error) {
	if o.OperationID == "" {
		o.OperationID = opid.New("op-")
	}
	op := &operation{progress: o.Progress, sample: o.Sample, token: o.OperationID}
	rctx := op.begin(ctx, o.OperationID)
	defer op.end(s)
	if o.Progress != nil {
		op.delivery = make(chan struct{}, 1) // see awaitProgress
	}

	s.calls.Lock()
	if s.closing {
		s.calls.Unlock()
		return nil, fmt.Errorf("call %s: %w: %w", name, ErrClosed, ErrCancelledBeforeDispatch)
	}
	if _, dup := s.ops[o.OperationID]; dup {
		s.calls.Unlock()
		return nil, fmt.Errorf("operation %s is already in flight", o.OperationID)
	}
	s.ops[o.OperationID] = op
	s.calls.Unlock()
	defer func() {
		s.calls.Lock()
		delete(s.ops, o.OperationID)
		last := s.endAfterCalls && len(s.ops) == 0
		if last {
			s.endAfterCalls = false
		}
		s.calls.Unlock()
		if last {
			s.end()
		}
	}()

	if s.Err() != nil {
		return nil, fmt.Errorf("call %s: %w", name, s.Err())
	}
	params := &op.params
	params.Name = name
	if len(args) > 0 {
		// A pointer into op: json.RawMessage in an interface would be an
		// allocation of its own.
		op.args = args
		params.Arguments = &op.args
	}
	if o.Progress != nil {
		// The operation id doubles as the progress token; without a
		// listener there is no reason to ask the server for progress.
		params.SetProgressToken(o.OperationID)
	}
	s.used()
	slot := &rctx.slot
	if err := callerEnded(ctx); err != nil {
		return nil, err // never send it (R4.5)
	}
	res, err := s.cs.CallTool(rctx, params)
	if o.Progress != nil {
		s.awaitProgress(rctx, op)
	}
	if err != nil {
		if slot.sessionMissing.Load() {
			return nil, notRun(slot, "call "+name, err)
		}
		if cause := context.Cause(rctx); errors.Is(cause, ErrClosed) {
			return nil, fmt.Errorf("call %s: %w while the call was in flight", name, ErrClosed)
		}
		return nil, limitFromWire(rctx.callerErr(err))
	}
	if err := ValidateCallResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

// begin makes the call's context: the caller's, ended by Cancel and
// Close too, and not ended by the caller's layers once the call is over
// (reqCtx). The manager's Op brings one (a Request), the call's only
// context; any other caller gets one made here.
func (op *operation) begin(ctx context.Context, id string) *reqCtx {
	rctx := &op.req
	if req, ok := ctx.(*Request); ok && req.claim() {
		op.shared = req
		rctx = &req.reqCtx
	} else {
		rctx.init(ctx)
	}
	rctx.slot.call = id
	op.cancel = rctx.cancel
	return rctx
}

// slot is the call's request slot: its Request's, or its own context's.
func (op *operation) slot() *requestSlot {
	if op.shared != nil {
		return &op.shared.slot
	}
	return &op.req.slot
}

// end ends the call's context as begin made it.
func (op *operation) end(s *Session) {
	if op.shared != nil {
		op.shared.finish(s)
		return
	}
	op.req.end(s)
}

func (s *Session) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	s.calls.Lock()
	op := s.ops[tok]
	s.calls.Unlock()
	if op == nil {
		return
	}
	if op.progress != nil {
		op.progress(Progress{Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
	}
	s.calls.Lock()
	op.delivered++
	s.calls.Unlock()
	select {
	case op.delivery <- struct{}{}:
	default:
	}
}

// progressSeen counts a progress notification of a call in flight as the
// transport hands it to go-sdk (limiter.onProgress).
func (s *Session) progressSeen(token string) {
	s.calls.Lock()
	if op := s.ops[token]; op != nil {
		op.seen++
	}
	s.calls.Unlock()
}

// progressGrace bounds the wait for a call's last progress notifications.
const progressGrace = 2 * time.Second

// awaitProgress waits until every progress notification of the call that
// arrived before its response has reached the caller. go-sdk delivers the
// response directly but queues notifications, so without this the last
// progress of a call was often lost (issue #11 item 2). The transport
// counts them in stream order, so when the response is in, the count is
// final; the wait is bounded all the same.
func (s *Session) awaitProgress(ctx context.Context, op *operation) {
	var timer *time.Timer
	for {
		s.calls.Lock()
		done := op.delivered >= op.seen
		s.calls.Unlock()
		if done {
			break
		}
		if timer == nil {
			timer = time.NewTimer(progressGrace)
		}
		select {
		case <-op.delivery:
		case <-timer.C:
			return
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
	if timer != nil {
		timer.Stop()
	}
}

// GetPrompt fetches a prompt and validates the result (R2.10).
func (s *Session) GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	s.used()
	r := &reqCtx{}
	r.init(ctx)
	defer r.end(s)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := s.cs.GetPrompt(r, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, notRun(&r.slot, "get prompt "+name, limitFromWire(r.callerErr(err)))
	}
	if err := ValidatePromptResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

// ReadResource reads a resource and validates the result (R2.10).
func (s *Session) ReadResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	s.used()
	r := &reqCtx{}
	r.init(ctx)
	defer r.end(s)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := s.cs.ReadResource(r, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, notRun(&r.slot, "read "+uri, limitFromWire(r.callerErr(err)))
	}
	if err := ValidateReadResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

// Complete asks the server for completion values of a prompt's or a
// resource template's argument (completion/complete), and bounds the
// result (BoundCompleteResult). A server that does not offer completions
// is not asked: it has none, and the result has no values.
func (s *Session) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, errors.New("complete: no reference")
	}
	if ir := s.cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Completions == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	s.used()
	ctx, slot := withRequestSlot(ctx)
	res, err := s.cs.Complete(ctx, params)
	if err != nil {
		return nil, notRun(slot, "complete "+params.Ref.Type+" "+params.Ref.Name+params.Ref.URI, limitFromWire(err))
	}
	if res == nil {
		return nil, validationErrorf("completion/complete returned no result")
	}
	BoundCompleteResult(res)
	return res, nil
}

// Bounds of a completion/complete result: the specification allows at
// most 100 values; a value longer than MaxCompletionValueLen is no
// sensible completion and is left out.
const (
	MaxCompletionValues   = 100
	MaxCompletionValueLen = 4096
)

// BoundCompleteResult keeps at most MaxCompletionValues values of at most
// MaxCompletionValueLen bytes each, in order, and sets HasMore when it
// left any out. A negative total is dropped.
func BoundCompleteResult(r *mcp.CompleteResult) {
	c := &r.Completion
	values := make([]string, 0, min(len(c.Values), MaxCompletionValues))
	for _, v := range c.Values {
		if len(values) == MaxCompletionValues {
			c.HasMore = true
			break
		}
		if len(v) > MaxCompletionValueLen {
			c.HasMore = true
			continue
		}
		values = append(values, v)
	}
	c.Values = values
	if c.Total < 0 {
		c.Total = 0
	}
}

// Ping checks the session is alive.
func (s *Session) Ping(ctx context.Context) error { return s.cs.Ping(ctx, nil) }

// CancelRecords are the bounded, short-lived records of cancels that
// arrived before their call (R4.5). Bounded so a flood of stray cancels
// cannot grow memory; short-lived so an id reused much later is not hit.
// The zero value is not ready: use NewCancelRecords or init.
type CancelRecords struct {
	mu    sync.Mutex
	at    map[string]time.Time
	order []string
}

const (
	maxCancelRecords = 1024
	cancelRecordTTL  = 2 * time.Minute
)

func (c *CancelRecords) init() { c.at = map[string]time.Time{} }

// NewCancelRecords returns empty records.
func NewCancelRecords() *CancelRecords {
	c := &CancelRecords{}
	c.init()
	return c
}

// Add records a cancel of id that arrived before its call.
func (c *CancelRecords) Add(id string) { c.add(id) }

// Take reports whether id was cancelled before its call, consuming the
// record.
func (c *CancelRecords) Take(id string) bool { return c.take(id) }

func (c *CancelRecords) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.expire(now)
	if _, ok := c.at[id]; !ok {
		c.order = append(c.order, id)
	}
	c.at[id] = now
	for len(c.order) > maxCancelRecords {
		delete(c.at, c.order[0])
		c.order = c.order[1:]
	}
}

func (c *CancelRecords) take(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire(time.Now())
	if _, ok := c.at[id]; ok {
		delete(c.at, id)
		return true
	}
	return false
}

func (c *CancelRecords) expire(now time.Time) {
	for len(c.order) > 0 {
		id := c.order[0]
		t, ok := c.at[id]
		if ok && now.Sub(t) < cancelRecordTTL {
			return
		}
		delete(c.at, id)
		c.order = c.order[1:]
	}
}

// IsConnectionLost reports whether err means the connection (not just the
// call) is gone, so the owner must reconnect.
func IsConnectionLost(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || errors.Is(err, mcp.ErrConnectionClosed)
}

// callerEnded is the error of a call's context, or of its caller's when
// ctx is a Request: the Request follows the caller's context a moment
// later, on its own goroutine, and a call whose caller has gone must not
// be sent.
func callerEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r, ok := ctx.(*Request); ok {
		return r.det.parent.Err()
	}
	return nil
}
