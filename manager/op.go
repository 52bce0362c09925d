package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/opid"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/session"
)

// Op is one tool call in flight: its operation id and its one
// cancellation context, from before its approval until it ends (issue
// #21 item 2). The engine begins it, waits for the approval and the open
// questions under its context, then sends it with CallOp; the manager's
// tool timer cancels the same context, and the session sends the request
// under it (a session.Request: the session makes no context of its own).
// Cancel finds it by its id at every stage (R4.5), so no layer keeps
// records of its own.
type Op struct {
	id  string
	req session.Request
	// timer is the call's tool time (see callTimer).
	timer callTimer
	m     *Manager
}

// ID is the operation id (the progress token when the call asks for
// progress).
func (op *Op) ID() string { return op.id }

// Context is the call's context: it ends with the caller's, on Cancel,
// when the tool time runs out (TimedOut), when the session closes under
// the call in flight (cause session.ErrClosed), and on End.
func (op *Op) Context() context.Context { return &op.req }

// TimedOut reports whether the call's context ended because its tool time
// ran out, not because it was cancelled.
func (op *Op) TimedOut() bool { return errors.Is(context.Cause(&op.req), errToolTimeout) }

// Cancelled reports whether the call's context ended because the call
// was cancelled (its caller's context, Manager.Cancel, Op.Cancel), not
// because its tool time ran out or its session closed under it.
func (op *Op) Cancelled() bool {
	if op.req.Err() == nil {
		return false
	}
	cause := context.Cause(&op.req)
	return !errors.Is(cause, errToolTimeout) && !errors.Is(cause, session.ErrClosed)
}

// Cancel ends the call's context with cause (an owner's own bound, say);
// Manager.Cancel cancels by id.
func (op *Op) Cancel(cause error) { op.req.Cancel(cause) }

// End unregisters the call and releases its context. Idempotent.
func (op *Op) End() {
	m := op.m
	m.opsMu.Lock()
	if m.ops[op.id] == op {
		delete(m.ops, op.id)
	}
	m.opsMu.Unlock()
	op.req.End()
}

// ErrCancelled is the cause of a call's context after Cancel.
var ErrCancelled = errors.New("tool call cancelled")

// ErrCancelledEarly: the call was cancelled (Cancel) before it began; it
// is never sent. It is session.ErrCancelledBeforeDispatch too.
var ErrCancelledEarly = fmt.Errorf("cancelled before the call began: %w", session.ErrCancelledBeforeDispatch)

// Begin registers a call by operation id (a fresh one when ""), so that a
// Cancel at any moment wins: one that came first through a short-lived
// record (ErrCancelledEarly), later ones through the call's context. The
// caller must End it.
func (m *Manager) Begin(ctx context.Context, operationID string) (*Op, error) {
	if operationID == "" {
		operationID = opid.New("op-")
	}
	m.opsMu.Lock()
	defer m.opsMu.Unlock()
	if m.cancels.Take(operationID) {
		return nil, ErrCancelledEarly
	}
	if _, dup := m.ops[operationID]; dup {
		return nil, fmt.Errorf("operation %s is already in flight", operationID)
	}
	op := &Op{id: operationID, m: m}
	op.req.Init(ctx)
	m.ops[operationID] = op
	return op, nil
}

// Cancel cancels a call by operation id at whatever stage it is (waiting
// for approval, behind a question, for its connect, or in flight: go-sdk
// then sends notifications/cancelled, once), or records the cancel so
// that the call is never begun (R4.5).
func (m *Manager) Cancel(operationID string) {
	m.opsMu.Lock()
	op := m.ops[operationID]
	if op == nil {
		m.cancels.Add(operationID)
	}
	m.opsMu.Unlock()
	if op != nil {
		op.req.Cancel(ErrCancelled)
	}
}

// refusedUnsent reports whether err proves that a request never ran: the
// host permission guard refused it, or the server asked for a sign-in
// that cannot be done in the background, or refused it with 401 or 403.
func refusedUnsent(err error) bool {
	return errors.Is(err, hostperm.ErrPermissionRequired) || errors.Is(err, oauth.ErrLoginRequired) ||
		errors.Is(err, oauth.ErrRefusedBeforeRun)
}
