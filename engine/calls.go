package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/advice"
	"github.com/remotemcp/remotemcp/internal/opid"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/session"
	"github.com/remotemcp/remotemcp/store"
)

// maxCards is how many cards Cards returns, newest first.
const maxCards = 100

// approver is the approval step of a call the caller did not approve
// itself (CallRequest.Approved), an explicit parameter of the call
// (callOptions.approve): asked through CallHandler.Approve with the whole
// request, or by a card, and without either the call is denied and
// nothing is sent (errNobodyToAsk), since every remote tool is a write
// tool that needs the person's approval (R4.1).
func (c *Engine) approver(askByCard bool, h localapi.CallHandler) approveFunc {
	switch {
	case h.Approve != nil:
		return func(_ context.Context, req localapi.ApprovalRequest) (localapi.Decision, error) {
			return h.Approve(req)
		}
	case askByCard && c.Elicit != nil:
		return c.approveByCard
	}
	return func(context.Context, localapi.ApprovalRequest) (localapi.Decision, error) {
		return localapi.Decision{}, errNobodyToAsk
	}
}

// Call runs one tool call through the one call pipeline: it resolves the
// name, connecting the tool's server if it has no session (that server
// only); then it asks for approval unless req.Approved
// (CallHandler.Approve gets the whole request; without it nothing is
// sent), waits behind open questions, sends the call once through the
// manager, and budgets the session's validated result. The call's one
// record is the manager's (CancelCall finds it there). h.Progress gets
// each progress notification in order; only with h.Progress is the
// server asked for progress (a progress token), and only then does
// progress extend the call's tool time. h.Question gets each server
// question asked during the call; answer it with Answer, from any
// goroutine or process, and the call continues.
//
// A call refused before anything was sent (the server needs a sign-in or
// an origin grant, the approval was denied or not asked for) has
// MaybeExecuted false and a message that says so. A result whose outcome
// is not ok is returned with a nil error: it is the model's answer. The
// error is for a request that is wrong (CodeBadRequest, CodeNotFound for
// an unknown server, CodeConflict for a disabled one).
func (c *Engine) Call(ctx context.Context, req localapi.CallRequest, h localapi.CallHandler) (*localapi.ToolResult, error) {
	if err := c.errNotRunning(); err != nil {
		return nil, err
	}
	name := strings.TrimSpace(req.Tool)
	if name == "" {
		return nil, badRequest("tool", "tool is required (mcp__SERVER__TOOL or SERVER/TOOL)")
	}
	if len(req.Arguments) > agent.MaxArgumentsSize {
		return nil, badRequest("arguments", "the arguments are larger than %d bytes", agent.MaxArgumentsSize)
	}
	opts := callOptions{opID: req.OperationID, raw: req.Raw}
	if !req.Approved {
		opts.approve = c.approver(req.AskByCard, h)
	}
	if opts.opID == "" {
		opts.opID = opid.New("op-")
	}
	if req.Timeout != "" {
		d, err := time.ParseDuration(req.Timeout)
		if err != nil || d <= 0 {
			return nil, badRequest("timeout", "timeout must be a positive duration such as 30s")
		}
		opts.timeout = d
	}
	target, err := c.resolveTool(ctx, name)
	if err != nil {
		return nil, err
	}
	if target.notSent != nil {
		return c.notSentResult(target, opts.opID, target.notSent), nil
	}
	if h.Progress != nil {
		var mu sync.Mutex
		opID := opts.opID
		opts.progress = func(p session.Progress) {
			mu.Lock()
			defer mu.Unlock()
			h.Progress(localapi.Progress{OperationID: opID, Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}
	if h.Sample != nil {
		opts.sample = sampler(opts.opID, target.serverID, h.Sample)
	}
	if h.Question != nil && c.Elicit != nil {
		stop := c.forwardQuestions(ctx, opts.opID, h.Question)
		defer stop()
	}
	return toolResultOf(c.call(ctx, target.name, req.Arguments, opts)), nil
}

// callTarget is a resolved tool name.
type callTarget struct {
	name     string // the agent name to call
	serverID string // "" when several servers may own it
	toolName string
	// notSent is why the call cannot be sent (its server could not be
	// connected), nil when it can.
	notSent error
}

// resolveTool turns "server/tool" or mcp__server__tool into the agent
// name, connecting the server it belongs to when it has no session. An
// unknown or disabled tool is left for the pipeline, whose result
// explains it to the model (notOffered).
func (c *Engine) resolveTool(ctx context.Context, name string) (callTarget, error) {
	ct := callTarget{name: name}
	if s, t, ok := strings.Cut(name, "/"); ok && !strings.HasPrefix(name, "mcp__") {
		if s == "" || t == "" {
			return ct, badRequest("tool", "tool %q must be mcp__SERVER__TOOL or SERVER/TOOL", name)
		}
		if err := c.callable(ctx, s); err != nil {
			return ct, err
		}
		ct.serverID, ct.toolName, ct.name = s, t, agent.ToolName(s, t)
		if err := c.ensureReady(ctx, s); err != nil {
			ct.notSent = err
			return ct, nil
		}
		if at, ok := c.reg.Snapshot().ToolRefFor(s, t); ok {
			ct.name = at.Name
		}
		return ct, nil
	}
	if at, ok := c.reg.Snapshot().ToolRef(name); ok {
		ct.serverID, ct.toolName = at.ServerID, at.ToolName
		if err := c.ensureReady(ctx, at.ServerID); err != nil {
			ct.notSent = err
		}
		return ct, nil
	}
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return ct, nil // the pipeline says there is no such tool
	}
	all, err := c.Store.ListServers(ctx)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return ct, fail(err)
	}
	var cands []config.Server
	var disabled []string
	for _, s := range all {
		if t, ok := strings.CutPrefix(rest, agent.Sanitize(s.ID)+"__"); ok && t != "" {
			if !s.Enabled {
				disabled = append(disabled, s.ID)
				continue
			}
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 && len(disabled) > 0 {
		return ct, errDisabled(disabled[0])
	}
	var errs []error
	for _, s := range cands {
		if err := c.ensureReady(ctx, s.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if at, ok := c.reg.Snapshot().ToolRef(name); ok {
		ct.serverID, ct.toolName = at.ServerID, at.ToolName
		return ct, nil
	}
	if len(cands) == 1 {
		ct.serverID = cands[0].ID
		ct.toolName = strings.TrimPrefix(rest, agent.Sanitize(cands[0].ID)+"__")
		if len(errs) == 1 {
			ct.notSent = errs[0]
		}
	}
	return ct, nil
}

// callable checks that a server exists and is enabled.
func (c *Engine) callable(ctx context.Context, id string) error {
	// The manager's view is the store's after every edit (edits wait for
	// it), and reading it costs no query and no unsealing on each call.
	if st, err := c.Manager.ServerStatusOf(id); err == nil {
		if !st.Enabled {
			return errDisabled(id)
		}
		return nil
	}
	srv, err := c.Store.GetServer(ctx, id)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		if errors.Is(err, store.ErrNotFound) {
			return errNoServer(id)
		}
		return fail(err)
	}
	if !srv.Enabled {
		return errDisabled(id)
	}
	return nil
}

// errDisabled is the conflict of a switched-off server.
func errDisabled(id string) *localapi.Error {
	return conflict("server %s is disabled; enable it first (servers enable %s)", id, id)
}

// notSentResult is the result of a call that could not be sent because
// its server could not be connected.
func (c *Engine) notSentResult(t callTarget, opID string, err error) *localapi.ToolResult {
	return &localapi.ToolResult{Tool: t.name, ServerID: t.serverID, ToolName: t.toolName, OperationID: opID,
		Outcome: localapi.OutcomeUnavailable, IsError: true, MaybeExecuted: false,
		Message: fmt.Sprintf("The call of tool %q was not sent: %s. Nothing reached the server, so the tool did not run.", t.name, c.whyNotSent(t.serverID, err))}
}

// whyNotSent says why a server refused or could not take a request,
// naming the sign-in step or the origin to approve (localapi.Table's
// words).
func (c *Engine) whyNotSent(serverID string, err error) string {
	ae := apiError(err)
	var pe *hostperm.PermissionRequiredError
	switch {
	case ae.Code == localapi.CodeLoginRequired || errors.Is(err, oauth.ErrLoginRequired):
		step := ae.Step
		if step == "" {
			step = string(oauth.StepAuthorization)
		}
		return advice.LoginRequired(serverID, step)
	case errors.As(err, &pe):
		return advice.Permission(serverID, pe.Origin)
	case ae.Code == localapi.CodePermissionRequired:
		return fmt.Sprintf("MCP server %q's origin has no permission grant; approve it, then call again", serverID)
	}
	if v, verr := c.serverView(context.Background(), serverID); verr == nil && v.State == localapi.StateNeedsAuth {
		step := string(oauth.StepAuthorization)
		if v.Reason != nil && v.Reason.Step != "" {
			step = v.Reason.Step
		}
		return advice.LoginRequired(serverID, step)
	}
	return fmt.Sprintf("MCP server %q could not be connected (%s)", serverID, advice.Text(err))
}

// forwardQuestions tells q of every pending question of the call (its
// operation id), once each, until stop is called. A question is never
// forwarded by its server alone: it would reach the host of another call
// to that server (issue #20 item 3).
func (c *Engine) forwardQuestions(ctx context.Context, opID string, q func(localapi.Card)) (stop func()) {
	qctx, cancel := context.WithCancel(ctx)
	sub := c.Elicit.Subscribe(qctx)
	seen := map[string]bool{}
	belongs := func(k elicit.Card) bool {
		if k.Status != elicit.StatusPending || seen[k.ID] {
			return false
		}
		return k.OperationID == opID
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range sub {
			// The feed may drop events under load: the cards pending in
			// this process are the truth.
			for _, k := range c.Elicit.Pending() {
				if belongs(k) {
					seen[k.ID] = true
					q(cardOf(k))
				}
			}
		}
	})
	return func() {
		cancel()
		done := make(chan struct{})
		go func() {
			wg.Wait()
			close(done)
		}()
		// A handler still busy with a question (a terminal prompt) once
		// the call ended is not waited for long.
		select {
		case <-done:
		case <-time.After(questionGrace):
		}
	}
}

// questionGrace is how long a finished call waits for its question
// handler to return.
const questionGrace = 200 * time.Millisecond

// CancelCall cancels a call by its operation id at whatever stage it is
// (R4.5); a cancel that arrives before its call is remembered for a while.
// The id is the call's capability: ids are unguessable (package opid).
func (c *Engine) CancelCall(ctx context.Context, operationID string) error {
	if strings.TrimSpace(operationID) == "" {
		return badRequest("operationId", "operationId is required")
	}
	c.Manager.Cancel(operationID)
	return nil
}

// Cards lists the server questions, newest first (pending, answered,
// cancelled and interrupted ones within the retention; at most 100).
func (c *Engine) Cards(ctx context.Context) ([]localapi.Card, error) {
	l, err := c.cardList(ctx)
	return l, fail(err)
}

func (c *Engine) cardList(ctx context.Context) ([]localapi.Card, error) {
	out := []localapi.Card{}
	if c.Elicit == nil {
		return out, nil
	}
	cards, err := c.Elicit.List(ctx)
	if err != nil {
		return nil, err
	}
	for i := len(cards) - 1; i >= 0 && len(out) < maxCards; i-- {
		out = append(out, cardOf(cards[i]))
	}
	return out, nil
}

// errNoCards answers card requests of an engine whose questions an
// Options.Elicit callback answers.
func errNoCards() *localapi.Error {
	return &localapi.Error{Status: http.StatusNotImplemented, Code: localapi.CodeUnavailable,
		Message: "this remotemcp answers server questions itself (Options.Elicit), so it keeps no question cards"}
}

// Card returns one server question.
func (c *Engine) Card(ctx context.Context, id string) (*localapi.Card, error) {
	if c.Elicit == nil {
		return nil, errNoCards()
	}
	k, err := c.Elicit.Get(ctx, id)
	if err != nil {
		return nil, fail(err)
	}
	lc := cardOf(k)
	return &lc, nil
}

// Answer answers a pending question, from any process on the data
// directory: the call that asked continues where it waits. An accepted
// answer is checked against the question's form first; every bad field
// is in the error's Problems.
func (c *Engine) Answer(ctx context.Context, cardID string, a localapi.Answer) error {
	if c.Elicit == nil {
		return errNoCards()
	}
	act := elicit.Action(a.Action)
	switch act {
	case elicit.ActionAccept, elicit.ActionDecline, elicit.ActionCancel:
	default:
		return badRequest("action", "action must be accept, decline or cancel")
	}
	if err := c.Elicit.Submit(ctx, cardID, elicit.Response{Action: act, Content: a.Content}); err != nil {
		return fail(err)
	}
	c.hub.bump(topicCards)
	return nil
}

// Retry re-sends the call of an interrupted question once, after the
// person confirmed it is safe (R6.2: an answer that never reached the
// server is never pretended to have). The confirmation is its approval.
// Without confirmed nothing is sent.
func (c *Engine) Retry(ctx context.Context, cardID string, confirmed bool) (*localapi.ToolResult, error) {
	if err := c.errNotRunning(); err != nil {
		return nil, err
	}
	if c.Elicit == nil {
		return nil, errNoCards()
	}
	if !confirmed {
		return nil, badRequest("confirmed", "re-sending an interrupted call needs the person's confirmation that it is safe (confirmed)")
	}
	k, err := c.Elicit.Get(ctx, cardID)
	if err != nil {
		return nil, fail(err)
	}
	if err := c.Elicit.ConfirmRetry(ctx, cardID); err != nil {
		return nil, fail(err)
	}
	// The person asked for this re-send: like "remotemcp connect", it
	// tries now, inside the server's backoff window too (issue #20 item 1).
	c.Manager.ResetBackoff(k.ServerID)
	if err := c.ensureReady(ctx, k.ServerID); err != nil {
		return nil, c.connectError(ctx, k.ServerID, err)
	}
	// The card's tool, under its current name; claimed before it is
	// sent, so that two retries can never both send it. The confirmation
	// is the approval; admission and the rest are any call's.
	defer c.hub.bump(topicCards)
	snap := c.reg.Snapshot()
	t, ok := snap.ToolRefFor(k.ServerID, k.Tool)
	if !ok {
		return nil, fail(fmt.Errorf("card %s: tool %q of server %q is not available any more; nothing was re-sent", cardID, k.Tool, k.ServerID))
	}
	opID := opid.New("op-")
	if _, err := c.Elicit.ClaimResend(ctx, cardID, opID); err != nil {
		return nil, fail(err)
	}
	return toolResultOf(c.callTool(ctx, snap, t, k.Arguments, callOptions{opID: opID})), nil
}

// cardOf converts a card, its form in the schema's property order.
func cardOf(k elicit.Card) localapi.Card {
	lc := localapi.Card{
		ID: k.ID, ServerID: k.ServerID, Tool: k.Tool, OperationID: k.OperationID, Arguments: k.Arguments, Kind: localapi.CardKind(k.Kind), Description: k.Description,
		Message: k.Message, RequestedSchema: k.RequestedSchema, Status: localapi.CardStatus(k.Status), Reason: k.Reason,
		Created: k.Created, Updated: k.Updated, RetryConfirmed: k.RetryConfirmed, Resent: k.Resent,
		FailureMessage: k.FailureMessage(),
	}
	if k.Response != nil {
		lc.Response = &localapi.Answer{Action: localapi.Action(k.Response.Action), Content: k.Response.Content}
	}
	if f, err := k.Form(); err == nil && f != nil {
		lc.Form = formOf(f, propertyOrder(k.RequestedSchema))
	}
	return lc
}

// formOf converts a form, ordering its fields as order lists them (the
// schema's own order); fields it does not list keep theirs, after.
func formOf(f *elicit.Form, order []string) *localapi.Form {
	out := &localapi.Form{Fields: []localapi.Field{}}
	fields := slices.Clone(f.Fields)
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(fields, func(a, b elicit.Field) int { return rank(a.Name) - rank(b.Name) })
	for _, fl := range fields {
		out.Fields = append(out.Fields, localapi.Field{
			Name: fl.Name, Title: fl.Title, Description: fl.Description, Type: string(fl.Type), Required: fl.Required,
			Enum: fl.Enum, EnumTitles: fl.EnumTitles, Format: fl.Format, Default: fl.Default,
			MinLength: fl.MinLength, MaxLength: fl.MaxLength, Minimum: fl.Minimum, Maximum: fl.Maximum,
		})
	}
	return out
}

// propertyOrder returns the keys of a JSON schema's top-level
// "properties" object in the order the document has them.
func propertyOrder(schema json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(schema))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		if k != "properties" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil
		}
		var keys []string
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return keys
			}
			if s, ok := name.(string); ok {
				keys = append(keys, s)
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return keys
			}
		}
		return keys
	}
	return nil
}

// Prompts lists the prompts of a server (every enabled one when serverID
// is ""), as /server:prompt commands, connecting the servers that have no
// session. A server that cannot be listed is an error when it is the one
// asked for, and left out otherwise.
func (c *Engine) Prompts(ctx context.Context, serverID string) ([]localapi.Prompt, error) {
	if err := c.errNotRunning(); err != nil {
		return nil, err
	}
	if err := c.listFor(ctx, serverID); err != nil {
		return nil, err
	}
	out := []localapi.Prompt{}
	for _, p := range c.reg.Snapshot().Prompts() {
		if serverID == "" || p.ServerID == serverID {
			out = append(out, promptOf(p))
		}
	}
	return out, nil
}

// listFor makes sure the registry has listed serverID (every enabled
// server when ""), connecting what has no session.
func (c *Engine) listFor(ctx context.Context, serverID string) error {
	if serverID != "" {
		if err := c.callable(ctx, serverID); err != nil {
			return err
		}
		if c.listedFromCache(ctx, serverID) {
			return nil
		}
		if err := c.ensureReady(ctx, serverID); err != nil {
			return c.connectError(ctx, serverID, err)
		}
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, connectWait)
	defer cancel()
	if err := c.reg.Refresh(withWantAll(rctx)); err != nil && ctx.Err() != nil {
		return fail(ctx.Err())
	}
	return nil
}

// GetPrompt runs a /server:prompt command. Missing required arguments and
// unknown ones are CodeBadRequest naming the argument, before anything is
// sent.
func (c *Engine) GetPrompt(ctx context.Context, req localapi.GetPromptRequest) (*localapi.PromptResult, error) {
	if err := c.errNotRunning(); err != nil {
		return nil, err
	}
	command := "/" + strings.TrimPrefix(strings.TrimSpace(req.Command), "/")
	id, name, ok := strings.Cut(command[1:], ":")
	if !ok || id == "" || name == "" {
		return nil, badRequest("command", "%q is not a prompt command: want /SERVER:PROMPT, e.g. /docs:summarize", req.Command)
	}
	if err := c.listFor(ctx, id); err != nil {
		return nil, err
	}
	pc, ok := c.reg.Snapshot().Prompt(command)
	if !ok {
		var have []string
		for _, p := range c.reg.Snapshot().Prompts() {
			if p.ServerID == id {
				have = append(have, p.Command)
			}
		}
		what := "no prompts"
		if len(have) > 0 {
			what = "these prompts: " + strings.Join(have, ", ")
		}
		return nil, notFound("server %s has no prompt command %s (it has %s)", id, command, what)
	}
	for k := range req.Arguments {
		if !slices.ContainsFunc(pc.Arguments, func(a agent.PromptArgument) bool { return a.Name == k }) {
			return nil, badRequest(k, "%s has no argument %q", command, k)
		}
	}
	// A required argument that is missing is an ArgumentError naming it,
	// before anything is sent.
	if err := agent.CheckPromptArguments(pc, req.Arguments); err != nil {
		return nil, fail(err)
	}
	// The session validated the result (session.ValidatePromptResult).
	res, err := c.Manager.GetPrompt(ctx, pc.ServerID, pc.Name, req.Arguments)
	if err != nil {
		return nil, fail(fmt.Errorf("%s: %w", command, err))
	}
	return promptResultOf(agent.NewPromptResult(pc, res, agent.Budget{}, req.Raw)), nil
}

// Complete asks a server for completion values of an argument of one of
// its prompts or resource templates (completion/complete), connecting it
// when it has no session. A request without a server, a reference or an
// argument name is CodeBadRequest before anything is sent, as is one the
// server refuses.
func (c *Engine) Complete(ctx context.Context, req localapi.CompleteRequest) (*localapi.CompleteResult, error) {
	if err := c.errNotRunning(); err != nil {
		return nil, err
	}
	switch {
	case req.ServerID == "":
		return nil, badRequest("serverId", "which server? serverId is required")
	case req.Ref.Type == localapi.RefPrompt && req.Ref.Name == "":
		return nil, badRequest("ref", "a %s reference needs the prompt's name", req.Ref.Type)
	case req.Ref.Type == localapi.RefResource && req.Ref.URI == "":
		return nil, badRequest("ref", "a %s reference needs the resource template's URI", req.Ref.Type)
	case req.Ref.Type != localapi.RefPrompt && req.Ref.Type != localapi.RefResource:
		return nil, badRequest("ref", "reference type %q is not %s or %s", req.Ref.Type, localapi.RefPrompt, localapi.RefResource)
	case req.Argument.Name == "":
		return nil, badRequest("argument", "the argument's name is required")
	}
	if err := c.listFor(ctx, req.ServerID); err != nil {
		return nil, err
	}
	params := &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: string(req.Ref.Type), Name: req.Ref.Name, URI: req.Ref.URI},
		Argument: mcp.CompleteParamsArgument{Name: req.Argument.Name, Value: req.Argument.Value},
	}
	if len(req.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: req.Context}
	}
	res, err := c.Manager.Complete(ctx, req.ServerID, params)
	if err != nil {
		ae := apiError(fmt.Errorf("complete %s of server %s: %w", req.Argument.Name, req.ServerID, err))
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			ae.Status, ae.Code = http.StatusBadRequest, localapi.CodeBadRequest
			ae.Message = "the server refused the completion: " + err.Error()
		}
		return nil, ae
	}
	out := &localapi.CompleteResult{Values: res.Completion.Values, Total: res.Completion.Total, HasMore: res.Completion.HasMore}
	if out.Values == nil {
		out.Values = []string{}
	}
	return out, nil
}

// Resources lists or searches the resources and resource templates of a
// server (every enabled one when req.ServerID is ""), best match first
// (see agent.Snapshot.SearchResources), connecting what has no session.
func (c *Engine) Resources(ctx context.Context, req localapi.ResourcesRequest) ([]localapi.Resource, error) {
	if err := c.errNotRunning(); err != nil {
		return nil, err
	}
	if err := c.listFor(ctx, req.ServerID); err != nil {
		return nil, err
	}
	out := []localapi.Resource{}
	for _, r := range c.reg.Snapshot().SearchResources(req.Query, 0) {
		if req.ServerID != "" && r.ServerID != req.ServerID {
			continue
		}
		out = append(out, resourceOf(r))
		if req.Limit > 0 && len(out) == req.Limit {
			break
		}
	}
	return out, nil
}

// ReadResource reads a resource named @server:URI. A URI template must be
// filled in first (CodeBadRequest).
func (c *Engine) ReadResource(ctx context.Context, req localapi.ReadRequest) (*localapi.ReadResult, error) {
	if err := c.errNotRunning(); err != nil {
		return nil, err
	}
	id, uri, err := agent.ParseMention(req.Mention)
	if err != nil {
		return nil, badRequest("mention", "%v, e.g. @docs:docs://readme", err)
	}
	if err := c.listFor(ctx, id); err != nil {
		return nil, err
	}
	snap := c.reg.Snapshot()
	if !slices.Contains(snap.Servers(), id) {
		return nil, fail(fmt.Errorf("resource %s: no enabled server %q", req.Mention, id))
	}
	for _, e := range snap.Resources() {
		if e.Template && e.ServerID == id && e.URI == uri {
			return nil, badRequest("mention", "%s is a URI template: replace each {variable} in it with a value first", req.Mention)
		}
	}
	// The session validated the result (session.ValidateReadResult).
	res, err := c.Manager.ReadResource(ctx, id, uri)
	if err != nil {
		err = fmt.Errorf("resource %s: %w", req.Mention, err)
		ae := apiError(err)
		var rpc *jsonrpc.Error
		if errors.As(err, &rpc) {
			ae.Status, ae.Code = http.StatusNotFound, localapi.CodeNotFound
			ae.Message = "the server refused to read it: " + err.Error()
		}
		return nil, ae
	}
	return readResultOf(agent.NewResourceResult(id, uri, res, agent.Budget{})), nil
}

// sampler turns a CallHandler's Sample into the call's answer to the
// server's sampling requests: the params go out as JSON, the caller's
// answer comes back checked (a role and content, within bounds).
func sampler(opID, serverID string, sample func(context.Context, localapi.SamplingRequest) (json.RawMessage, error)) func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	var n atomic.Int64
	return func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		params, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("sampling: encode the server's request: %w", err)
		}
		req := localapi.SamplingRequest{OperationID: opID, ID: fmt.Sprintf("s%d", n.Add(1)), ServerID: serverID, Params: params}
		raw, err := sample(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("sampling: the host did not answer: %w", err)
		}
		var res mcp.CreateMessageResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("sampling: the host's answer is not a CreateMessageResult: %w", err)
		}
		if res.Content == nil || res.Role == "" {
			return nil, errors.New("sampling: the host's answer has no role or content")
		}
		return &res, nil
	}
}

// listedFromCache lists a server that has no session from its stored
// catalog, without connecting it (issue #12): its first call connects.
func (c *Engine) listedFromCache(ctx context.Context, id string) bool {
	if st, err := c.Manager.ServerStatusOf(id); err != nil || st.State == manager.StateReady {
		return false
	}
	if cat, err := c.Manager.CachedCatalog(ctx, id); err != nil || cat == nil {
		return false
	}
	if err := c.reg.Refresh(withWant(ctx, id)); err != nil {
		return false
	}
	return c.listed(id)
}

// approveByCard asks the person about a call with a card (the settings
// page, "remotemcp elicitations") and waits for the answer: only accept
// approves. The card is a question of the call's own, admitted like a
// call so that it queues behind the server's open questions and they
// behind it; if this process stops meanwhile the card is interrupted,
// and re-sending it from the page is the approval (nothing was sent).
func (c *Engine) approveByCard(ctx context.Context, ar localapi.ApprovalRequest) (localapi.Decision, error) {
	adm, err := c.Elicit.Admit(ctx, elicit.CallInfo{ServerID: ar.ServerID, Tool: ar.ToolName,
		OperationID: ar.OperationID + elicit.ApprovalSuffix, Arguments: ar.Arguments})
	if err != nil {
		return localapi.Decision{}, fmt.Errorf("put the approval question on the page: %w", err)
	}
	defer adm.Finish()
	res, err := c.Elicit.AskApproval(ctx, manager.ElicitInfo{ServerID: ar.ServerID, OperationID: ar.OperationID + elicit.ApprovalSuffix},
		&mcp.ElicitRequest{Params: &mcp.ElicitParams{Mode: "form", Message: ar.Question(), RequestedSchema: localapi.ApprovalSchema}},
		localapi.ShownDescription(ar.Description))
	if err != nil {
		return localapi.Decision{}, fmt.Errorf("the approval question on the page: %w", err)
	}
	if res.Action != "accept" {
		return localapi.Decision{Reason: "the person did not approve the call on the settings page (" + res.Action + ")"}, nil
	}
	return localapi.Decision{Approved: true}, nil
}
