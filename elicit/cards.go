// Package elicit turns a server's form-mode elicitation request into a
// persistent interaction card that a person answers (R6.1), and makes sure
// that after a restart nobody pretends an answer reached the server (R6.2).
//
// Questions taken. A question is taken only while a tool call to its
// server, admitted through [Cards.Admit], is in flight (R6.1), within the
// server's [Limits], and with a requested schema the form can check
// exactly ([Limits.ParseForm]); any other is declined at once, its reason
// logged, and nothing is stored.
//
// Flow. The manager's Elicit callback is [Cards.Handle]: it stores an
// "mcp_elicitation" card (status pending) in the store's KV table, publishes
// it to subscribers (the settings page, the CLI) and blocks until the
// person calls [Cards.Answer], the request's context ends, the tool call it
// belongs to ends, the connection that asked goes away (see [Cards.Watch]),
// or the Cards are closed. Only then does the original tool call continue.
// URL mode is always declined.
//
// Wiring and shutdown:
//
//	cards, _ := elicit.Open(ctx, st, elicit.Options{})
//	m := manager.New(manager.Options{Store: st, Elicit: cards.Handle})
//	m.Start(ctx)
//	cards.Watch(m)
//	// ... and agent.Options{Cards: cards} for queueing and attribution.
//
// Shut down by cancelling the calls in flight, then cards.Close, then
// m.Close: an open question is then closed as interrupted while its
// connection can still carry the refusal. (go-sdk's ClientSession.Close
// waits for outgoing calls, so a call left waiting would hold the
// manager's Close until its timeout.)
//
// Queueing (R4.5). While a card of a server is pending, new tool calls to
// that server wait in [Cards.Admit] before they are sent; a waiting call
// whose context is cancelled returns without ever being dispatched. Calls
// wait because the person answers one question at a time, and because it
// keeps attribution (below) unambiguous.
//
// Attribution. A question belongs to the tool call whose response stream
// carried it: the session marks it so (session.RelatedCall), and the
// manager passes the call on as [manager.ElicitInfo.OperationID]. The card
// is attributed to that admitted call (tool, operationId, arguments). A
// question on the standalone stream ([manager.ElicitInfo.Standalone])
// belongs to the server's one admitted tool call in flight when there is
// exactly one (approval questions do not count); any other question that
// names no call (another request's stream, the standalone stream with
// none or several calls, no way to tell) is declined, never attributed
// to a call in flight by guess: it would reach another caller's host
// (issue #20 item 3). Calls made around Cards (not through Admit) are invisible
// to Cards: a question during such a call is declined as asked outside
// any call.
//
// Restart (R6.2). A remote HTTP call cannot survive the process that made
// it. [Open] closes every card left pending by a process that is gone, and
// every answered card whose tool call never finished there, as
// "interrupted", with a reason that says the answer never reached the
// server (or that the result was lost). The model is told so through
// [Card.FailureMessage]; the tool is re-sent only after
// [Cards.ConfirmRetry], by exactly one [Cards.ClaimResend].
//
// Several processes (R6.2 with a daemon). Any number of Cards instances
// may share a data directory when the store is a [SharedStore]
// (*store.DB is): each instance holds an owner lock from Open until
// Close, so [Open] interrupts only the cards of owners that are gone (see
// [OwnerAlive]) and leaves a live process's open questions and running
// calls alone. A card is answered where its call waits: [Cards.Submit]
// works from any instance, handing the answer through the store
// ([AnswersNamespace]) to the owner, which applies it with [Cards.Answer]
// and reports its verdict back. With a store that is only a [KV], one
// Cards instance should own a data directory's cards at a time: a second
// one takes the pending cards over as interrupted, and the first one then
// no longer writes them.
package elicit

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/fanout"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

// Namespace is the store KV namespace of the cards.
const Namespace = "mcp_elicitation"

// DefaultRetention is how long finished cards are kept when
// Options.Retention is zero.
const DefaultRetention = 7 * 24 * time.Hour

// Status is a card's state.
type Status string

// Card states. Only pending cards can be answered.
const (
	StatusPending   Status = "pending"
	StatusAccepted  Status = "accepted"
	StatusDeclined  Status = "declined"
	StatusCancelled Status = "cancelled"
	// StatusInterrupted: the process that held the tool call ended before
	// the call finished (R6.2).
	StatusInterrupted Status = "interrupted"
)

// Action is the person's answer to a card.
type Action string

// The answers of MCP elicitation.
const (
	ActionAccept  Action = "accept"
	ActionDecline Action = "decline"
	ActionCancel  Action = "cancel"
)

// Response is an answer to a card. Content is only used with accept.
type Response struct {
	Action  Action         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// Card is one server question, as stored under Namespace/ID.
type Card struct {
	ID           string `json:"id"`
	ServerID     string `json:"server"`
	ConnectionID string `json:"connectionId,omitempty"`
	// Tool, OperationID and Arguments identify the tool call the question
	// belongs to (empty only on cards stored before issue #20, when a
	// question could go unattributed).
	Tool        string          `json:"tool,omitempty"`
	OperationID string          `json:"operationId,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	// Kind is "" for a server's question and KindApproval for
	// remotemcp's own approval question (Cards.AskApproval), which no
	// server can make. Description is, on an approval card, the tool's
	// description as the question shows it: the server's words.
	Kind        string `json:"kind,omitempty"`
	Description string `json:"description,omitempty"`
	// Message and RequestedSchema come from the server: untrusted text,
	// to be shown to the person as such.
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	Created         time.Time       `json:"created"`
	Updated         time.Time       `json:"updated"`
	Status          Status          `json:"status"`
	// Reason says why a card was cancelled or interrupted.
	Reason string `json:"reason,omitempty"`
	// Response is the person's answer (accepted/declined/cancelled cards).
	Response *Response `json:"response,omitempty"`
	// Settled is set once the tool call the card belongs to has finished
	// in the process that made the card: its outcome reached the caller.
	Settled bool `json:"settled,omitempty"`
	// RetryConfirmed: the person confirmed that re-sending is safe.
	RetryConfirmed bool `json:"retryConfirmed,omitempty"`
	// Resent: the tool was re-sent once, with ResendOperationID.
	Resent            bool   `json:"resent,omitempty"`
	ResendOperationID string `json:"resendOperationId,omitempty"`
	// Owner is the Cards instance allowed to write the card.
	Owner string `json:"owner"`
}

// Form parses the card's requested schema. The schema passed the limits
// of the instance that made the card, which may exceed DefaultLimits, so
// only its consistency is checked again.
func (c Card) Form() (*Form, error) { return storedLimits.ParseForm(c.RequestedSchema) }

// FailureMessage is the explicit failure the model gets for an interrupted
// card (R6.2): the answer never reached the server (or the result was
// lost), nothing was re-sent, and a re-send needs the person's
// confirmation. Empty for other states.
func (c Card) FailureMessage() string {
	if c.Status != StatusInterrupted {
		return ""
	}
	what := fmt.Sprintf("The call of tool %q on MCP server %q", c.Tool, c.ServerID)
	if c.Tool == "" {
		what = fmt.Sprintf("A tool call on MCP server %q", c.ServerID)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed: it was interrupted while the server was asking the user a question (%s). ", what, c.Reason)
	if c.Response == nil {
		b.WriteString("The user's answer never reached the server. ")
	}
	b.WriteString("The call's outcome is unknown: it may have partly run on the server. It was not re-sent")
	switch {
	case c.Resent:
		b.WriteString(" automatically; the user confirmed a re-send, which has been made once.")
	case c.Tool == "":
		b.WriteString(".")
	default:
		b.WriteString(", and it will only be re-sent after the user confirms that doing so is safe.")
	}
	return b.String()
}

// Errors callers branch on.
var (
	ErrUnknownCard       = errors.New("no such elicitation card")
	ErrNotPending        = errors.New("elicitation card is not pending")
	ErrNotInterrupted    = errors.New("only an interrupted card can be retried")
	ErrNotAttributed     = errors.New("the card is not attributed to a tool call, so there is nothing to re-send")
	ErrRetryNotConfirmed = errors.New("re-sending needs the user's confirmation first (ConfirmRetry)")
	ErrAlreadyResent     = errors.New("the tool call was already re-sent once")
	ErrClosed            = errors.New("elicitation cards closed")
	// ErrNotOwner: another Cards instance took the card over (a restart
	// over the same data directory); this one no longer writes it.
	ErrNotOwner = errors.New("elicitation card is owned by another remotemcp instance")
)

// KV is the part of the store the cards live in; *store.DB has it.
type KV interface {
	PutKV(ctx context.Context, ns, key string, value []byte) error
	GetKV(ctx context.Context, ns, key string) ([]byte, error)
	ListKV(ctx context.Context, ns string) (map[string][]byte, error)
	DeleteKV(ctx context.Context, ns, key string) error
}

// ConnectionSource tells which connection of a server is current;
// *manager.Manager has it. See [Cards.Watch].
type ConnectionSource interface {
	Subscribe(ctx context.Context) <-chan manager.Event
	CurrentConnection(id string) (string, bool)
}

// Options configure Open.
type Options struct {
	Logger *slog.Logger
	// Retention is how long finished cards are kept (DefaultRetention when
	// zero); older ones are deleted by Open.
	Retention time.Duration
	// Limits bound the questions servers may ask; zero fields take
	// DefaultLimits. A question over them is declined and makes no card.
	Limits Limits
	// ServerLimits, when set, gives one server's own limits (SPEC A2:
	// per-server limits override the defaults); its zero fields fall back
	// to Limits. It is called for every question, so it must be cheap.
	ServerLimits func(serverID string) Limits
}

// Cards owns the elicitation cards of one data directory. Safe for
// concurrent use.
type Cards struct {
	kv       KV
	log      *slog.Logger
	limits   Limits // Options.Limits with the defaults filled in
	perSrv   func(serverID string) Limits
	instance string
	done     chan struct{}
	wg       sync.WaitGroup // Watch goroutines and the answer server

	// shared is kv when it lets several instances share the data
	// directory; nil in single-owner mode. unlock releases this
	// instance's owner lock (Close); stopServe stops the answer server.
	shared    SharedStore
	unlock    func()
	stopServe context.CancelFunc

	// wmu serializes store writes; each write reads the latest in-memory
	// state under mu first, so the last write always carries the last
	// state. Lock order: wmu, then mu.
	wmu sync.Mutex

	mu      sync.Mutex
	closed  bool
	recs    map[string]*Card           // cards of this instance not yet settled
	live    map[string]*liveCard       // pending cards with a waiting handler
	waitOn  map[string]map[string]bool // card id → in-flight calls it may belong to
	servers map[string]*gate
	subs    *fanout.Broker[Card] // a slow subscriber loses its oldest card event
}

type liveCard struct {
	shown bool // saved and published: listed by Pending
	form  *Form
	wake  chan struct{} // closed after the card left pending and was saved
	resp  *Response     // the answer, or nil with err
	err   error
}

// gate is a server's admission state.
type gate struct {
	calls   map[string]*Admission // admitted calls in flight, by operation id
	pending int                   // pending cards
	changed chan struct{}         // closed (and replaced) when a card leaves pending
}

// Open loads the cards of kv. Cards left pending by a process that is
// gone, and answered cards whose tool call never finished there, are
// closed as interrupted (R6.2); finished cards older than the retention
// are deleted.
//
// When kv is a [SharedStore], Open first takes this instance's owner lock
// (held until Close), leaves the cards of live owners alone, and starts
// applying the answers other instances hand over ([Cards.Submit]). With a
// plain [KV] every pending card is taken to be a previous process's.
func Open(ctx context.Context, kv KV, o Options) (*Cards, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	c := &Cards{
		kv: kv, log: o.Logger, limits: o.Limits.withDefaults(), perSrv: o.ServerLimits,
		instance: "i-" + rand.Text()[:16], done: make(chan struct{}),
		recs: map[string]*Card{}, live: map[string]*liveCard{}, waitOn: map[string]map[string]bool{},
		servers: map[string]*gate{},
	}
	c.subs = fanout.New[Card](32)
	if sh, ok := kv.(SharedStore); ok {
		// Before any card of this instance is written, so that a card
		// never names an owner that looks gone while it runs.
		lctx, cancel := context.WithTimeout(ctx, ownerLockWait)
		unlock, err := sh.Lock(lctx, ownerLockName(c.instance))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("elicit: take the owner lock: %w", err)
		}
		c.shared, c.unlock = sh, unlock
	}
	if err := c.takeOver(ctx, o.Retention); err != nil {
		if c.unlock != nil {
			c.unlock()
		}
		return nil, err
	}
	if c.shared != nil {
		c.serveAnswers()
	}
	return c, nil
}

// takeOver closes the cards of owners that are gone as interrupted and
// prunes old finished cards and answer records.
func (c *Cards) takeOver(ctx context.Context, retention time.Duration) error {
	all, err := c.kv.ListKV(ctx, Namespace)
	if err != nil {
		return fmt.Errorf("elicit: load cards: %w", err)
	}
	alive := map[string]bool{}
	ownerAlive := func(owner string) bool {
		if c.shared == nil {
			return false
		}
		v, ok := alive[owner]
		if !ok {
			v = OwnerAlive(ctx, c.shared, owner)
			alive[owner] = v
		}
		return v
	}
	now := time.Now().UTC()
	for key, raw := range all {
		var card Card
		if err := json.Unmarshal(raw, &card); err != nil || card.ID != key {
			c.log.Warn("elicit: skipping unreadable card", "id", key, "err", err)
			continue
		}
		switch {
		case card.Status == StatusPending:
			if ownerAlive(card.Owner) {
				continue
			}
			card.Reason = "the remotemcp process that asked stopped or restarted while the question was open"
		case !card.Settled && card.Status != StatusInterrupted:
			if ownerAlive(card.Owner) {
				continue
			}
			card.Reason = fmt.Sprintf("the remotemcp process that made the tool call stopped or restarted before the call finished; the answer (%s) may have reached the server, but the call's result was lost", card.Status)
		default:
			if now.Sub(card.Updated) > retention {
				if err := c.kv.DeleteKV(ctx, Namespace, key); err != nil {
					return fmt.Errorf("elicit: prune card %s: %w", key, err)
				}
			}
			continue
		}
		card.Status = StatusInterrupted
		card.Updated = now
		card.Owner = c.instance
		if err := c.put(ctx, card); err != nil {
			return fmt.Errorf("elicit: close interrupted card %s: %w", key, err)
		}
	}
	if c.shared != nil {
		if err := c.pruneAnswers(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close closes every pending card as interrupted (the process is going
// away, so the answer can never reach the server), wakes their handlers,
// stops the Watch goroutines and the answer server, and releases the owner
// lock. Tool calls still finishing may call Admission.Finish afterwards.
func (c *Cards) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	ids := make([]string, 0, len(c.live))
	for id := range c.live {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.resolve(id, StatusInterrupted, "remotemcp shut down while the question was open", nil, ErrClosed)
	}
	if c.stopServe != nil {
		c.stopServe()
	}
	c.wg.Wait()
	// Last: the interrupted cards are saved, so a Submit that now finds
	// the owner gone also finds the card closed.
	if c.unlock != nil {
		c.unlock()
	}
	c.subs.Close()
	return nil
}

// Watch closes pending cards whose connection is no longer the server's
// current one (a disconnect, reconnect or config change), so their
// handlers return. Without it, closing a session would wait for the
// person: go-sdk's ClientSession.Close waits for running handlers and does
// not cancel their context. The goroutine stops on Close.
func (c *Cards) Watch(src ConnectionSource) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	events := src.Subscribe(ctx)
	go func() {
		defer c.wg.Done()
		defer cancel()
		for {
			select {
			case <-c.done:
				return
			case _, ok := <-events:
				if !ok {
					return
				}
				fanout.Drain(events) // a closed feed ends the loop on the next turn
				c.checkConnections(src)
			}
		}
	}()
}

func (c *Cards) checkConnections(src ConnectionSource) {
	type pc struct{ id, server, conn string }
	var cards []pc
	c.mu.Lock()
	for id := range c.live {
		if r := c.recs[id]; r != nil && r.ConnectionID != "" {
			cards = append(cards, pc{id, r.ServerID, r.ConnectionID})
		}
	}
	c.mu.Unlock()
	for _, p := range cards {
		if cur, ok := src.CurrentConnection(p.server); !ok || cur != p.conn {
			c.resolve(p.id, StatusCancelled, "the connection to the server closed before the question was answered", nil, errors.New("connection closed"))
		}
	}
}

// Handle is the manager's Elicit callback (manager.Options.Elicit): it
// makes a pending card and blocks until it is answered or closed.
//
// A question is only taken while an admitted tool call to its server is
// in flight (R6.1: questions belong to a tool call; see [Cards.Admit]).
// URL mode, a question outside a call, one over the server's [Limits]
// and one whose schema a form cannot show faithfully (see
// [Limits.ParseForm]) are declined with a logged reason and leave nothing
// stored: a server cannot fill the store, or a person's screen, with
// questions nobody asked for.
func (c *Cards) Handle(ctx context.Context, info manager.ElicitInfo, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return c.handle(ctx, info, req, nil)
}

// KindApproval is the Kind of remotemcp's own approval question.
const KindApproval = "approval"

// AskApproval puts remotemcp's own approval question about the admitted
// call info.OperationID to the person, as a card of Kind KindApproval
// (which no server's question can have) with the tool's description as
// the question shows it, and waits for the answer like Handle.
func (c *Cards) AskApproval(ctx context.Context, info manager.ElicitInfo, req *mcp.ElicitRequest, description string) (*mcp.ElicitResult, error) {
	return c.handle(ctx, info, req, func(card *Card) { card.Kind, card.Description = KindApproval, description })
}

// handle is Handle and AskApproval: it checks the question, makes its
// card, stores and shows it, and waits for the answer or ctx; own, when
// set, marks the card as remotemcp's own before it is registered.
//
// Long: one question's life in order: cheap refusals before any of it is
// read, the form parsed under its limits, the card registered under c.mu
// after checking again that its call is still in flight, saved before it
// is shown (R6.1), then the wait. The c.mu sections before and after the
// parse check the same state (closed, the call in flight), so they stay
// in one function.
func (c *Cards) handle(ctx context.Context, info manager.ElicitInfo, req *mcp.ElicitRequest, own func(*Card)) (*mcp.ElicitResult, error) {
	if req == nil || req.Params == nil {
		return nil, errors.New("elicitation request without params")
	}
	p := req.Params
	if p.Mode != "" && p.Mode != "form" {
		// URL mode is explicitly declined (R6.1).
		return &mcp.ElicitResult{Action: string(ActionDecline)}, nil
	}
	// Checked first, before any of the question is read: a stray question
	// costs nothing. Checked again when the card is registered.
	c.mu.Lock()
	closed := c.closed
	if info.OperationID == "" && info.Standalone && own == nil {
		// A question on the standalone stream (a TypeScript server's
		// server.elicitInput without a related request; the official
		// conformance suite's elicitation scenario sends it so) belongs
		// to a call only when one call to the server is in flight: that
		// call is then known. With several it would be a guess that can
		// put one host's question to another, so it is declined (issue
		// #20 item 3). Only the standalone stream: a question on another
		// request's stream (a host's prompts/get) belongs to that request
		// and its host, and one that cannot be tied to a stream may be
		// anything (review finding 1).
		if op, ok := c.onlyCall(info.ServerID); ok {
			info.OperationID = op
			c.log.Info("elicit: a question outside a call's response stream goes to the server's only call in flight", "server", info.ServerID, "operation", op)
		}
	}
	inCall := c.inCall(info.ServerID, info.OperationID)
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if info.OperationID == "" {
		return c.decline(info, errUnrelated)
	}
	if !inCall {
		return c.decline(info, errNoCall)
	}
	lim := c.limitsFor(info.ServerID)
	if err := lim.CheckMessage(p.Message); err != nil {
		return c.decline(info, err)
	}
	if raw, ok := p.RequestedSchema.(json.RawMessage); ok && len(raw) > lim.MaxSchemaBytes {
		// Refused before json.Marshal copies (and compacts) it.
		return c.decline(info, schemaError(&LimitError{Limit: "MaxSchemaBytes", Max: lim.MaxSchemaBytes, What: fmt.Sprintf("%d bytes", len(raw))}))
	}
	schema, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	form, err := lim.ParseForm(schema)
	if err != nil {
		return c.decline(info, err)
	}
	now := time.Now().UTC()
	card := &Card{
		ID: "el-" + rand.Text()[:20], ServerID: info.ServerID, ConnectionID: info.ConnectionID,
		Message: p.Message, RequestedSchema: schema, Created: now, Updated: now,
		Status: StatusPending, Owner: c.instance,
	}
	l := &liveCard{form: form, wake: make(chan struct{})}

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if !c.inCall(info.ServerID, info.OperationID) {
		// The call ended while the question was read.
		c.mu.Unlock()
		return c.decline(info, errNoCall)
	}
	g := c.gate(info.ServerID)
	a := g.calls[info.OperationID]
	card.Tool, card.OperationID, card.Arguments = a.info.Tool, info.OperationID, a.info.Arguments
	if own != nil {
		own(card)
	}
	cands := map[string]bool{info.OperationID: true}
	c.recs[card.ID] = card
	c.live[card.ID] = l
	c.waitOn[card.ID] = cands
	g.pending++
	c.mu.Unlock()

	if err := c.save(context.WithoutCancel(ctx), card.ID); err != nil {
		// A card that is not stored would not survive a restart (R6.1):
		// do not ask the question at all.
		c.resolve(card.ID, StatusCancelled, "the card could not be saved", nil, err)
		c.settle(card.ID)
		return nil, fmt.Errorf("elicit: save card: %w", err)
	}
	c.mu.Lock()
	l.shown = true
	c.mu.Unlock()
	c.publish(card.ID)

	select {
	case <-l.wake:
	case <-ctx.Done():
		c.resolve(card.ID, StatusCancelled, withdrawnReason(ctx), nil, ctx.Err())
		<-l.wake // resolve, ours or a racing one, closes it
	}
	c.settle(card.ID)
	if l.resp == nil {
		return nil, l.err
	}
	// A copy: go-sdk writes schema defaults into the map it gets, which
	// must not race readers of the stored card.
	return &mcp.ElicitResult{Action: string(l.resp.Action), Content: maps.Clone(l.resp.Content)}, nil
}

// errNoCall is the reason a question outside a tool call is declined.
var errNoCall = errors.New("the server asked a question while the tool call it belongs to was not in flight")

// errUnrelated is the reason a question that belongs to no tool call is
// declined: it came on the standalone stream or another request's stream,
// or could not be tied to the stream that carried it.
var errUnrelated = errors.New("the server asked a question outside the response stream of a tool call " +
	"(a question goes only to the MCP host or person whose call it belongs to)")

// onlyCall returns the operation id of the server's one admitted tool
// call in flight; false when there is none or more than one. remotemcp's
// own approval questions, admitted like calls (ApprovalSuffix), are not
// tool calls: the server is not running one, and a server's question
// must never be attached to a pending approval (review finding 1). c.mu
// is held.
func (c *Cards) onlyCall(server string) (string, bool) {
	g := c.servers[server]
	if g == nil {
		return "", false
	}
	only, n := "", 0
	for op := range g.calls {
		if strings.HasSuffix(op, ApprovalSuffix) {
			continue
		}
		only, n = op, n+1
	}
	return only, n == 1
}

// ApprovalSuffix ends the operation id under which remotemcp admits its
// own approval question about a call (the call's id and this suffix):
// such an admission is no tool call the server runs.
const ApprovalSuffix = "-approval"

// inCall reports whether the admitted call op to the server is in flight.
// c.mu is held; unlike gate, it records nothing for an unknown server.
func (c *Cards) inCall(server, op string) bool {
	g := c.servers[server]
	return g != nil && g.calls[op] != nil
}

// limitsFor returns the limits of one server's questions.
func (c *Cards) limitsFor(server string) Limits {
	if c.perSrv == nil {
		return c.limits
	}
	return c.perSrv(server).over(c.limits)
}

// decline refuses a question without making a card, and logs why (the
// decline itself carries no reason to the server).
func (c *Cards) decline(info manager.ElicitInfo, reason error) (*mcp.ElicitResult, error) {
	c.log.Warn("elicit: declined a server's question", "server", info.ServerID, "reason", reason.Error())
	return &mcp.ElicitResult{Action: string(ActionDecline)}, nil
}

// withdrawnReason words why the question's context ended. Only a bare
// context.Canceled means the server cancelled the request
// (notifications/cancelled); the session gives its own closing, and go-sdk
// a broken connection, a cause of their own, and those must never be
// blamed on the server.
func withdrawnReason(ctx context.Context) string {
	switch cause := context.Cause(ctx); {
	case cause == context.Canceled:
		return "the server withdrew the question before it was answered"
	case errors.Is(cause, context.DeadlineExceeded):
		return "the question timed out before it was answered"
	default:
		return "the connection to the server closed before the question was answered"
	}
}

// Answer answers a pending card of this instance (the in-process path;
// [Cards.Submit] answers a card of any instance). An accepted answer is
// validated against the requested schema (defaults applied; a
// *ValidationError names every bad field and leaves the card pending);
// then the original tool call continues. A card pending in another
// instance gives ErrNotOwner.
func (c *Cards) Answer(ctx context.Context, cardID string, r Response) error {
	if err := checkAction(cardID, r.Action); err != nil {
		return err
	}
	c.mu.Lock()
	l := c.live[cardID]
	c.mu.Unlock()
	if l == nil {
		card, err := c.Get(ctx, cardID)
		if err != nil {
			return err
		}
		if card.Status == StatusPending {
			return fmt.Errorf("answer card %s: %w: it is waiting in another remotemcp process", cardID, ErrNotOwner)
		}
		return fmt.Errorf("answer card %s: %w (it is %s)", cardID, ErrNotPending, card.Status)
	}
	resp := &Response{Action: r.Action}
	status := map[Action]Status{ActionAccept: StatusAccepted, ActionDecline: StatusDeclined, ActionCancel: StatusCancelled}[r.Action]
	if r.Action == ActionAccept {
		content, err := l.form.Validate(r.Content)
		if err != nil {
			return err
		}
		resp.Content = content
	}
	if !c.resolve(cardID, status, "", resp, nil) {
		return fmt.Errorf("answer card %s: %w (it was closed meanwhile)", cardID, ErrNotPending)
	}
	return nil
}

func checkAction(cardID string, a Action) error {
	switch a {
	case ActionAccept, ActionDecline, ActionCancel:
		return nil
	}
	return fmt.Errorf("answer card %s: action %q: want accept, decline or cancel", cardID, a)
}

// resolve moves a pending card to its final state, saves it, then wakes
// its handler (saving first: the store never claims less than happened).
// It reports false when the card was not pending.
func (c *Cards) resolve(id string, st Status, reason string, resp *Response, err error) bool {
	c.mu.Lock()
	l := c.live[id]
	if l == nil {
		c.mu.Unlock()
		return false
	}
	r := c.recs[id]
	r.Status, r.Reason, r.Response, r.Updated = st, reason, resp, time.Now().UTC()
	delete(c.live, id)
	l.resp, l.err = resp, err
	if l.resp == nil && l.err == nil {
		l.err = errors.New(reason)
	}
	if g := c.servers[r.ServerID]; g != nil {
		g.pending--
		close(g.changed)
		g.changed = make(chan struct{})
	}
	c.mu.Unlock()
	if err := c.save(context.Background(), id); err != nil {
		c.log.Warn("elicit: saving the card failed", "card", id, "status", st, "err", err)
	}
	c.publish(id)
	close(l.wake)
	return true
}

// settle marks a card settled once it is no longer pending and no call it
// may belong to is in flight, and then forgets it.
func (c *Cards) settle(id string) {
	c.mu.Lock()
	r := c.recs[id]
	if r == nil || c.live[id] != nil || len(c.waitOn[id]) > 0 || r.Status == StatusInterrupted {
		c.mu.Unlock()
		return
	}
	r.Settled = true
	c.mu.Unlock()
	if err := c.save(context.Background(), id); err != nil && !errors.Is(err, ErrNotOwner) {
		c.log.Warn("elicit: saving the settled card failed", "card", id, "err", err)
	}
}

// save writes the latest in-memory state of a card of this instance; a
// settled card is forgotten afterwards.
func (c *Cards) save(ctx context.Context, id string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	r := c.recs[id]
	if r == nil {
		c.mu.Unlock()
		return nil
	}
	card := cloneCard(*r)
	c.mu.Unlock()
	err := c.putOwned(ctx, card)
	if card.Settled || errors.Is(err, ErrNotOwner) {
		c.mu.Lock()
		delete(c.recs, id)
		delete(c.waitOn, id)
		c.mu.Unlock()
	}
	return err
}

// putOwned writes a card unless another instance took it over.
func (c *Cards) putOwned(ctx context.Context, card Card) error {
	raw, err := c.kv.GetKV(ctx, Namespace, card.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	default:
		var stored Card
		if json.Unmarshal(raw, &stored) == nil && stored.Owner != c.instance {
			return fmt.Errorf("card %s: %w", card.ID, ErrNotOwner)
		}
	}
	return c.put(ctx, card)
}

func (c *Cards) put(ctx context.Context, card Card) error {
	raw, err := json.Marshal(card)
	if err != nil {
		return err
	}
	return c.kv.PutKV(ctx, Namespace, card.ID, raw)
}

// mutate changes a card (in memory if this instance holds it, else in the
// store) and saves it; fn returning an error changes nothing.
func (c *Cards) mutate(ctx context.Context, id string, fn func(*Card) error) (Card, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	if r := c.recs[id]; r != nil {
		if c.live[id] != nil {
			c.mu.Unlock()
			return Card{}, fmt.Errorf("card %s is pending: %w", id, ErrNotInterrupted)
		}
		next := cloneCard(*r)
		if err := fn(&next); err != nil {
			c.mu.Unlock()
			return Card{}, err
		}
		next.Updated = time.Now().UTC()
		*r = next
		c.mu.Unlock()
		if err := c.putOwned(ctx, next); err != nil {
			return Card{}, err
		}
		c.publishCard(next)
		return next, nil
	}
	c.mu.Unlock()
	card, err := c.load(ctx, id)
	if err != nil {
		return Card{}, err
	}
	if err := fn(&card); err != nil {
		return Card{}, err
	}
	card.Updated = time.Now().UTC()
	// Interrupted cards have no live handler anywhere, so the person's
	// decision may move them to this instance.
	card.Owner = c.instance
	if err := c.put(ctx, card); err != nil {
		return Card{}, err
	}
	c.publishCard(card)
	return card, nil
}

func (c *Cards) load(ctx context.Context, id string) (Card, error) {
	raw, err := c.kv.GetKV(ctx, Namespace, id)
	if errors.Is(err, store.ErrNotFound) {
		return Card{}, fmt.Errorf("%w %q", ErrUnknownCard, id)
	}
	if err != nil {
		return Card{}, err
	}
	var card Card
	if err := json.Unmarshal(raw, &card); err != nil {
		return Card{}, fmt.Errorf("card %s: %w", id, err)
	}
	return card, nil
}

// ConfirmRetry records the person's confirmation that re-sending the tool
// call of an interrupted card is safe (R6.2).
func (c *Cards) ConfirmRetry(ctx context.Context, cardID string) error {
	_, err := c.mutate(ctx, cardID, func(card *Card) error {
		switch {
		case card.Status != StatusInterrupted:
			return fmt.Errorf("card %s is %s: %w", cardID, card.Status, ErrNotInterrupted)
		case card.Tool == "":
			return fmt.Errorf("card %s: %w", cardID, ErrNotAttributed)
		case card.Resent:
			return fmt.Errorf("card %s: %w", cardID, ErrAlreadyResent)
		}
		card.RetryConfirmed = true
		return nil
	})
	return err
}

// ClaimResend checks that the re-send of an interrupted card's tool call
// was confirmed and not yet made, and marks it made with operationID. The
// claim comes before the call, so two callers can never both re-send it.
func (c *Cards) ClaimResend(ctx context.Context, cardID, operationID string) (Card, error) {
	return c.mutate(ctx, cardID, func(card *Card) error {
		switch {
		case card.Status != StatusInterrupted:
			return fmt.Errorf("card %s is %s: %w", cardID, card.Status, ErrNotInterrupted)
		case card.Tool == "":
			return fmt.Errorf("card %s: %w", cardID, ErrNotAttributed)
		case card.Resent:
			return fmt.Errorf("card %s: %w", cardID, ErrAlreadyResent)
		case !card.RetryConfirmed:
			return fmt.Errorf("card %s: %w", cardID, ErrRetryNotConfirmed)
		}
		card.Resent, card.ResendOperationID = true, operationID
		return nil
	})
}

// Get returns one card.
func (c *Cards) Get(ctx context.Context, cardID string) (Card, error) {
	c.mu.Lock()
	if r := c.recs[cardID]; r != nil {
		card := cloneCard(*r)
		c.mu.Unlock()
		return card, nil
	}
	c.mu.Unlock()
	return c.load(ctx, cardID)
}

// List returns every stored card, oldest first.
func (c *Cards) List(ctx context.Context) ([]Card, error) {
	all, err := c.kv.ListKV(ctx, Namespace)
	if err != nil {
		return nil, fmt.Errorf("elicit: list cards: %w", err)
	}
	out := make([]Card, 0, len(all))
	c.mu.Lock()
	for key, raw := range all {
		if r := c.recs[key]; r != nil {
			out = append(out, cloneCard(*r))
			continue
		}
		var card Card
		if json.Unmarshal(raw, &card) == nil {
			out = append(out, card)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b Card) int {
		if d := a.Created.Compare(b.Created); d != 0 {
			return d
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Pending returns the cards waiting for an answer in this process.
func (c *Cards) Pending() []Card {
	c.mu.Lock()
	out := make([]Card, 0, len(c.live))
	for id, l := range c.live {
		if r := c.recs[id]; r != nil && l.shown {
			out = append(out, cloneCard(*r))
		}
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b Card) int { return a.Created.Compare(b.Created) })
	return out
}

// Interrupted returns the interrupted cards whose tool call has not been
// re-sent: the host owes the model an explicit failure for each
// (Card.FailureMessage) and may offer the person a retry.
func (c *Cards) Interrupted(ctx context.Context) ([]Card, error) {
	all, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(card Card) bool { return card.Status != StatusInterrupted || card.Resent }), nil
}

// Subscribe delivers every saved card change until ctx is done or the
// cards close. A slow subscriber loses the oldest events, never blocks
// the cards.
func (c *Cards) Subscribe(ctx context.Context) <-chan Card { return c.subs.Subscribe(ctx) }

func (c *Cards) publish(id string) {
	c.mu.Lock()
	r := c.recs[id]
	var card Card
	if r != nil {
		card = cloneCard(*r)
	}
	c.mu.Unlock()
	if r != nil {
		c.publishCard(card)
	}
}

func (c *Cards) publishCard(card Card) { c.subs.Publish(card) }

func (c *Cards) gate(server string) *gate {
	g := c.servers[server]
	if g == nil {
		g = &gate{calls: map[string]*Admission{}, changed: make(chan struct{})}
		c.servers[server] = g
	}
	return g
}

// CallInfo describes a tool call asking for admission.
type CallInfo struct {
	ServerID    string
	Tool        string // the server's tool name
	OperationID string
	Arguments   json.RawMessage
}

// Admission is an admitted tool call; call Finish when it has returned.
type Admission struct {
	c    *Cards
	info CallInfo
	once sync.Once
	intr *Card
}

// Admit waits until no card of the server is pending, then registers the
// call as in flight (for attribution) and returns. If ctx ends while the
// call waits, Admit returns ctx's error and the call must not be
// dispatched (R4.5).
func (c *Cards) Admit(ctx context.Context, ci CallInfo) (*Admission, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		g := c.gate(ci.ServerID)
		if g.pending == 0 {
			if _, dup := g.calls[ci.OperationID]; dup {
				c.mu.Unlock()
				return nil, fmt.Errorf("operation %s is already in flight", ci.OperationID)
			}
			a := &Admission{c: c, info: ci}
			g.calls[ci.OperationID] = a
			c.mu.Unlock()
			return a, nil
		}
		ch := g.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, ErrClosed
		}
	}
}

// Finish records that the admitted call has returned. A card still pending
// for it alone is closed (nobody is left to use the answer); cards waiting
// only for it are settled. It returns the card of this call that was
// interrupted before it was answered, if any: the caller must then report
// that the answer never reached the server instead of the call's result.
// Finish is idempotent.
func (a *Admission) Finish() *Card {
	a.once.Do(func() { a.intr = a.c.finish(a) })
	return a.intr
}

func (c *Cards) finish(a *Admission) *Card {
	op := a.info.OperationID
	var intr *Card
	var orphans, touched []string
	c.mu.Lock()
	if g := c.servers[a.info.ServerID]; g != nil && g.calls[op] == a {
		delete(g.calls, op)
	}
	for id, set := range c.waitOn {
		if !set[op] {
			continue
		}
		delete(set, op)
		touched = append(touched, id)
		if len(set) == 0 && c.live[id] != nil {
			orphans = append(orphans, id)
		}
	}
	for _, r := range c.recs {
		if r.OperationID == op && r.ServerID == a.info.ServerID && r.Status == StatusInterrupted && r.Response == nil {
			card := cloneCard(*r)
			intr = &card
		}
	}
	c.mu.Unlock()
	for _, id := range orphans {
		c.resolve(id, StatusCancelled, "the tool call ended before the question was answered", nil, errors.New("the tool call ended"))
	}
	for _, id := range touched {
		c.settle(id)
	}
	return intr
}

func cloneCard(c Card) Card {
	c.Arguments = slices.Clone(c.Arguments)
	c.RequestedSchema = slices.Clone(c.RequestedSchema)
	if c.Response != nil {
		r := *c.Response
		if r.Content != nil {
			m := make(map[string]any, len(r.Content))
			for k, v := range r.Content {
				if l, ok := v.([]any); ok {
					v = slices.Clone(l)
				}
				m[k] = v
			}
			r.Content = m
		}
		c.Response = &r
	}
	return c
}
