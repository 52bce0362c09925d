package localapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// HolderHeader carries, on the answer to GET /api/subscriptions/hold, the
// id of that hold stream, and on POST /api/subscriptions and
// /api/subscriptions/remove the id of the stream that holds the
// subscription. The daemon gives back the subscriptions a stream holds
// when it ends, so a client process that stops or is killed without
// unsubscribing does not keep a server subscribed (and awake). A request
// without it is held by nobody: it stays until it is given back.
const HolderHeader = "Remotemcp-Holder"

// holds is a Client's hold stream and the subscriptions taken with it. The
// stream opens with the first subscription and closes when the last is
// given back, so a client that never subscribes holds none open.
type holds struct {
	// op serializes the subscription changes (and so the stream's opening
	// and closing) of one client.
	op sync.Mutex

	mu     sync.Mutex
	id     string        // the open stream's; "" when none
	done   chan struct{} // closed when that stream ended
	cancel context.CancelFunc
	// held records the stream each subscription was taken with, newest
	// last, so that giving one back names the same stream even after it
	// ended (the daemon has then nothing left to do): never an unheld
	// unsubscription that would count against another client's.
	held map[ResourceSubscription][]string
	n    int // subscriptions in held
}

// stream returns the open hold stream's id, opening one when none is open
// (or the last ended: the daemon restarted). "" when the daemon has no
// hold streams (an older daemon): the subscription is then held by nobody.
func (h *holds) stream(ctx context.Context, c *Client) (string, error) {
	h.mu.Lock()
	if h.id != "" {
		select {
		case <-h.done:
			h.id, h.done, h.cancel = "", nil, nil
		default:
			id := h.id
			h.mu.Unlock()
			return id, nil
		}
	}
	h.mu.Unlock()
	// The stream outlives this call: its context is its own, and the
	// caller's bounds only the wait for its first answer.
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	resp, err := c.request(sctx, http.MethodGet, "/api/subscriptions/hold", nil, nil)
	stop()
	if err != nil {
		cancel()
		if HasCode(err, CodeNotFound) || HasCode(err, CodeBadRequest) {
			return "", nil
		}
		return "", fmt.Errorf("local API: open the subscriptions' hold stream: %w", err)
	}
	id := resp.Header.Get(HolderHeader)
	if id == "" {
		resp.Body.Close()
		cancel()
		return "", errors.New("local API: the subscriptions' hold stream has no id")
	}
	done := make(chan struct{})
	go func() {
		// Nothing but keep-alives comes; the stream ends when it is
		// cancelled (the last subscription given back) or the daemon
		// goes away.
		defer close(done)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	h.mu.Lock()
	h.id, h.done, h.cancel = id, done, cancel
	h.mu.Unlock()
	return id, nil
}

func (h *holds) subscribe(ctx context.Context, c *Client, req ResourceSubscription) error {
	h.op.Lock()
	defer h.op.Unlock()
	id, err := h.stream(ctx, c)
	if err != nil {
		return err
	}
	if err := c.postHeld(ctx, "/api/subscriptions", req, id); err != nil {
		h.closeIfUnused()
		return err
	}
	h.mu.Lock()
	if h.held == nil {
		h.held = map[ResourceSubscription][]string{}
	}
	h.held[req] = append(h.held[req], id)
	h.n++
	h.mu.Unlock()
	return nil
}

func (h *holds) unsubscribe(ctx context.Context, c *Client, req ResourceSubscription) error {
	h.op.Lock()
	defer h.op.Unlock()
	h.mu.Lock()
	id, had := "", false
	if ids := h.held[req]; len(ids) > 0 {
		id, had = ids[len(ids)-1], true
	}
	h.mu.Unlock()
	err := c.postHeld(ctx, "/api/subscriptions/remove", req, id)
	if err != nil && !isAnswer(err) {
		// It may not have reached the daemon: kept, to be given back
		// again (or by the stream's end).
		return err
	}
	if had {
		h.mu.Lock()
		if ids := h.held[req]; len(ids) <= 1 {
			delete(h.held, req)
		} else {
			h.held[req] = ids[:len(ids)-1]
		}
		h.n--
		h.mu.Unlock()
	}
	h.closeIfUnused()
	return err
}

// closeIfUnused ends the hold stream when it holds nothing. h.op held.
func (h *holds) closeIfUnused() {
	h.mu.Lock()
	if h.n > 0 || h.cancel == nil {
		h.mu.Unlock()
		return
	}
	cancel, done := h.cancel, h.done
	h.id, h.done, h.cancel = "", nil, nil
	h.mu.Unlock()
	cancel()
	<-done
}

// isAnswer reports whether err is the daemon's answer (an *Error with a
// status), not a failure to reach it.
func isAnswer(err error) bool {
	e, ok := AsError(err)
	return ok && e.Status != 0
}

func (c *Client) postHeld(ctx context.Context, path string, req ResourceSubscription, holder string) error {
	var hdr http.Header
	if holder != "" {
		hdr = http.Header{HolderHeader: {holder}}
	}
	resp, err := c.requestHeader(ctx, http.MethodPost, path, nil, req, hdr)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.Body.Close()
}
