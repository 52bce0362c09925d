package session

import (
	"context"
	"errors"
	"fmt"
	"time"

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
