package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp/localapi"
)

// Resource subscriptions taken over the socket are held by the caller's
// hold stream (GET /api/subscriptions/hold, localapi.HolderHeader): when
// it ends, because the client process stopped or was killed, the daemon
// gives back what it still held. Without that, a front end killed
// mid-subscription kept its server subscribed, and awake, until the
// daemon restarted.

// hold serves GET /api/subscriptions/hold: a stream that says nothing
// but its id (in the HolderHeader) and a keep-alive now and then, open
// for as long as its client holds subscriptions with it.
func (a *api) hold(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := a.holders.open()
	defer a.holders.close(id, a.eng, a.log)
	rc, ok := startSSE(w, http.Header{localapi.HolderHeader: {id}})
	if !ok {
		return
	}
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-keep.C:
			if keepAlive(w, rc) != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// holderRelease bounds the unsubscriptions when a stream ends.
const holderRelease = 10 * time.Second

// holder is one open hold stream's subscriptions: how many times it
// subscribed to each resource and has not given it back.
type holder struct {
	// mu serializes the stream's subscription changes with its end, so
	// that a subscription taken while the stream ends is given back too.
	mu   sync.Mutex
	gone bool
	subs map[localapi.ResourceSubscription]int
}

// holders are the open hold streams by id.
type holders struct {
	mu sync.Mutex
	m  map[string]*holder
}

// open registers a new stream and returns its id.
func (h *holders) open() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]*holder{}
	}
	h.m[id] = &holder{subs: map[localapi.ResourceSubscription]int{}}
	h.mu.Unlock()
	return id
}

func (h *holders) get(id string) *holder {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[id]
}

// close ends a stream and gives back every subscription it held.
func (h *holders) close(id string, eng localapi.Engine, log *slog.Logger) {
	h.mu.Lock()
	hd := h.m[id]
	delete(h.m, id)
	h.mu.Unlock()
	if hd == nil {
		return
	}
	hd.mu.Lock()
	defer hd.mu.Unlock()
	hd.gone = true
	ctx, cancel := context.WithTimeout(context.Background(), holderRelease)
	defer cancel()
	for sub, n := range hd.subs {
		for range n {
			if err := eng.UnsubscribeResource(ctx, sub); err != nil {
				log.Info("daemon: give back the subscription of an ended hold stream", "server", sub.ServerID, "uri", sub.URI, "err", err)
			}
		}
	}
	hd.subs = nil
}

// errHolderGone refuses a subscription for a stream that is not open.
func errHolderGone(id string) error {
	return &localapi.Error{Status: http.StatusConflict, Code: localapi.CodeConflict,
		Message: fmt.Sprintf("the hold stream %.8s… that would hold this subscription is not open (it ended, or the daemon restarted): open GET /api/subscriptions/hold again and subscribe while it is open", id)}
}

// subscribe takes a subscription for the stream id.
func (h *holders) subscribe(ctx context.Context, id string, eng localapi.Engine, req localapi.ResourceSubscription) error {
	hd := h.get(id)
	if hd == nil {
		return errHolderGone(id)
	}
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.gone {
		return errHolderGone(id)
	}
	if err := eng.SubscribeResource(ctx, req); err != nil {
		return err
	}
	hd.subs[req]++
	return nil
}

// unsubscribe gives back one of the stream's subscriptions. A stream that
// ended has nothing left to give back: the daemon did it.
func (h *holders) unsubscribe(ctx context.Context, id string, eng localapi.Engine, req localapi.ResourceSubscription) error {
	hd := h.get(id)
	if hd == nil {
		return nil
	}
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.gone {
		return nil
	}
	if hd.subs[req] == 0 {
		return &localapi.Error{Status: http.StatusNotFound, Code: localapi.CodeNotFound,
			Message: fmt.Sprintf("this hold stream holds no subscription of %s on server %s", req.URI, req.ServerID)}
	}
	err := eng.UnsubscribeResource(ctx, req)
	// The engine gives the count back before it tells the server, so a
	// failure to tell the server still gave it back; only a refusal
	// (nothing to give back, a bad request) did not.
	if localapi.HasCode(err, localapi.CodeNotFound) || localapi.HasCode(err, localapi.CodeBadRequest) {
		return err
	}
	if hd.subs[req]--; hd.subs[req] == 0 {
		delete(hd.subs, req)
	}
	return err
}
