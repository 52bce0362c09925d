package daemon

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/remotemcp/remotemcp/localapi"
)

// countingEngine counts subscriptions as the manager does: the last
// unsubscribe gives the count back first, then telling the server may
// fail (a timeout, a cancelled request).
type countingEngine struct {
	localapi.Engine
	n          int
	failRemote bool
}

func (e *countingEngine) SubscribeResource(context.Context, localapi.ResourceSubscription) error {
	e.n++
	return nil
}

func (e *countingEngine) UnsubscribeResource(context.Context, localapi.ResourceSubscription) error {
	if e.n == 0 {
		return &localapi.Error{Status: 404, Code: localapi.CodeNotFound, Message: "no subscription"}
	}
	e.n--
	if e.n == 0 && e.failRemote {
		return errors.New("unavailable: the server's unsubscribe failed")
	}
	return nil
}

// An unsubscribe whose message to the server failed still gave the count
// back: the stream's end does not give it back a second time (which
// would take another client's).
func TestHolderFailedUnsubscribeCountsOnce(t *testing.T) {
	var h holders
	eng := &countingEngine{failRemote: true}
	req := localapi.ResourceSubscription{ServerID: "fx", URI: "test://x"}
	s := h.open()
	if err := h.subscribe(context.Background(), s, eng, req); err != nil {
		t.Fatal(err)
	}
	if err := h.unsubscribe(context.Background(), s, eng, req); err == nil {
		t.Fatal("the failed unsubscribe reported no error")
	}
	eng.failRemote = false
	if err := eng.SubscribeResource(context.Background(), req); err != nil { // another client's
		t.Fatal(err)
	}
	h.close(s, eng, slog.New(slog.DiscardHandler))
	if eng.n != 1 {
		t.Fatalf("the stream's end took another client's subscription: count %d", eng.n)
	}
	// A refused unsubscribe (nothing held) leaves the stream's count.
	s2 := h.open()
	if err := h.unsubscribe(context.Background(), s2, eng, req); !localapi.HasCode(err, localapi.CodeNotFound) {
		t.Fatalf("unsubscribe of nothing held: %v", err)
	}
}
