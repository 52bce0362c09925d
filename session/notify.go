package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxURI bounds a resource URI taken from a server's notification; a
// longer one is dropped (a URI that long names nothing a host can use).
const MaxURI = 8 << 10

// ErrNoSubscriptions is returned for a subscription to a server that does
// not offer resources/subscribe.
var ErrNoSubscriptions = errors.New("the server does not offer resource subscriptions (resources.subscribe)")

// ErrNoLogging is returned when a log level is set for a server that does
// not offer logging.
var ErrNoLogging = errors.New("the server does not offer logging")

// Subscribes reports whether the server offers resources/subscribe.
func (s *Session) Subscribes() bool {
	ir := s.cs.InitializeResult()
	return ir != nil && ir.Capabilities != nil && ir.Capabilities.Resources != nil && ir.Capabilities.Resources.Subscribe
}

// Subscribe asks the server for notifications/resources/updated of uri
// (SPEC B3, §9 A7). The updates reach Options.OnResourceUpdated.
func (s *Session) Subscribe(ctx context.Context, uri string) error {
	if !s.Subscribes() {
		return fmt.Errorf("subscribe %s: %w", uri, ErrNoSubscriptions)
	}
	s.used()
	ctx, slot := withRequestSlot(ctx)
	if err := s.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return notRun(slot, "subscribe "+uri, limitFromWire(err))
	}
	return nil
}

// Unsubscribe ends a subscription of uri.
func (s *Session) Unsubscribe(ctx context.Context, uri string) error {
	if !s.Subscribes() {
		return fmt.Errorf("unsubscribe %s: %w", uri, ErrNoSubscriptions)
	}
	s.used()
	ctx, slot := withRequestSlot(ctx)
	if err := s.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		return notRun(slot, "unsubscribe "+uri, limitFromWire(err))
	}
	return nil
}

// onResourceUpdated hands a server's notifications/resources/updated on,
// when its URI is a bounded, valid string.
func (s *Session) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req == nil || req.Params == nil || s.onUpdated == nil {
		return
	}
	uri := req.Params.URI
	if uri == "" || len(uri) > MaxURI || clip(uri, MaxURI) != uri {
		s.log.Info("notifications/resources/updated dropped: no usable URI", "len", len(uri))
		return
	}
	s.onUpdated(uri)
}

// SetLogLevel asks the server for log messages at level and above
// (logging/setLevel), for this session; a server without logging gets
// ErrNoLogging.
func (s *Session) SetLogLevel(ctx context.Context, level string) error {
	ir := s.cs.InitializeResult()
	if ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return ErrNoLogging
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		return fmt.Errorf("logging/setLevel %s: %w", level, limitFromWire(err))
	}
	return nil
}

// The refusals of a server's sampling request (issue #20 item 3), as the
// server reads them in the JSON-RPC error.
var (
	ErrSamplingUnrelated = errors.New("sampling/createMessage refused: it did not come on the response stream of a tool call " +
		"(remotemcp forwards sampling only to the MCP host whose tool call the request belongs to, never on the standalone stream)")
	ErrSamplingNotDeclared = errors.New("sampling/createMessage refused: the MCP host of the tool call it belongs to did not declare sampling")
)

// MaxSamplingWait bounds how long a server's sampling request waits for
// the host's model.
const MaxSamplingWait = 5 * time.Minute

// onCreateMessage answers a server's sampling/createMessage through the
// tool call it belongs to: the call whose response stream carried it
// (related.go), when that call's host declared sampling (CallOptions.Sample
// is set only then). A request on the standalone stream or another
// request's stream, one that cannot be tied to a stream, and one whose
// call cannot sample are refused, never sent to another call's host
// (issue #20 item 3): a server cannot make anyone run a model at will.
func (s *Session) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if req == nil || req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "sampling/createMessage without params"}
	}
	rel, _ := takeRelated(req.Params.Meta, s.lim.relSecret)
	call := rel.call
	if call == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: ErrSamplingUnrelated.Error()}
	}
	s.calls.Lock()
	var sample func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	op := s.ops[call]
	if op != nil {
		sample = op.sample
	}
	s.calls.Unlock()
	switch {
	case op == nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "sampling/createMessage refused: the tool call whose stream carried it is no longer in flight"}
	case sample == nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: ErrSamplingNotDeclared.Error()}
	}
	// go-sdk's Close waits for incoming requests; the wait ends with
	// the session.
	ctx, cancel := context.WithTimeout(ctx, MaxSamplingWait)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	s.used()
	return sample(ctx, req.Params)
}
