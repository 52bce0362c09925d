package elicit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A question's context can end for three different reasons, and the card
// must say which: only a bare cancellation (notifications/cancelled from
// the server) blames the server; our own session closing or a broken
// connection must not (issue: the flaky TestDisconnectClosesOpenCard).
func TestWithdrawnReasonNamesTheCause(t *testing.T) {
	cases := []struct {
		name string
		end  func() context.Context
		want string
	}{
		{"server cancelled the request", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}, "the server withdrew"},
		{"our session closed", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errors.New("session closed"))
			return ctx
		}, "connection to the server closed"},
		{"connection broke", func() context.Context {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(errors.New("EOF"))
			return ctx
		}, "connection to the server closed"},
		{"deadline", func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
			t.Cleanup(cancel)
			<-ctx.Done()
			return ctx
		}, "timed out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := withdrawnReason(c.end()); !strings.Contains(got, c.want) {
				t.Fatalf("reason = %q, want it to contain %q", got, c.want)
			}
		})
	}
}
