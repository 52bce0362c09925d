package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/localapi"
)

// The call stream. POST /api/calls answers with NDJSON, one
// localapi.CallEvent per line, each flushed as it happens: the approval
// request, progress, questions, then the result or the error, which ends
// the stream. An approval event waits for POST
// /api/calls/{operationId}/approval with a localapi.Decision from the
// same caller (the socket, or the page session that made the call) for
// at most approvalWait; a caller that goes away meanwhile, or a wait that
// runs out, is a denial, and nothing is sent to the server. Closing the
// request cancels the call.

var errStreamEnded = errors.New("the call stream has ended")

// approvalWait bounds how long a call waits for its caller's decision.
const approvalWait = 10 * time.Minute

// calls holds the approvals being waited for, by operation id.
type calls struct {
	mu      sync.Mutex
	waiting map[string]*waitingApproval
	// samplings are the sampling requests waiting for their caller's
	// answer, by operation id and request id.
	samplings map[string]*waitingSampling
}

type waitingSampling struct {
	who      caller
	answered chan localapi.SamplingReply // buffered: the first answer wins
}

type waitingApproval struct {
	who     caller
	decided chan localapi.ApprovalReply // buffered: the first decision wins
}

func newCalls() *calls {
	return &calls{waiting: map[string]*waitingApproval{}, samplings: map[string]*waitingSampling{}}
}

// samplingWait bounds how long a sampling request waits for its caller.
const samplingWait = 5 * time.Minute

// awaitSampling puts a server's sampling request on the stream and waits
// for the caller's answer (POST /api/calls/{operationId}/sampling/{id}).
func (a *api) awaitSampling(ctx context.Context, who caller, st *stream, sr localapi.SamplingRequest) (json.RawMessage, error) {
	key := sr.OperationID + "/" + sr.ID
	ws := &waitingSampling{who: who, answered: make(chan localapi.SamplingReply, 1)}
	a.calls.mu.Lock()
	if _, dup := a.calls.samplings[key]; dup {
		a.calls.mu.Unlock()
		return nil, fmt.Errorf("sampling request %s is already waiting", key)
	}
	a.calls.samplings[key] = ws
	a.calls.mu.Unlock()
	defer func() {
		a.calls.mu.Lock()
		delete(a.calls.samplings, key)
		a.calls.mu.Unlock()
	}()
	if err := st.send(localapi.CallEvent{Type: localapi.CallEventSampling, Sampling: &sr}, false); err != nil {
		return nil, errors.New("the caller went away")
	}
	t := time.NewTimer(samplingWait)
	defer t.Stop()
	select {
	case r := <-ws.answered:
		if r.Error != "" {
			return nil, errors.New(r.Error)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, errors.New("the caller went away")
	case <-t.C:
		return nil, fmt.Errorf("the caller did not answer within %v", samplingWait)
	}
}

// sampling serves POST /api/calls/{operationId}/sampling/{id}
// (localapi.SamplingReply → 204) from the caller of the call.
func (a *api) sampling(w http.ResponseWriter, r *http.Request) {
	reply, err := decode[localapi.SamplingReply](w, r, maxCallBody)
	if err != nil {
		a.error(w, err)
		return
	}
	key := r.PathValue("operationId") + "/" + r.PathValue("id")
	a.calls.mu.Lock()
	ws := a.calls.samplings[key]
	a.calls.mu.Unlock()
	if ws == nil || ws.who != callerOf(r.Context()) {
		a.error(w, &localapi.Error{Status: http.StatusNotFound, Code: localapi.CodeNotFound,
			Message: fmt.Sprintf("no sampling request %q is waiting for your answer", key)})
		return
	}
	select {
	case ws.answered <- reply:
		a.reply(w, 0, nil, nil)
	default:
		a.error(w, &localapi.Error{Status: http.StatusConflict, Code: localapi.CodeConflict,
			Message: fmt.Sprintf("sampling request %q was answered already", key)})
	}
}

// wait registers an approval; false when the operation id is waiting
// already.
func (c *calls) wait(op string, who caller) (*waitingApproval, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.waiting[op]; ok {
		return nil, false
	}
	wa := &waitingApproval{who: who, decided: make(chan localapi.ApprovalReply, 1)}
	c.waiting[op] = wa
	return wa, true
}

func (c *calls) done(op string, wa *waitingApproval) {
	c.mu.Lock()
	if c.waiting[op] == wa {
		delete(c.waiting, op)
	}
	c.mu.Unlock()
}

// decide hands a decision to the call waiting for it. Another caller's
// call is not found, so nothing tells it that one is waiting.
func (c *calls) decide(op string, who caller, d localapi.ApprovalReply) error {
	c.mu.Lock()
	wa := c.waiting[op]
	c.mu.Unlock()
	if wa == nil || wa.who != who {
		return &localapi.Error{Status: http.StatusNotFound, Code: localapi.CodeNotFound,
			Message: fmt.Sprintf("no call %q is waiting for your decision", op)}
	}
	select {
	case wa.decided <- d:
		return nil
	default:
		return &localapi.Error{Status: http.StatusConflict, Code: localapi.CodeConflict,
			Message: fmt.Sprintf("call %q was decided already", op)}
	}
}

// stream writes the lines of one call stream; once the last line is
// written, late events (a progress notification racing the result) are
// dropped.
type stream struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	rc    *http.ResponseController
	scrub *scrubber
	ended bool
	err   error
}

func newStream(w http.ResponseWriter, scrub *scrubber) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), scrub: scrub}
}

// start writes the header, so the caller knows its call was taken.
func (s *stream) start() {
	s.w.Header().Set("Content-Type", localapi.ContentTypeNDJSON)
	s.w.Header().Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.err = s.rc.Flush()
}

func (s *stream) send(ev localapi.CallEvent, last bool) error {
	b, err := marshal(ev)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.err != nil {
		if s.err == nil {
			return errStreamEnded
		}
		return s.err
	}
	s.ended = last
	if _, err := s.w.Write(append(s.scrub.scrub(b), '\n')); err != nil {
		s.err = err
		return err
	}
	s.err = s.rc.Flush()
	return s.err
}

// call serves POST /api/calls[?ask=0] (localapi.CallRequest → NDJSON of
// localapi.CallEvent); ask=0 says the caller has no CallHandler.Approve.
func (a *api) call(w http.ResponseWriter, r *http.Request) {
	req, err := decode[localapi.CallRequest](w, r, maxCallBody)
	if err != nil {
		a.error(w, err)
		return
	}
	if req.Tool == "" {
		a.error(w, badRequest("tool", "tool is required"))
		return
	}
	ctx := r.Context()
	who := callerOf(ctx)
	st := newStream(w, a.scrub)
	st.start()
	h := localapi.CallHandler{
		Approve: func(ar localapi.ApprovalRequest) (localapi.Decision, error) {
			return a.awaitApproval(ctx, who, st, ar)
		},
		Progress: func(p localapi.Progress) {
			st.send(localapi.CallEvent{Type: localapi.CallEventProgress, Progress: &p}, false)
		},
		Question: func(c localapi.Card) {
			st.send(localapi.CallEvent{Type: localapi.CallEventQuestion, Question: &c}, false)
		},
	}
	if r.URL.Query().Get("sample") == "1" {
		// The caller can answer the server's sampling requests.
		h.Sample = func(sctx context.Context, sr localapi.SamplingRequest) (json.RawMessage, error) {
			return a.awaitSampling(sctx, who, st, sr)
		}
	}
	if r.URL.Query().Get("ask") == "0" {
		// The caller has nobody to ask: the engine denies an unapproved
		// call without asking, as it does in-process.
		h.Approve = nil
	}
	res, err := a.eng.Call(ctx, req, h)
	if err != nil {
		e := toError(err)
		if e.Code == localapi.CodeInternal {
			a.log.Warn("daemon: tool call failed", "tool", req.Tool, "err", err)
		}
		st.send(localapi.CallEvent{Type: localapi.CallEventError, Error: e}, true)
		return
	}
	st.send(localapi.CallEvent{Type: localapi.CallEventResult, Result: res}, true)
}

// awaitApproval puts the approval request on the stream and waits for
// the caller's decision; anything but a decision is a denial.
func (a *api) awaitApproval(ctx context.Context, who caller, st *stream, ar localapi.ApprovalRequest) (localapi.Decision, error) {
	deny := func(why string) (localapi.Decision, error) { return localapi.Decision{Reason: why}, nil }
	wa, ok := a.calls.wait(ar.OperationID, who)
	if !ok {
		return deny("another call with this operation id is waiting for a decision")
	}
	defer a.calls.done(ar.OperationID, wa)
	if err := st.send(localapi.CallEvent{Type: localapi.CallEventApproval, Approval: &ar}, false); err != nil {
		return deny("the caller went away before deciding")
	}
	t := time.NewTimer(approvalWait)
	defer t.Stop()
	select {
	case r := <-wa.decided:
		if r.Error != "" {
			return localapi.Decision{}, errors.New(r.Error)
		}
		return r.Decision, nil
	case <-ctx.Done():
		return deny("the caller went away before deciding")
	case <-t.C:
		return deny(fmt.Sprintf("nobody decided within %v", approvalWait))
	}
}

// approval serves POST /api/calls/{operationId}/approval
// (localapi.ApprovalReply: a localapi.Decision, or the caller's failure
// to decide → 204).
func (a *api) approval(w http.ResponseWriter, r *http.Request) {
	d, err := decode[localapi.ApprovalReply](w, r, maxBody)
	if err != nil {
		a.error(w, err)
		return
	}
	a.reply(w, 0, nil, a.calls.decide(r.PathValue("operationId"), callerOf(r.Context()), d))
}
