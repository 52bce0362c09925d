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

// MaxSamplingWait bounds how long a server's sampling request waits for
// the host's model.
const MaxSamplingWait = 5 * time.Minute

// onCreateMessage answers a server's sampling/createMessage through the
// one call in flight on this session that can (its host declared
// sampling). Outside a call, or with several such calls (no way to tell
// whose host should answer), it is refused: a server cannot make anyone
// run a model at will.
func (s *Session) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	s.calls.Lock()
	var sample func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	n := 0
	for _, op := range s.ops {
		if op.sample != nil {
			sample = op.sample
			n++
		}
	}
	s.calls.Unlock()
	switch {
	case n == 0:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "sampling/createMessage refused: no call in flight comes from a host that can sample (remotemcp forwards sampling only to an MCP host during its own tool call)"}
	case n > 1:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "sampling/createMessage refused: several calls in flight could answer it and remotemcp cannot tell which one asks"}
	case req == nil || req.Params == nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "sampling/createMessage without params"}
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
